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

from .base import Method, register


@dataclass
class EtaTrickParams:
    penalty: str = "logsum"
    penalty_params: dict = field(default_factory=lambda: {"eps": 2.0})
    init_log_eta: float = 5.0
    log_eta_weight: float = 1e-3


@register
class EtaTrick(Method):
    name = "eta_trick"
    Params = EtaTrickParams

    def __init__(self, params, steps_per_epoch, epochs):
        super().__init__(params, steps_per_epoch, epochs)
        self.pen, self.c = penalties.get(params.penalty, **dict(params.penalty_params)), params.log_eta_weight

    def add_parameters(self, layer):
        layer.log_eta_bar = nn.Parameter(torch.full(layer.weight.shape, float(self.params.init_log_eta)))

    def layer_penalty(self, layer, lam):
        eta = layer.per_config(lam) * torch.exp(layer.log_eta_bar)
        w = layer.weight
        return 0.5 * layer.total(w * w / eta + self.pen.f_elementwise(eta)) + self.c * layer.total(layer.log_eta_bar)

    def keep_statistic(self, layer, lam):
        return "keep_probability", torch.sigmoid(layer.log_eta_bar.detach())

    def keep_mask(self, layer, lam):
        return torch.sigmoid(layer.log_eta_bar.detach()) >= KEEP_THRESHOLD  # eta/(eta + lam) = sigmoid(log eta_bar)
