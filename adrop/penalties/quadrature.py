"""Deterministic 1-D integration for the penalty calculus.

Two tools, both vectorised and float64:

- `gauss_legendre(fun, lo, hi, panels)`: integral of a smooth function over [lo, hi] for arrays of intervals.
- `CumulativeIntegral`: x -> int_0^x g(s) ds for a smooth g on (0, inf), tabulated once on a log grid so that
  thousands of queries (a golden-section search evaluates f hundreds of times) cost one table look-up and one
  short Gauss-Legendre panel each. Used for the variational-dropout KL (Dawson's integral) and for
  Corollary 1's integral Omega(w) = Omega(0) + int_0^|w| s / eta_hat(s) ds.

Integrals are taken in log s (ds = s dlog s): power-law behaviour at 0 and infinity becomes smooth there, and the
tails beyond the table are closed with the local power law, exact for g(s) ~ C s^q.
"""

from __future__ import annotations

import numpy as np

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(16)


def gauss_legendre_rule(lo, hi, panels: int = 1):
    """Nodes and weights of `panels` 16-point Gauss-Legendre panels on [lo, hi] (arrays broadcast together).

    Returns (x, w), each of shape broadcast(lo, hi).shape + (panels, 16); the integral of g is sum(w * g(x)).
    """
    lo, hi = np.broadcast_arrays(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))
    edges = lo[..., None] + (hi - lo)[..., None] * np.linspace(0.0, 1.0, panels + 1)
    a, b = edges[..., :-1, None], edges[..., 1:, None]
    half = 0.5 * (b - a)
    return a + half * (_NODES + 1.0), half * _WEIGHTS


def gauss_legendre(fun, lo, hi, panels: int = 1) -> np.ndarray:
    """Integral of `fun` over [lo, hi] (arrays broadcast together) with `panels` 16-point Gauss-Legendre panels."""
    x, w = gauss_legendre_rule(lo, hi, panels)
    return np.sum(w * fun(x), axis=(-2, -1))


class CumulativeIntegral:
    """G(x) = int_0^x g(s) ds for x >= 0, with g finite and smooth on (0, inf) apart from the given knots.

    `knots` are points where g (or its derivative) jumps; they become table nodes so that no Gauss-Legendre panel
    straddles one. G(inf) is the limit, closed with the power-law tail (inf if g decays no faster than 1/s).
    """

    def __init__(self, g, lo: float = 1e-12, hi: float = 1e12, per_decade: int = 24, knots=()):
        self.g = g
        grid = np.logspace(np.log10(lo), np.log10(hi), int(per_decade * np.log10(hi / lo)) + 1)
        knots = [k for k in np.asarray(knots, dtype=np.float64).ravel() if lo < k < hi and np.isfinite(k)]
        self.nodes = np.unique(np.concatenate([grid, knots]))
        self.log_nodes = np.log(self.nodes)
        pieces = self._log_integral(self.log_nodes[:-1], self.log_nodes[1:])
        self.head = self._tail(self.nodes[0], toward_zero=True)
        self.head_exponent = self._power_law(self.nodes[0], toward_zero=True)[1]
        self.table = self.head + np.concatenate([[0.0], np.cumsum(pieces)])
        self.tail_inf = self._tail(self.nodes[-1], toward_zero=False)

    def _phi(self, r):
        """The integrand in log s: g(s) s at s = exp(r)."""
        s = np.exp(r)
        return self.g(s) * s

    def _log_integral(self, r0, r1, panels: int = 1):
        return gauss_legendre(self._phi, r0, r1, panels)

    def _power_law(self, s0: float, toward_zero: bool):
        """Fit g(s) s ~ C s^q at the table's end s0 from two points; return (phi(s0), q)."""
        r0 = np.log(s0)
        step = -1.0 if toward_zero else 1.0
        p0, p1 = (float(v) for v in self._phi(np.array([r0, r0 + step])))
        if p0 <= 0.0 or p1 <= 0.0:
            return max(p0, 0.0), (1.0 if toward_zero else -1.0)
        return p0, (np.log(p1) - np.log(p0)) / step

    def _tail(self, s0: float, toward_zero: bool) -> float:
        """int_0^s0 (toward zero) or int_s0^inf of g under the fitted power law (inf where it diverges)."""
        p0, q = self._power_law(s0, toward_zero)
        if p0 == 0.0:
            return 0.0
        if toward_zero:
            return p0 / q if q > 0 else np.inf
        return p0 / -q if q < 0 else np.inf

    def __call__(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        out = np.empty_like(x)
        tiny = x < self.nodes[0]
        huge = x > self.nodes[-1]
        mid = ~(tiny | huge)
        xs = x[mid]
        i = np.clip(np.searchsorted(self.nodes, xs, side="right") - 1, 0, len(self.nodes) - 1)
        out[mid] = self.table[i] + self._log_integral(self.log_nodes[i], np.log(xs))
        # Below the table: the same power-law tail as the head, evaluated at x (0 at x = 0).
        xt = x[tiny]
        with np.errstate(divide="ignore"):
            frac = np.where(xt > 0, self.head * (xt / self.nodes[0]) ** self.head_exponent, 0.0)
        out[tiny] = frac
        # Above the table: Gauss-Legendre panels out to x, or the tail limit at x = inf.
        xh = x[huge]
        finite = np.isfinite(xh)
        beyond = np.full(xh.shape, self.table[-1] + self.tail_inf)
        if finite.any():
            r_hi = np.log(xh[finite])
            panels = 8
            beyond[finite] = self.table[-1] + self._log_integral(np.full(r_hi.shape, self.log_nodes[-1]), r_hi, panels)
        out[huge] = beyond
        return out
