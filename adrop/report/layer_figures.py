"""layers.png and units.png: a column of the runs' layers.csv over epochs, readable for any network and any mix of runs.

- One section per network (its model and its sparse layers in forward order): runs of different networks never share
  a panel. In a section, one panel per method and setting (collect.groups), in a grid sized to the panels.
- A network of up to MAX_LINES layers is drawn as lines, one colour per layer, the same in every panel of its section,
  with one legend beside the section; a deeper one as a heat map, layers (module paths, top to bottom in forward order)
  by epochs, the mean over the panel's runs, with one colour bar beside the section. Fraction nonzero is drawn on a
  log scale; units kept as a fraction of the layer's units, on a linear scale from 0 to 1, so that a layer of 10 units
  reads as well as one of 300 (units_out where layers.csv has it; histories read back from a report have none: the
  most the run's history shows).
- Modules trained densely (layers.csv's trained=dense: BatchNorm and the like) are left out: no method sparsifies them.
- Titles are wrapped and shortened to their panel's width, without the model their section names; matplotlib's
  constrained layout gives titles, legends and colour bars their own room.
"""

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm, Normalize  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from .axes import log_ticks  # noqa: E402
from .collect import groups  # noqa: E402

MAX_LINES = 8  # deeper networks are heat maps: past 8 or so, line colours and legend entries no longer tell apart
COLUMNS = 3  # panels per row
PANEL_WIDTH, LINE_PANEL_HEIGHT = 4.2, 3.0  # inches
TITLE_SIZE, TITLE_LINES = 8, 3
UNITS = "units_out_kept"


def sparse_rows(layer_table: pd.DataFrame | None, column: str) -> pd.DataFrame | None:
    """A run's layers.csv rows of the layers a method sparsifies that have `column`, or None."""
    if layer_table is None or column not in layer_table:
        return None
    rows = layer_table
    if "trained" in rows:
        rows = rows[rows.trained.fillna("method") != "dense"]
    rows = rows[rows[column].notna()]
    return rows.assign(layer=rows.layer.astype(str)) if len(rows) else None


def sections(table: pd.DataFrame, histories: dict, column: str) -> dict:
    """(model, layers in forward order) -> {group label: [each run's rows]}, for the runs that have `column`."""
    table = table.assign(group=groups(table))
    out = {}
    for _, r in table.sort_values("group", kind="stable").iterrows():
        rows = sparse_rows((histories.get(r.run) or (None, None))[1], column)
        if rows is None or not isinstance(r.group, str):
            continue
        model = r.model if isinstance(r.get("model"), str) else ""
        order = tuple(dict.fromkeys(rows.layer))
        out.setdefault((model, order), {}).setdefault(r.group, []).append(rows)
    return dict(sorted(out.items(), key=lambda item: (item[0][0], len(item[0][1]), item[0][1])))


def section_titles(keys) -> list[str]:
    """The model and its number of layers; where two networks share a model name (two users' networks), numbered."""
    titles = [f"{model or 'model not recorded'}: {len(order)} layers" for model, order in keys]
    seen = {}
    for i, t in enumerate(titles):
        seen.setdefault(t, []).append(i)
    for indices in seen.values():
        for n, i in enumerate(indices if len(indices) > 1 else []):
            titles[i] += f" (network {n + 1})"
    return titles


def panel_title(group: str, model: str, runs: int, heat: bool) -> str:
    """The group's label without the model its section names, how many runs, wrapped to the panel's width."""
    text = group
    if model:
        text = " ".join(t for t in text.replace("(", "( ").replace(")", " )").split() if t != f"model={model}")
        text = text.replace("( ", "(").replace(" )", ")").replace(" ()", "").replace("()", "")
    if runs > 1:
        text += f", mean of {runs} runs" if heat else f", {runs} runs"
    width = int(PANEL_WIDTH * 72 / (TITLE_SIZE * 0.6))  # characters a line holds at this size
    return "\n".join(textwrap.wrap(text, width, max_lines=TITLE_LINES, placeholder=" …")) or " "


def fractions(rows: pd.DataFrame, column: str) -> pd.Series:
    """The value a heat map colours: fraction nonzero as it is, units kept as a fraction of the layer's units."""
    if column != UNITS:
        return rows[column].astype(float)
    widest = rows.groupby("layer")[column].transform("max")
    width = rows.units_out.fillna(widest) if "units_out" in rows else widest
    return rows[column] / width.where(width > 0)


def mean_matrix(runs: list[pd.DataFrame], column: str, order) -> pd.DataFrame:
    """Layers (in `order`) by epochs, the mean over runs of the coloured value."""
    long = pd.concat([r.assign(value=fractions(r, column))[["layer", "epoch", "value"]] for r in runs])
    return long.pivot_table(index="layer", columns="epoch", values="value", aggfunc="mean").reindex(list(order))


def edges(centres) -> np.ndarray:
    """Cell edges around sorted cell centres (epochs), halfway between neighbours."""
    c = np.asarray(centres, dtype=float)
    if len(c) == 1:
        return np.array([c[0] - 0.5, c[0] + 0.5])
    mid = (c[1:] + c[:-1]) / 2
    return np.concatenate([[c[0] - (mid[0] - c[0])], mid, [c[-1] + (c[-1] - mid[-1])]])


def heat_norm(matrices, column: str):
    """Fraction nonzero: log from the smallest value shown (at least 1e-4, at most 0.1) to 1; units kept: 0 to 1."""
    if column == UNITS:
        return Normalize(0.0, 1.0)
    values = np.concatenate([m.to_numpy(dtype=float).ravel() for m in matrices])
    positive = values[values > 0]
    low = float(np.clip(positive.min(), 1e-4, 0.1)) if positive.size else 1e-4
    return LogNorm(low, 1.0)


