"""HardConcrete "L0 regularisation" (Louizos et al. 2018) with one gate per weight, as the paper analyses (Sec. 4.3).

Training: W = theta * s with s ~ HardConcrete(log a) drawn once per minibatch; the regulariser is the expected
number of open gates sum_j P(s_j > 0). Evaluation: the deterministic gate min(1, max(0, sigmoid(log a)(zeta - gamma)
+ gamma)) folded into the weight; a closed gate (0) is a zero weight. The distribution (sampling, P(s > 0), the test
gate) is adrop.penalties.hard_concrete's, whose effective penalty Figure 1 draws. log a starts from a drop rate
(log((1 - p) / p), p = 0.5) and is clamped to [log 0.01, log 100], as in Louizos et al.'s code.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from adrop import penalties

from .base import Method, SparseLinear, register


@dataclass
class HardConcreteParams:
    beta: float = 2.0 / 3.0
    gamma: float = -0.1
    zeta: float = 1.1
    init_drop: float = 0.5
    log_a_min: float = math.log(0.01)
    log_a_max: float = math.log(100.0)


class HardConcreteLinear(SparseLinear):
    def __init__(self, in_features, out_features, method):
        super().__init__(in_features, out_features, method)
        p = method.params
        self.dist, self.bounds = method.dist, (p.log_a_min, p.log_a_max)
        self.log_a = nn.Parameter(torch.full((out_features, in_features), math.log((1 - p.init_drop) / p.init_drop)))

    def clamped_log_a(self):
        return self.log_a.clamp(*self.bounds)

    def train_forward(self, x):
        u = torch.rand_like(self.log_a).clamp(1e-6, 1 - 1e-6)
        return F.linear(x, self.weight * self.dist.sample(self.clamped_log_a(), u), self.bias)

    def penalty(self):
        return self.dist.p_nonzero(self.clamped_log_a()).sum()

    def gate(self):
        return self.dist.test_gate(self.clamped_log_a().detach())

    def keep_mask(self):
        return self.gate() > 0

    def effective_weight(self):
        return self.weight * self.gate()


@register
class HardConcrete(Method):
    name = "hard_concrete"
    layer = HardConcreteLinear
    Params = HardConcreteParams

    def __init__(self, lam, params, steps_per_epoch, epochs):
        super().__init__(lam, params, steps_per_epoch, epochs)
        self.dist = penalties.get("hard_concrete", lam=1.0, beta=params.beta, gamma=params.gamma, zeta=params.zeta)
