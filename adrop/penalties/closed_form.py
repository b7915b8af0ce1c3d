"""The penalties of the paper's appendix table (Table 3) with Omega, f and eta_hat in closed form.

Scalar pieces act on x = |w| >= 0 and eta in [0, inf]; every formula is written to stay finite and NaN-free at
x = 0, eta = 0 and eta = inf (limits taken where the table's formula reads 0/0). Outside H, f is inf. The separable
formulas are written with `ops(x)` so that they also take torch tensors (for training, with autograd).
SCAD and MCP carry their own `lam` (the scale in Fan & Li's and Zhang's definitions), as in the table; the
regularisation weight lambda of L(w) + lambda Omega(w) is separate.
"""

from __future__ import annotations

import numpy as np

from .array_ops import ops
from .base import Penalty, as_float, nonzero_where_w_is, positive, register, require


def exponents(p):
    """p in (0, 2) and the dual exponent q = p / (2 - p) of ell_p and ell_p^p."""
    require(0 < p < 2, "p", p, "must lie in (0, 2)")
    return float(p), float(p) / (2.0 - float(p))


@register
class L1(Penalty):
    name = "l1"
    summary = "|w|; f = eta; the Lasso"

    def _omega(self, x):
        return x

    def _f(self, eta):
        return eta

    def _eta_hat(self, x):
        return x


@register
class LpPowerP(Penalty):
    name = "lpp"
    summary = "|w|^p / p, 0 < p < 2 (separable)"

    def __init__(self, p: float = 0.5):
        super().__init__(p=float(p))
        self.p, self.q = exponents(p)

    def _omega(self, x):
        return x**self.p / self.p

    def _f(self, eta):
        return eta**self.q / self.q

    def _eta_hat(self, x):
        return x ** (2.0 - self.p)


@register
class L0(Penalty):
    name = "l0"
    summary = "1{w != 0}; f = 2 * 1{eta > 0}"

    def _omega(self, x):
        return ops(x).where(x > 0, 1.0, 0.0)

    def _f(self, eta):
        return ops(eta).where(eta > 0, 2.0, 0.0)

    def _eta_hat(self, x):
        return ops(x).where(x > 0, np.inf, 0.0)


@register
class ElasticNet(Penalty):
    name = "elastic_net"
    summary = "theta/2 w^2 + (1 - theta)|w|, 0 <= theta < 1; H = [0, 1/theta]"

    def __init__(self, theta: float = 0.5):
        require(0 <= theta < 1, "theta", theta, "must lie in [0, 1)")
        super().__init__(theta=float(theta))
        self.theta = float(theta)

    def domain(self):
        return 0.0, (1.0 / self.theta if self.theta > 0 else np.inf)

    def _omega(self, x):
        return x * (0.5 * self.theta * x + (1.0 - self.theta))

    def _f(self, eta):
        th, o = self.theta, ops(eta)
        inside = eta < self.domain()[1]
        den = o.where(inside, 1.0 - o.where(inside, eta, 0.0) * th, 1.0)
        return o.where(inside, eta * (1.0 - th) ** 2 / den, np.inf)

    def _eta_hat(self, x):
        th = self.theta
        if th == 0:
            return x
        # x / (x theta + 1 - theta), -> 1/theta as x -> inf
        return ops(x).where(ops(x).isinf(x), 1.0 / th, x / (x * th + (1.0 - th)))


@register
class Huber(Penalty):
    name = "huber"
    summary = "w^2/(2 eps) + eps/2 for |w| <= eps, else |w|; H = [eps, inf)"

    def __init__(self, eps: float = 1.0):
        super().__init__(eps=positive("eps", eps))
        self.eps = float(eps)

    def domain(self):
        return self.eps, np.inf

    def knots(self):
        return (self.eps,)

    def _omega(self, x):
        e = self.eps
        return ops(x).where(x <= e, x * x / (2 * e) + e / 2, x)

    def _f(self, eta):
        return ops(eta).where(eta >= self.eps, eta, np.inf)

    def _eta_hat(self, x):
        return ops(x).where(x > self.eps, x, self.eps)


@register
class LogSum(Penalty):
    name = "logsum"
    summary = "log(|w| + eps) (Candes et al.); eta_hat = |w|(|w| + eps)"

    def __init__(self, eps: float = 2.0):
        super().__init__(eps=positive("eps", eps))
        self.eps = float(eps)

    def _omega(self, x):
        return ops(x).log(x + self.eps)

    def _f(self, eta):
        e, o = self.eps, ops(eta)
        root = o.sqrt(e * e + 4.0 * eta)
        # (root - e)^2 / (4 eta) rewritten as 4 eta / (root + e)^2: exact at eta = 0, no cancellation
        ratio = o.where(o.isinf(eta), 1.0, 4.0 * eta / (root + e) ** 2)
        return 2.0 * o.log((root + e) / 2.0) - ratio

    def _eta_hat(self, x):
        return x * (x + self.eps)


