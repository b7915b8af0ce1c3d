"""IRLS: the eta-trick by alternating minimisation (paper Sec. 2.2), eta = eta_hat(w), then the exact Tikhonov solve.

Three additions make it exact and fast without changing its fixed points:

- Pruning: weights below `prune` times the largest are set to 0 (IRLS only shrinks them geometrically), and every
  zero is then checked against its optimality condition |grad_j L| <= lam Omega'(0+); a violator rejoins with a
  soft-threshold step, so pruning never decides the answer.
- Working set (default when d > n): IRLS starts on the columns most correlated with y and grows that set by the
  same check, so every solve is the small primal one rather than the n x n dual one that a dense start needs while
  more than n weights are nonzero. Where Omega'(0+) is infinite (lpp with p < 1, hard_thresh) every zero is
  stationary, the answer depends on the start and the set never grows: the start is then a screening one, the ridge
  solution on the n/4 columns most correlated with y (2k for hard_thresh). `working_set=False` starts dense.
- Newton polish: once the relative change is below `polish_at`, Newton steps on the support solve the stationarity
  equation grad_S L + lam Omega'(w_S) = 0 (Omega' = w / eta_hat(w), eq. 6); a step is kept only if no sign flips
  and the objective does not rise, else IRLS goes on. IRLS alone converges sublinearly where the solution has small
  nonzero weights (elastic net, say).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from .solvers import iterate, omega_prime, prune_small, relative_change, revive_zeros, slope_at_zero
from .tikhonov_solve import TikhonovSolver


def irls(
    problem, penalty, lam, w0, max_iter=500, tol=1e-8, prune=1e-6, working_set="auto", polish_at=1e-4, record=None, **_
):
    slope = slope_at_zero(penalty) if lam > 0 else np.inf
    solver = TikhonovSolver(problem, lam)
    use_ws = working_set is True or (working_set == "auto" and problem.d > problem.n)
    if use_ws:
        score = np.abs(solver.Xty)
        wanted = np.count_nonzero(score > lam * slope) if np.isfinite(slope) else problem.n // 4
        size = int(min(problem.d, max(min(problem.n // 4, wanted), 10, 2 * getattr(penalty, "k", 0))))
        cols = np.sort(np.argsort(-score, kind="stable")[:size])
    else:
        cols = np.arange(problem.d)
    w = np.zeros(problem.d)
    w[cols] = ridge_start(problem, lam, cols)[cols] if w0 is None else w0[cols]
    record(0, w, np.nan, force=True)
    t = 0
    newton = polish_at > 0 and penalty.separable and penalty.name != "l0" and lam > 0
    while t < max_iter:
        w, t = _irls(
            problem, solver, penalty, w, cols, max_iter - t, max(tol, polish_at) if newton else tol, prune, record, t
        )
        if newton:
            polished, t, done = newton_polish(problem, penalty, lam, w, tol, record, t)
            if not done:  # Newton declined: IRLS finishes the job
                polished, t = _irls(problem, solver, penalty, w, cols, max_iter - t, tol, prune, record, t)
            w = polished
        w, revived = revive_zeros(problem, lam, w, slope, limit=max(cols.size, 10))
        if revived.size == 0:
            return w
        cols = np.union1d(cols, revived)
    return w


def ridge_start(problem, lam: float, cols=None) -> np.ndarray:
    """The default start: the ridge solution min L + lam/2 ||w||^2 (on the columns `cols`; nonzero everywhere there,
    so that eta_hat(w0) > 0)."""
    eta = np.ones(problem.d) if cols is None else np.isin(np.arange(problem.d), cols).astype(float)
    return TikhonovSolver(problem, max(lam, 1e-8)).solve(eta)


def _irls(problem, solver, penalty, w, cols, max_iter, tol, prune, record, t0):
    """IRLS on the columns `cols` (the others stay 0); returns (w, last iteration number)."""

    def reweighted_solve(t, w):
        eta = np.zeros(problem.d)
        eta[cols] = penalty.eta_hat(w[cols])
        return prune_small(solver.solve(eta), prune)

    return iterate(reweighted_solve, w, max_iter, tol, record, t0)


def newton_polish(problem, penalty, lam, w, tol, record, t, max_steps: int = 30):
    """Newton on grad_S L + lam Omega'(w_S) = 0 over the support S; returns (w, t, converged).

    A weight that a step would carry across 0 is leaving the support: it is set to 0 and the step retried (the zero
    checks after the polish re-admit it if that was wrong)."""
    support = np.flatnonzero(w)
    wS = w[support].copy()
    value = None
    for _ in range(max_steps):
        if support.size == 0 or support.size > problem.n:
            return w, t, False
        XS = problem.X[:, support]
        G, b = XS.T @ XS / problem.n, XS.T @ problem.y / problem.n
        h = 1e-6 * np.abs(wS)  # Omega'' by central differences (Omega' is smooth away from 0 and the knots)
        curvature = (omega_prime(penalty, wS + h) - omega_prime(penalty, wS - h)) / (2 * h)
        try:
            step = linalg.solve(
                G + lam * np.diag(curvature), b - G @ wS - lam * omega_prime(penalty, wS), assume_a="sym"
            )
        except (linalg.LinAlgError, ValueError):
            return w, t, False
        new = wS + step
        crossing = np.sign(new) != np.sign(wS)
        if crossing.any():
            support, wS, value = support[~crossing], wS[~crossing], None
            continue
        r = problem.y - XS @ new
        new_value = r @ r / (2 * problem.n) + lam * float(np.sum(penalty.omega_elementwise(new)))
        if value is not None and new_value > value + 1e-12 * abs(value):
            return w, t, False
        change = relative_change(new, wS)
        wS, value, t = new, new_value, t + 1
        out = np.zeros_like(w)
        out[support] = wS
        record(t, out, change)
        if change < tol:
            return out, t, True
    return w, t, False
