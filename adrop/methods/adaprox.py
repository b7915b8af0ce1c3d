"""AdaProx: after each optimiser step on the data term, the adaptive Tikhonov prox with eta = eta_hat(w),

    w <- w eta / (eta + rho lam),

rho being the optimiser's effective step for that coordinate (for Adam, lr / (sqrt(v_hat) + eps)); the deterministic
form of the paper's Algorithm 1 (Appendix B), as in its LeNet experiment."""
import torch

from .base import register
from .eta_hat_layer import EtaHatMethod


def effective_step(optimizer, param) -> torch.Tensor | float:
    """Per-coordinate step of the last update: lr / (sqrt(v / (1 - beta2^t)) + eps) for Adam, lr otherwise."""
    group = next(g for g in optimizer.param_groups if any(p is param for p in g["params"]))
    state = optimizer.state.get(param, {})
    if "exp_avg_sq" not in state:
        return group["lr"]
    step = float(state["step"])
    _, beta2 = group["betas"]
    v_hat = state["exp_avg_sq"] / (1 - beta2**step)
    return group["lr"] / (v_hat.sqrt() + group["eps"])


@register
class AdaProx(EtaHatMethod):
    name = "adaprox"

    @torch.no_grad()
    def after_step(self, layers, optimizer, step):
        for layer in layers:
            w = layer.weight
            eta = self.pen.eta_hat(w)
            rho = effective_step(optimizer, w)
            w.mul_(torch.where(torch.isinf(eta), 1.0, eta / (eta + rho * self.lam)))
