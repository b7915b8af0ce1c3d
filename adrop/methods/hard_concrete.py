"""HardConcrete "L0 regularisation" (Louizos et al. 2018) with one gate per weight, as the paper analyses (Sec. 4.3).

Training: W = theta * s with s ~ HardConcrete(log a) drawn once per minibatch; the regulariser is the expected
number of open gates sum_j P(s_j > 0). Evaluation: the deterministic gate min(1, max(0, sigmoid(log a)(zeta - gamma)
+ gamma)) folded into the weight; a closed gate (0) is a zero weight. The distribution (sampling, P(s > 0), the test
gate) is adrop.penalties.hard_concrete's, whose effective penalty Figure 1 draws. log a starts from a drop rate
(log((1 - p) / p), p = 0.5) and is clamped to [log 0.01, log 100], as in Louizos et al.'s code.

structure=neuron: one gate per group (the L0 paper's group sparsity, Sec. 3.1: a Linear layer's input units, a
Conv2d layer's filters), drawn once per minibatch, and each group's P(s_g > 0) counted |g| times, as that paper's
group penalty does: the regulariser stays the expected number of nonzero weights.
"""

import math
from dataclasses import dataclass

import torch
from torch import nn

from adrop import penalties

from .base import Method, noise, register


@dataclass
class HardConcreteParams:
    beta: float = 2.0 / 3.0  # the gates' temperature (Louizos et al.)
    gamma: float = -0.1  # the stretch's lower end
    zeta: float = 1.1  # the stretch's upper end
    init_drop: float = 0.5  # the gates' drop rate at the start: log a = log((1 - p) / p)
    log_a_min: float = math.log(0.01)  # log a clamped to [log_a_min, log_a_max], as in Louizos et al.'s code
    log_a_max: float = math.log(100.0)


@register
class HardConcrete(Method):
    name = "hard_concrete"
    Params = HardConcreteParams

    def __init__(self, params, steps_per_epoch, epochs, structure="weight"):
        super().__init__(params, steps_per_epoch, epochs, structure)
        self.dist = penalties.get("hard_concrete", lam=1.0, beta=params.beta, gamma=params.gamma, zeta=params.zeta)
        self.bounds = (params.log_a_min, params.log_a_max)

    def add_parameters(self, layer):
        p = self.params
        layer.log_a = nn.Parameter(torch.full(layer.group_shape, math.log((1 - p.init_drop) / p.init_drop)))

    def clamped_log_a(self, layer):
        return layer.log_a.clamp(*self.bounds)

    def weight_sample(self, layer):
        u = noise.uniform_like(layer.log_a).clamp(1e-6, 1 - 1e-6)
        return layer.weight * self.dist.sample(self.clamped_log_a(layer), u)

    def layer_penalty(self, layer, lam):
        open_gates = layer.total(self.dist.p_nonzero(self.clamped_log_a(layer)))
        return open_gates if layer.group_size == 1 else layer.group_size * open_gates

    def gate(self, layer):
        return self.dist.test_gate(self.clamped_log_a(layer).detach())

    def keep_statistic(self, layer, lam):
        return "gate", self.gate(layer)

    def keep_mask(self, layer, lam):
        return self.gate(layer) > 0

    def effective_weight(self, layer, lam):
        return layer.weight * self.gate(layer)

    def unmasked_weight(self, layer):
        return layer.weight * self.gate(layer)  # the deterministic gate is the model (exact zeros included)
