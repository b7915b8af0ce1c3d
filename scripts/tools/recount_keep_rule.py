"""Recount finished runs with the paper's keep rule: which weights count as nonzero when alpha = eta_hat(w) /
(eta_hat(w) + lam) >= 0.05, and the test error of the network masked so; for runs of the eta_hat methods (adaprox,
adatikhonov, logsum) whose own rule kept a superset of those weights, as AdaProx's `authors_keep_rule=true` does
(alpha = eta_hat / (eta_hat + rho lam), rho < 1). Works from weights.npz alone: a weight the run's rule dropped is 0
there, and eta_hat(0) = 0 drops it under the paper's rule too.

    python scripts/tools/recount_keep_rule.py RUN_FOLDER... [--data DIR]

Prints per run its own nonzero fraction and test error (summary.json) beside the recount's, and per layer the
recounted fractions. A run trained with the paper's rule recounts to its own numbers exactly (the check that the
script computes what training computes).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from adrop import keep_rule, penalties
from adrop.export import csr, csr_predict, read, test_split


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("folders", nargs="+", type=Path)
    p.add_argument("--data", default=None, help="the data root, if not the runs' own")
    args = p.parse_args()
    print(f"{'run':<70}{'own nonzero':>12}{'own error':>10}{'paper nonzero':>14}{'paper error':>12}  per layer")
    for folder in args.folders:
        run = read(folder)
        params = run.config.method.params
        pen = penalties.get(params.penalty, **dict(params.penalty_params))
        lam = float(run.summary["lam"])
        masked, kept, total, layers = {}, 0, 0, []
        for name in run.names:
            w, b = run.weights[name]
            keep = keep_rule.kept(pen.eta_hat(w.astype(np.float64)), lam)
            masked[name] = (np.where(keep, w, 0).astype(np.float32), b)
            kept, total = kept + int(keep.sum()), total + keep.size
            layers.append(f"{keep.mean():.3f}")
        x, y, image = test_split(run, args.data)
        logits = csr_predict(csr(dataclasses.replace(run, weights=masked)), x, image)  # as `adrop export` checks
        error = float(np.mean(logits.argmax(1) != y))
        own = run.summary
        print(
            f"{str(folder)[-70:]:<70}{own['nonzero_fraction']:>12.4f}{own['test_error']:>10.4f}"
            f"{kept / total:>14.4f}{error:>12.4f}  {' / '.join(layers)}",
            flush=True,
        )


if __name__ == "__main__":
    main()
