"""The linear-regression duality, measured: dropout is Tikhonov (eq. 4), and Theorem 1 (adaptive dropout reaches the
solution of its effective penalty's regularised ERM problem).

    python scripts/reproduce/linear_duality.py [--out DIR] [--iterations 100000]

Writes into DIR (default: a new folder under outputs/linear_duality/), never over existing files:
  tikhonov.csv / .md      Monte Carlo estimate of E_s L(s * w) with a 99% interval, against the closed form
  theorem1.csv / .md      per penalty and method: relative distance to the IRLS solution, same support (alpha >= 0.05),
                          objective gap, from the same start (the ridge solution)
  theorem1.png            objective gap and support errors against iterations, adaptive dropout beside IRLS/AdaProx
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd

from adrop import markdown
from adrop.linear import fit, make_sparse_regression
from adrop.linear.dropout_tikhonov import monte_carlo_dropout_loss
from adrop.linear.irls import ridge_start
from adrop.linear.solvers import keep_mask
from adrop.outputs import claim, new_folder

CASES = [  # (penalty, lam, parameters): each with a sparse solution on the problem below
    ("l1", 0.05, {}),
    ("elastic_net", 0.05, {"theta": 0.5}),
    ("logsum", 0.05, {"eps": 1.0}),
    ("scad", 0.05, {"a": 3.7}),
    ("mcp", 0.05, {"a": 3.0}),
    ("lpp", 0.02, {"p": 0.5}),
    ("hard_thresh", 0.05, {"k": 5}),
]
METHODS = [  # (label, solver, options)
    ("AdaProx", "adaprox", {}),
    ("AdaDrop gauss+AR", "adaptive_dropout", {"mask": "gaussian", "additive": True}),
    ("AdaDrop bern+AR", "adaptive_dropout", {"mask": "bernoulli", "additive": True}),
    ("AdaDrop gauss", "adaptive_dropout", {"mask": "gaussian", "additive": False}),
]
FILES = ["tikhonov.csv", "tikhonov.md", "theorem1.csv", "theorem1.md", "theorem1.png"]


def tikhonov_table(problem) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    w = rng.normal(size=problem.d)
    rows = []
    for alpha_low in (0.5, 0.2):
        alpha = rng.uniform(alpha_low, 1.0, size=problem.d)
        for mask in ("gaussian", "bernoulli"):
            mc = monte_carlo_dropout_loss(problem, w, alpha, mask=mask, samples=200_000, seed=7)
            rows.append(
                {
                    "mask": mask,
                    "alpha range": f"[{alpha_low}, 1]",
                    "closed form": mc.closed_form,
                    "Monte Carlo": mc.mean,
                    "99% low": mc.low,
                    "99% high": mc.high,
                    "contains": mc.contains_closed_form,
                    "samples": mc.samples,
                }
            )
    return pd.DataFrame(rows)


def theorem1(problem, support, iterations: int):
    rows, histories = [], {}
    for name, lam, params in CASES:
        ref = fit(problem.X, problem.y, name, lam, "irls", **params)
        start = ridge_start(problem, lam)
        true = np.zeros(problem.d, bool)
        true[support] = True
        track = {
            "distance": lambda w, r=ref.w: float(np.linalg.norm(w - r) / np.linalg.norm(r)),
            "support_errors": lambda w, p=ref.penalty, l=lam: int(np.sum(keep_mask(p, l, w) != true)),
        }
        irls_run = fit(problem.X, problem.y, name, lam, "irls", w0=start, track=track, **params)
        histories[(name, "IRLS")] = irls_run.history
        rows.append(_row(name, lam, params, "IRLS", irls_run, ref, 0.0))
        for label, solver, options in METHODS:
            t = time.perf_counter()
            run = fit(
                problem.X,
                problem.y,
                name,
                lam,
                solver,
                w0=start,
                max_iter=iterations,
                tol=0.0 if solver == "adaptive_dropout" else 1e-10,
                record_every=max(iterations // 400, 1),
                track=track,
                **params,
                **options,
            )
            histories[(name, label)] = run.history
            rows.append(_row(name, lam, params, label, run, ref, time.perf_counter() - t))
        print(f"  {name}: done", flush=True)
    return pd.DataFrame(rows), histories


def _row(name, lam, params, label, run, ref, seconds):
    same = np.array_equal(run.keep_mask(), ref.keep_mask())
    return {
        "penalty": name,
        "params": ",".join(f"{k}={v}" for k, v in params.items()),
        "lam": lam,
        "method": label,
        "iterations": int(run.history.iteration.iloc[-1]),
        "distance to IRLS": float(np.linalg.norm(run.w - ref.w) / np.linalg.norm(ref.w)),
        "same support": same,
        "kept": int(run.keep_mask().sum()),
        "IRLS kept": int(ref.keep_mask().sum()),
        "objective gap": run.objective - ref.objective,
        "seconds": round(seconds, 2),
    }


def plot(histories, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [c[0] for c in CASES]
    fig, axes = plt.subplots(3, len(names), figsize=(3.1 * len(names), 8.2), sharex=True)
    for j, name in enumerate(names):
        base = histories[(name, "IRLS")].objective.iloc[-1]
        for label in ["IRLS"] + [m[0] for m in METHODS]:
            h = histories[(name, label)]
            x = h.iteration.clip(lower=1)
            style = {"lw": 2.2, "color": "k"} if label == "IRLS" else {"lw": 1.2}
            axes[0, j].plot(x, (h.objective - base).clip(lower=1e-16), label=label, **style)
            axes[1, j].plot(x, h.distance.clip(lower=1e-16), **style)
            axes[2, j].plot(x, h.support_errors, **style)
        axes[0, j].set_title(name)
        for ax, scale in zip(axes[:, j], ("log", "log", "linear")):
            ax.set_xscale("log")
            ax.set_yscale(scale)
            ax.grid(alpha=0.3)
        axes[2, j].set_xlabel("iteration")
    axes[0, 0].set_ylabel("objective - IRLS optimum")
    axes[1, 0].set_ylabel("||w - w_IRLS|| / ||w_IRLS||")
    axes[2, 0].set_ylabel("support errors vs truth")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(
        "Theorem 1: adaptive dropout beside the IRLS solution of its effective penalty "
        "(same start; support: keep probability >= 0.05)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="output folder (default: new folder under outputs/linear_duality/)")
    parser.add_argument("--iterations", type=int, default=100_000, help="iterations of the stochastic methods")
    args = parser.parse_args()
    out = claim(args.out, FILES) if args.out else new_folder("linear_duality")
    data = make_sparse_regression(n=200, d=50, k=5, signal=1.0, noise=0.1, seed=0)
    t0 = time.perf_counter()
    tik = tikhonov_table(data.problem)
    print(tik.to_string(index=False))
    table, histories = theorem1(data.problem, data.support, args.iterations)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    note = (
        f"Problem: n=200, d=50, k=5, signal 1, noise 0.1, seed 0, standardised columns. "
        f"Stochastic methods: {args.iterations} iterations, steps rho_t = rho_0 / (1 + t / (T/20)). "
        f"Machine: {platform.machine()}, Python {platform.python_version()}; commit {commit or 'unknown'}; "
        f"{time.perf_counter() - t0:.0f} s in all."
    )
    tik.to_csv(out / "tikhonov.csv", index=False)
    (out / "tikhonov.md").write_text(markdown.table(tik, ".4f"))
    table.to_csv(out / "theorem1.csv", index=False)
    (out / "theorem1.md").write_text(markdown.table(table, ".3g") + f"\n{note}\n")
    plot(histories, out / "theorem1.png")
    print(table.to_string(index=False))
    print(note)
    print(f"wrote {', '.join(str(out / f) for f in FILES)}")


if __name__ == "__main__":
    main()
