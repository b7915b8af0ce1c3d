"""Benchmark: adrop's own Linear layers (SparseLinear) against the generic parametrization (SparseParameter) on the
same LeNet-300-100, per training step, for the methods whose forward differs most.

    python scripts/benchmarks/bench_any_weight.py [--threads 1] [--rounds 5] [--steps 100]

Both contenders train an nn.Sequential 784-300-100-10 with adrop.sparsify's machinery in one process, alternating,
on the same random batches of 128 (MNIST's shape; the time of a step does not depend on the data's values):
  layers <m>       adrop.sparsify as it converts a Linear: the method's sparse layer, which owns the product
  parametrized <m> the same three weights trained through SparseParameter (what sparsify uses for attention,
                   embeddings and any other tensor): the module keeps nn.Linear's forward and reads the method's
                   weight; VarDrop+LR+AR then takes its weight-noise form, theta + sigma eps, in place of the local
                   reparameterisation
One step: forward, cross entropy plus sp.penalty(), backward, Adam's step with the method's hooks. Median seconds per
`--steps` steps over `--rounds` rounds, after a warm-up round each; the ratio parametrized / layers per method.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

import adrop
from adrop.methods.sparse_parameter import SparseParameter
from adrop.sparsifier import Sparsifier, default_lam, make_method

METHODS = ("dense", "logsum", "vardrop_lr_ar", "hard_concrete")
BATCH = 128


def lenet(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(784, 300), nn.ReLU(), nn.Linear(300, 100), nn.ReLU(), nn.Linear(100, 10))


def with_layers(method: str) -> tuple[nn.Module, Sparsifier]:
    model = lenet()
    return model, adrop.sparsify(model, method, lam=default_lam(method))


def parametrized(method: str) -> tuple[nn.Module, Sparsifier]:
    model = lenet()
    runs = make_method(method, {}, None, None, "weight")
    names = ["0", "2", "4"]
    layers = [SparseParameter(model.get_submodule(n), "weight", runs).register() for n in names]
    return model, Sparsifier(model, runs, default_lam(method), names, layers)


class Contender:
    def __init__(self, name: str, make, method: str, data):
        self.name = name
        self.model, self.sp = make(method)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.sp.attach(self.optimizer)
        self.data = data

    def run(self, steps: int) -> float:
        x, y = self.data
        start = time.perf_counter()
        for i in range(steps):
            b = i % len(x)
            loss = F.cross_entropy(self.model(x[b]), y[b]) + self.sp.penalty()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    data = (torch.randn(16, BATCH, 784, generator=g), torch.randint(0, 10, (16, BATCH), generator=g))
    contenders = [
        Contender(f"{kind} {m}", make, m, data)
        for m in args.methods
        for kind, make in (("layers", with_layers), ("parametrized", parametrized))
    ]
    for c in contenders:
        c.run(args.steps)  # warm-up
    times = {c.name: [] for c in contenders}
    for _ in range(args.rounds):
        for c in contenders:
            times[c.name].append(c.run(args.steps))
    print(f"device: cpu ({platform.machine()}), torch {torch.__version__}, threads {args.threads}")
    print(f"LeNet-300-100, batch {BATCH}; median over {args.rounds} rounds of {args.steps} steps")
    print(f"{'contender':<30}{'ms/step':>10}")
    median = {name: statistics.median(t) / args.steps * 1e3 for name, t in times.items()}
    for name, ms in median.items():
        print(f"{name:<30}{ms:>10.3f}")
    print(
        "parametrized / layers, per step: "
        + ", ".join(f"{m} {median[f'parametrized {m}'] / median[f'layers {m}']:.2f}x" for m in args.methods)
    )


if __name__ == "__main__":
    main()
