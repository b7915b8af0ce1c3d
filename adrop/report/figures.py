"""The report's figures, drawn from the runs' own files.

- figure2: validation error against fraction of nonzero weights over training, one trajectory per run, coloured
  by method (the paper's Figure 2); the last point of each run is marked.
- pareto: final test error against fraction nonzero, one point per completed run (mean over seeds as a larger mark).
- layers: per-layer fraction of nonzero weights over epochs, one panel per method.
A method that ran under several settings (other overrides) gets one colour and one panel per setting.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from . import paper  # noqa: E402
from .collect import labels as run_labels  # noqa: E402


MARKERS = "osD^vP"   # past 20 labels the colours come round again, each time with the next marker and line style
LINES = ["-", "--", ":", "-.", (0, (5, 1)), (0, (1, 1))]


def _styles(methods):
    """One look per label: a colour from tab10 (up to 10 labels) or tab20, and, where colours repeat, a marker and
    line style of its own, so that no two labels look alike (up to 120)."""
    names = sorted(methods)
    n = 10 if len(names) <= 10 else 20
    cmap = (plt.cm.tab10 if n == 10 else plt.cm.tab20)(np.arange(n))
    return {m: {"color": cmap[i % n], "marker": MARKERS[i // n % len(MARKERS)], "ls": LINES[i // n % len(LINES)]}
            for i, m in enumerate(names)}


def _finish(fig, ax, path, dpi=140):
    """Log x axis labelled at 1, 2, 5 x 10^k; the legend right of the axes, the image grown to hold it (the axes
    keep their size however long the labels are)."""
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)


def figure2(table, histories, path):
    table = table.assign(method=run_labels(table))
    styles = _styles(table.method.dropna().unique())
    fig, ax = plt.subplots(figsize=(8, 5))
    seen = set()
    for _, r in table.iterrows():
        metrics = histories[r.run][0]
        if metrics is None or metrics.empty or r.method is None:
            continue
        label = r.method if r.method not in seen else None
        seen.add(r.method)
        style = styles[r.method]
        ax.plot(metrics.nonzero_fraction, metrics.val_error * 100, color=style["color"], ls=style["ls"], lw=1.2,
                alpha=0.85, label=label)
        ax.plot(metrics.nonzero_fraction.iloc[-1], metrics.val_error.iloc[-1] * 100, style["marker"],
                color=style["color"], ms=5)
    ax.set(xscale="log", xlabel="fraction of nonzero weights", ylabel="validation error (%)",
           title="validation error against sparsity over training (masked)")
    ax.grid(alpha=0.3, which="both")
    if not seen:
        ax.text(0.5, 0.5, "no training histories (metrics.csv) yet", transform=ax.transAxes, ha="center")
    _finish(fig, ax, path)


def pareto(table, path, reference=None):
    table = table.assign(method=run_labels(table))
    done = table[table.status == "completed"]
    styles = _styles(table.method.dropna().unique())
    fig, ax = plt.subplots(figsize=(8, 5))
    for method, rows in done.groupby("method"):
        color, marker = styles[method]["color"], styles[method]["marker"]
        ax.plot(rows.nonzero_fraction, rows.test_error * 100, marker, color=color, alpha=0.5, ms=4)
        ax.plot(rows.nonzero_fraction.mean(), rows.test_error.mean() * 100, marker, color=color, ms=9,
                label=method, markeredgecolor="k")
    if reference is not None:  # published points, for comparison
        for _, r in reference.iterrows():
            ax.plot(r.nonzero_fraction, r.test_error * 100, "x", color=styles.get(r.method, {"color": "gray"})["color"],
                    ms=8)
        ax.plot([], [], "x", color="gray", label="paper (x)")
        name, err, nonzero = paper.SPARSE_VD
        ax.plot(nonzero, err * 100, "*", color="k", ms=12, label=f"{name}, published")
    ax.set(xscale="log", xlabel="fraction of nonzero weights", ylabel="test error (%)",
           title="final test error against sparsity (masked; lower left is better)")
    ax.grid(alpha=0.3, which="both")
    _finish(fig, ax, path)


def layers(table, histories, path):
    table = table.assign(method=run_labels(table))
    methods = sorted(table.method.dropna().unique())
    cols = min(3, max(len(methods), 1))
    rows_n = int(np.ceil(len(methods) / cols)) or 1
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.2 * cols, 3.2 * rows_n), squeeze=False, sharey=True)
    for ax, method in zip(axes.flat, methods):
        colors = {}
        for _, r in table[table.method == method].iterrows():
            layer_table = histories[r.run][1]
            if layer_table is None:
                continue
            for name, rows in layer_table.groupby("layer"):
                first = name not in colors  # one legend entry and one colour per layer, over the method's runs
                line, = ax.plot(rows.epoch, rows.nonzero_fraction, color=colors.get(name), label=name if first else None)
                colors.setdefault(name, line.get_color())
        ax.set(title=method, yscale="log", xlabel="epoch")
        ax.grid(alpha=0.3, which="both")
        if colors:
            ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(methods):]:
        ax.axis("off")
    axes[0, 0].set_ylabel("fraction nonzero")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
