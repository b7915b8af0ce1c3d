"""Synthetic sparse regression with standardised columns (the paper's assumption diag(X^T X / n) = I)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .problem import Problem, standardise


@dataclass
class SparseRegression:
    problem: Problem
    w_true: np.ndarray

    @property
    def support(self) -> np.ndarray:
        return np.flatnonzero(self.w_true)


def make_sparse_regression(
    n: int = 200,
    d: int = 50,
    k: int = 5,
    signal: float = 1.0,
    noise: float = 0.1,
    correlation: float = 0.0,
    seed: int = 0,
) -> SparseRegression:
    """y = X w_true + noise with k nonzeros of size `signal` (random signs) in w_true.

    Columns are Gaussian with corr(x_i, x_j) = correlation^|i-j| (an AR(1) across columns), then standardised.
    The support is a random set of k columns.
    """
    for name, value, low in (("n", n, 1), ("d", d, 1), ("k", k, 0)):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if k > d:
        raise ValueError(f"k = {k} nonzeros cannot exceed d = {d}")
    if not -1 < correlation < 1:
        raise ValueError(f"correlation must lie in (-1, 1), got {correlation}")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    if correlation:
        # x_j = rho x_{j-1} + sqrt(1 - rho^2) z_j keeps unit variance and gives corr rho^|i-j|
        X = np.empty_like(Z)
        X[:, 0] = Z[:, 0]
        scale = np.sqrt(1 - correlation**2)
        for j in range(1, d):
            X[:, j] = correlation * X[:, j - 1] + scale * Z[:, j]
    else:
        X = Z
    X = standardise(X)
    w = np.zeros(d)
    support = rng.choice(d, size=k, replace=False)
    w[support] = signal * rng.choice([-1.0, 1.0], size=k)
    y = X @ w + noise * rng.standard_normal(n)
    return SparseRegression(Problem(X, y), w)
