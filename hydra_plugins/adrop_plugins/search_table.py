"""lam_search's table, search.csv: its columns, writing it, reading every table of a sweep folder, and the search's
answer (the full run closest to the target). Free of Hydra's imports, so that scripts read it without importing the
sweeper (whose class, imported before Hydra's plugin scan, would subclass a BasicSweeper the scan replaces)."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Optional

from adrop.outputs import create_new

SEARCH_CSV = "search.csv"  # the search's table in the sweep folder (search.2.csv, ... for later commands into it)
# round 0: runs reused from earlier searches (hydra.sweeper.reuse), their folders where those searches trained them
# macs_fraction: the compact network's multiply-adds over the dense network's (what hydra.sweeper.target_macs asks for)
COLUMNS = [
    "combination",
    "round",
    "epochs",
    "lr",
    "lam",
    "nonzero_fraction",
    "macs_fraction",
    "val_error",
    "test_error",
    "wall_time_s",
    "status",
    "folder",
]
MEASURES = {"nonzero": "nonzero_fraction", "macs": "macs_fraction"}  # what a search may target: its column


def columns(metric: str = "error") -> list[str]:
    """search.csv's columns for runs whose task's first metric is `metric` (val_rmse and test_rmse for regression,
    val_perplexity and test_perplexity for a language model; COLUMNS for classification)."""
    return [f"{c.split('_')[0]}_{metric}" if c in ("val_error", "test_error") else c for c in COLUMNS]


def write_search_table(sweep_dir: Path, rows: list[dict], fields: Optional[list[str]] = None) -> None:
    _, table = create_new(sweep_dir, SEARCH_CSV)  # another command's table into the same folder stays
    with table as fh:
        writer = csv.DictWriter(fh, fieldnames=fields or COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def closest_full_run(
    rows: list[dict],
    target: float,
    epochs: int,
    column: str = "nonzero_fraction",
    tolerance: Optional[float] = None,
    max_val_error: Optional[float] = None,
    val: str = "val_error",
) -> Optional[dict]:
    """The search's answer for one combination: of its completed full runs (`epochs`), the one whose `column` (the
    measure searched: MEASURES) is closest to the target; where the closest erred above max_val_error on validation (a
    network that failed) but another within `tolerance` (relative) did not, the closest of those. None where none
    completed. `rows` as in search.csv, numbers or their text; `val` its validation column."""
    if len({r["combination"] for r in rows}) > 1:
        raise ValueError("closest_full_run: rows of several combinations (the answer is one combination's)")
    full = sorted(
        (
            r
            for r in rows
            if int(r["epochs"]) == int(epochs) and r["status"] == "completed" and r.get(column) not in (None, "")
        ),
        key=lambda r: abs(float(r[column]) - target),
    )
    if full and max_val_error is not None and tolerance is not None and failed(full[0], max_val_error, val):
        healthy = [
            r
            for r in full
            if abs(float(r[column]) - target) <= tolerance * target and not failed(r, max_val_error, val)
        ]
        return (healthy or full)[0]
    return full[0] if full else None


def failed(row: dict, max_val_error: Optional[float], column: str = "val_error") -> bool:
    """Whether a run erred above max_val_error on validation (its `column`: the task's first metric; a network that
    failed at its sparsity; an error that is not a number counts as failed, a missing one not)."""
    if max_val_error is None or row.get(column) in (None, ""):
        return False
    val = float(row[column])
    return math.isnan(val) or val > max_val_error


def search_tables(sweep_dir: Path) -> list[Path]:
    """A sweep folder's search tables in the order the commands wrote them: search.csv, search.2.csv, ...,
    search.10.csv."""
    return sorted(sweep_dir.glob("search*.csv"), key=lambda t: (len(t.name), t.name))


def read_search_tables(sweep_dir: Path) -> list[dict]:
    """Every search table of a sweep folder (search.csv, search.2.csv, ...; a later command's replays earlier runs),
    each run once, as the latest table has it: rows as text, as csv reads them, each with `command`, the index of the
    table that first held it (the command that trained it; 0 for search.csv)."""
    rows: dict[str, dict] = {}
    for command, table in enumerate(search_tables(sweep_dir)):  # the latest last
        with open(table, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if "folder" not in (reader.fieldnames or []):
                raise ValueError(f"{table}: not a search table (no folder column)")
            for row in reader:
                rows[row["folder"]] = {**row, "command": rows.get(row["folder"], {}).get("command", command)}
    return list(rows.values())
