"""The least-squares problem of the paper's linear setting, validated once.

    L(w) = 1/(2n) ||y - X w||^2,        grad L(w) = X^T (X w - y) / n.

The duality of adaptive dropout and regularisation is exact when the columns are standardised,
diag(X^T X / n) = I (paper Sec. 2.1); `standardise` makes them so.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.sparse.linalg import svds


def standardise(X) -> np.ndarray:
    """Scale the columns of X so that diag(X^T X / n) = I (zero columns stay zero)."""
    X = np.asarray(X, dtype=np.float64)
    scale = np.sqrt(np.mean(X * X, axis=0))
    return X / np.where(scale > 0, scale, 1.0)


@dataclass
class Problem:
    """A validated (X, y). Bad input raises ValueError naming the problem; nothing is silently repaired."""

    X: np.ndarray
    y: np.ndarray

    def __post_init__(self):
        X, y = np.asarray(self.X), np.asarray(self.y)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array (n, d), got shape {X.shape}")
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must be a 1-D array of length n = {X.shape[0]} to match X {X.shape}, got {y.shape}")
        if X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X is empty: shape {X.shape}")
        for name, a in (("X", X), ("y", y)):
            if not np.issubdtype(a.dtype, np.number):
                raise ValueError(f"{name} must be numeric, got dtype {a.dtype}")
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{name} contains NaN or inf ({np.count_nonzero(~np.isfinite(a))} entries)")
        self.X, self.y = X.astype(np.float64), y.astype(np.float64)

    @cached_property
    def lipschitz(self) -> float:
        """Lipschitz constant of grad L: the largest eigenvalue of X^T X / n (only the gradient solvers need it)."""
        if min(self.X.shape) < 3:
            return float(np.linalg.norm(self.X, 2) ** 2 / self.n)
        return float(svds(self.X, k=1, return_singular_vectors=False, random_state=0)[0] ** 2 / self.n)

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    def is_standardised(self, tol: float = 1e-6) -> bool:
        return bool(np.allclose(np.mean(self.X * self.X, axis=0), 1.0, atol=tol))

    def predict(self, w) -> np.ndarray:
        """X w, touching only the columns where w is nonzero when w is sparse."""
        nz = np.flatnonzero(w)
        return self.X[:, nz] @ w[nz] if nz.size < self.d // 4 else self.X @ w

    def loss(self, w) -> float:
        r = self.y - self.predict(w)
        return float(r @ r) / (2 * self.n)

    def gradient(self, w) -> np.ndarray:
        return self.X.T @ (self.predict(w) - self.y) / self.n