def draw_heat(ax, matrix: pd.DataFrame, norm):
    shown = matrix.to_numpy(dtype=float)
    shown = np.where(np.isnan(shown), np.nan, np.maximum(shown, norm.vmin))  # below the scale: its darkest colour
    mesh = ax.pcolormesh(
        edges(matrix.columns), np.arange(len(matrix) + 1), np.ma.masked_invalid(shown), cmap="viridis", norm=norm
    )
    ax.set_ylim(len(matrix), 0)  # the first layer on top
    return mesh


def draw_lines(ax, runs: list[pd.DataFrame], column: str, colors: dict):
    """One line per layer and run: fraction nonzero on a log axis, units kept as a fraction (0 to 1) on a linear one."""
    for rows in runs:
        for name, layer in rows.assign(value=fractions(rows, column)).groupby("layer", sort=False):
            ax.plot(
                layer.epoch, layer.value, color=colors[name], lw=1.2, alpha=0.85 if len(runs) > 1 else 1.0, label=name
            )
    if column == UNITS:
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    else:
        ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")


def draw_section(subfig, model: str, order, panels: dict, column: str, label: str, heat_label: str):
    """One network's panels, their grid sized to them, and its legend or colour bar beside them."""
    heat = len(order) > MAX_LINES
    cols = min(COLUMNS, len(panels))
    rows_n = -(-len(panels) // cols)
    axes = subfig.subplots(rows_n, cols, squeeze=False, sharey=True)
    for ax in axes.flat[len(panels) :]:
        ax.remove()
    used = list(axes.flat[: len(panels)])
    if heat:
        matrices = [mean_matrix(runs, column, order) for runs in panels.values()]
        norm = heat_norm(matrices, column)
        mesh = None
        for ax, matrix in zip(used, matrices):
            if matrix.shape[1] == 0:  # none of these runs recorded the value (units kept, for a run by weights)
                ax.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=ax.transAxes, fontsize=7)
                continue
            mesh = draw_heat(ax, matrix, norm)
        used[0].set_yticks(
            np.arange(len(order)) + 0.5,
            labels=list(order),  # shared: the first column shows them
            fontsize=max(4.0, min(7.0, 160 / len(order))),
        )
        for ax in used:
            ax.tick_params(axis="y", length=0)
        bar = subfig.colorbar(
            mesh or ScalarMappable(norm, "viridis"),
            ax=used,
            shrink=min(1.0, 0.9 / rows_n + 0.1),
            aspect=30,
            extend="min" if isinstance(norm, LogNorm) else "neither",
        )
        bar.set_label(heat_label, fontsize=8)
        if isinstance(norm, LogNorm):
            log_ticks(bar.ax.yaxis, norm.vmin, norm.vmax)
    else:
        palette = plt.cm.tab10(np.arange(len(order)))
        colors = dict(zip(order, palette))
        for ax, runs in zip(used, panels.values()):
            draw_lines(ax, runs, column, colors)
        handles = [plt.Line2D([], [], color=colors[name], lw=1.5) for name in order]
        subfig.legend(handles, list(order), loc="outside right upper", fontsize=7, title="layer", title_fontsize=7)
        if column != UNITS:
            log_ticks(used[0].yaxis, *used[0].get_ylim())  # shared by the section's panels
    for i, (ax, (group, runs)) in enumerate(zip(used, panels.items())):
        ax.set_title(panel_title(group, model, len(runs), heat), fontsize=TITLE_SIZE)
        ax.set_xlabel("epoch", fontsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.tick_params(labelsize=7)
        if i % cols == 0:
            ax.set_ylabel("layer" if heat else label, fontsize=8)
    return used


def panel_height(order) -> float:
    """A line panel's height; a heat map's grows with its layers, so that each keeps a readable row."""
    return LINE_PANEL_HEIGHT if len(order) <= MAX_LINES else max(LINE_PANEL_HEIGHT, 1.2 + 0.13 * len(order))


def draw(table: pd.DataFrame, histories: dict, column: str, label: str, heat_label: str, title: str) -> plt.Figure:
    """The figure of `column` (a layers.csv column) for the runs in `table`, `histories` as collect.histories has
    them; `label` names it on a line panel's y axis, `heat_label` on a heat map's colour bar."""
    found = sections(table, histories, column)
    if not found:
        fig = plt.figure(figsize=(6, 2), layout="constrained")
        fig.text(0.5, 0.5, f"no per-layer histories (layers.csv with {column}) yet", ha="center", va="center")
        return fig
    heights = [-(-len(p) // COLUMNS) * panel_height(order) + 0.6 for (_, order), p in found.items()]
    cols = min(COLUMNS, max(len(p) for p in found.values()))
    fig = plt.figure(figsize=(PANEL_WIDTH * cols + 1.8, sum(heights) + 0.4), layout="constrained")
    subfigs = fig.subfigures(len(found), 1, height_ratios=heights, squeeze=False)[:, 0]
    titles = section_titles(found)
    for subfig, section, (key, panels) in zip(subfigs, titles, found.items()):
        draw_section(subfig, key[0], key[1], panels, column, label, heat_label)
        if len(found) > 1:
            subfig.suptitle(section, fontsize=9, fontweight="bold")
    fig.suptitle(title if len(found) > 1 else f"{title} ({titles[0]})", fontsize=10)
    return fig


def save(fig: plt.Figure, path, dpi: int = 130) -> None:
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
