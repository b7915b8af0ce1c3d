"""eta-Trick: joint gradient descent in w and log eta of the eta-trick objective (paper eq. 6, Sec. 5)

    data + lam/2 sum_j (w_j^2 / eta_j + f(eta_j)) + lam c sum_j log(eta_j / lam),

with f the dual of LogSum(eps=2) from adrop.penalties, eta parameterised as eta = lam * exp(log_eta_bar) (log_eta_bar
starts at 5, as in the paper) and c = 1e-3 the paper's small pull that makes eta follow w to sparsity. A weight
counts as zero when alpha = eta / (eta + lam) < 0.05."""
from dataclasses import dataclass, field

import torch
from torch import nn

from adrop import penalties
from adrop.keep_rule import KEEP_THRESHOLD

from .base import Method, SparseLinear, register


@dataclass
class EtaTrickParams:
    penalty: str = "logsum"
    penalty_params: dict = field(default_factory=lambda: {"eps": 2.0})
    init_log_eta: float = 5.0
    log_eta_weight: float = 1e-3


class EtaTrickLinear(SparseLinear):
    def __init__(self, in_features, out_features, method):
        super().__init__(in_features, out_features, method)
        self.pen, self.c = method.pen, method.params.log_eta_weight
        self.log_eta_bar = nn.Parameter(torch.full((out_features, in_features), float(method.params.init_log_eta)))

    def penalty(self):
        eta = self.lam * torch.exp(self.log_eta_bar)
        w = self.weight
        return 0.5 * (w * w / eta + self.pen.f_elementwise(eta)).sum() + self.c * self.log_eta_bar.sum()

    def keep_mask(self):
        return torch.sigmoid(self.log_eta_bar.detach()) >= KEEP_THRESHOLD  # eta/(eta + lam) = sigmoid(log eta_bar)


@register
class EtaTrick(Method):
    name = "eta_trick"
    layer = EtaTrickLinear
    Params = EtaTrickParams

    def __init__(self, lam, params, steps_per_epoch, epochs):
        super().__init__(lam, params, steps_per_epoch, epochs)
        self.pen = penalties.get(params.penalty, **dict(params.penalty_params))
