"""The paper's Figure 1: effective penalties of dropout methods beside classical penalties.

Left panel: separable penalties against |w| (for Standout, against the activation (z)_+). Right panel: the penalty of
the unit-norm k-sparse vector in R^32, w_j = 1/sqrt(k) for j <= k, against k = 1..32. Every curve is
weight * (Omega(w) - Omega(0)), the regularisation term shifted to 0 at 0; the weight (lambda) is 1 except for
LogSum(2), drawn at lambda = 2 beside VariationalDropout as the paper compares them. `curves()` returns the long table
that `adrop penalty --out` writes as penalties.csv; `draw()` makes the figure from that table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .base import get
from .group import GroupPenalty

DIM = 32
COLUMNS = ["panel", "method", "params", "weight", "x", "omega"]


@dataclass(frozen=True)
class Curve:
    method: str
    params: dict = field(default_factory=dict)
    weight: float = 1.0  # lambda in lambda * Omega
    label: str = ""
    group_size: int = 1  # > 1: the group penalty sqrt(|g|) Omega(||w_g||) against ||w_g|| (adrop.penalties.group)

    def penalty(self):
        pen = get(self.method, **self.params)
        return pen if self.group_size == 1 else GroupPenalty(pen, self.group_size)

    def params_text(self) -> str:
        return ",".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in self.penalty().params.items()
            if k != "group_size"
        )  # a group's size is said by the title

    def title(self) -> str:
        if self.label:
            return self.label
        text = self.params_text()
        name = f"{self.method}({text})" if text else self.method
        group = f" of ||w_g||, |g|={self.group_size}" if self.group_size > 1 else ""
        return name + group + (f", lam={self.weight:g}" if self.weight != 1 else "")


PAPER = (
    Curve("l1", label="L1"),
    Curve("l0", label="L0"),
    Curve("logsum", {"eps": 2.0}, weight=2.0, label="LogSum(2), lam=2"),
    Curve("scad", {"a": 3.7, "lam": 1.0}, label="SCAD(3.7, 1)"),
    Curve("mcp", {"a": 1.0, "lam": 1.0}, label="MCP(1, 1)"),
    Curve("variational_dropout", label="VariationalDropout"),
    Curve("hard_concrete", label="HardConcrete"),
    Curve("bernoulli_l0", label="BernoulliL0"),
    Curve("standout", label="Standout (activations)"),
)
HARD_THRESH = Curve("hard_thresh", {"k": 16}, label="HardThresh(16)")


def k_sparse(dim: int = DIM) -> np.ndarray:
    """Row k-1 is the unit-norm k-sparse vector w_j = 1/sqrt(k) 1{j <= k} in R^dim."""
    k = np.arange(1, dim + 1)[:, None]
    j = np.arange(1, dim + 1)[None, :]
    return np.where(j <= k, 1.0 / np.sqrt(k), 0.0)


def curves(specs=PAPER + (HARD_THRESH,), w_max: float = 3.0, points: int = 301, dim: int = DIM) -> pd.DataFrame:
    """The long table (panel, method, params, weight, x, omega) of both panels."""
    x = np.linspace(0.0, w_max, points)
    vectors = k_sparse(dim)
    frames = []
    for spec in specs:
        pen = spec.penalty()
        common = {"method": spec.method, "params": spec.params_text(), "weight": spec.weight}
        if pen.separable:
            values = pen.omega_elementwise(x)
            frames.append(
                pd.DataFrame({"panel": "separable", **common, "x": x, "omega": spec.weight * (values - values[0])})
            )
        values = pen.omega(vectors) - pen.omega(np.zeros(dim))
        frames.append(
            pd.DataFrame(
                {"panel": "k_sparse", **common, "x": np.arange(1, dim + 1, dtype=float), "omega": spec.weight * values}
            )
        )
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def draw(table: pd.DataFrame, specs=PAPER + (HARD_THRESH,)):
    """Figure 1 from a `curves()` table; returns the matplotlib figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = plt.cm.tab10(np.linspace(0, 1, 10))
    for i, spec in enumerate(specs):
        rows = table[
            (table.method == spec.method) & (table.params == spec.params_text()) & (table.weight == spec.weight)
        ]
        style = {"color": colors[i % 10], "label": spec.title(), "lw": 1.8}
        if spec.method == "bernoulli_l0":  # lies exactly on MCP(1, 1): dash it so both stay visible
            style.update(ls=(0, (4, 3)), lw=2.4)
        sep = rows[rows.panel == "separable"]
        if len(sep):
            left.plot(sep.x, sep.omega, **style)
        ks = rows[rows.panel == "k_sparse"]
        finite = np.isfinite(ks.omega)
        right.plot(ks.x[finite], ks.omega[finite], marker="o", ms=3, **style)
        if (~finite).any():  # HardThresh(k): inf beyond k, drawn as arrows at the top edge
            right.plot(
                ks.x[~finite],
                np.full((~finite).sum(), 1.0),
                "^",
                color=style["color"],
                ms=5,
                transform=right.get_xaxis_transform(),
                clip_on=False,
            )
    grouped = any(spec.group_size > 1 for spec in specs)
    left.set(
        xlabel="||w_g|| (a group's norm)" if grouped else "|w|",
        ylabel="penalty  lam * (Omega(w) - Omega(0))",
        xlim=(0, table[table.panel == "separable"].x.max()),
        ylim=(0, 3.2),
        title="separable penalties",
    )
    right.set(
        xlabel="k (number of nonzero groups)" if grouped else "k (number of nonzeros)",
        ylabel="penalty of the unit-norm k-sparse " + ("vector of 32 group norms" if grouped else "w in R^32"),
        ylim=(0, 12),
        xlim=(0, table[table.panel == "k_sparse"].x.max() + 1),
        title="unit-norm k-sparse vectors  (^ = infinite)",
    )
    for ax in (left, right):
        ax.grid(alpha=0.3)
    left.legend(fontsize=7.5, loc="upper left")
    only_right = [
        line
        for line in right.get_lines()
        if line.get_label() not in {ln.get_label() for ln in left.get_lines()} and not line.get_label().startswith("_")
    ]
    if only_right:
        right.legend(handles=only_right, fontsize=7.5, loc="upper left")
    fig.tight_layout()
    return fig


