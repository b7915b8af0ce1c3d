"""Benchmark: training steps of a sparsified model under torch.compile against the same steps eagerly, per method.

    python scripts/benchmarks/bench_compile.py [--threads 1] [--rounds 5] [--steps 30] [--width 64] [--methods a,b]

The small transformer classifier of bench_eval.py (an embedding, two nn.TransformerEncoderLayer, a Linear head:
adrop's own Linear layers and parametrized tensors both) is sparsified twice with each method, from the same start;
one copy's forward is `torch.compile(model, fullgraph=True)`, the other's eager. A step is what a user's loop does:
forward, cross entropy + sp.penalty(), backward, Adam's step (the Sparsifier's hooks around it). After a warm-up
(compilation, and its recompilation once the first step's lam and positions are set), the two train the same batches
in alternation: median seconds per `--steps` steps over `--rounds` rounds, and the ratio compiled / eager per method
(below 1: compiled is faster).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import adrop
from adrop import methods
from adrop.sparsifier import default_lam

sys.path.insert(0, str(Path(__file__).parent))
from bench_eval import Classifier  # noqa: E402


def trainer(method: str, width: int, compiled: bool, total: int):
    torch.manual_seed(0)
    model = Classifier(width=width)
    options = {"total_steps": total} if method == "magnitude_pruning" else {}
    sp = adrop.sparsify(model, method=method, lam=default_lam(method), **options)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    sp.attach(optimizer)
    forward = torch.compile(model, fullgraph=True) if compiled else model

    def steps(batches) -> float:
        start = time.perf_counter()
        for tokens in batches:
            loss = F.cross_entropy(forward(tokens), tokens[:, 0] % 4) + sp.penalty()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return time.perf_counter() - start

    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--methods", default=None, help="comma-separated; default: every method but fixed_mask")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    machine = platform.processor() or platform.machine()
    print(f"torch {torch.__version__}, {args.threads} threads, {machine}, width {args.width}, {args.steps} steps")
    chosen = args.methods.split(",") if args.methods else [m for m in methods.names() if m != "fixed_mask"]
    batches = [torch.randint(0, 64, (32, 16)) for _ in range(args.steps)]
    total = (args.rounds + 1) * args.steps + 3
    for method in chosen:
        torch._dynamo.reset()
        compiled, eager = trainer(method, args.width, True, total), trainer(method, args.width, False, total)
        warm = time.perf_counter()
        compiled(batches[:3])  # compiles (and recompiles once the first step has set lam and the positions)
        warm = time.perf_counter() - warm
        eager(batches[:3])
        times = {"compiled": [], "eager": []}
        for _ in range(args.rounds):
            times["compiled"].append(compiled(batches))
            times["eager"].append(eager(batches))
        a, b = (statistics.median(times[k]) for k in ("compiled", "eager"))
        print(f"{method:18s} compiled {a:.3f} s  eager {b:.3f} s  ratio {a / b:.2f}  (warm-up {warm:.1f} s)")


if __name__ == "__main__":
    main()
