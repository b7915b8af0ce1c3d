"""Adaptive dropout itself (paper Sec. 3 and Algorithm 1), on least squares with standardised columns.

Each iteration draws masks s ~ Mask(alpha) with alpha = eta / (eta + lam), eta = eta_hat(w):

- `mask="gaussian"`:  s ~ N(1, 1/alpha - 1);   `mask="bernoulli"`: s = Bernoulli(alpha) / alpha (unbiased).
  Both have E[s] = 1 and E[s^2] = 1/alpha, so E_s L(s * w) = L(w) + lam/2 sum w^2/eta (eq. 4): the adaptive
  Tikhonov term of the eta-trick. A weight with alpha = 0 (eta = 0) is dropped: s = 0.
- plain (`additive=False`):  w <- w - rho_t grad_w L(s * w) = w - rho_t s * grad L(s * w).
- Algorithm 1 (`additive=True`): w <- w - rho_t grad L(w + (s - 1) * v) with v = w (an unbiased estimate of
  grad L(w)), then eta = eta_hat(w) and the Tikhonov prox w <- w / (1 + rho_t lam / eta).

Step sizes rho_t = step / (1 + t / decay) (sum infinite, sum of squares finite) so the iterates settle. The
variance of the plain method grows like 1/alpha as weights leave the support, which Algorithm 1's additive
reparameterisation removes (paper Sec. 4, "Reparameterization Tricks").
"""

from __future__ import annotations

import numpy as np

from .solvers import iterate, tikhonov_prox

MASKS = ("gaussian", "bernoulli")


def keep_probability(eta, lam):
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(eta), 1.0, eta / (eta + lam))


def sample_mask(alpha, kind, rng):
    """Unbiased masks with E[s] = 1, E[s^2] = 1/alpha; s = 0 where alpha = 0."""
    safe = np.where(alpha > 0, alpha, 1.0)
    if kind == "gaussian":
        s = 1.0 + np.sqrt(1.0 / safe - 1.0) * rng.standard_normal(alpha.shape)
    elif kind == "bernoulli":
        s = (rng.random(alpha.shape) < alpha) / safe
    else:
        raise ValueError(f"unknown mask {kind!r}; valid masks: {', '.join(MASKS)}")
    return np.where(alpha > 0, s, 0.0)


def adaptive_dropout(
    problem,
    penalty,
    lam,
    w0,
    max_iter=20000,
    tol=0.0,
    step=None,
    decay=None,
    mask="gaussian",
    additive=True,
    seed=0,
    record=None,
    **_,
):
    if mask not in MASKS:
        raise ValueError(f"unknown mask {mask!r}; valid masks: {', '.join(MASKS)}")
    if not problem.is_standardised():
        raise ValueError(
            "adaptive dropout equals the eta-trick only with standardised columns, "
            "diag(X^T X / n) = I: pass adrop.linear.standardise(X)"
        )
    rng = np.random.default_rng(seed)
    rho0 = step or 0.5 / problem.lipschitz
    decay = decay or max(max_iter / 20, 1.0)
    X, y, n = problem.X, problem.y, problem.n
    record(0, w0, np.nan, force=True)

    def dropout_step(t, w):
        rho = rho0 / (1.0 + t / decay)
        s = sample_mask(keep_probability(penalty.eta_hat(w), lam), mask, rng)
        grad_u = X.T @ (X @ (s * w) - y) / n  # grad L at u = s * w = w + (s - 1) * v with v = w
        if additive:
            v = w - rho * grad_u
            return tikhonov_prox(v, penalty.eta_hat(v), rho * lam)  # Algorithm 1: eta at the stepped point
        return w - rho * s * grad_u

    return iterate(dropout_step, w0.copy(), max_iter, tol, record)[0]
