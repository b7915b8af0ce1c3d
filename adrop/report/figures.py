"""The report's figures, drawn from the runs' own files.

- figure2: validation error against fraction of nonzero weights over training, one trajectory per run, coloured
  by method (the paper's Figure 2); the last point of each run is marked.
- pareto: final test error against fraction nonzero, one point per completed run (mean over seeds as a larger mark).
- layers: per-layer fraction of nonzero weights over epochs; units: the fraction of its units (filters) each layer
  keeps (0 to 1, a linear axis), the same way: one section per network, one panel per method and setting, lines up to
  8 layers, a heat map past them (layer_figures).
A method that ran under several settings (other overrides) gets one colour and one panel per setting; runs that
differ only in a path (init_from=...) share their setting's colour, legend entry and panel (collect.groups).
Log axes are labelled at any range (a narrow one gets plain ticks), epochs are integers, and the paper's points
take the colour of their method.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from adrop.train.tasks import result_columns  # noqa: E402

from . import layer_figures  # noqa: E402
from .axes import log_ticks  # noqa: E402
from .collect import groups  # noqa: E402
from .collect import labels as run_labels

MARKERS = "osD^vP"  # past 20 labels the colours come round again, each time with the next marker and line style
LINES = ["-", "--", ":", "-.", (0, (5, 1)), (0, (1, 1))]


def _styles(methods):
    """One look per label: a colour from tab10 (up to 10 labels) or tab20, and, where colours repeat, a marker and
    line style of its own, so that no two labels look alike (up to 120)."""
    names = sorted(methods)
    n = 10 if len(names) <= 10 else 20
    cmap = (plt.cm.tab10 if n == 10 else plt.cm.tab20)(np.arange(n))
    return {
        m: {"color": cmap[i % n], "marker": MARKERS[i // n % len(MARKERS)], "ls": LINES[i // n % len(LINES)]}
        for i, m in enumerate(names)
    }


def _finish(fig, ax, path, dpi=140):
    """Log x axis labelled at any range; the legend right of the axes, the image grown to hold it (the axes keep
    their size however long the labels are)."""
    log_ticks(ax.xaxis, *ax.get_xlim())
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)


def figure2(table, histories, path):
    table = table.assign(method=groups(table))
    styles = _styles(table.method.dropna().unique())
    fig, ax = plt.subplots(figsize=(8, 5))
    seen = set()
    shown = "error"
    for _, r in table.iterrows():
        metrics = histories[r.run][0]
        if metrics is None or metrics.empty or r.method is None:
            continue
        val = next((c for c in result_columns(metrics.columns) if c.startswith("val_")), None)
        if val is None:
            continue
        shown = val.removeprefix("val_")
        scale = 100 if val == "val_error" else 1
        label = r.method if r.method not in seen else None
        seen.add(r.method)
        style = styles[r.method]
        ax.plot(
            metrics.nonzero_fraction,
            metrics[val] * scale,
            color=style["color"],
            ls=style["ls"],
            lw=1.2,
            alpha=0.85,
            label=label,
        )
        ax.plot(
            metrics.nonzero_fraction.iloc[-1],
            metrics[val].iloc[-1] * scale,
            style["marker"],
            color=style["color"],
            ms=5,
        )
    name = "error (%)" if shown == "error" else shown
    ax.set(
        xscale="log",
        xlabel="fraction of nonzero weights",
        ylabel=f"validation {name}",
        title=f"validation {shown} against sparsity over training (masked)",
    )
    ax.grid(alpha=0.3, which="both")
    if not seen:
        ax.text(0.5, 0.5, "no training histories (metrics.csv) yet", transform=ax.transAxes, ha="center")
    _finish(fig, ax, path)


def pareto(table, path, reference=None, published=()):
    """Final test error against fraction nonzero, per run and per setting's mean; `reference`: the paper's rows
    (crosses in their method's colour); `published`: (name, test error, nonzero fraction) points of the literature."""
    table = table.assign(group=groups(table), method_name=table.method, method=run_labels(table))
    done = table[table.status == "completed"]
    styles = _styles(table.group.dropna().unique())
    fig, ax = plt.subplots(figsize=(8, 5))
    # the runs' task's first test metric: the error, else (a regression, a language model) its own
    column = next(
        (
            c
            for c in result_columns(done.columns)
            if c.startswith("test_") and pd.to_numeric(done[c], errors="coerce").notna().any()
        ),
        "test_error",
    )
    scale = 100 if column == "test_error" else 1
    for group, rows in done.groupby("group"):
        color, marker = styles[group]["color"], styles[group]["marker"]
        ax.plot(rows.nonzero_fraction, rows[column] * scale, marker, color=color, alpha=0.5, ms=4)
        for i, (_, setting) in enumerate(rows.groupby("method")):  # the mean over seeds of each setting
            ax.plot(
                setting.nonzero_fraction.mean(),
                setting[column].mean() * scale,
                marker,
                color=color,
                ms=9,
                label=group if i == 0 else None,
                markeredgecolor="k",
            )
    if reference is not None:  # published points, for comparison, in the colour of their method
        for _, r in reference.iterrows():
            ax.plot(r.nonzero_fraction, r.test_error * 100, "x", color=paper_colour(table, styles, r), ms=8, mew=2)
        ax.plot([], [], "x", color="gray", mew=2, label="paper (x, the colour of its method)")
    for i, (name, err, nonzero) in enumerate(published):
        ax.plot(
            nonzero, err * 100, "*P^vD"[i % 5], color="k", ms=11, mfc="none" if i else "k", label=f"{name}, published"
        )
    shown = "test error (%)" if column == "test_error" else column.replace("_", " ")
    ax.set(
        xscale="log",
        xlabel="fraction of nonzero weights",
        ylabel=shown,
        title=f"final {shown.removesuffix(' (%)')} against sparsity (masked; lower left is better)",
    )
    ax.grid(alpha=0.3, which="both")
    _finish(fig, ax, path)


def paper_colour(table, styles, row):
    """The colour of the runs of the paper's method: those with the paper's lam and lr first, any of it else."""
    same = table[table.method_name == row.method]
    exact = same[same.lam.sub(row.lam).abs().le(1e-3 * row.lam) & same.lr.sub(row.lr).abs().le(1e-3 * row.lr)]
    for rows in (exact, same):
        if len(rows):
            return styles[rows.group.iloc[0]]["color"]
    return "gray"


def layers(table, histories, path):
    """Each layer's fraction of nonzero weights over epochs (layer_figures)."""
    layer_figures.save(
        layer_figures.draw(
            table,
            histories,
            "nonzero_fraction",
            "fraction nonzero",
            "fraction nonzero (log)",
            "fraction of nonzero weights per layer",
        ),
        path,
    )


def units(table, histories, path):
    """The units each layer keeps over epochs, a conv layer's filters (layer_figures)."""
    layer_figures.save(
        layer_figures.draw(
            table,
            histories,
            layer_figures.UNITS,
            "fraction of units kept (conv: filters)",
            "fraction of the layer's units kept",
            "units kept per layer (conv: filters)",
        ),
        path,
    )
