"""Every method at one sparsity: the table of scripts/reproduce/matched_sparsity.sh's results, from their files.

    adrop report --matched FOLDER [FOLDER ...] --target 0.02 [--epochs 200] [--tolerance 0.05] [--out DIR]

Each FOLDER holds one method's files: search*.csv (the lam search on seed 0, hydra/sweeper=lam_search's tables, one
per command into its folder; their union, a run once) and results.csv (`adrop report` of the method's folder: its
search/ sweep, with the other seeds the search trained, or a seeds/ sweep beside it). A method's runs are seed 0's full
run (--epochs, the sweep's EPOCHS) closest to the target, the rule lam_search answers with, and the other seeds'
full runs at that run's lam (for magnitude pruning, whose lam is unused, every full run of the other seeds). Per method
it gives the lam, the seeds, test error mean ± std and its 95% t interval, the nonzero fraction mean ± std, how many
runs are within tolerance of the target, and the search's cost: its rounds, its runs (short ones apart) and the epochs
it trained in units of one full run (a measure the machine's load does not move, unlike the wall time, which is given
beside it as the runs' summed wall_time_s). The cost is the last command's search, the runs of its table (a later
command into the folder replays the runs it reaches again; a fresh search at its code would take the same); where
earlier commands trained runs it did not reach (a search run again after its rule changed), what all of them spent is
given beside it. Runs a search reused from another (round 0, hydra.sweeper.reuse) cost it nothing; their number is
given. A method whose search brought no run within tolerance, or only one erring above --max-val-error on validation
(matched_sparsity.sh's MAX_VAL_ERROR: a network that failed at that sparsity), has no row: a line below the table
names it with its closest full run. Then each method against the one of least mean error: Welch's t-test on the
test errors (optimistic for the others, as the best is chosen after seeing the errors). `adrop report --matched` prints
the markdown table and writes the same as matched.csv.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from hydra_plugins.adrop_plugins.search_table import closest_full_run, failed, read_search_tables, search_tables

SEARCH_COLUMNS = {"round", "epochs", "lam", "nonzero_fraction", "test_error", "wall_time_s", "status", "folder"}
MATCHED_CSV = "matched.csv"
RESULTS_COLUMNS = {"run", "status", "method", "lam", "seed", "epochs", "test_error", "nonzero_fraction"}


def checked(table: pd.DataFrame, needed: set[str], what: str) -> pd.DataFrame:
    missing = needed - set(table.columns)
    if missing:
        raise ValueError(f"{what}: no column {', '.join(sorted(missing))}")
    return table


def method_runs(
    folder: Path, target: float, full: int, tolerance: float = 0.05, max_val_error: float = 0.5
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the method's runs at its lam, one row a seed; its search tables' runs, each once, `last` marking those of
    the last command's table)."""
    rows = read_search_tables(folder)  # every search*.csv, a run once
    if not rows:
        raise ValueError(f"no {folder}/search*.csv")
    search = checked(pd.DataFrame(rows), SEARCH_COLUMNS, f"{folder}/search*.csv")
    numbers = ["round", "epochs", "lam", "nonzero_fraction", "test_error", "wall_time_s"]
    search[numbers] = search[numbers].apply(pd.to_numeric, errors="coerce")  # the tables' text; a failed run's blanks
    tables = search_tables(folder)
    search.attrs["commands"] = len(tables)
    search["last"] = search["folder"].isin(pd.read_csv(tables[-1], dtype=str)["folder"])
    search["own"] = search["round"] > 0  # round 0: reused from another search (hydra.sweeper.reuse), trained there
    results = checked(pd.read_csv(folder / "results.csv"), RESULTS_COLUMNS, f"{folder}/results.csv")
    # lam_search's own answer, which matched_sparsity.sh trains at
    closest = closest_full_run(rows, target, full, tolerance=tolerance, max_val_error=max_val_error)
    if closest is None:
        raise ValueError(f"{folder}: its search has no completed full run ({full} epochs)")
    sweep_and_run = results["run"].map(lambda run: Path(run).parts[-2:])
    completed = (results["status"] == "completed") & (results["epochs"] == full)
    closest_run = ("search", Path(closest["folder"]).name)
    seed0 = results[completed & sweep_and_run.map(lambda parts: parts == closest_run).astype(bool)]
    if len(seed0) != 1:
        reused = str(closest.get("round")) == "0"
        raise ValueError(
            f"{folder}: results.csv has {len(seed0)} rows for the search's closest run"
            + (f" (reused from another search: {closest['folder']})" if reused else "")
        )
    # the other seeds: in the search's folder (its then_seeds), or a seeds/ sweep beside it (before then_seeds)
    seeds_sweep = sweep_and_run.map(lambda parts: parts[0] == "seeds").astype(bool)
    in_search = sweep_and_run.map(lambda parts: parts[0] == "search").astype(bool) & (results["seed"] != 0)
    others = results[completed & (in_search if (completed & in_search).any() else seeds_sweep)]  # one of the two
    if (others["method"] != "magnitude_pruning").any():  # magnitude pruning's lam is unused: its target is set
        others = others[np.isclose(others["lam"], float(closest["lam"]), rtol=1e-6, atol=0)]
    runs = pd.concat([seed0, others], ignore_index=True)
    if runs["seed"].duplicated().any():
        raise ValueError(f"{folder}: two runs of seed {runs['seed'][runs['seed'].duplicated()].iloc[0]} at its lam")
    return runs.sort_values("seed", ignore_index=True), search


