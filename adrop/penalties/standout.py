"""Effective penalty of Standout (Ba & Frey 2013; paper Sec. 4.1), on the activations (z)_+.

With the standout net copying the primary net, activation j is kept with probability sigmoid(z_j); the expected loss
then carries eta_hat_j = lam exp((z_j)_+) / w2_j^2, w2_j being the outgoing weight of unit j, and Corollary 1 gives

    Omega(z) = (w2^2 / lam) (1 - ((z)_+ + 1) exp(-(z)_+)),

a smooth approximation of L0 on the activations (lam * Omega does not depend on lam). f comes from the generic
Legendre-Fenchel transform. Unlike the weight penalties, this is a function of (z)_+, not of |z|.
"""

from __future__ import annotations

import numpy as np

from .base import Penalty, as_float, positive, quiet, register


@register
class Standout(Penalty):
    name = "standout"
    closed_form = False
    summary = "effective penalty of Standout on activations (z)_+: (w2^2/lam)(1 - (z+1)e^-z)"

    def __init__(self, lam: float = 1.0, w2: float = 1.0):
        super().__init__(lam=positive("lam", lam), w2=positive("w2", abs(w2)))
        self.scale = float(w2) ** 2 / float(lam)  # Omega = scale * (...), eta_hat = e^z / scale

    def omega_elementwise(self, z):
        with quiet():
            return self._omega(np.maximum(np.atleast_1d(as_float(z)), 0.0))

    def eta_hat(self, z):
        with quiet():  # positive everywhere, also at z <= 0
            return self._eta_hat(np.maximum(np.atleast_1d(as_float(z)), 0.0))

    def _omega(self, x):
        # 1 - (1 + x) e^-x, by its series x^2/2 - x^3/3 + x^4/8 - x^5/30 where the direct form cancels
        series = x * x * (0.5 - x * (1.0 / 3.0 - x * (1.0 / 8.0 - x / 30.0)))
        direct = -np.expm1(-x) - np.where(np.isinf(x), 0.0, x * np.exp(-x))
        return self.scale * np.where(x < 1e-3, series, direct)

    def _eta_hat(self, x):
        return np.exp(x) / self.scale
