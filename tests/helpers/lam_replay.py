"""lam_search's rounds replayed against measured curves: where a search lands, round by round, under the sweeper's
rules.

Each folder holds a method's search tables (search.csv, search.2.csv, ...): one combination, searched with short
and full runs. Its completed runs (reused ones too) are its curves: the short runs' nonzero
fraction against lam, and the full runs'. The replay runs the sweeper's own `round_jobs` round after round; a proposed
lam's nonzero fraction is read off the measured curve of its phase, linearly in log nonzero against log lam between
measured points, and beyond them along the secant of all of them, its slope times `beyond` (a replay is as good as the
curve there: a lam outside the measured points is a guess, and `outside` says how far).
"""

import math
from pathlib import Path

import numpy as np
import pandas as pd

from hydra_plugins.adrop_plugins.search_table import read_search_tables


def curves(path: Path) -> tuple[int, int, dict]:
    """The full and short epochs of a search (a folder's search tables, each run once), and its measured curves:
    phase -> (log lam, log nonzero, the least lam that kept nothing)."""
    table = pd.DataFrame(read_search_tables(path)).astype({"epochs": int, "lam": float, "nonzero_fraction": float})
    table = table[table.status == "completed"]
    if table.combination.nunique() != 1 or table.epochs.nunique() != 2:
        raise ValueError(
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
