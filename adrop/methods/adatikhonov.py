"""AdaTikhonov: gradient descent on data + lam/2 sum_j w_j^2 / eta_j with eta = eta_hat(w) held fixed (no gradient
through eta), i.e. the adaptive Tikhonov term of the eta-trick (paper Sec. 5). Its gradient lam w / eta_hat(w) is
that of lam Omega (eq. 6), so it tracks LogSum closely, as the paper observes. structure=neuron: sqrt(|g|)/2 ||w_g||^2 / eta_hat(||w_g||)
per group, whose gradient is that of sqrt(|g|) Omega(||w_g||)."""
import torch

from .base import register
from .eta_hat_layer import EtaHatMethod, group_weight


@register
class AdaTikhonov(EtaHatMethod):
    name = "adatikhonov"

    def layer_penalty(self, layer, lam):
        w = layer.weight
        eta = self.pen.eta_hat(layer.group_norm(w.detach()))
        # w^2 / eta, 0 where eta = 0 (then w = 0) or inf; the safe denominator keeps the gradient finite
        safe = torch.where(eta > 0, eta, torch.ones_like(eta))
        tikhonov = 0.5 * layer.total(w * w / safe)  # per group: ||w_g||^2 / eta_g
        return tikhonov if layer.group_size == 1 else group_weight(layer) * tikhonov
