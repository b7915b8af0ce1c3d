"""The eta-trick duality, computed numerically (paper Sec. 2.2, Appendix A.2, Corollary 1).

For a separable penalty and one coordinate, with x = |w| >= 0:

    Omega(x) = min_{eta in H} 1/2 (x^2 / eta + f(eta))          eta-trick, eq. (5)
    f(eta)   = sup_{x >= 0}   2 Omega(x) - x^2 / eta             Legendre-Fenchel transform, eq. (15)
    Omega(x) = Omega(0) + int_0^x s / eta_hat(s) ds              Corollary 1

Every numerical penalty of adrop goes through these three functions; there are no per-penalty solvers.
Conventions at the edges: x^2 / eta is 0 when x = 0 (also at eta = 0) and when eta = inf; it is inf when x > 0 = eta.
Both searches run in log scale over [e^-SPAN, e^SPAN] (an eta_hat below 1e-304, as |w|^1.9 at |w| = 1e-170, is
out of reach) and also compare the two ends of the dual curve (eta = 0 and
eta = inf, or the ends of H), so minima at eta = 0 (x = 0) and eta = inf (unpenalised, e.g. MCP beyond a*lam) are exact.
"""

from __future__ import annotations

import numpy as np

from .quadrature import CumulativeIntegral

SPAN = 700.0  # the searches cover eta, |w| in [e^-700, e^700] (~1e-304 .. 1e304) besides the exact ends
GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0


def quiet():
    """np.where evaluates the branch it discards too (inf - inf at w = inf, 0/0 at eta = 0); those values are never
    returned, so their floating-point warnings are noise. Formulas run inside this context."""
    return np.errstate(divide="ignore", invalid="ignore", over="ignore")


def _quiet(fun):
    def wrapped(*args, **kwargs):
        with quiet():
            return fun(*args, **kwargs)

    wrapped.__doc__, wrapped.__name__ = fun.__doc__, fun.__name__
    return wrapped


@_quiet
def tikhonov(x, eta) -> np.ndarray:
    """x^2 / eta for x = |w|, with the conventions above; computed as x * (x / eta) so that a nonzero x whose
    square underflows still costs inf at eta = 0 (no warnings, no NaN)."""
    x, eta = np.broadcast_arrays(np.abs(np.asarray(x, dtype=np.float64)), np.asarray(eta, dtype=np.float64))
    out = x * (x / eta)
    out = np.where(x == 0.0, 0.0, out)
    return np.where(np.isinf(eta), 0.0, out)


def minimise(objective, t_lo, t_hi, batch: int, grid: int = 160, iters: int = 48):
    """Minimise objective(t) over t in [t_lo, t_hi] for `batch` independent problems at once.

    `objective` takes t of shape (batch, m) and returns values of that shape. A grid scan finds the best cell (so
    a non-unimodal objective cannot trap the search far from its global minimum), then golden-section search
    refines it to ~1e-10 in t. Returns (t_best, value_best), each of shape (batch,).
    """
    t_grid = np.linspace(t_lo, t_hi, grid)
    values = objective(np.broadcast_to(t_grid, (batch, grid)))
    i = np.argmin(np.where(np.isnan(values), np.inf, values), axis=1)
    rows = np.arange(batch)
    a = t_grid[np.clip(i - 1, 0, grid - 1)][:, None]
    b = t_grid[np.clip(i + 1, 0, grid - 1)][:, None]
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fc, fd = objective(c), objective(d)
    for _ in range(iters):
        left = fc <= fd  # the minimum lies in [a, d]
        a, b = np.where(left, a, c), np.where(left, d, b)
        new = np.where(left, b - GOLDEN * (b - a), a + GOLDEN * (b - a))
        f_new = objective(new)
        c, d, fc, fd = (
            np.where(left, new, d),
            np.where(left, c, new),
            np.where(left, f_new, fd),
            np.where(left, fc, f_new),
        )
    candidates_t = np.concatenate([t_grid[i][:, None], c, d], axis=1)
    candidates_f = np.concatenate([values[rows, i][:, None], fc, fd], axis=1)
    j = np.argmin(np.where(np.isnan(candidates_f), np.inf, candidates_f), axis=1)
    return candidates_t[rows, j], candidates_f[rows, j]


