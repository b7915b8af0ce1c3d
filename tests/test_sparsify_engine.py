"""The library is the engine's core: a plain PyTorch loop written with adrop.sparsify (examples/same_as_adrop_train.py:
torch.optim.Adam fused as the engine's, the same initialisation, data order, lr schedule, noise seed and threads)
follows `adrop train` for the same configuration. Not bit for bit: the engine runs a stack of one (its products
batched over a leading axis of 1), the library the module's own products, which round differently; so within a
tolerance over the first steps (every method, 2 epochs: measured |diff| <= 3e-8) and by statistics over a short
training (digits, 3 seeds)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

import adrop
from adrop import methods
from adrop.train.nets import network as network_mod

from helpers.engines import one

# the example's loop, as a user would copy it (examples/same_as_adrop_train.py)
spec = importlib.util.spec_from_file_location(
    "same_as_adrop_train", Path(__file__).parents[1] / "examples" / "same_as_adrop_train.py"
)
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
plain_loop = example.plain_loop


def both(config, tmp_path, *overrides):
    cfg = config(*overrides, "device=cpu", "progress=never")
    engine = one(cfg, tmp_path)
    summary = engine.fit()[0]
    sp, model = plain_loop(cfg, engine.data)
    return summary, np.load(tmp_path / "weights.npz"), sp, model, engine


# fixed_mask starts from another run; random_pruning draws its mask from each host's own random stream
@pytest.mark.parametrize("method", [m for m in methods.names() if m not in ("fixed_mask", "random_pruning")])
def test_a_plain_loop_follows_adrop_train_over_its_first_steps(method, config, tmp_path):
    extra = ("method.params.frequency=3", "method.params.final_sparsity=0.5") if method == "magnitude_pruning" else ()
    _, saved, sp, _, _ = both(
        config, tmp_path, "dataset=synthetic", "model=mlp", f"method={method}", "epochs=2", *extra
    )
    effective = sp.effective()
    for name in sp.names:
        engine, library = saved[f"{name}.weight"], effective[name].numpy()
        assert np.abs(engine - library).max() <= 1e-6, name  # 26 steps: float32 rounding of the products
        assert ((engine != 0) == (library != 0)).all(), name  # the same weights kept


@pytest.mark.slow
@pytest.mark.parametrize("method", ["logsum", "vardrop_lr_ar"])
def test_a_plain_loop_lands_where_adrop_train_does_over_a_short_training(method, config, tmp_path):
    # digits, 30 epochs, 3 seeds: the test error and the nonzero fraction of the plain loop's network against the
    # engine's (summary.json's), seed by seed (the same noise: they stay close, not equal, as rounding compounds)
    for seed in range(3):
        summary, _, sp, model, engine = both(
            config,
            tmp_path / str(seed),
            "dataset=digits",
            "model=mlp",
            f"method={method}",
            "epochs=30",
            f"seed={seed}",
            "lr=0.01",
        )
        with torch.no_grad():
            wrong = (model(engine.data.test.x).argmax(1) != engine.data.test.y).float().mean().item()
        stats = sp.stats()
        fraction = stats.nonzero.sum() / stats.total.sum()
        assert abs(wrong - summary["test_error"]) <= 2 / len(engine.data.test), (seed, wrong, summary["test_error"])
        assert abs(fraction - summary["nonzero_fraction"]) <= 0.01, (seed, fraction, summary["nonzero_fraction"])


@pytest.mark.parametrize("method", ["logsum", "hard_concrete", "vardrop_lr_ar", "magnitude_pruning"])
def test_strip_gives_exactly_the_tensors_of_weights_npz(method, config, tmp_path):
    # the engine's trained state put into a plain copy of its network, sparsified and stripped by the library
    cfg = config(
        "dataset=synthetic",
        "model=mlp",
        f"method={method}",
        "epochs=2",
        "device=cpu",
        "progress=never",
        *(("method.params.frequency=3", "method.params.final_sparsity=0.5") if method == "magnitude_pruning" else ()),
    )
    engine = one(cfg, tmp_path)
    engine.fit()
    model = network_mod.instantiate(cfg.model, network_mod.input_shape_of(engine.data), engine.data.classes)
    sp = adrop.sparsify(
        model,
        method=method,
        lam=engine.runs[0].lam,
        total_steps=engine.total_steps,
        **OmegaConf.to_container(cfg.method.params, resolve=True),
    )
    with torch.no_grad():
        for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
            tensor.copy_(engine.model.state_dict()[name][0])  # row 0 of the stack of one
    sp.method.load_state_dict(engine.method.state_dict())
    adrop.strip(model)
    saved = np.load(tmp_path / "weights.npz")
    assert sorted(saved.files) == sorted(model.state_dict())
    assert all(np.array_equal(saved[key], tensor.numpy()) for key, tensor in model.state_dict().items())
