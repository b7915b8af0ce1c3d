"""One run found twice, in its folder and in an earlier report (or in two reports), is one row of a report.

A run's name depends on the folder a report was made from, so runs are matched by what they are. A finished run: its
overrides, method, lam, lr, seed, epochs, test error and wall time (the runs of one stack share a wall time, and
their overrides tell them apart). A run without a wall time (failed, stopped, still training): its overrides, status,
error, epochs and last validation error. Rows of one report are never matched with each other: it holds each run once.
"""

from __future__ import annotations

import numbers

import pandas as pd

FINISHED_IDENTITY = ["overrides", "method", "lam", "lr", "seed", "epochs", "test_error", "wall_time_s"]
UNFINISHED_IDENTITY = ["overrides", "status", "error", "epochs", "val_error"]


def _value(row: dict, key: str):
    """A cell as compared: numbers as floats (a seed reads back 1.0 from a CSV), missing as None."""
    value = row.get(key)
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return float(value) if isinstance(value, numbers.Number) else str(value)


def identity(row: dict) -> tuple | None:
    """A run's identity; None where a row cannot tell (no overrides): such rows are always kept."""
    if _value(row, "overrides") is None:
        return None
    if _value(row, "wall_time_s") is not None:
        return ("finished", *(_value(row, k) for k in FINISHED_IDENTITY))
    return ("unfinished", *(_value(row, k) for k in UNFINISHED_IDENTITY))


def without_repeats(reports: list[list[dict]], found: list[dict]) -> tuple[list[dict], int]:
    """Each report's rows (in order, one list per report) without the runs read already from a folder (`found`) or
    from an earlier report in the list, and how many were left out."""
    seen = {identity(row) for row in found}
    kept = []
    for rows in reports:
        ids = [identity(row) for row in rows]
        kept.extend(row for row, i in zip(rows, ids) if i is None or i not in seen)
        seen.update(ids)
    return kept, sum(map(len, reports)) - len(kept)
