"""The inner step of the eta-trick: minimise L(w) + lam/2 sum_j w_j^2 / eta_j exactly, for a fixed eta.

Coordinates with eta_j = 0 are fixed at 0 (infinite Tikhonov weight), those with eta_j = inf are unpenalised.
The rest are solved in the smaller dimension: the d_A x d_A normal equations when the active set A is no larger
than n, otherwise the n x n push-through (Woodbury) form w_P = D X_P^T (X_P D X_P^T + n lam I)^-1 r, with the
unpenalised coordinates (if any) from the generalised least squares that this form leaves for them.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from .problem import Problem


class TikhonovSolver:
    """Solves the fixed-eta problem repeatedly, reusing the Gram matrix of a shrinking active set."""

    def __init__(self, problem: Problem, lam: float):
        self.p, self.lam = problem, float(lam)
        self.Xty = problem.X.T @ problem.y / problem.n
        self._gram_cols = None  # columns whose Gram matrix is cached
        self._gram = None

    def gram(self, cols: np.ndarray) -> np.ndarray:
        """X_A^T X_A / n, from the cache when A is a subset of the cached columns."""
        if self._gram_cols is not None and np.all(np.isin(cols, self._gram_cols)):
            idx = np.searchsorted(self._gram_cols, cols)
            return self._gram[np.ix_(idx, idx)]
        XA = self.p.X[:, cols]
        self._gram_cols, self._gram = cols, XA.T @ XA / self.p.n
        return self._gram

    def solve(self, eta: np.ndarray) -> np.ndarray:
        p, lam = self.p, self.lam
        w = np.zeros(p.d)
        if lam == 0.0:  # plain least squares (minimum norm where underdetermined)
            return np.linalg.lstsq(p.X, p.y, rcond=None)[0]
        active = np.flatnonzero(eta > 0)
        if active.size == 0:
            return w
        if active.size <= p.n:
            inv_eta = np.where(np.isinf(eta[active]), 0.0, 1.0 / eta[active])
            A = self.gram(active) + np.diag(lam * inv_eta)
            try:
                w[active] = linalg.solve(A, self.Xty[active], assume_a="pos")
            except (linalg.LinAlgError, ValueError):  # unpenalised columns that are collinear
                w[active] = np.linalg.lstsq(A, self.Xty[active], rcond=None)[0]
            return w
        return self._solve_dual(eta, active)

    def _solve_dual(self, eta, active):
        p, lam, n = self.p, self.lam, self.p.n
        free = active[np.isinf(eta[active])]
        pen = active[np.isfinite(eta[active])]
        XP = p.X[:, pen]
        K = (XP * eta[pen]) @ XP.T
        K[np.diag_indices(n)] += n * lam
        chol = linalg.cho_factor(K, lower=True, check_finite=False)
        w = np.zeros(p.d)
        r = p.y
        if free.size:
            XF = p.X[:, free]
            KiXF = linalg.cho_solve(chol, XF, check_finite=False)
            w[free] = np.linalg.lstsq(XF.T @ KiXF, KiXF.T @ p.y, rcond=None)[0]
            r = p.y - XF @ w[free]
        w[pen] = eta[pen] * (XP.T @ linalg.cho_solve(chol, r, check_finite=False))
        return w
