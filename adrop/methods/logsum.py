"""LogSum: plain gradient descent on data + lam * sum_j Omega(w_j), Omega = log(|w| + eps) by default (the paper's
LogSum baseline, eq. 1). Any separable closed-form penalty of adrop.penalties can stand in (method.params.penalty).
structure=neuron: sum_g sqrt(|g|) Omega(||w_g||_2)."""

from .base import register
from .eta_hat_layer import EtaHatMethod, group_weight


@register
class LogSum(EtaHatMethod):
    name = "logsum"

    def layer_penalty(self, layer, lam):
        omega = layer.total(self.pen.omega_elementwise(layer.group_norm(layer.weight)))
        return omega if layer.group_size == 1 else group_weight(layer) * omega
