"""Is a method the same as another at the same lam? Paired equivalence of test error over seeds (two one-sided
tests) and the overlap of the weights each keeps, per layer.

    adrop report --equivalence logsum SWEEP [SWEEP ...] [--margin 0.001] [--out FOLDER] [--pool EARLIER_OUT ...]
    python -m adrop.report.equivalence SWEEP [SWEEP ...] --reference logsum ...   (the same; no --out: no files)

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

Prints the page's two tables in markdown (mean ± std over seeds). The margin is in test error (0.001 is 0.1 points).
--pool adds the per-seed rows of an earlier --out folder (its differences.csv and jaccard.csv) to the new runs' before
the tests, so seeds trained in separate batches (whose run folders are gone) are tested together; a seed of a group
found twice is refused.
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
from adrop.train.run_folder import run_files

FILES = ["differences.csv", "tost.csv", "jaccard.csv"]
OVERLAP_COLUMNS = [
    "group",
    "reference",
    "seed",
    "layer",
    "kept_reference",
    "kept_other",
    "jaccard",
    "jaccard_if_independent",
]


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
    return {
        "n": n,
        "mean": mean,
        "std": std,
        "ci95_low": ci95[0],
        "ci95_high": ci95[1],
        "ci90_low": ci90[0],
        "ci90_high": ci90[1],
        "margin": margin,
        "p_lower": p_lower,
        "p_upper": p_upper,
        "p_tost": p,
        "equivalent": bool(p < 0.05),
        "smallest_margin": max(abs(ci90[0]), abs(ci90[1])),
    }


def jaccard(a: np.ndarray, b: np.ndarray) -> dict:
    """The overlap of the nonzero entries of two arrays of one shape, and what independent draws would give."""
    ka, kb = a != 0, b != 0
    union = np.logical_or(ka, kb).sum()
    pa, pb = ka.mean(), kb.mean()
    independent = pa * pb / (pa + pb - pa * pb) if pa + pb > 0 else float("nan")
    return {
        "kept_reference": int(ka.sum()),
        "kept_other": int(kb.sum()),
        "jaccard": np.logical_and(ka, kb).sum() / union if union else float("nan"),
        "jaccard_if_independent": independent,
    }


def load_weights(folder: Path) -> dict[str, np.ndarray]:
    """The weight matrices and kernels of a run's weights.npz (biases and normalisation scales left out)."""
    return {k: v for k, v in run_files.read_weights(folder).items() if k.endswith("weight") and v.ndim >= 2}


def pair_runs(table: pd.DataFrame, base: Path, reference: str):
    """Per seed, each group's run against the reference's: the test errors and their difference, and per layer the
    overlap of the weights each keeps."""
    table = table[table.status == "completed"].assign(label=lambda t: collect.labels(t))
    names = set(table.label)
    if reference not in names:  # a method name with one group
        matching = sorted(set(table[table.method == reference].label))
        if len(matching) != 1:
            raise ValueError(
                f"--reference {reference!r} names {len(matching)} groups of completed runs; "
                f"the groups: {', '.join(sorted(names))}"
            )
        reference = matching[0]
    for label, rows in table.groupby("label"):
        if rows.seed.duplicated().any():
            raise ValueError(f"the group {label!r} has two runs of one seed (the same sweep given twice?)")
    ref = table[table.label == reference].set_index("seed")
    differences, overlaps = [], []
    for label, rows in table[table.label != reference].groupby("label"):
        rows = rows.set_index("seed")
        seeds = sorted(set(rows.index) & set(ref.index))
        if not seeds:
            print(f"equivalence: {label}: no seed in common with the reference, skipped", file=sys.stderr)
            continue
        pair = pd.DataFrame(
            {
                "group": label,
                "reference": reference,
                "seed": seeds,
                "test_error_reference": ref.loc[seeds, "test_error"].to_numpy(float),
                "test_error_other": rows.loc[seeds, "test_error"].to_numpy(float),
                "nonzero_reference": ref.loc[seeds, "nonzero_fraction"].to_numpy(float),
                "nonzero_other": rows.loc[seeds, "nonzero_fraction"].to_numpy(float),
            }
        )
        pair["difference"] = pair.test_error_other - pair.test_error_reference
        differences.append(pair)
        for seed in seeds:
            wa, wb = load_weights(base / ref.loc[seed, "run"]), load_weights(base / rows.loc[seed, "run"])
            for layer in sorted(set(wa) & set(wb)):
                overlaps.append(
                    {
                        "group": label,
                        "reference": reference,
                        "seed": seed,
                        "layer": layer,
                        **jaccard(wa[layer], wb[layer]),
                    }
                )
    if not differences:
        raise ValueError("no group shares a seed with the reference")
    return pd.concat(differences, ignore_index=True), pd.DataFrame(overlaps, columns=OVERLAP_COLUMNS)


