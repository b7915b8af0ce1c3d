"""AdaProx: after each optimiser step on the data term, the adaptive Tikhonov prox with eta = eta_hat(w),

    w <- w eta / (eta + rho lam),

rho being the step the optimiser just took for that coordinate (for Adam, lr / (sqrt(v_hat) + eps)), which the engine
hands over as step_size; the deterministic form of the paper's Algorithm 1 (Appendix B), as in its LeNet
experiment.

authors_keep_rule (off by default) counts a weight as kept as the authors' public code does (github
dlej/adaptive-dropout, dropout/nn.py, AdaptiveProxNet.update_alphas_Adam): after each step, before the prox, it
stores alpha = eta_hat(w) / (eta_hat(w) + rho lam) from the stepped weights, with rho the step's size, proxes with
that alpha (w <- alpha w, the same prox) and counts with the stored alpha; the paper (and the default) count with
eta_hat / (eta_hat + lam) of the weights after the prox. The stored alpha is a buffer `authors_alpha` (in
checkpoints). The authors' rho is lr / sqrt(v_hat), without Adam's eps (1e-8), where adrop's is Adam's own step,
lr / (sqrt(v_hat) + eps): a relative difference below eps / sqrt(v_hat), negligible wherever a weight still moves.

authors_validation_prox (off by default) repeats the prox once per validation batch after every epoch's training,
with no gradient step between (ceil(12,000 / 128) = 94 times in the paper's setting), at the epoch's last step sizes:
what the authors' code does without meaning to. Their AdaptiveCallback (experiments/Sparse MNIST.ipynb) updates
alpha and applies the prox in `on_batch_end`, and skorch (0.10, their environment.yml) fires `on_batch_end` for the
validation batches too (`run_single_epoch`, with training=False), which the callback does not check."""

from dataclasses import dataclass

import torch

from adrop import keep_rule
from adrop.distributed import full, like

from .base import register
from .eta_hat_layer import EtaHatMethod, PenaltyParams


@dataclass
class AdaProxParams(PenaltyParams):
    authors_keep_rule: bool = False  # count kept weights as the authors' code does (alpha before the prox)
    authors_validation_prox: bool = False  # repeat the prox once per validation batch after each epoch (theirs)


@register
class AdaProx(EtaHatMethod):
    name = "adaprox"
    needs_step_size = True  # its proximal step is the optimizer's step size
    Params = AdaProxParams

    def __init__(self, params, steps_per_epoch, epochs, structure="weight"):
        super().__init__(params, steps_per_epoch, epochs, structure)
        self.per_weight_only("authors_keep_rule")

    def add_parameters(self, layer):
        if self.params.authors_keep_rule:  # alpha of the last prox, from the weights before it (ones: no step yet)
            layer.register_buffer("authors_alpha", torch.ones_like(layer.weight))

    def keep_probability(self, layer, lam):
        if not self.params.authors_keep_rule:
            return super().keep_probability(layer, lam)
        return layer.authors_alpha

    @torch.no_grad()
    def stepped_prox(self, layer, lam, rho) -> None:
        """The prox after a step; with authors_keep_rule its alpha is first stored from the weights before it (the
        prox's own factor, computed once)."""
        if not self.params.authors_keep_rule:
            self.prox(layer, lam, rho)
            return
        layer.authors_alpha.copy_(
            full(keep_rule.keep_probability(self.pen.eta_hat(layer.weight), rho * layer.layer_lam(lam)))
        )
        layer.weight.mul_(like(layer.authors_alpha, layer.weight))  # the authors' prox: w <- alpha w

    @torch.no_grad()
    def after_step(self, layers, step, lam, step_size):
        for layer in layers:
            self.stepped_prox(layer, lam, step_size(layer.weight))

    @torch.no_grad()
    def end_epoch(self, layers, lam, step_size, validation_batches):
        if not self.params.authors_validation_prox:
            return
        rhos = [step_size(layer.weight) for layer in layers]  # the epoch's last step sizes: no optimiser step between
        for _ in range(validation_batches):  # each an alpha update and a prox, as after a training step
            for layer, rho in zip(layers, rhos):
                self.stepped_prox(layer, lam, rho)
