"""One run with a target sparsity (`adrop train target_nonzero=0.1`) against lam_search's runs at the lam it found, per
method and seed, from the committed results (docs/results/target_sparsity.md):

    python scripts/reproduce/target_against_search.py

Per method: the kept fraction and test error of each seed, both ways; the paired difference in test error (target
minus search: mean, sample standard deviation, a paired t-test's two-sided p); what each cost: the search's runs on
seed 0 and their training seconds (summary.json's wall time) against one run's.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[2]
SEARCH = ROOT / "docs" / "results" / "vit_tiny" / "matched_0.1"
TARGET = ROOT / "docs" / "results" / "target_sparsity" / "vit_tiny_0.1"
METHODS = ("logsum", "adaprox", "adaptive_dropout")


def searched(results: pd.DataFrame, method: str) -> pd.DataFrame:
    """The search's answer: seeds 0-2 at the lam it then trained seeds 1 and 2 with."""
    rows = results[(results.method == method) & (results.status == "completed")]
    lam = rows[rows.seed == 1].lam.iloc[0]
    return rows[rows.lam == lam].set_index("seed").sort_index()


def main() -> None:
    search = pd.read_csv(SEARCH / "results.csv")
    trials = pd.read_csv(SEARCH / "search.csv")
    target = pd.read_csv(TARGET / "results.csv")
    print("method, seed: nonzero and test error, search -> target")
    for method in METHODS:
        found = searched(search, method)
        mine = target[target.method == method].set_index("seed").sort_index()
        for seed in found.index:
            a, b = found.loc[seed], mine.loc[seed]
            print(
                f"{method} seed {seed}: nonzero {a.nonzero_fraction:.4f} -> {b.nonzero_fraction:.4f}, "
                f"test error {a.test_error:.4f} -> {b.test_error:.4f}"
            )
        diff = mine.test_error - found.test_error
        paired = stats.ttest_rel(mine.test_error, found.test_error)
        tried = trials[trials.combination.str.startswith(f"method={method} ")]
        print(
            f"{method}: target - search test error {diff.mean():+.4f} (sd {diff.std(ddof=1):.4f}, paired t p "
            f"{paired.pvalue:.3f}, n {len(diff)}); search {len(tried)} runs on seed 0, {tried.wall_time_s.sum():.0f} s "
            f"of training; one target run {mine.wall_time_s.mean():.0f} s (mean of {len(mine)})"
        )


if __name__ == "__main__":
    main()
