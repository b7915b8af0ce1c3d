"""lam_search's rounds replayed against measured curves: where would a search land, round by round, under a rule?

    python scripts/studies/lam_search_replay.py docs/results/matched_sparsity/0.02/* [--target 0.02]
        [--full-over-short 0.4,0.8 ...]
    python scripts/studies/lam_search_replay.py docs/results/lam_search/bench_lam_search_a46ef5f/*.csv
    python scripts/studies/lam_search_replay.py docs/results/matched_sparsity/0.02/* --beyond-slope 0.5 1 1.5

Each folder holds a method's search tables (search*.csv, from `scripts/reproduce/matched_sparsity.sh`), or each file is
one: one combination, searched with short and full runs. Its completed runs (reused ones too) are its curves: the short
runs' nonzero fraction against lam, and the full runs'. The replay runs the sweeper's own `round_jobs` round after
round; a proposed lam's nonzero fraction is read off the measured curve of its phase, linearly in log nonzero against
log lam between measured points, and beyond them along the secant of all of them, its slope times `--beyond-slope` (a
replay is as good as the curve there: a lam outside the measured points is a guess, marked, and the factor shows how
much the answer leans on it). Prints, per method, spread of the first full round (FULL_OVER_SHORT) and factor, the round
that lands within tolerance, the runs, the full runs' lams and what each kept, and how far outside the measured range
any proposed lam lay.
"""

import argparse
import importlib
import math
from pathlib import Path

import numpy as np
import pandas as pd

from hydra_plugins.adrop_plugins.search_table import read_search_tables, search_tables


def tables(path: Path) -> list[Path]:
    """A search table itself, or a folder's (search.csv, search.2.csv, ...)."""
    return [path] if path.is_file() else search_tables(path)


def table_of(path: Path) -> pd.DataFrame:
    """A search table itself, or a folder's (search.csv, search.2.csv, ...) with each run once."""
    if path.is_file():
        return pd.read_csv(path)
    return pd.DataFrame(read_search_tables(path)).astype({"epochs": int, "lam": float, "nonzero_fraction": float})


def curves(path: Path) -> tuple[int, int, dict]:
    """The full and short epochs of a search, and its measured curves: phase -> (log lam, log nonzero, the least lam
    that kept nothing)."""
    table = table_of(path)
    table = table[table.status == "completed"]
    if table.combination.nunique() != 1 or table.epochs.nunique() != 2:
        raise SystemExit(
            f"{path}: a replay needs one combination searched with short and full runs; it has "
            f"{table.combination.nunique()} combinations at epochs {sorted(table.epochs.unique())}"
        )
    full, short = int(table.epochs.max()), int(table.epochs.min())
    out = {}
    for phase, epochs in (("full", full), ("short", short)):
        rows = table[table.epochs == epochs].groupby("lam", as_index=False).nonzero_fraction.mean().sort_values("lam")
        nothing = rows.lam[rows.nonzero_fraction <= 0].min()  # log-log has no place for it: read off as a step
        rows = rows[rows.nonzero_fraction > 0]
        out[phase] = (np.log(rows.lam.to_numpy()), np.log(rows.nonzero_fraction.to_numpy()), nothing)
    return full, short, out


def read_off(curve, lam: float, beyond: float = 1.0) -> tuple[float, float]:
    """The curve's nonzero fraction at lam, and how far (a factor) outside its measured lams lam lies (1: inside).
    Between measured points linear in log-log; beyond them along the secant of all of them (two close points' slope
    is their roughness, not the curve's), its slope times `beyond`; from the least lam that kept nothing on, nothing."""
    x, y, nothing = curve
    if lam >= nothing:
        return 0.0, 1.0
    t = math.log(lam)
    if x[0] <= t <= x[-1]:
        return float(np.exp(np.interp(t, x, y))), 1.0
    slope = beyond * ((y[-1] - y[0]) / (x[-1] - x[0]) if len(x) > 1 else -1.0)
    end = 0 if t < x[0] else -1
    return float(min(1.0, np.exp(y[end] + slope * (t - x[end])))), math.exp(abs(t - x[end]))


def replay(lam_search, folder: Path, target: float, rounds: int, beyond: float = 1.0) -> dict:
    full_epochs, short_epochs, measured = curves(folder)
    sweeper = lam_search.LamSearchSweeper(target_nonzero=target, rounds=rounds)
    plan = lam_search.Plan(["replay"], False, full_epochs, 1.0, short_epochs)
    runs, outside, full_runs = 0, 1.0, []
    for round_ in range(1, rounds + 1):
        jobs = sweeper.round_jobs(plan, round_)
        if not jobs:
            break
        for phase, lam, _ in jobs:
            kept, off = read_off(measured[phase], lam, beyond)
            runs, outside = runs + 1, max(outside, off)
            (plan.short if phase == "short" else plan.full).append((lam, kept, {}))
            if phase == "full":
                full_runs.append((round_, lam, kept))
        plan.last_phase = jobs[-1][0]
        if any(sweeper.within(kept) for _, kept, _ in plan.full):
            return {"landed": round_, "runs": runs, "full": full_runs, "outside": outside}
    return {"landed": None, "runs": runs, "full": full_runs, "outside": outside}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--target", type=float, default=0.02)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--full-over-short",
        nargs="+",
        default=None,
        help="first full round's spread, as factors of the short runs' guess, for example 0.4,0.8 "
        "(several: compared; default the sweeper's FULL_OVER_SHORT)",
    )
    parser.add_argument(
        "--beyond-slope",
        nargs="+",
        type=float,
        default=[1.0],
        help="the secant's slope beyond the measured lams times these factors (several: compared)",
    )
    args = parser.parse_args()
    lam_search = importlib.import_module("hydra_plugins.adrop_plugins.lam_search")
    spreads = (
        [tuple(float(f) for f in s.split(",")) for s in args.full_over_short]
        if args.full_over_short
        else [lam_search.FULL_OVER_SHORT]
    )
    print(f"target {args.target:g}, at most {args.rounds} rounds; full runs as round: lam -> nonzero")
    for folder in args.folders:
        found = tables(folder)
        if not found or "method=magnitude_pruning" in "".join(pd.read_csv(found[0]).combination):
            continue  # magnitude pruning takes the target directly: nothing to replay
        for beyond in args.beyond_slope:
            for spread in spreads:
                lam_search.FULL_OVER_SHORT = spread
                r = replay(lam_search, folder, args.target, args.rounds, beyond)
                landed = f"round {r['landed']}" if r["landed"] else f"missed in {args.rounds}"
                full = ", ".join(f"{n}: {lam:.3g} -> {kept:.4f}" for n, lam, kept in r["full"])
                guess = "" if r["outside"] < 1.05 else f"; a lam {r['outside']:.2f}x outside the measured ones"
                slope = "" if args.beyond_slope == [1.0] else f" slope x{beyond:g}"
                print(
                    f"{folder.stem:18s} {spread[0]:g}-{spread[1]:g}{slope}: {landed}, {r['runs']} runs; {full}{guess}"
                )


if __name__ == "__main__":
    main()
