"""`adrop.linear.fit`: one entry point for every solver of the linear lab.

    from adrop.linear import fit, make_sparse_regression
    data = make_sparse_regression(n=200, d=50, k=5, seed=0)
    result = fit(data.problem.X, data.problem.y, penalty="logsum", lam=0.05, solver="irls", eps=0.1)
    result.w, result.history  # weights; a DataFrame: iteration, objective, change, nonzeros, kept

The default start w0 is the ridge solution (for IRLS with a working set, the ridge solution on that set).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from adrop import penalties

from . import solvers
from .adaptive_dropout import adaptive_dropout
from .irls import irls, ridge_start
from .problem import Problem

SOLVERS = {
    "irls": irls,
    "adaprox": solvers.adaprox,
    "adaptive_dropout": adaptive_dropout,
    "gradient": solvers.gradient,
}


@dataclass
class FitResult:
    w: np.ndarray
    history: pd.DataFrame
    penalty: penalties.Penalty
    lam: float
    solver: str
    tol: float

    @property
    def objective(self) -> float:
        return float(self.history.objective.iloc[-1])

    @property
    def converged(self) -> bool:
        return bool(self.history.change.iloc[-1] < self.tol) if len(self.history) else False

    def keep_mask(self) -> np.ndarray:
        """The paper's support: keep probability alpha = eta_hat / (eta_hat + lam) >= 0.05."""
        return solvers.keep_mask(self.penalty, self.lam, self.w)


def fit(
    X,
    y,
    penalty: str = "l1",
    lam: float = 0.1,
    solver: str = "irls",
    w0=None,
    max_iter: int | None = None,
    tol: float = 1e-8,
    record_every: int = 1,
    track=None,
    **options,
) -> FitResult:
    """Minimise 1/(2n)||y - Xw||^2 + lam Omega(w) (or run adaptive dropout) and return the weights and history.

    `track` adds columns to the history: {name: function of w}, e.g. the distance to a reference solution.
    Options are the penalty's parameters (eps=..., a=..., k=...) and the solver's (step, prune, decay, mask,
    additive, seed, working_set). A penalty with its own `lam` (scad, mcp, the dropout penalties) gets this lam, as in
    the paper's lam * SCAD(a, lam). Bad input raises ValueError naming the problem.
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; valid solvers: {', '.join(SOLVERS)}")
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
    problem = Problem(X, y)
    names = penalties.parameters(penalty) if penalty in penalties.REGISTRY else {}
    params = {k: v for k, v in options.items() if k in names}
    if "lam" in names and lam > 0:  # SCAD(a, lam), MCP(a, lam), ...: the paper factors the same lam out
        params["lam"] = lam
    pen = penalties.get(penalty, **params)
    solver_options = {k: v for k, v in options.items() if k not in names}
    allowed = {"step", "prune", "decay", "mask", "additive", "seed", "working_set", "polish_at"}
    unknown = sorted(set(solver_options) - allowed)
    if unknown:
        raise ValueError(
            f"unknown option {unknown[0]!r}: not a parameter of {penalty} "
            f"({', '.join(names) or 'none'}) nor a solver option ({', '.join(sorted(allowed))})"
        )
    if not pen.separable and pen.name != "hard_thresh":
        raise ValueError(
            f"penalty {pen.name} is not separable; the linear lab solves separable penalties and hard_thresh"
        )
    if w0 is not None:
        w0 = np.asarray(w0, dtype=np.float64)
        if w0.shape != (problem.d,) or not np.all(np.isfinite(w0)):
            raise ValueError(f"w0 must be a finite vector of length d = {problem.d}, got shape {w0.shape}")
    elif solver != "irls":  # IRLS makes its own (on its working set when it uses one)
        w0 = ridge_start(problem, lam)
    record = solvers.Recorder(problem, pen, lam, every=record_every, track=track)
    if max_iter is None:
        max_iter = 500 if solver == "irls" else 20000
    w = SOLVERS[solver](problem, pen, lam, w0, max_iter=max_iter, tol=tol, record=record, **solver_options)
    record.finish()
    return FitResult(w, pd.DataFrame(record.rows), pen, float(lam), solver, tol)
