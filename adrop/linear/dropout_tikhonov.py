"""Dropout is Tikhonov regularisation (paper Sec. 2.1, eq. 4), checked by Monte Carlo.

For masks with E[s] = 1 and E[s^2] = 1/alpha (independent coordinates),

    E_s L(s * w) = L(w) + 1/2 w^T ((diag(alpha)^-1 - I) o X^T X / n) w,

which with standardised columns is L(w) + 1/2 sum_j (1/alpha_j - 1) w_j^2 = L(w) + lam/2 sum_j w_j^2 / eta_j.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from .adaptive_dropout import sample_mask
from .problem import Problem


def expected_dropout_loss(problem: Problem, w, alpha) -> float:
    """The closed form of E_s L(s * w) (eq. 4; exact for any X, standardised or not)."""
    w, alpha = np.asarray(w, dtype=np.float64), np.asarray(alpha, dtype=np.float64)
    if np.any((alpha <= 0) & (w != 0)):
        return np.inf
    diag = np.mean(problem.X * problem.X, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(w != 0, 1.0 / alpha - 1.0, 0.0)
    return problem.loss(w) + 0.5 * float(np.sum(scale * diag * w * w))


@dataclass
class MonteCarlo:
    mean: float
    low: float  # confidence interval
    high: float
    closed_form: float
    samples: int

    @property
    def contains_closed_form(self) -> bool:
        return self.low <= self.closed_form <= self.high


def monte_carlo_dropout_loss(
    problem: Problem,
    w,
    alpha,
    mask: str = "gaussian",
    samples: int = 20000,
    seed: int = 0,
    level: float = 0.99,
    batch: int = 2000,
) -> MonteCarlo:
    """Estimate E_s L(s * w) by sampling masks, with a normal confidence interval at `level`."""
    rng = np.random.default_rng(seed)
    w, alpha = np.asarray(w, dtype=np.float64), np.asarray(alpha, dtype=np.float64)
    values = []
    for start in range(0, samples, batch):
        m = min(batch, samples - start)
        s = sample_mask(np.broadcast_to(alpha, (m, alpha.size)), mask, rng)
        r = problem.y[None, :] - (s * w) @ problem.X.T
        values.append(np.sum(r * r, axis=1) / (2 * problem.n))
    values = np.concatenate(values)
    half = stats.norm.ppf(0.5 + level / 2) * values.std(ddof=1) / np.sqrt(samples)
    return MonteCarlo(
        float(values.mean()),
        float(values.mean() - half),
        float(values.mean() + half),
        expected_dropout_loss(problem, w, alpha),
        samples,
    )