def row(folder: Path, target: float, tolerance: float, full: int, max_val_error: float = 0.5) -> dict:
    runs, search = method_runs(folder, target, full, tolerance, max_val_error)
    seed0 = runs[runs["seed"] == 0].iloc[0]  # the search's closest run, whose lam the others trained at
    val0 = float(seed0["val_error"]) if "val_error" in runs else float("nan")
    within0 = bool(abs(float(seed0["nonzero_fraction"]) / target - 1) <= tolerance)
    reached = within0 and not failed({"val_error": None if np.isnan(val0) else val0}, max_val_error)
    errors = runs["test_error"].to_numpy(float)
    n = len(errors)
    mean, std = errors.mean(), errors.std(ddof=1) if n > 1 else float("nan")
    low, high = stats.t.interval(0.95, n - 1, loc=mean, scale=std / np.sqrt(n)) if n > 1 else (np.nan, np.nan)
    path = search[search["last"] & search["own"]]  # the last command's search
    lams = sorted(set(runs["lam"]))
    lam = lams[0] if len(lams) == 1 else ";".join(map(str, lams))
    if runs["method"].iloc[0] == "magnitude_pruning":  # its sparsity is set (final_sparsity = 1 - target), lam unused
        lam = "-"
    return {
        "method": runs["method"].iloc[0],
        "lam": lam,
        "seeds": n,
        "test_error": mean,
        "test_error_std": std,
        "ci95_low": low,
        "ci95_high": high,
        "nonzero": runs["nonzero_fraction"].mean(),
        "nonzero_std": runs["nonzero_fraction"].std(ddof=1),
        "within_tolerance": int((abs(runs["nonzero_fraction"] / target - 1) <= tolerance).sum()),
        "search_rounds": int(path["round"].max()) if len(path) else 0,
        "search_runs": len(path),
        "search_short_runs": int((path["epochs"] < full).sum()),
        "search_cost_full_runs": path["epochs"].sum() / full,
        "search_wall_s": path["wall_time_s"].sum(),
        "spent_runs": int(search["own"].sum()),
        "spent_cost_full_runs": search["epochs"][search["own"]].sum() / full,
        "spent_commands": search.attrs["commands"],
        "reused_runs": int((~search["own"]).sum()),
        "errors": ";".join(f"{e:.4f}" for e in errors),
        "reached": reached,
        "seed0_within": within0,
        "seed0_val_error": val0,
        "seed0_nonzero": float(seed0["nonzero_fraction"]),
        "seed0_test_error": float(seed0["test_error"]),
    }


def compute(
    folders: list[Path], target: float, tolerance: float = 0.05, epochs: int = 200, max_val_error: float = 0.5
) -> tuple[str, pd.DataFrame]:
    """(the markdown table with a line per method not brought to the target below it, every method's row); a
    ValueError where a folder cannot be read or no method reached the target."""
    try:
        every = pd.DataFrame([row(f, target, tolerance, epochs, max_val_error) for f in folders])
    except (OSError, KeyError) as err:
        raise ValueError(str(err)) from None
    every = every.sort_values("test_error", ignore_index=True)
    table, missed = every[every["reached"]].reset_index(drop=True), every[~every["reached"]]
    if table.empty:
        raise ValueError("no method reached the target")
    best = [float(e) for e in table.errors.iloc[0].split(";")]
    table["p_vs_best"] = [
        np.nan
        if i == 0 or len(best) < 2 or r.seeds < 2
        else stats.ttest_ind([float(e) for e in r.errors.split(";")], best, equal_var=False).pvalue
        for i, r in table.iterrows()
    ]
    lines = [
        f"| method | lam | seeds | test error | 95% interval | nonzero | within {100 * tolerance:g}% | "
        "p against the best | search: rounds, runs (short), cost in full runs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        p = "-" if np.isnan(r.p_vs_best) else f"{r.p_vs_best:.2g}"
        spent = (
            f"; {r.spent_commands} commands spent {r.spent_runs} runs, {r.spent_cost_full_runs:.2f}"
            if r.spent_runs > r.search_runs
            else ""
        ) + (f"; {r.reused_runs} reused" if r.reused_runs else "")
        lines.append(
            f"| {r.method} | {r.lam} | {r.seeds} | {100 * r.test_error:.2f}% ± {100 * r.test_error_std:.2f} | "
            f"[{100 * r.ci95_low:.2f}, {100 * r.ci95_high:.2f}] | {r.nonzero:.4f} ± {r.nonzero_std:.4f} | "
            f"{r.within_tolerance} of {r.seeds} | {p} | {r.search_rounds}, {r.search_runs} "
            f"({r.search_short_runs}), {r.search_cost_full_runs:.2f}{spent} |"
        )
    for _, r in missed.iterrows():
        why = (
            f"val error {100 * r.seed0_val_error:.2f}% above {100 * max_val_error:g}%"
            if r.seed0_within
            else f"not within {100 * tolerance:g}%"
        )
        val = "" if np.isnan(r.seed0_val_error) else f", val error {100 * r.seed0_val_error:.2f}%"
        lines.append(
            f"- {r.method}: not reached ({why}); the search's closest full run kept {r.seed0_nonzero:.4f} at lam "
            f"{r.lam}, test error {100 * r.seed0_test_error:.2f}%{val}; search: {r.search_rounds}, {r.search_runs} "
            f"({r.search_short_runs}), {r.search_cost_full_runs:.2f}"
        )
    return "\n".join(lines), pd.concat([table, missed], ignore_index=True)