@_quiet
def omega_from_dual(curve, bounds, x):
    """Omega(x) = min over the dual curve of 1/2 (x^2 / eta + f), and the eta that attains it.

    `curve(t) -> (eta, f)` parameterises the dual pairs by a scalar t in [t_lo, t_hi] (t = log eta for a penalty
    with f in closed form; t = log a for HardConcrete, whose eta and f are both functions of the gate parameter).
    `bounds = (t_lo, t_hi, (eta_lo, f_lo), (eta_hi, f_hi))` gives the range and the curve's limits at its two ends.
    """
    x = np.asarray(x, dtype=np.float64)
    flat, back = np.unique(np.abs(x), return_inverse=True)  # weight matrices and k-sparse vectors repeat values
    col = flat[:, None]
    t_lo, t_hi, (eta_lo, f_lo), (eta_hi, f_hi) = bounds

    def objective(t):
        eta, f = curve(t)
        return 0.5 * (tikhonov(col, eta) + f)

    t_best, value = minimise(objective, t_lo, t_hi, flat.size)
    eta_best = curve(t_best[:, None])[0][:, 0]
    ends_eta = np.array([eta_lo, eta_hi], dtype=np.float64)
    ends_value = 0.5 * (tikhonov(col, ends_eta) + np.array([f_lo, f_hi], dtype=np.float64))
    k = np.argmin(ends_value, axis=1)
    # An exact end (eta = 0, eta = inf) wins ties to rounding: eta_hat = inf rather than 1e16 for a free coordinate.
    use_end = ends_value[np.arange(flat.size), k] <= value + 8 * np.finfo(float).eps * np.abs(value)
    value = np.where(use_end, ends_value[np.arange(flat.size), k], value)
    eta_best = np.where(use_end, ends_eta[k], eta_best)
    return value[back].reshape(x.shape), eta_best[back].reshape(x.shape)


def log_eta_bounds(f, lo: float, hi: float):
    """`bounds` for omega_from_dual when the curve is t = log eta over H = [lo, hi] (0 <= lo < hi <= inf)."""
    t_lo = max(np.log(lo) if lo > 0 else -SPAN, -SPAN)
    t_hi = min(np.log(hi) if np.isfinite(hi) else SPAN, SPAN)
    ends = np.array([lo, hi], dtype=np.float64)
    f_lo, f_hi = f(ends)
    return t_lo, t_hi, (lo, f_lo), (hi, f_hi)


@_quiet
def f_from_omega(omega, eta):
    """f(eta) = sup_{x >= 0} 2 Omega(x) - x^2 / eta, the convex (in -1/eta) dual of a subquadratic Omega.

    `omega` is the elementwise penalty of |w|. At eta = 0 the sup is at x = 0 (f = 2 Omega(0)); at eta = inf it is
    the limit x -> inf (f = 2 Omega(inf)). Where the closed form restricts eta to a set H, this returns the
    transform's value outside H too (e.g. Huber: eps for eta < eps), which gives the same Omega.
    """
    eta = np.asarray(eta, dtype=np.float64)
    flat, back = np.unique(eta, return_inverse=True)
    inv = np.where(np.isinf(flat), 0.0, 1.0 / np.where(flat == 0.0, 1.0, flat))[:, None]
    inv = np.minimum(inv, np.finfo(np.float64).max)  # 1/eta overflows for subnormal eta: inf * (x^2 = 0) was NaN

    def negative(r):
        x = np.exp(r)
        return -(2.0 * omega(x) - x * x * inv)

    _, value = minimise(negative, -SPAN, SPAN, flat.size)
    ends = omega(np.array([0.0, np.inf]))
    value = np.minimum(value, -2.0 * ends[0])  # x = 0 is always a candidate
    out = -value
    out = np.where(flat == 0.0, 2.0 * ends[0], out)
    out = np.where(np.isinf(flat), 2.0 * ends[1], out)
    return out[back].reshape(eta.shape)


@_quiet
def omega_from_eta_hat(eta_hat, x, knots=()):
    """Omega(x) - Omega(0) = int_0^x s / eta_hat(s) ds (Corollary 1), for an elementwise eta_hat of |w|.

    `knots` are the |w| where eta_hat has kinks or jumps (SCAD's lam and a*lam, say); eta_hat = inf contributes 0.
    """

    def integrand(s):
        e = eta_hat(s)
        return np.where(np.isinf(e), 0.0, s / e)

    integral = CumulativeIntegral(integrand, lo=1e-12, hi=1e8, knots=knots)
    return integral(np.abs(np.asarray(x, dtype=np.float64)))