def fit_logsum(target, weight: float = 1.0, w_max: float = 3.0, points: int = 601) -> dict:
    """The LogSum(eps) curve, scaled, nearest a penalty's: min over eps and a of the squared gap between
    a (log(|w| + eps) - log eps) and weight * (Omega(w) - Omega(0)) on a grid of |w| in [0, w_max] (least squares: a in
    closed form for each eps of a log-spaced grid, refined around the best). Also the gap of the paper's reading,
    LogSum(2) at lam = 2 beside the penalty at lam = 1. Gaps are the largest absolute difference over the grid, and
    that divided by the target's largest value."""
    w = np.linspace(0.0, w_max, points)
    y = weight * (target.omega_elementwise(w) - target.omega_elementwise(0.0))

    def best_scale(eps):
        basis = np.log1p(w / eps)
        a = float(basis @ y / (basis @ basis))
        return a, float(np.sum((a * basis - y) ** 2))

    grid = np.logspace(-3, 3, 241)
    eps = grid[np.argmin([best_scale(e)[1] for e in grid])]
    fine = np.logspace(np.log10(eps) - 0.05, np.log10(eps) + 0.05, 201)
    eps = float(fine[np.argmin([best_scale(e)[1] for e in fine])])
    a = best_scale(eps)[0]
    top = float(np.max(np.abs(y)))

    def gap(curve):
        worst = float(np.max(np.abs(curve - y)))
        return worst, worst / top

    fitted, paper = gap(a * np.log1p(w / eps)), gap(2.0 * np.log1p(w / 2.0))
    return {
        "eps": eps,
        "scale": a,
        "gap": fitted[0],
        "relative_gap": fitted[1],
        "paper_gap": paper[0],
        "paper_relative_gap": paper[1],
        "w_max": w_max,
    }
