"""The Linear layer of the methods that set eta = eta_hat(w) (AdaProx, AdaTikhonov, LogSum): a plain weight whose
keep probability is alpha = eta_hat(w) / (eta_hat(w) + lam), and the penalty object they share (from
adrop.penalties; LogSum(eps=2) in the paper)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from adrop import keep_rule, penalties

from .base import Method, SparseLinear


@dataclass
class PenaltyParams:
    penalty: str = "logsum"
    penalty_params: dict = field(default_factory=lambda: {"eps": 2.0})


class EtaHatLinear(SparseLinear):
    def __init__(self, in_features, out_features, method):
        super().__init__(in_features, out_features, method)
        self.pen = method.pen

    def keep_probability(self) -> torch.Tensor:
        return keep_rule.keep_probability(self.pen.eta_hat(self.weight.detach()), self.lam)

    def keep_mask(self):
        return self.keep_probability() >= keep_rule.KEEP_THRESHOLD


class EtaHatMethod(Method):
    layer = EtaHatLinear
    Params = PenaltyParams

    def __init__(self, lam, params, steps_per_epoch, epochs):
        super().__init__(lam, params, steps_per_epoch, epochs)
        self.pen = penalties.get(params.penalty, **dict(params.penalty_params))
