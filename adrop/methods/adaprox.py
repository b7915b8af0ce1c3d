"""AdaProx: after each optimiser step on the data term, the adaptive Tikhonov prox with eta = eta_hat(w),

    w <- w eta / (eta + rho lam),

rho being the step the optimiser just took for that coordinate (for Adam, lr / (sqrt(v_hat) + eps)), which the engine
hands over as step_size; the deterministic form of the paper's Algorithm 1 (Appendix B), as in its LeNet
experiment.

authors_keep_rule (off by default) counts a weight as kept as the authors' public code does (github
dlej/adaptive-dropout, dropout/nn.py near line 326): alpha = eta_hat / (eta_hat + rho lam)
with rho the last step's size, where the paper (and the default) use eta_hat / (eta_hat + lam). The step sizes are
then kept per weight (a buffer `last_step`, in checkpoints).

authors_validation_prox (off by default) repeats the prox once per validation batch after every epoch's training,
with no gradient step between (ceil(12,000 / 128) = 94 times in the paper's setting), at the epoch's last step sizes:
what the authors' code does without meaning to. Their AdaptiveCallback (experiments/Sparse MNIST.ipynb) updates
alpha and applies the prox in `on_batch_end`, and skorch (0.10, their environment.yml) fires `on_batch_end` for the
validation batches too (`run_single_epoch`, with training=False), which the callback does not check."""
from dataclasses import dataclass

import torch

from adrop import keep_rule

from .base import register
from .eta_hat_layer import EtaHatMethod, PenaltyParams


@dataclass
class AdaProxParams(PenaltyParams):
    authors_keep_rule: bool = False
    authors_validation_prox: bool = False


@register
class AdaProx(EtaHatMethod):
    name = "adaprox"
    Params = AdaProxParams

    def __init__(self, params, steps_per_epoch, epochs, structure="weight"):
        super().__init__(params, steps_per_epoch, epochs, structure)
        if params.authors_keep_rule and structure != "weight":
            raise ValueError("method.params.authors_keep_rule is the authors' per-weight rule: it needs "
                             "structure=weight")

    def add_parameters(self, layer):
        if self.params.authors_keep_rule:  # rho of the last step, written after every step
            layer.register_buffer("last_step", torch.ones_like(layer.weight))

    def keep_probability(self, layer, lam):
        if not self.params.authors_keep_rule:
            return super().keep_probability(layer, lam)
        return keep_rule.keep_probability(self.pen.eta_hat(layer.weight.detach()),
                                          layer.last_step * layer.per_config(lam))

    @torch.no_grad()
    def after_step(self, layers, step, lam, step_size):
        for layer in layers:
            rho = step_size(layer.weight)
            self.prox(layer, lam, rho)
            if self.params.authors_keep_rule:
                layer.last_step.copy_(rho)

    @torch.no_grad()
    def end_epoch(self, layers, lam, step_size, validation_batches):
        if not self.params.authors_validation_prox:
            return
        rhos = [step_size(layer.weight) for layer in layers]  # the epoch's last step sizes: no optimiser step between
        for _ in range(validation_batches):
            for layer, rho in zip(layers, rhos):
                self.prox(layer, lam, rho)
