"""LogSum: plain gradient descent on data + lam * sum_j Omega(w_j), Omega = log(|w| + eps) by default (the paper's
LogSum baseline, eq. 1). Any separable closed-form penalty of adrop.penalties can stand in (method.params.penalty)."""
from .base import register
from .eta_hat_layer import EtaHatMethod


@register
class LogSum(EtaHatMethod):
    name = "logsum"

    def layer_penalty(self, layer, lam):
        return layer.total(self.pen.omega_elementwise(layer.weight))
