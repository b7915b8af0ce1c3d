"""AdaTikhonov: gradient descent on data + lam/2 sum_j w_j^2 / eta_j with eta = eta_hat(w) held fixed (no gradient
through eta), i.e. the adaptive Tikhonov term of the eta-trick (paper Sec. 5). Its gradient lam w / eta_hat(w) is
that of lam Omega (eq. 6), so it tracks LogSum closely, as the paper observes. structure=neuron: sqrt(|g|)/2
||w_g||^2 / eta_hat(||w_g||) per group, whose gradient is that of sqrt(|g|) Omega(||w_g||).

authors_alpha_clamp (off by default) follows the authors' AdaptiveTikhonovNet (github dlej/adaptive-dropout,
dropout/nn.py): the term is 1/2 sum w^2 / eta_lamda with eta_lamda = alpha / (1 - alpha), alpha = eta_hat(w) /
(eta_hat(w) + lam) clamped to alpha >= 1e-3 (so a weight's coefficient lam / eta is at most 999), and alpha starts
at 1 (their buffer's initial value, updated after each step), so the first step has no penalty. Per weight only."""

from dataclasses import dataclass

import torch

from adrop import keep_rule

from .base import register
from .eta_hat_layer import EtaHatMethod, PenaltyParams, group_weight

AUTHORS_ALPHA_MIN = 1e-3


@dataclass
class AdaTikhonovParams(PenaltyParams):
    authors_alpha_clamp: bool = False  # the authors' term: alpha clamped at 1e-3, starting at 1 (per weight only)


@register
class AdaTikhonov(EtaHatMethod):
    name = "adatikhonov"
    Params = AdaTikhonovParams

    def __init__(self, params, steps_per_epoch, epochs, structure="weight"):
        super().__init__(params, steps_per_epoch, epochs, structure)
        self.per_weight_only("authors_alpha_clamp")
        self.first = False  # the run's first step (before_step): with authors_alpha_clamp, no penalty

    def before_step(self, step, lam):
        self.first = step == 0

    def layer_penalty(self, layer, lam):
        w = layer.weight
        eta = self.pen.eta_hat(layer.group_norm(w.detach()))
        if self.params.authors_alpha_clamp:
            lam = torch.as_tensor(layer.layer_lam(lam), dtype=w.dtype, device=w.device)
            alpha = torch.ones_like(eta) if self.first else keep_rule.keep_probability(eta, lam)
            alpha = alpha.clamp(min=AUTHORS_ALPHA_MIN)
            tiny = lam.clamp(min=torch.finfo(w.dtype).tiny)  # lam = 0: alpha = 1, no term (not 0 / 0)
            return 0.5 * layer.total(w * w * (1.0 - alpha) / (alpha * tiny))  # lam times this: w^2 / (2 eta_lamda)
        # w^2 / eta, 0 where eta = 0 (then w = 0) or inf; the safe denominator keeps the gradient finite
        safe = torch.where(eta > 0, eta, torch.ones_like(eta))
        tikhonov = 0.5 * layer.total(w * w / safe)  # per group: ||w_g||^2 / eta_g
        return tikhonov if layer.group_size == 1 else group_weight(layer) * tikhonov
