"""Adaptive dropout itself on deep networks (paper Sec. 3, Algorithm 1), with real masks: the dropout method that
the paper proves dual to regularised ERM, where the other methods here run its deterministic duals.

Every minibatch draws one mask per weight, s ~ Mask(alpha) with keep probability alpha = eta_hat(w) / (eta_hat(w) +
lam) from a penalty of adrop.penalties chosen by name (LogSum(2) by default; any closed form: mcp, scad, l1, ...;
the variational dropout dual through a table of its numerical eta_hat, adrop.penalties.tabulated):

    mask="bernoulli"   s = Bernoulli(alpha) / alpha          (unbiased dropout)
    mask="gaussian"    s ~ N(1, 1/alpha - 1)                  (the same two moments)

    additive=true      Algorithm 1: the forward pass uses w + (s - 1) w.detach() (the gradient is the data term's at
                       the noisy point, not scaled by s), and after each optimiser step the Tikhonov prox
                       w <- w / (1 + rho lam / eta_hat(w)), rho the step the optimiser took for that coordinate
    additive=false     plain dropout on the weights: the forward pass uses s * w

Algorithm 1's order: after step t's gradient step, eta^t = eta_hat(w) of the stepped weights, before the prox; the
prox uses that eta, and alpha^t = eta^t / (eta^t + lam) is stored (a buffer `alpha`, in checkpoints): step t + 1
draws its mask from it, and the keep rule counts with the last one. alpha^0, the algorithm's input, is the keep
probability of the initial weights.

With structure=neuron, one mask per group (a unit: all the weights reading an input unit, or a filter) with keep
probability eta_hat(||w_g||) / (eta_hat(||w_g||) + lam sqrt(|g|)), and the prox per group: the dual of
sum_g sqrt(|g|) Omega(||w_g||) (adrop.linear.groups checks it on linear regression).
A weight with eta_hat(w) = 0 is dropped (s = 0). No penalty term: the noise is the regulariser (in expectation the
adaptive Tikhonov term lam/2 sum w^2 / eta, eq. 4). A weight counts as zero under the paper's rule, alpha < 0.05.
lam reaches the method from the engine before every step (before_step), as a float or a stack's K values.
"""

from dataclasses import dataclass

import torch

from adrop import keep_rule
from adrop.distributed import full, like

from .base import noise, register
from .eta_hat_layer import EtaHatMethod, PenaltyParams, group_lam

MASKS = ("bernoulli", "gaussian")


@dataclass
class AdaptiveDropoutParams(PenaltyParams):
    mask: str = "bernoulli"  # bernoulli: s = Bernoulli(alpha) / alpha; gaussian: s ~ N(1, 1/alpha - 1)
    additive: bool = True  # Algorithm 1: noise w + (s - 1) w.detach() and a Tikhonov prox; false: s * w

    def __post_init__(self):
        if self.mask not in MASKS:
            raise ValueError(f"mask must be one of {', '.join(MASKS)}, got {self.mask!r}")


@register
class AdaptiveDropout(EtaHatMethod):  # the eta-hat methods' keep probability, keep rule and prox
    name = "adaptive_dropout"
    needs_step_size = True  # its proximal step is the optimizer's step size
    Params = AdaptiveDropoutParams

    def __init__(self, params, steps_per_epoch, epochs, structure="weight"):
        super().__init__(params, steps_per_epoch, epochs, structure)
        self.lam, self.first = None, False  # this step's lam, and whether it is the run's first (before_step)

    def add_parameters(self, layer):
        layer.register_buffer("alpha", torch.ones(layer.group_shape))  # alpha^t, per weight or per group

    def before_step(self, step, lam):
        self.lam, self.first = lam, step == 0  # a bool: torch.compile guards on it (an int would recompile often)

    def mask_probability(self, layer):
        """alpha^{t-1}, which step t draws its mask from: the stored one, or at the first step alpha^0."""
        return self.keep_probability(layer, self.lam) if self.first else layer.alpha

    def keep_statistic(self, layer, lam):
        return "keep_probability", layer.alpha

    def keep_mask(self, layer, lam):
        return like(layer.alpha, layer.weight) >= keep_rule.KEEP_THRESHOLD  # a shard's (FSDP2) with the whole alpha

    def mask(self, alpha):
        safe = torch.where(alpha > 0, alpha, torch.ones_like(alpha))
        if self.params.mask == "gaussian":
            s = 1.0 + torch.sqrt(1.0 / safe - 1.0) * noise.gaussian_like(alpha)
        else:
            s = (noise.uniform_like(alpha) < alpha) / safe
        return torch.where(alpha > 0, s, torch.zeros_like(s))

    def weight_sample(self, layer):
        if self.lam is None:
            raise RuntimeError("adaptive_dropout needs this step's lam: the engine calls before_step(step, lam) first")
        w = layer.weight
        s = self.mask(self.mask_probability(layer)).to(w.dtype)  # alpha stays float32 where w is cast (FSDP2 bf16)
        return w + (s - 1.0) * w.detach() if self.params.additive else s * w

    @torch.no_grad()
    def after_step(self, layers, step, lam, step_size):
        for layer in layers:  # alpha^t from the stepped weights, then (additive) the prox with the same eta
            eta = self.pen.eta_hat(layer.group_norm(layer.weight))
            layer.alpha.copy_(full(keep_rule.keep_probability(eta, group_lam(layer, lam))))
            if self.params.additive:
                self.prox(layer, lam, step_size(layer.weight), eta)
