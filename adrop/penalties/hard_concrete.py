"""Effective penalty of HardConcrete "L0 regularisation" (Louizos et al. 2018; paper Sec. 4.3, Table 2).

Gates s ~ HardConcrete_{beta,gamma,zeta}(a): z = sigmoid((logit u + log a)/beta), u ~ U(0, 1),
s = min(1, max(0, (zeta - gamma) z + gamma)). The masks are biased, so (Sec. 4, "Biased Masks") the effective
weight is w~ = E[s] w, the unbiased keep probability is alpha~ = E[s]^2 / E[s^2] and

    eta~(a) = lam E[s]^2 / Var[s],        f(a) = 2 P(s > 0) = 2 sigmoid(log a - beta log(-gamma/zeta)).

Both are functions of the gate parameter, so the dual curve is parameterised by t = log a and Omega(w~) is the
generic minimisation over it. The moments are computed by deterministic Gauss-Legendre quadrature over z in the
stretch where 0 < s < 1, plus the point masses P(s = 0) and P(s = 1); no Monte Carlo.
"""

from __future__ import annotations

import numpy as np

from .array_ops import is_tensor, ops
from .base import Penalty, positive, register, require
from .quadrature import gauss_legendre_rule

# the dual curve is searched over log a in [-80, 80]; its ends are eta~ = 0, f = 0 and eta~ = inf, f = 2
LOG_A_SPAN = 80.0


@register
class HardConcrete(Penalty):
    name = "hard_concrete"
    closed_form = False
    summary = "effective penalty of HardConcrete L0 gates (Louizos et al.), function of w~ = E[s] w"

    def __init__(self, lam: float = 1.0, beta: float = 2.0 / 3.0, gamma: float = -0.1, zeta: float = 1.1):
        require(np.isfinite(gamma) and gamma < 0, "gamma", gamma, "must be < 0 (the stretch below 0)")
        require(np.isfinite(zeta) and zeta > 1, "zeta", zeta, "must be > 1 (the stretch above 1)")
        super().__init__(lam=positive("lam", lam), beta=positive("beta", beta), gamma=float(gamma), zeta=float(zeta))
        self.lam, self.beta, self.gamma, self.zeta = float(lam), float(beta), float(gamma), float(zeta)
        width = self.zeta - self.gamma
        self.z0, self.z1 = -self.gamma / width, (1.0 - self.gamma) / width  # s = 0 below z0, s = 1 above z1

    def p_nonzero(self, log_a):
        """P(s > 0) = sigmoid(log a - beta log(-gamma/zeta)); NumPy arrays or torch tensors (the expected L0)."""
        if not is_tensor(log_a):
            log_a = np.asarray(log_a, dtype=np.float64)
        return ops(log_a).sigmoid(log_a - self.beta * np.log(-self.gamma / self.zeta))

    def sample(self, log_a, u):
        """A gate s for uniform noise u in (0, 1): s = min(1, max(0, (zeta - gamma) z + gamma)),
        z = sigmoid((log u - log(1 - u) + log a) / beta). NumPy or torch (differentiable in log a)."""
        o = ops(log_a)
        z = o.sigmoid((o.log(u) - o.log1p(-u) + log_a) / self.beta)
        return _clip01((self.zeta - self.gamma) * z + self.gamma)

    def test_gate(self, log_a):
        """The deterministic gate at test time: min(1, max(0, sigmoid(log a)(zeta - gamma) + gamma))."""
        return _clip01(ops(log_a).sigmoid(log_a) * (self.zeta - self.gamma) + self.gamma)

    def moments(self, log_a):
        """(E[s], Var[s]) of the gate for each log a, by quadrature."""
        from scipy.special import expit, logit  # imported when used: a training process never needs scipy.special

        log_a = np.asarray(log_a, dtype=np.float64)
        width, beta = self.zeta - self.gamma, self.beta

        # Over z0 < z < z1 (where 0 < s < 1) the law of z has density du/dz for u = sigmoid(beta logit z - log a).
        z, w = gauss_legendre_rule(self.z0, self.z1, panels=8)
        x = beta * logit(z) - log_a[..., None, None]
        w = w * expit(x) * expit(-x) * beta / (z * (1.0 - z))
        s = width * z + self.gamma

        def expect(g):
            return np.sum(w * g, axis=(-2, -1))

        p_zero = expit(beta * logit(self.z0) - log_a)
        p_one = expit(log_a - beta * logit(self.z1))
        mean = expect(s) + p_one
        second = expect(s * s) + p_one
        # Var from s when gates are mostly closed, from q = 1 - s when mostly open: no cancellation either way.
        q1 = expect(1.0 - s) + p_zero
        q2 = expect((1.0 - s) ** 2) + p_zero
        var = np.where(mean <= 0.5, second - mean * mean, q2 - q1 * q1)
        return mean, var

    def _dual_curve(self, log_a):
        mean, var = self.moments(log_a)
        return self.lam * mean * mean / var, 2.0 * self.p_nonzero(log_a)

    def _dual_bounds(self):
        return -LOG_A_SPAN, LOG_A_SPAN, (0.0, 0.0), (np.inf, 2.0)


def _clip01(x):
    return x.clamp(0.0, 1.0) if is_tensor(x) else np.clip(x, 0.0, 1.0)
