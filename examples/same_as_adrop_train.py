"""The loop `adrop train` runs, written as a user's plain PyTorch loop with adrop.sparsify, beside the command's own
run of the same configuration: the same initialisation, data order, lr schedule, noise seed and fused Adam. It
follows the engine to float32 rounding (the engine runs a stack of one, whose products round differently).

    python examples/same_as_adrop_train.py method=logsum dataset=digits model=mlp epochs=20 lr=0.01

Any `adrop train` overrides; prints both runs' test error and nonzero fraction, and the largest weight difference.
"""

import math
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import adrop
from adrop.train.command import registry
from adrop.train.config import schedules
from adrop.train.config.settings import resolve
from adrop.train.loop.engine import Engine
from adrop.train.nets import network as network_mod
from adrop.train.runtime import reset_state


def plain_loop(cfg, data):
    """cfg's run as a user's loop with the library: (its Sparsifier, the model in eval mode)."""
    run = resolve(cfg)
    reset_state(cfg.seed, torch.device("cpu"))  # the engine builds each configuration's network from its seed
    shape = network_mod.input_shape_of(data)
    model = network_mod.instantiate(cfg.model, shape, data.classes)
    per_epoch = math.ceil(len(data.train) / cfg.batch_size)
    total = per_epoch * cfg.epochs
    sp = adrop.sparsify(
        model,
        method=cfg.method.name,
        lam=run.lam,
        structure=cfg.structure,
        total_steps=total,
        steps_per_epoch=per_epoch,
        **OmegaConf.to_container(cfg.method.params, resolve=True),
    )
    torch.manual_seed(cfg.seed)  # the engine's noise: one generator seeded with the run's seed
    optimizer = torch.optim.Adam(model.parameters(), lr=run.lr, fused=True)
    sp.attach(optimizer)
    step = 0
    for epoch in range(cfg.epochs):
        order = torch.randperm(len(data.train), generator=torch.Generator().manual_seed(cfg.seed * 1_000_003 + epoch))
        for b in range(per_epoch):
            rows = order[b * cfg.batch_size : (b + 1) * cfg.batch_size]
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


def main(overrides):
    registry.register()
    with initialize_config_module(version_base="1.3", config_module="adrop.conf"):
        cfg = compose("config", overrides=[*overrides, "device=cpu", "progress=never"])
    folder = tempfile.mkdtemp()
    engine = Engine([resolve(cfg)], [folder])
    summary = engine.fit()[0]
    sp, model = plain_loop(cfg, engine.data)
    with torch.no_grad():
        wrong = (
            (
                model(engine.data.test.x.view(-1, *network_mod.input_shape_of(engine.data))).argmax(1)
                != engine.data.test.y
            )
            .float()
            .mean()
            .item()
        )
    stats = sp.stats()
    saved = np.load(f"{folder}/weights.npz")
    diff = max(float(np.abs(saved[f"{n}.weight"] - w.numpy()).max()) for n, w in sp.effective().items())
    print(f"adrop train: test error {summary['test_error']:.4f}, nonzero {summary['nonzero_fraction']:.4f}")
    print(f"plain loop:  test error {wrong:.4f}, nonzero {stats.nonzero.sum() / stats.total.sum():.4f}")
    print(f"largest weight difference: {diff:.3g}")


if __name__ == "__main__":
    main(sys.argv[1:])
