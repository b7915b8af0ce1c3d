"""AdaProx: after each optimiser step on the data term, the adaptive Tikhonov prox with eta = eta_hat(w),

    w <- w eta / (eta + rho lam),

rho being the step the optimiser just took for that coordinate (for Adam, lr / (sqrt(v_hat) + eps)), which the loop
hands over as step_size; the deterministic form of the paper's Algorithm 1 (Appendix B), as in its LeNet
experiment."""
import torch

from .base import register
from .eta_hat_layer import EtaHatMethod


@register
class AdaProx(EtaHatMethod):
    name = "adaprox"

    @torch.no_grad()
    def after_step(self, layers, step, lam, step_size):
        for layer in layers:
            w = layer.weight
            eta = self.pen.eta_hat(w)
            rho = step_size(w)
            w.mul_(torch.where(torch.isinf(eta), 1.0, eta / (eta + rho * layer.per_config(lam))))
