"""Do two sweeps of the same configurations land in the same place? Welch's t-test per method, old against new.

    python scripts/compare_sweeps.py OLD_SWEEP NEW_SWEEP [--out comparison.csv]

Either side may also be a committed results.csv (`adrop report`'s) in place of a sweep folder.

For each method present in both sweeps (completed runs only, any number of seeds each): the mean and standard
deviation of test_error, val_error and nonzero_fraction in each, their difference (new - old) and Welch's two-sided
p-value (scipy.stats.ttest_ind, equal_var=False; NaN where both sweeps have no spread). The table is printed and,
with --out, written as CSV. Used to show that a change of the reference engine moved no result (docs/).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
from scipy import stats

from adrop.report import collect

METRICS = ("test_error", "val_error", "nonzero_fraction")


def compare(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for method in sorted(set(old.method) & set(new.method)):
        a, b = old[old.method == method], new[new.method == method]
        for metric in METRICS:
            x, y = a[metric].astype(float), b[metric].astype(float)
            p = stats.ttest_ind(y, x, equal_var=False).pvalue if (x.std() > 0 or y.std() > 0) else float("nan")
            rows.append({"method": method, "metric": metric, "runs_old": len(x), "runs_new": len(y),
                         "mean_old": x.mean(), "std_old": x.std(), "mean_new": y.mean(), "std_new": y.std(),
                         "difference": y.mean() - x.mean(), "welch_p": p})
    return pd.DataFrame(rows)


def completed(folder: Path) -> pd.DataFrame:
    table = pd.read_csv(folder) if folder.suffix == ".csv" else collect.results([folder])
    return table[table.status == "completed"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    table = compare(completed(args.old), completed(args.new))
    if table.empty:
        print("compare_sweeps: no method has completed runs in both sweeps", file=sys.stderr)
        return 2
    with pd.option_context("display.width", 160, "display.float_format", "{:.4g}".format):
        print(table.to_string(index=False))
    if args.out:
        table.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
