"""The library is the engine's core: a plain PyTorch loop written with adrop.sparsify (torch.optim.Adam, fused as the
engine's, the same initialisation, data order, lr schedule, noise seed and threads) follows `adrop train` for the same
configuration. Not bit for bit: the engine runs a stack of one (its products batched over a leading axis of 1), the
library the module's own products, which round differently; so within a tolerance over the first steps (every
method, 2 epochs: measured |diff| <= 3e-8) and by statistics over a short training (digits, 3 seeds)."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

import adrop
from adrop import methods
from adrop.train import network as network_mod, schedules
from adrop.train.runtime import reset_state
from adrop.train.settings import resolve
from engines import one


def plain_loop(cfg, data):
    """cfg's run as a user's loop with the library: (its Sparsifier, the model in eval mode)."""
    run = resolve(cfg)
    reset_state(cfg.seed, torch.device("cpu"))  # the engine builds each configuration's network from its seed
    shape = network_mod.input_shape_of(data)
    model = network_mod.instantiate(cfg.model, shape, data.classes)
    per_epoch = math.ceil(len(data.train) / cfg.batch_size)
    total = per_epoch * cfg.epochs
    sp = adrop.sparsify(model, method=cfg.method.name, lam=run.lam, structure=cfg.structure, total_steps=total,
                        steps_per_epoch=per_epoch, **OmegaConf.to_container(cfg.method.params, resolve=True))
    torch.manual_seed(cfg.seed)  # the engine's noise: one generator seeded with the run's seed
    optimizer = torch.optim.Adam(model.parameters(), lr=run.lr, fused=True)
    sp.attach(optimizer)
    step = 0
    for epoch in range(cfg.epochs):
        order = torch.randperm(len(data.train), generator=torch.Generator().manual_seed(cfg.seed * 1_000_003 + epoch))
        for b in range(per_epoch):
            rows = order[b * cfg.batch_size:(b + 1) * cfg.batch_size]
            for group in optimizer.param_groups:
                group["lr"] = schedules.lr_at(step, total, run.lr, cfg.schedule, cfg.decay_start, per_epoch)
            x, y = data.train.x[rows].view(-1, *shape), data.train.y[rows]
            loss = F.cross_entropy(model(x), y) + sp.penalty()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
        sp.end_epoch(math.ceil(len(data.val) / cfg.batch_size))
    return sp, model.eval()


def both(config, tmp_path, *overrides):
    cfg = config(*overrides, "device=cpu", "progress=never")
    engine = one(cfg, tmp_path)
    summary = engine.fit()[0]
    sp, model = plain_loop(cfg, engine.data)
    return summary, np.load(tmp_path / "weights.npz"), sp, model, engine


@pytest.mark.parametrize("method", [m for m in methods.names() if m != "fixed_mask"])
def test_a_plain_loop_follows_adrop_train_over_its_first_steps(method, config, tmp_path):
    extra = ("method.params.frequency=3",) if method == "magnitude_pruning" else ()
    _, saved, sp, _, _ = both(config, tmp_path, "dataset=synthetic", "model=mlp", f"method={method}", "epochs=2",
                              *extra)
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
        summary, _, sp, model, engine = both(config, tmp_path / str(seed), "dataset=digits", "model=mlp",
                                             f"method={method}", "epochs=30", f"seed={seed}", "lr=0.01")
        with torch.no_grad():
            wrong = (model(engine.data.test.x).argmax(1) != engine.data.test.y).float().mean().item()
        stats = sp.stats()
        fraction = stats.nonzero.sum() / stats.total.sum()
        assert abs(wrong - summary["test_error"]) <= 2 / len(engine.data.test), (seed, wrong, summary["test_error"])
        assert abs(fraction - summary["nonzero_fraction"]) <= 0.01, (seed, fraction, summary["nonzero_fraction"])


@pytest.mark.parametrize("method", ["logsum", "hard_concrete", "vardrop_lr_ar", "magnitude_pruning"])
def test_strip_gives_exactly_the_tensors_of_weights_npz(method, config, tmp_path):
    # the engine's trained state put into a plain copy of its network, sparsified and stripped by the library
    cfg = config("dataset=synthetic", "model=mlp", f"method={method}", "epochs=2", "device=cpu", "progress=never",
                 *(("method.params.frequency=3",) if method == "magnitude_pruning" else ()))
    engine = one(cfg, tmp_path)
    engine.fit()
    model = network_mod.instantiate(cfg.model, network_mod.input_shape_of(engine.data), engine.data.classes)
    sp = adrop.sparsify(model, method=method, lam=engine.runs[0].lam, total_steps=engine.total_steps,
                        **OmegaConf.to_container(cfg.method.params, resolve=True))
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            tensor.copy_(engine.model.state_dict()[name][0])  # row 0 of the stack of one
    sp.method.load_state_dict(engine.method.state_dict())
    adrop.strip(model)
    saved = np.load(tmp_path / "weights.npz")
    assert sorted(saved.files) == sorted(model.state_dict())
    assert all(np.array_equal(saved[key], tensor.numpy()) for key, tensor in model.state_dict().items())
