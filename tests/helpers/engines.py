"""The engine as the tests drive it: configurations composed with Hydra's compose API, resolved, then trained."""

from adrop.train.config.settings import resolve
from adrop.train.loop.engine import Engine


def stack(cfgs, folders, **kwargs) -> Engine:
    """K configurations as one stack (K = 1: a single run, the reference)."""
    return Engine([resolve(c) for c in cfgs], folders, **kwargs)


def one(cfg, folder, **kwargs) -> Engine:
    """A single run: the engine with a stack of one."""
    return stack([cfg], [folder], **kwargs)


def train(cfg, folder, stop_after=None) -> dict:
    """A single run trained (to the end, or to epoch stop_after); its summary."""
    return one(cfg, folder).fit(stop_after)[0]


def error(engine, split, k: int = 0) -> float:
    """Configuration k's masked error on a split, as the engine evaluates it."""
    from adrop.train.loop import evaluate

    weights = engine.weights(k, evaluate.effective(engine.model, engine.method, engine.lam))
    return evaluate.error(engine.single.predict, weights, split)


def assert_stack_near_its_singles(cfgs, tmp_path) -> None:
    """The configurations trained alone and as one stack: each ends with nearly its single run's weights (float32
    rounding over a few epochs) and, give or take a weight at the threshold, its count of nonzeros."""
    import numpy as np
    import pytest

    singles = [train(c, tmp_path / f"single{i}") for i, c in enumerate(cfgs)]
    stacked = stack(cfgs, [tmp_path / f"stack{i}" for i in range(len(cfgs))]).fit()
    for i in range(len(cfgs)):
        a, b = np.load(tmp_path / f"single{i}" / "weights.npz"), np.load(tmp_path / f"stack{i}" / "weights.npz")
        assert all(np.allclose(a[k], b[k], rtol=1e-4, atol=1e-6) for k in a.files)
        assert stacked[i]["nonzero"] == pytest.approx(singles[i]["nonzero"], abs=2)
