"""Is a method the same as another at the same lam? Paired equivalence of test error over seeds (two one-sided
tests) and the overlap of the weights each keeps, per layer.

    python scripts/equivalence.py SWEEP [SWEEP ...] --reference logsum [--margin 0.001] [--out FOLDER]

Every completed run under the SWEEPs is grouped by its report label (adrop.report.collect.labels: the method and
what tells its runs apart). The group named by --reference (a label, or a method with one group) is compared with
every other group, pairing runs by seed: the same seed gives the same batches and, for methods that add no random
parameters (LogSum, adaptive dropout), the same initial weights, so the paired difference has less spread than two
independent means. For each other group, into --out (never over
existing files):

  differences.csv  per seed: each run's test error and fraction nonzero, the difference (other - reference)
  tost.csv         per group: n, mean and standard deviation of the paired differences, the 95% interval (t), the
                   90% interval, the p-values of the two one-sided tests of H0: difference <= -margin and
                   H0: difference >= +margin (scipy.stats.ttest_1samp), p_tost (the larger), equivalent (p_tost <
                   0.05, that is the 90% interval inside +-margin), and the smallest margin the data would support
                   (the 90% interval's larger bound in absolute value)
  jaccard.csv      per seed and layer: the weights each run keeps (nonzero in weights.npz), their Jaccard overlap
                   |A and B| / |A or B|, and the overlap two independent draws of those sizes would have on average
                   (pa pb / (pa + pb - pa pb)), for scale

The margin is in test error (0.001 is 0.1 points).
"""
from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from adrop.outputs import claim
from adrop.report import collect
from adrop.train import run_files

FILES = ["differences.csv", "tost.csv", "jaccard.csv"]


def tost(differences, margin: float) -> dict:
    """Two one-sided t-tests that the mean of `differences` lies within +-margin, with the intervals beside them."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    mean, std = d.mean(), d.std(ddof=1)
    se = std / np.sqrt(n)
    ci95 = stats.t.interval(0.95, n - 1, loc=mean, scale=se) if se > 0 else (mean, mean)
    ci90 = stats.t.interval(0.90, n - 1, loc=mean, scale=se) if se > 0 else (mean, mean)
    if se > 0:
        p_lower = stats.ttest_1samp(d, -margin, alternative="greater").pvalue
        p_upper = stats.ttest_1samp(d, margin, alternative="less").pvalue
    else:  # no spread: equivalent exactly when the one difference lies inside the margin
        p_lower, p_upper = float(mean <= -margin), float(mean >= margin)
    p = max(p_lower, p_upper)
    return {"n": n, "mean": mean, "std": std, "ci95_low": ci95[0], "ci95_high": ci95[1], "ci90_low": ci90[0],
            "ci90_high": ci90[1], "margin": margin, "p_lower": p_lower, "p_upper": p_upper, "p_tost": p,
            "equivalent": bool(p < 0.05), "smallest_margin": max(abs(ci90[0]), abs(ci90[1]))}


def jaccard(a: np.ndarray, b: np.ndarray) -> dict:
    """The overlap of the nonzero entries of two arrays of one shape, and what independent draws would give."""
    ka, kb = a != 0, b != 0
    union = np.logical_or(ka, kb).sum()
    pa, pb = ka.mean(), kb.mean()
    independent = pa * pb / (pa + pb - pa * pb) if pa + pb > 0 else float("nan")
    return {"kept_reference": int(ka.sum()), "kept_other": int(kb.sum()),
            "jaccard": np.logical_and(ka, kb).sum() / union if union else float("nan"),
            "jaccard_if_independent": independent}


def load_weights(folder: Path) -> dict[str, np.ndarray]:
    """The weight matrices and kernels of a run's weights.npz (biases and normalisation scales left out)."""
    return {k: v for k, v in run_files.read_weights(folder).items() if k.endswith("weight") and v.ndim >= 2}


def compare(table: pd.DataFrame, base: Path, reference: str, margin: float):
    table = table[table.status == "completed"].assign(label=lambda t: collect.labels(t))
    names = set(table.label)
    if reference not in names:  # a method name with one group
        matching = sorted(set(table[table.method == reference].label))
        if len(matching) != 1:
            raise ValueError(f"--reference {reference!r} names {len(matching)} groups of completed runs; "
                             f"the groups: {', '.join(sorted(names))}")
        reference = matching[0]
    for label, rows in table.groupby("label"):
        if rows.seed.duplicated().any():
            raise ValueError(f"the group {label!r} has two runs of one seed (the same sweep given twice?)")
    ref = table[table.label == reference].set_index("seed")
    differences, summaries, overlaps = [], [], []
    for label, rows in table[table.label != reference].groupby("label"):
        rows = rows.set_index("seed")
        seeds = sorted(set(rows.index) & set(ref.index))
        if len(seeds) < 2:
            print(f"equivalence: {label}: {len(seeds)} seed(s) in common with the reference, skipped", file=sys.stderr)
            continue
        pair = pd.DataFrame({"group": label, "reference": reference, "seed": seeds,
                             "test_error_reference": ref.loc[seeds, "test_error"].to_numpy(float),
                             "test_error_other": rows.loc[seeds, "test_error"].to_numpy(float),
                             "nonzero_reference": ref.loc[seeds, "nonzero_fraction"].to_numpy(float),
                             "nonzero_other": rows.loc[seeds, "nonzero_fraction"].to_numpy(float)})
        pair["difference"] = pair.test_error_other - pair.test_error_reference
        differences.append(pair)
        summaries.append({"group": label, "reference": reference, **tost(pair.difference, margin)})
        for seed in seeds:
            wa, wb = load_weights(base / ref.loc[seed, "run"]), load_weights(base / rows.loc[seed, "run"])
            for layer in sorted(set(wa) & set(wb)):
                overlaps.append({"group": label, "reference": reference, "seed": seed, "layer": layer,
                                 **jaccard(wa[layer], wb[layer])})
    if not summaries:
        raise ValueError("no group shares two or more seeds with the reference")
    return pd.concat(differences, ignore_index=True), pd.DataFrame(summaries), pd.DataFrame(overlaps)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sweeps", type=Path, nargs="+")
    parser.add_argument("--reference", required=True, help="the label (or method) of the reference group")
    parser.add_argument("--margin", type=float, default=0.001, help="equivalence margin in test error (0.001: 0.1 points)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    try:
        table = collect.results(args.sweeps)
        frames = compare(table, collect.base(args.sweeps), args.reference, args.margin)
        out = claim(args.out, FILES) if args.out else None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:  # a folder, a weights.npz, --out
        print(f"equivalence: error: {err}", file=sys.stderr)
        return 2
    _, summary, overlaps = frames
    with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
        print(summary.to_string(index=False))
        if not overlaps.empty:
            print(overlaps.groupby(["group", "layer"])[["jaccard", "jaccard_if_independent"]].mean().to_string())
    if out is not None:
        for name, frame in zip(FILES, frames):
            frame.to_csv(out / name, index=False)
            print(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