@register
class SCAD(Penalty):
    name = "scad"
    summary = "smoothly clipped absolute deviation (Fan & Li), a > 2, lam > 0"

    def __init__(self, a: float = 3.7, lam: float = 1.0):
        require(np.isfinite(a) and a > 2, "a", a, "must be > 2 for SCAD")
        super().__init__(a=float(a), lam=positive("lam", lam))
        self.a, self.lam = float(a), float(lam)

    def knots(self):
        return (self.lam, self.a * self.lam)

    def _omega(self, x):
        a, lam = self.a, self.lam
        middle = (2 * a * lam * x - x * x - lam * lam) / (2 * (a - 1) * lam)
        o = ops(x)
        return o.where(x <= lam, x, o.where(x <= a * lam, middle, (a + 1) * lam / 2))

    def _f(self, eta):
        a, lam, o = self.a, self.lam, ops(eta)
        big = o.where(o.isinf(eta), (a + 1) * lam, lam * ((a + 1) * eta - lam) / ((a - 1) * lam + eta))
        return o.where(eta <= lam, eta, big)

    def _eta_hat(self, x):
        a, lam, o = self.a, self.lam, ops(x)
        middle = (a - 1) * lam * x / (a * lam - x)
        return o.where(x <= lam, x, o.where(x < a * lam, middle, np.inf))


@register
class MCP(Penalty):
    name = "mcp"
    summary = "minimax concave penalty (Zhang), a > 0, lam > 0"

    def __init__(self, a: float = 1.0, lam: float = 1.0):
        super().__init__(a=positive("a", a), lam=positive("lam", lam))
        self.al = float(a) * float(lam)

    def knots(self):
        return (self.al,)

    def _omega(self, x):
        al = self.al
        return ops(x).where(x <= al, x - x * x / (2 * al), al / 2)

    def _f(self, eta):
        al, o = self.al, ops(eta)
        return o.where(o.isinf(eta), al, al * eta / (eta + al))

    def _eta_hat(self, x):
        al = self.al
        return ops(x).where(x < al, al * x / (al - x), np.inf)


class _NotSeparable(Penalty):
    """Non-separable penalties state omega, f and eta_hat on whole vectors."""

    separable = False

    def omega_elementwise(self, w):
        raise TypeError(f"{self.name} is not separable: use omega(w) on whole vectors")

    def f_elementwise(self, eta):
        raise TypeError(f"{self.name} is not separable: use f(eta) on whole vectors")


@register
class Lp(_NotSeparable):
    name = "lp"
    summary = "the norm ||w||_p, 0 < p < 2 (not separable); f = ||eta||_q, q = p/(2-p)"

    def __init__(self, p: float = 0.5):
        super().__init__(p=float(p))
        self.p, self.q = exponents(p)

    def omega(self, w):
        x = np.abs(np.atleast_1d(as_float(w)))
        return np.sum(x**self.p, axis=-1) ** (1.0 / self.p)

    def f(self, eta):
        eta = np.atleast_1d(as_float(eta))
        with np.errstate(invalid="ignore"):
            norm = np.sum(eta**self.q, axis=-1) ** (1.0 / self.q)
        return np.where(self.outside(eta).any(axis=-1), np.inf, norm)

    def eta_hat(self, w):
        x = np.abs(np.atleast_1d(as_float(w)))
        norm = self.omega(x)[..., None]
        # |w_j|^(2-p) ||w||_p^(p-1); the zero vector (0 * inf for p < 1) maps to eta = 0
        with np.errstate(divide="ignore", invalid="ignore"):
            out = x ** (2.0 - self.p) * norm ** (self.p - 1.0)
        return nonzero_where_w_is(x, np.where(norm == 0, 0.0, out))


@register
class HardThresh(_NotSeparable):
    name = "hard_thresh"
    summary = "inf * 1{||w||_0 > k}; f = 0 on H = {||eta||_0 <= k}; eta_hat = inf on Top-k (IHT)"

    def __init__(self, k: int = 16):
        require(float(k) == int(k) and k >= 0, "k", k, "must be an integer >= 0")
        super().__init__(k=int(k))
        self.k = int(k)

    def omega(self, w):
        w = np.atleast_1d(as_float(w))
        return np.where(np.count_nonzero(w, axis=-1) > self.k, np.inf, 0.0)

    def f(self, eta):
        eta = np.atleast_1d(as_float(eta))
        return np.where((np.count_nonzero(eta, axis=-1) > self.k) | self.outside(eta).any(axis=-1), np.inf, 0.0)

    def eta_hat(self, w):
        x = np.abs(np.atleast_1d(as_float(w)))
        out = np.zeros_like(x)
        k = min(self.k, x.shape[-1])
        if k > 0:
            top = np.argsort(-x, axis=-1, kind="stable")[..., :k]  # ties go to the lower index
            np.put_along_axis(out, top, np.inf, axis=-1)
        return np.where(x > 0, out, 0.0)  # zeros stay out of the support (either eta minimises for w_j = 0)


@register
class MagnitudePruning(HardThresh):
    name = "magnitude_pruning"
    closed_form = False  # an effective penalty of a dropout method (Sec. 4.4), which happens to be HardThresh(k)
    summary = "effective penalty of Top-k magnitude pruning (Zhu & Gupta): HardThresh(k)"
