"""The engine as the tests drive it: configurations composed with Hydra's compose API, resolved, then trained."""
from adrop.train.engine import Engine
from adrop.train.settings import resolve


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
    from adrop.train import evaluate

    weights = engine.weights(k, evaluate.effective(engine.model, engine.method, engine.lam))
    return evaluate.error(engine.single.predict, weights, split)
