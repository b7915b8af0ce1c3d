"""Benchmark: IRLS against scikit-learn's Lasso on the same problem, n = 1000, d = 5000, side by side in one run.

    python scripts/benchmarks/bench_linear.py [--repeat 3]

For each penalty the lab covers, prints the CPU seconds (process time, all threads) and wall seconds of
`fit(..., solver="irls")` to relative change 1e-8 from its default start, the iterations, the nonzeros, and the ratio
to scikit-learn's Lasso (coordinate descent, tol 1e-10) on the same problem; for l1 also the relative distance
between the two solutions. Best of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from sklearn.linear_model import Lasso

from adrop.linear import fit, make_sparse_regression

CASES = [
    ("l1", {}),
    ("elastic_net", {"theta": 0.5}),
    ("logsum", {"eps": 1.0}),
    ("scad", {"a": 3.7}),
    ("mcp", {"a": 3.0}),
    ("lpp", {"p": 0.5}),
    ("hard_thresh", {"k": 20}),
]


def timed(fn, repeat):
    best_cpu, best_wall, out = np.inf, np.inf, None
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        out = fn()
        best_cpu, best_wall = min(best_cpu, time.process_time() - c), min(best_wall, time.perf_counter() - w)
    return best_cpu, best_wall, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = make_sparse_regression(n=1000, d=5000, k=20, signal=1.0, noise=0.5, seed=0)
    X, y, lam = data.problem.X, data.problem.y, 0.1
    sk_cpu, sk_wall, sk = timed(
        lambda: Lasso(alpha=lam, fit_intercept=False, tol=1e-10, max_iter=100000).fit(X, y).coef_, args.repeat
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"n=1000 d=5000 k=20 noise=0.5 lam={lam}"
    )
    print(f"{'solver':28s} {'cpu s':>7s} {'wall s':>7s} {'iters':>6s} {'nonzeros':>8s} {'cpu / sklearn':>14s}")
    print(f"{'scikit-learn Lasso':28s} {sk_cpu:7.3f} {sk_wall:7.3f} {'':>6s} {np.count_nonzero(sk):8d} {1.0:14.2f}")
    for name, params in CASES:
        cpu, wall, r = timed(lambda: fit(X, y, name, lam, "irls", tol=1e-8, **params), args.repeat)
        label = f"irls {name}" + (f"({','.join(f'{k}={v}' for k, v in params.items())})" if params else "")
        print(
            f"{label:28s} {cpu:7.3f} {wall:7.3f} {int(r.history.iteration.iloc[-1]):6d} {np.count_nonzero(r.w):8d} "
            f"{cpu / sk_cpu:14.2f}"
        )
        if name == "l1":
            distance = np.linalg.norm(r.w - sk) / np.linalg.norm(sk)
            print(f"  l1: relative distance to scikit-learn's solution {distance:.1e}")


if __name__ == "__main__":
    main()
