"""Do two sets of runs of the same configurations land in the same place? `adrop report --compare OLD NEW`.

For each method with completed runs on both sides (any number of seeds each): the mean and standard deviation of
test_error, val_error and nonzero_fraction on each side, their difference (new - old), Welch's two-sided p-value
(scipy.stats.ttest_ind, equal_var=False) and, where the two sides share seeds, the paired t-test's over those seeds
(scipy.stats.ttest_rel: the same seed's runs, one change apart; 1 where no pair differs; none where a side has a
seed twice, several settings of a method, which cannot be paired). A p-value is NaN where neither side has spread.
Either side is a sweep or run folder (its runs) or a results.csv (`adrop report`'s, its runs' folders gone). Used to
show that a change of the reference engine moved no result (docs/results/).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

METRICS = ("test_error", "val_error", "nonzero_fraction")
COLUMNS = [
    "method",
    "metric",
    "runs_old",
    "runs_new",
    "mean_old",
    "std_old",
    "mean_new",
    "std_new",
    "difference",
    "welch_p",
    "pairs",
    "paired_p",
]


def completed(source: Path) -> pd.DataFrame:
    """The completed runs of a folder (adrop.report.collect) or of a results.csv."""
    from . import collect

    table = pd.read_csv(source) if source.suffix == ".csv" else collect.results([source])
    return table[table.status == "completed"]


def p_value(test, x, y) -> float:
    return float(test(y, x).pvalue) if (x.std() > 0 or y.std() > 0) else math.nan


def compare(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """One row per method and metric (COLUMNS), for the methods both tables have."""
    from scipy import stats

    rows = []
    for method in sorted(set(old.method) & set(new.method)):
        a, b = old[old.method == method], new[new.method == method]
        seeds = sorted(set(a.seed.dropna()) & set(b.seed.dropna())) if "seed" in a and "seed" in b else []
        if a.seed.duplicated().any() or b.seed.duplicated().any():  # several settings per seed: no pairs to make
            seeds = []
        pa = a.set_index("seed").loc[seeds] if seeds else None
        pb = b.set_index("seed").loc[seeds] if seeds else None
        for metric in METRICS:
            x, y = a[metric].astype(float), b[metric].astype(float)
            paired = math.nan
            if len(seeds) > 1:
                px, py = pa[metric].astype(float), pb[metric].astype(float)
                if (py - px).abs().sum() > 0:
                    paired = p_value(stats.ttest_rel, px, py)
                elif px.std() > 0:  # the runs vary, and not one pair differs
                    paired = 1.0
            rows.append(
                {
                    "method": method,
                    "metric": metric,
                    "runs_old": len(x),
                    "runs_new": len(y),
                    "mean_old": x.mean(),
                    "std_old": x.std(),
                    "mean_new": y.mean(),
                    "std_new": y.std(),
                    "difference": y.mean() - x.mean(),
                    "welch_p": p_value(lambda u, v: stats.ttest_ind(u, v, equal_var=False), x, y),
                    "pairs": len(seeds),
                    "paired_p": paired,
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def printed(table: pd.DataFrame) -> str:
    with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
        return table.to_string(index=False)
