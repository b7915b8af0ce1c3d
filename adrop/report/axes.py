"""How the report's figures label their axes (figures and layer_figures alike)."""

from __future__ import annotations

from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter


def log_ticks(axis, lo: float, hi: float) -> None:
    """Labels on a log axis at any range: 1, 2, 5 x 10^k over one to three decades, 10^k over more (where 1, 2, 5
    would crowd the axis); inside one decade (0.86 to 1, where those give a single tick or none) about five plain
    ticks."""
    if lo > 0 and hi / lo < 10:
        axis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
    else:
        wide = lo > 0 and hi / lo > 1e3
        axis.set_major_locator(LogLocator(subs=(1.0,) if wide else (1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    axis.set_minor_formatter(NullFormatter())
