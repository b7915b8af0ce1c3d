"""eta-Trick: joint gradient descent in w and log eta of the eta-trick objective (paper eq. 6, Sec. 5)

    data + lam/2 sum_j (w_j^2 / eta_j + f(eta_j)) + lam c sum_j log(eta_j / lam),

with f the dual of LogSum(eps=2) from adrop.penalties, eta parameterised as eta = lam * exp(log_eta_bar) (log_eta_bar
starts at 5, as in the paper) and c = 1e-3 the paper's small pull that makes eta follow w to sparsity. A weight
counts as zero when alpha = eta / (eta + lam) < 0.05. structure=neuron: one eta per group with ||w_g||^2 for w_j^2,
eta = lam sqrt(|g|) exp(log_eta_bar) and each group's terms weighted sqrt(|g|), as the eta-hat methods' group form.

Two switches follow the authors' public code where it departs from the paper's text (github dlej/adaptive-dropout,
dropout/nn.py), off by default:
    authors_dual        their dual of LogSum(eps), 2 log((r + eps)/2) - 2 (r - eps)^2 / (4 eta) with r = sqrt(eps^2 +
                        4 eta) (nn.py near line 382): the second term twice ours, a weaker penalty than LogSum(eps)
    authors_extra_term  their pull lam/2 * c * sum log eta_bar (nn.py near lines 243-245) instead of the paper's
                        lam * c * sum log eta_bar
"""

from dataclasses import dataclass

import torch
from torch import nn

from adrop import penalties
from adrop.keep_rule import KEEP_THRESHOLD

from .base import Method, register
from .eta_hat_layer import PenaltyParams, group_lam, group_weight


@dataclass
class EtaTrickParams(PenaltyParams):
    init_log_eta: float = 5.0  # log eta_bar at the start (eta = lam exp(log_eta_bar)), the paper's 5
    log_eta_weight: float = 1e-3  # c, the pull lam c sum log(eta / lam) that makes eta follow w to sparsity
    authors_dual: bool = False  # the authors' dual of LogSum (a weaker penalty than the paper's)
    authors_extra_term: bool = False  # the authors' pull lam/2 c sum log eta_bar (the paper's: lam c ...)


@register
class EtaTrick(Method):
    name = "eta_trick"
    Params = EtaTrickParams

    def __init__(self, params, steps_per_epoch, epochs, structure="weight"):
        super().__init__(params, steps_per_epoch, epochs, structure)
        self.pen, self.c = penalties.get(params.penalty, **dict(params.penalty_params)), params.log_eta_weight
        if params.authors_extra_term:
            self.c = 0.5 * params.log_eta_weight
        if params.authors_dual and params.penalty != "logsum":
            raise ValueError("method.params.authors_dual is the authors' dual of LogSum: it needs penalty=logsum")

    def dual(self, eta):
        """f(eta): the penalty's dual, or with authors_dual the authors' LogSum dual (its second term doubled)."""
        f = self.pen.f_elementwise(eta)
        if not self.params.authors_dual:
            return f
        e = self.pen.eps
        return f - torch.where(torch.isinf(eta), 1.0, 4.0 * eta / (torch.sqrt(e * e + 4.0 * eta) + e) ** 2)

    def add_parameters(self, layer):
        layer.log_eta_bar = nn.Parameter(torch.full(layer.group_shape, float(self.params.init_log_eta)))

    def layer_penalty(self, layer, lam):
        eta = group_lam(layer, lam) * torch.exp(layer.log_eta_bar)
        w = layer.weight
        if layer.group_size == 1:
            return 0.5 * layer.total(w * w / eta + self.dual(eta)) + self.c * layer.total(layer.log_eta_bar)
        # per group: ||w_g||^2 / eta_g + f(eta_g), weighted sqrt(|g|) with the pull
        eta_trick = 0.5 * (layer.total(w * w / eta) + layer.total(self.dual(eta))) + self.c * layer.total(
            layer.log_eta_bar
        )
        return group_weight(layer) * eta_trick

    def keep_probability(self, layer):
        return torch.sigmoid(layer.log_eta_bar.detach())  # eta / (eta + lam) with eta = lam exp(log eta_bar)

    def keep_statistic(self, layer, lam):
        return "keep_probability", self.keep_probability(layer)

    def keep_mask(self, layer, lam):
        return self.keep_probability(layer) >= KEEP_THRESHOLD
