"""Benchmark: a sparsified model's eval-mode forward against the same model stripped to plain modules, per method.

    python scripts/benchmarks/bench_eval.py [--threads 1] [--rounds 5] [--batches 200] [--width 64]

A small transformer classifier (an embedding, two nn.TransformerEncoderLayer, a Linear head: adrop's own Linear
layers and parametrized tensors both) is sparsified with each method and trained a few steps, then both contenders
evaluate the same batches under torch.no_grad, alternating in one process:
  sparsified <m>  the model as adrop.sparsify leaves it, in eval mode (the effective weights, cached between steps)
  stripped <m>    a plain copy of it (sp.plain_copy(): the effective weights in plain modules)
Median seconds per `--batches` forward passes over `--rounds` rounds, after a warm-up; the ratio sparsified /
stripped per method. `--width` sets the model's width (64: a forward of a few milliseconds, where Python's cost per
call, torch's parametrizations' included, shows most; 256 and up: compute dominates, as in a real model).
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
from adrop import methods
from adrop.sparsifier import default_lam


class Classifier(nn.Module):
    def __init__(self, vocab=64, width=64, classes=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, 4, 2 * width, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)).mean(1))


def prepared(method: str, width: int = 64):
    torch.manual_seed(0)
    model = Classifier(width=width)
    options = {"total_steps": 20} if method == "magnitude_pruning" else {}
    sp = adrop.sparsify(model, method=method, lam=default_lam(method), **options)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    sp.attach(optimizer)
    for _ in range(20):
        tokens = torch.randint(0, 64, (32, 16))
        loss = F.cross_entropy(model(tokens), tokens[:, 0] % 4) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval(), sp.plain_copy().eval()


@torch.no_grad()
def seconds(model, batches) -> float:
    start = time.perf_counter()
    for tokens in batches:
        model(tokens)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--width", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    machine = platform.processor() or platform.machine()
    print(f"torch {torch.__version__}, {args.threads} threads, {machine}, width {args.width}")
    batches = [torch.randint(0, 64, (32, 16)) for _ in range(args.batches)]
    for method in [m for m in methods.names() if m != "fixed_mask"]:
        sparse, plain = prepared(method, args.width)
        seconds(sparse, batches[:10]), seconds(plain, batches[:10])  # warm-up
        times = {"sparsified": [], "stripped": []}
        for _ in range(args.rounds):
            times["sparsified"].append(seconds(sparse, batches))
            times["stripped"].append(seconds(plain, batches))
        a, b = (statistics.median(times[k]) for k in ("sparsified", "stripped"))
        print(f"{method:18s} sparsified {a:.3f} s  stripped {b:.3f} s  ratio {a / b:.2f}")


if __name__ == "__main__":
    main()
