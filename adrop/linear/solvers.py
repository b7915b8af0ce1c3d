"""First-order solvers of L(w) + lam Omega(w), and what every solver shares (history, pruning, the support).

Each solver takes a Problem, a penalty (from adrop.penalties), lam and a start w0, runs until the relative change
max|w_t - w_{t-1}| / max|w_t| falls below `tol` (or max_iter), and records every iteration.

- adaprox:   proximal gradient with the adaptive Tikhonov prox w <- v / (1 + rho lam / eta), v = w - rho grad L.
- gradient:  plain gradient descent on L + lam Omega (grad Omega = w / eta_hat(w), eq. 6).
(irls.py: the eta-trick by alternating minimisation; adaptive_dropout.py: the stochastic method.)

Coordinates that leave the support: the eta-trick shrinks them geometrically but never to exactly 0, so a weight
below `prune` times the largest is set to 0; eta_hat(0) = 0 then keeps it out, as the exact iteration would in the
limit (IRLS and AdaProx cannot revive a coordinate whose eta is 0). IRLS re-checks every zero afterwards.
"""

from __future__ import annotations

import numpy as np

from adrop import keep_rule


class Recorder:
    """Iteration history: objective L + lam Omega, relative change, nonzeros, and the paper's alpha >= 0.05 count."""

    def __init__(self, problem, penalty, lam, every: int = 1, track=None):
        self.problem, self.penalty, self.lam, self.every = problem, penalty, lam, every
        self.track = dict(track or {})  # extra columns: name -> function of w
        self.rows = []

    def objective(self, w) -> float:
        reg = self.penalty.omega(w) if self.lam > 0 else 0.0
        return self.problem.loss(w) + self.lam * float(reg)

    def __call__(self, t, w, change, force=False):
        self.last = (t, w, change)
        if force or t % self.every == 0:
            self.rows.append(
                {
                    "iteration": t,
                    "objective": self.objective(w),
                    "change": change,
                    "nonzeros": int(np.count_nonzero(w)),
                    "kept": kept(self.penalty, self.lam, w),
                    **{name: fn(w) for name, fn in self.track.items()},
                }
            )

    def finish(self):
        """Record the final iteration if `every` skipped it."""
        t, w, change = self.last
        if self.rows[-1]["iteration"] != t:
            self(t, w, change, force=True)


def kept(penalty, lam, w) -> int:
    """Weights whose keep probability alpha = eta_hat / (eta_hat + lam) is at least 0.05 (adrop.keep_rule)."""
    return int(np.count_nonzero(keep_mask(penalty, lam, w)))


def keep_mask(penalty, lam, w) -> np.ndarray:
    if lam == 0:
        return np.asarray(w) != 0
    return keep_rule.kept(penalty.eta_hat(w), lam)


def relative_change(new, old) -> float:
    scale = np.max(np.abs(new))
    return float(np.max(np.abs(new - old)) / scale) if scale > 0 else float(np.max(np.abs(new - old)))


def iterate(step, w, max_iter, tol, record, t0=0, on_small_change=None):
    """w <- step(t, w) for t = t0+1, ... until the relative change is below `tol` (and `on_small_change(w)`, if
    given, returns (w, True)) or max_iter steps; every iteration is recorded. Returns (w, last t)."""
    t = t0
    for t in range(t0 + 1, t0 + max_iter + 1):
        new = step(t, w)
        change = relative_change(new, w)
        w = new
        record(t, w, change)
        if change < tol:
            if on_small_change is None:
                break
            w, done = on_small_change(w)
            if done:
                break
    return w, t


def prune_small(w, prune):
    if prune > 0:
        w = np.where(np.abs(w) < prune * np.max(np.abs(w), initial=0.0), 0.0, w)
    return w