def pool(differences: pd.DataFrame, overlaps: pd.DataFrame, earlier: list[Path]):
    """The new per-seed rows joined with those of earlier outputs of this script, which must name the same reference
    and groups (labels the runs' settings make: a batch that varied other settings labels its groups otherwise);
    a (group, seed) twice is refused."""
    reference, groups = set(differences.reference), set(differences.group)
    for folder in earlier:
        before = pd.read_csv(folder / "differences.csv")
        if set(before.reference) != reference:
            raise ValueError(
                f"{folder}: its reference {', '.join(sorted(set(before.reference)))!r} is not the "
                f"runs' {', '.join(sorted(reference))!r}"
            )
        if set(before.group) - groups:
            raise ValueError(f"{folder}: its group {sorted(set(before.group) - groups)[0]!r} is none of the runs'")
        differences = pd.concat([before, differences], ignore_index=True)
        overlaps = pd.concat([pd.read_csv(folder / "jaccard.csv"), overlaps], ignore_index=True)
    twice = differences[differences.duplicated(["group", "seed"])]
    if not twice.empty:
        raise ValueError(
            f"seed {twice.seed.iloc[0]} of {twice.group.iloc[0]!r} is both in the runs and in --pool "
            f"(or twice in --pool)"
        )
    order = ["group", "reference", "seed"]
    return (
        differences.sort_values(order, ignore_index=True),
        overlaps.sort_values(order + ["layer"], ignore_index=True) if not overlaps.empty else overlaps,
    )


def summarise(differences: pd.DataFrame, margin: float) -> pd.DataFrame:
    """The two one-sided tests per group, over its paired differences (groups of fewer than two seeds left out)."""
    summaries = []
    for (label, reference), pair in differences.groupby(["group", "reference"], sort=True):
        if len(pair) < 2:
            print(f"equivalence: {label}: {len(pair)} seed in common with the reference, skipped", file=sys.stderr)
            continue
        summaries.append({"group": label, "reference": reference, **tost(pair.difference, margin)})
    if not summaries:
        raise ValueError("no group shares two or more seeds with the reference")
    return pd.DataFrame(summaries)


def markdown(differences: pd.DataFrame, summary: pd.DataFrame, overlaps: pd.DataFrame) -> str:
    """The two tables of a results page: test errors with the tests (in points: percent of test error), and the
    sparsity and per-layer overlap (mean ± std over seeds)."""

    def pm(values, scale=1.0, digits=2):
        return f"{scale * values.mean():.{digits}f} ± {scale * values.std(ddof=1):.{digits}f}"

    lines = [
        "| group | seeds | its test error (%) | the reference's (%) | paired difference (points) | 95% interval "
        "| 90% interval | TOST p | smallest margin supported (points) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in summary.iterrows():
        d = differences[differences.group == r.group]
        lines.append(
            f"| {r.group} | {r.n} | {pm(d.test_error_other, 100)} | {pm(d.test_error_reference, 100)} | "
            f"{100 * r['mean']:+.2f} ± {100 * r['std']:.2f} | "
            f"[{100 * r.ci95_low:+.2f}, {100 * r.ci95_high:+.2f}] "
            f"| [{100 * r.ci90_low:+.2f}, {100 * r.ci90_high:+.2f}] | {r.p_tost:.3f} | "
            f"{100 * r.smallest_margin:.2f} |"
        )
    layers = sorted(set(overlaps.layer))
    lines += [
        "",
        "| group | nonzero (its) | nonzero (the reference's) | "
        + " | ".join(f"{layer} Jaccard" for layer in layers)
        + " | independent draws |",
        "|---|---|---|" + "---|" * len(layers) + "---|",
    ]
    for group in summary.group:
        d, o = differences[differences.group == group], overlaps[overlaps.group == group]
        by_layer = [o[o.layer == layer] for layer in layers]
        lines.append(
            f"| {group} | {pm(d.nonzero_other, digits=4)} | {pm(d.nonzero_reference, digits=4)} | "
            + " | ".join(pm(x.jaccard, digits=3) for x in by_layer)
            + " | "
            + " / ".join(f"{x.jaccard_if_independent.mean():.3f}" for x in by_layer)
            + " |"
        )
    return "\n".join(lines)


def compute(sweeps: list[Path], reference: str, margin: float, pools: list[Path]) -> tuple[str, tuple]:
    """The tables in markdown, and the frames of FILES; OSError, ValueError, KeyError or zipfile.BadZipFile where a
    folder or a weights.npz cannot serve."""
    table = collect.results(sweeps)
    differences, overlaps = pool(*pair_runs(table, collect.base(sweeps), reference), pools)
    summary = summarise(differences, margin)
    return markdown(differences, summary, overlaps), (differences, summary, overlaps)


def write(folder: Path, frames: tuple) -> list[Path]:
    """FILES into `folder` (FileExistsError where one is there already)."""
    folder = claim(folder, FILES)
    for name, frame in zip(FILES, frames):
        frame.to_csv(folder / name, index=False)
    return [folder / name for name in FILES]


def run(sweeps: list[Path], reference: str, margin: float, out: Path | None, pools: list[Path]) -> tuple[str, list]:
    """The tables in markdown, and the files written into `out` (none where it is None)."""
    if out is not None:
        claim(out, FILES)  # taken: refused before the work
    text, frames = compute(sweeps, reference, margin, pools)
    return text, write(out, frames) if out is not None else []


ERRORS = (OSError, ValueError, KeyError, zipfile.BadZipFile)  # a folder, a weights.npz, --out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sweeps", type=Path, nargs="+")
    parser.add_argument("--reference", required=True, help="the label (or method) of the reference group")
    parser.add_argument(
        "--margin", type=float, default=0.001, help="equivalence margin in test error (0.001: 0.1 points)"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--pool",
        type=Path,
        action="append",
        default=[],
        metavar="EARLIER_OUT",
        help="an earlier --out folder whose per-seed rows join the new runs' (repeatable)",
    )
    args = parser.parse_args(argv)
    try:
        text, written = run(args.sweeps, args.reference, args.margin, args.out, args.pool)
    except ERRORS as err:
        print(f"equivalence: error: {err}", file=sys.stderr)
        return 2
    print(text)
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
