"""Effective penalty of variational dropout (Molchanov et al. 2017; paper Sec. 4.2, Table 2).

VariationalDropout is adaptive dropout with lambda = 1/N and f(eta) = 2 KL(q || log-uniform prior):

    f(eta) = int_0^{eta/lam} F(sqrt(t/2)) / sqrt(t/2) dt = 4 int_0^{sqrt(eta/(2 lam))} F(u) du,

F being Dawson's integral (the second form substitutes t = 2u^2). Molchanov's alpha is lam/eta. The integral of F
is tabulated once (it is the expensive part) and shared by every instance. `approx=True` uses instead Molchanov's
fit -KL ~ k1 sigmoid(k2 + k3 log alpha) - 0.5 log(1 + 1/alpha) - k1.

Omega and eta_hat come from the generic eta-trick minimisation. Near 0, f ~ eta/lam so Omega ~ |w|/sqrt(lam);
for large eta, f ~ log(eta/lam) so Omega grows like log|w|.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .array_ops import ops
from .base import Penalty, positive, register
from .quadrature import CumulativeIntegral

K1, K2, K3 = 0.63576, 1.87320, 1.48695


@lru_cache(maxsize=1)
def dawson_integral() -> CumulativeIntegral:
    """u -> int_0^u F(s) ds, F = Dawson's integral."""
    from scipy.special import dawsn  # imported when used: a training process never needs scipy.special

    return CumulativeIntegral(dawsn, lo=1e-10, hi=1e25)


def kl_exact(ratio) -> np.ndarray:
    """KL(q || p) for Gaussian dropout with eta/lam = ratio = 1/alpha_Molchanov (log-uniform prior)."""
    return 2.0 * dawson_integral()(np.sqrt(np.asarray(ratio, dtype=np.float64) / 2.0))


def kl_approx(ratio) -> np.ndarray:
    """Molchanov et al.'s fit of the same KL, written in ratio = eta/lam (k1 (1 - sigmoid(x)) = k1 sigmoid(-x))."""
    ratio = np.asarray(ratio, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return kl_approx_log(np.log(ratio))


def kl_approx_log(log_ratio):
    """The same fit from log(eta/lam) = -log alpha_Molchanov, for NumPy arrays or torch tensors (training):
    k1 sigmoid(k3 log_ratio - k2) + 1/2 log(1 + e^log_ratio)."""
    o = ops(log_ratio)
    return K1 * o.sigmoid(K3 * log_ratio - K2) + 0.5 * o.softplus(log_ratio)


@register
class VariationalDropout(Penalty):
    name = "variational_dropout"
    closed_form = False
    summary = "effective penalty of variational dropout: f = 2 KL (Dawson), lam = 1/N"

    def __init__(self, lam: float = 1.0, approx: bool = False):
        super().__init__(lam=positive("lam", lam), approx=bool(approx))
        self.lam, self.approx = float(lam), bool(approx)

    def _f(self, eta):
        kl = kl_approx if self.approx else kl_exact
        return 2.0 * kl(eta / self.lam)