def slope_at_zero(penalty) -> float:
    """Omega'(0+) = lim_{x -> 0} x / eta_hat(x) (eq. 6): a zero weight is optimal iff |grad_j L| <= lam * this.
    inf for penalties that are not Lipschitz at 0 (lpp with p < 1, l0, hard_thresh), where zero always is."""
    if not penalty.separable:
        return np.inf
    x = np.array([1e-12, 1e-10])
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = x / penalty.eta_hat(x)
    if not np.all(np.isfinite(slopes)) or abs(slopes[0] - slopes[1]) > 1e-6 * max(slopes[1], 1e-300):
        return np.inf
    return float(slopes[0])


def omega_prime(penalty, w):
    """dOmega/dw = w / eta_hat(w) (eq. 6), 0 where eta_hat is inf (for the whole vector w)."""
    eta = penalty.eta_hat(w)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isinf(eta) | (w == 0), 0.0, w / eta)


def revive_zeros(problem, lam, w, slope, limit=None):
    """Zero weights that violate their optimality condition |grad_j L| <= lam Omega'(0+) rejoin with a
    soft-threshold step (the worst `limit` of them). Returns (w, indices revived)."""
    if not np.isfinite(slope):
        return w, np.array([], dtype=int)
    grad = problem.gradient(w)
    excess = np.where(w == 0, np.abs(grad) - lam * slope * (1 + 1e-9), 0.0)
    bad = np.flatnonzero(excess > 0)
    if bad.size:
        bad = bad[np.argsort(-excess[bad], kind="stable")][:limit]
        w = w.copy()
        w[bad] = -np.sign(grad[bad]) * excess[bad] / np.mean(problem.X[:, bad] ** 2, axis=0)
    return w, bad


def stationarity(problem, penalty, lam, w) -> float:
    """max_j |grad_j L + lam Omega'(w_j)| over the nonzero weights, relative to lam (0 at a stationary point)."""
    nz = w != 0
    if not nz.any() or lam == 0:
        return 0.0
    residual = problem.gradient(w)[nz] + lam * omega_prime(penalty, w)[nz]
    return float(np.max(np.abs(residual)) / lam)


def tikhonov_prox(v, eta, rho_lam):
    """argmin_w 1/2 ||w - v||^2 + rho lam/2 sum w^2/eta = v eta / (eta + rho lam), exact at eta = 0 and inf."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(eta), v, v * eta / (eta + rho_lam))


def adaprox(problem, penalty, lam, w0, max_iter=20000, tol=1e-8, prune=1e-10, step=None, record=None, **_):
    """Deterministic Algorithm 1. eta is taken at the current iterate (before the gradient step): its fixed points
    are then exactly the stationary points of L + lam Omega at any constant step (Algorithm 1's order, eta after
    the step, is off by O(step)).

    The multiplicative update lets a weight crawl out of ~0 for many iterations while the relative change is tiny,
    so it stops only when the change is below `tol` and the iterate is stationary (to sqrt(tol) relative to lam);
    pruned zeros that violate their optimality condition rejoin."""
    rho = step or 1.0 / problem.lipschitz
    slope = slope_at_zero(penalty)
    record(0, w0, np.nan, force=True)

    def prox_step(t, w):
        return prune_small(tikhonov_prox(w - rho * problem.gradient(w), penalty.eta_hat(w), rho * lam), prune)

    def stationary(w):
        w, revived = revive_zeros(problem, lam, w, slope)
        return w, revived.size == 0 and stationarity(problem, penalty, lam, w) < np.sqrt(tol)

    return iterate(prox_step, w0.copy(), max_iter, tol, record, on_small_change=stationary)[0]


def gradient(problem, penalty, lam, w0, max_iter=20000, tol=1e-8, step=None, record=None, **_):
    if not penalty.separable or penalty.name in ("l0", "hard_thresh", "magnitude_pruning"):
        raise ValueError(f"solver 'gradient' needs a differentiable penalty; {penalty.name} is not")
    rho = step or 1.0 / problem.lipschitz
    record(0, w0, np.nan, force=True)

    def gradient_step(t, w):
        return w - rho * (problem.gradient(w) + lam * omega_prime(penalty, w))  # grad Omega = w / eta_hat(w)

    return iterate(gradient_step, w0.copy(), max_iter, tol, record)[0]
