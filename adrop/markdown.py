"""Markdown tables from DataFrames, without extra dependencies (pandas' to_markdown needs `tabulate`)."""

from __future__ import annotations

import pandas as pd


def _cell(value, floatfmt: str) -> str:
    if isinstance(value, float):
        return format(value, floatfmt)
    return str(value).replace("|", "\\|")


def table(frame: pd.DataFrame, floatfmt: str = ".4g") -> str:
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(_cell(v, floatfmt) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows]) + "\n"
