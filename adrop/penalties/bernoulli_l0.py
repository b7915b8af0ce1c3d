"""Effective penalty of Bernoulli L0 dropout (paper Sec. 4.3).

Biased masks s_j ~ Bernoulli(alpha_j) applied to L(wbar) + lam/2 ||wbar||_0 with wbar = s * w: the expected L0 count
is f = sum_j alpha_j. Bernoulli masks have E[s] = E[s^2] = alpha, so the unbiased keep probability is again alpha and
eta = lam alpha / (1 - alpha), i.e. f(eta) = alpha = eta / (eta + lam). Omega is a function of the effective weight
w~ = E[s] w. At lam = 1 it equals MCP(1, 1) (the paper's remark); Omega comes from the generic minimisation.
"""

from __future__ import annotations

import numpy as np

from .base import Penalty, positive, register


@register
class BernoulliL0(Penalty):
    name = "bernoulli_l0"
    closed_form = False
    summary = "effective penalty of biased Bernoulli masks with f = sum alpha (equals MCP(1,1) at lam = 1)"

    def __init__(self, lam: float = 1.0):
        super().__init__(lam=positive("lam", lam))
        self.lam = float(lam)

    def _f(self, eta):
        return np.where(np.isinf(eta), 1.0, eta / (eta + self.lam))
