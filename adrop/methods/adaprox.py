"""AdaProx: after each optimiser step on the data term, the adaptive Tikhonov prox with eta = eta_hat(w),

    w <- w eta / (eta + rho lam),

rho being the optimiser's effective step for that coordinate (for Adam, lr / (sqrt(v_hat) + eps), from
adrop.train.optim.FlatAdam.effective_step); the deterministic form of the paper's Algorithm 1 (Appendix B), as in
its LeNet experiment."""
import torch

from .base import register
from .eta_hat_layer import EtaHatMethod


@register
class AdaProx(EtaHatMethod):
    name = "adaprox"

    @torch.no_grad()
    def after_step(self, layers, optimizer, step):
        for layer in layers:
            w = layer.weight
            eta = self.pen.eta_hat(w)
            rho = optimizer.effective_step(w)  # lr / (sqrt(v_hat) + eps) for Adam
            w.mul_(torch.where(torch.isinf(eta), 1.0, eta / (eta + rho * self.lam)))
