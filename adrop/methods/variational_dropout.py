"""Variational dropout (Molchanov et al. 2017) in the paper's three variants (Sec. 5):

    vardrop_lr_ar   local reparameterisation + additive reparameterisation: parameters theta and log sigma^2,
                    log alpha = log sigma^2 - log theta^2; pre-activations ~ N(x theta^T + b, x^2 (sigma^2)^T)
    vardrop_lr      local reparameterisation, log alpha a parameter: variance x^2 (alpha theta^2)^T
    vardrop         no reparameterisation trick: one weight sample W = theta (1 + sqrt(alpha) eps) per minibatch

The regulariser is sum_j KL(alpha_j) with Molchanov's fit of the KL (adrop.penalties.variational_dropout, f = 2 KL)
and lam = 1/N. Molchanov's alpha is lam / eta, so the keep probability eta / (eta + lam) is 1 / (1 + alpha): a
weight counts as zero when log alpha > log(0.95 / 0.05) = 2.944. Evaluation uses theta with those weights zeroed.
The means and variances are the layer's products (linear, or batched for a stack); the rest is elementwise. The
KL's gradient is written out (kl_and_slope) rather than left to autograd, for speed.

structure=neuron: one multiplicative noise per unit, z_g ~ N(mu_g, sigma_g^2) scaling all of a group's weights (a
Linear layer's input unit, a Conv2d layer's filter), with Molchanov's KL of log alpha_g = log (sigma_g^2 / mu_g^2)
once per group and the weights themselves point estimates: the group scale of Bayesian Compression's group
normal-Jeffreys prior (Louizos et al. 2017, BC-GNJ) without its weight-level KL. vardrop_lr_ar learns mu_g and
log sigma_g^2 (BC-GNJ's parameters); vardrop_lr mu_g = 1 and log alpha_g (per-unit variational dropout, Kingma et
al. 2015). Both draw z per example on the unit (exact: no local reparameterisation is needed for one noise per unit);
vardrop draws one z_g per group for the minibatch.

The authors' code (dlej/adaptive-dropout, dropout/extern.py, from Molchanov et al.'s SparseVD notebook) differs in
two ways, each a switch, off by default:
    authors_clamp   adrop clamps log alpha to [log_alpha_min, log_alpha_max] = [-10, 10] everywhere (the KL, the keep
                    rule, the noise), so a parameter beyond gets no gradient. The authors' vardrop_lr clamps log
                    sigma = log alpha / 2 + log|theta| to [-10, 10] in the noise only, and their KL and keep rule see
                    the raw log alpha; their vardrop clamps nothing. Their vardrop_lr_ar clamps log alpha as adrop
                    does: the switch changes nothing there. Per weight only.
    authors_init    weights N(0, 0.02^2) and biases 0 (their reset_parameters), where adrop keeps the network's own
                    initialisation (PyTorch's for adrop's networks).
"""

from dataclasses import dataclass

import torch
from torch import nn

from adrop.distributed import is_sharded
from adrop.keep_rule import LOG_ALPHA_ZERO  # 2.944: alpha = 1 / (1 + alpha_Molchanov) < 0.05
from adrop.penalties.variational_dropout import K1, K2, K3, kl_approx_log

from .base import Method, noise, register

AUTHORS_INIT_STD = 0.02
AUTHORS_LOG_SIGMA_MIN, AUTHORS_LOG_SIGMA_MAX = -10.0, 10.0


def kl_and_slope(log_alpha, lo, hi, per_config):
    """sum_j KL(clamp(log alpha_j, lo, hi)) with Molchanov's fit, k1 sigmoid(-k3 la - k2) + softplus(-la) / 2 (la the
    clamped log alpha: kl_approx_log of log(eta / lam) = -la), per run (a scalar) or per configuration of a stack ((K,),
    `per_config`); and its slope d KL / d log alpha per element, -(k1 k3 s1 (1 - s1) + (1 - s2) / 2) with s1 =
    sigmoid(-k3 la - k2) and s2 = sigmoid(la), 0 outside (lo, hi) as clamp's gradient is. softplus(-la) is -log s2.
    Written out, value and slope walk the weights half as often as autograd of the fit does, and with no softplus
    (torch's CPU softplus costs more than a sigmoid and a log together): the same numbers to rounding."""
    la = log_alpha.clamp(lo, hi)
    s2 = torch.sigmoid(la)
    s1 = la.mul_(-K3).sub_(K2).sigmoid_()
    slope = torch.addcmul(s1, s1, s1, value=-1).mul_(-K1 * K3).add_(s2, alpha=0.5).sub_(0.5)
    if is_sharded(log_alpha):  # DTensor has no rule for hardtanh_backward: the same condition, elementwise
        slope = torch.where((log_alpha <= lo) | (log_alpha >= hi), 0.0, slope)
    else:
        slope = torch.ops.aten.hardtanh_backward(slope, log_alpha, lo, hi)  # clamp's gradient: 0 unless lo < la < hi
    total = (lambda t: t.flatten(1).sum(1)) if per_config else torch.sum
    return K1 * total(s1) - 0.5 * total(s2.log_()), slope


def per_element(grad_value, like):
    """The KL's incoming gradient, a scalar or a stack's (K,), shaped to broadcast against (K, ...)."""
    return grad_value.view(-1, *([1] * (like.dim() - 1))) if grad_value.dim() else grad_value


class ClampedKL(torch.autograd.Function):
    """kl_and_slope of a log alpha (vardrop_lr's and vardrop's parameter) as an autograd function."""

    @staticmethod
    def forward(ctx, log_alpha, lo, hi, per_config):
        value, slope = kl_and_slope(log_alpha, lo, hi, per_config)
        ctx.save_for_backward(slope)
        return value

    @staticmethod
    def backward(ctx, grad_value):
        (slope,) = ctx.saved_tensors
        return slope * per_element(grad_value, slope), None, None, None


class AdditiveKL(torch.autograd.Function):
    """kl_and_slope of vardrop_lr_ar's log alpha = log sigma^2 - log(mu^2 + 1e-16), from mu (the weight, or a group's
    scale) and log sigma^2: d log alpha / d mu = -2 mu / (mu^2 + 1e-16), d log alpha / d log sigma^2 = 1."""

    @staticmethod
    def forward(ctx, mu, log_sigma2, lo, hi, per_config):
        ctx.dtypes = mu.dtype, log_sigma2.dtype
        wide = torch.promote_types(mu.dtype, torch.float32)  # half precision holds neither 1e-16 nor a small mu's mu^2
        mu, log_sigma2 = mu.to(wide), log_sigma2.to(wide)
        q = (mu * mu).add_(1e-16)
        d_mu = torch.div(mu, q).mul_(-2.0)
        value, slope = kl_and_slope(torch.sub(log_sigma2, q.log_(), out=q), lo, hi, per_config)
        ctx.save_for_backward(slope, d_mu)
        return value

    @staticmethod
    def backward(ctx, grad_value):
        slope, d_mu = ctx.saved_tensors
        grad = slope * per_element(grad_value, slope)
        return (grad * d_mu).to(ctx.dtypes[0]), grad.to(ctx.dtypes[1]), None, None, None


@dataclass
class VarDropParams:
    init_log_alpha: float = -5.0  # log eta_bar = 5 as in the paper (vardrop_lr, vardrop)
    init_log_sigma2: float = -10.0  # Molchanov's initialisation (vardrop_lr_ar)
    log_alpha_min: float = -10.0  # log alpha clamped to [log_alpha_min, log_alpha_max] (Molchanov's [-8, 8])
    log_alpha_max: float = 10.0
    authors_clamp: bool = False  # the authors' clamps (module docstring)
    authors_init: bool = False  # the authors' initialisation: weights N(0, 0.02^2), biases 0


class VarDrop(Method):
    Params = VarDropParams

    def __init__(self, params, steps_per_epoch, epochs, structure="weight"):
        super().__init__(params, steps_per_epoch, epochs, structure)
        self.per_weight_only("authors_clamp")

    def add_parameters(self, layer):
        layer.log_alpha_param = nn.Parameter(torch.full(layer.group_shape, self.params.init_log_alpha))

    @torch.no_grad()
    def init_weights(self, layer):
        if self.params.authors_init:  # LinearSVDO.reset_parameters: W.normal_(0, 0.02), bias.zero_()
            layer.weight.normal_(0.0, AUTHORS_INIT_STD)
            if layer.bias is not None:
                layer.bias.zero_()

    def log_alpha(self, layer) -> torch.Tensor:
        """The log alpha of the KL and the keep rule: the parameter, clamped (with authors_clamp: as it is, as the
        authors' LinearSVDO and LinearSVDONoReparam have it)."""
        if self.params.authors_clamp:
            return layer.log_alpha_param
        return layer.log_alpha_param.clamp(self.params.log_alpha_min, self.params.log_alpha_max)

    def layer_penalty(self, layer, lam):
        if self.params.authors_clamp:  # the KL of the raw log alpha
            return layer.total(kl_approx_log(-self.log_alpha(layer)))  # log(eta / lam) = -log alpha
        return ClampedKL.apply(
            layer.log_alpha_param, self.params.log_alpha_min, self.params.log_alpha_max, layer.configs is not None
        )

    def keep_statistic(self, layer, lam):
        return "log_alpha", self.log_alpha(layer).detach()

    def keep_mask(self, layer, lam):
        return self.log_alpha(layer).detach() < LOG_ALPHA_ZERO

    def weight_sample(self, layer):
        """The weight-noise form, theta (1 + sqrt(alpha) eps), one eps per weight (or group) and step: vardrop's
        forward pass, and the other two's on a weight with no product of their own (SparseParameter)."""
        log_alpha = self.log_alpha(layer)
        eps = noise.gaussian_like(log_alpha) * torch.exp(0.5 * log_alpha)  # per weight, or per group
        return layer.weight * (1 + eps)

    def local_reparameterisation(self, layer, x, variance_weight):
        mean = layer.product(x, layer.weight, layer.bias)
        var = layer.product(x * x, variance_weight)
        wide = torch.promote_types(var.dtype, torch.float32)  # half precision rounds 1e-8 to 0
        std = torch.sqrt(var.to(wide) + 1e-8).to(mean.dtype)
        return mean + std * noise.gaussian_like(mean)


@register
class VarDropLRAR(VarDrop):
    name = "vardrop_lr_ar"

    def add_parameters(self, layer):
        layer.log_sigma2 = nn.Parameter(torch.full(layer.group_shape, self.params.init_log_sigma2))
        if layer.grouped:  # mu_g, the mean of the group's scale
            layer.unit_scale = nn.Parameter(torch.ones(layer.group_shape))

    def log_alpha(self, layer):
        mu = layer.unit_scale if layer.grouped else layer.weight
        return (layer.log_sigma2 - torch.log(mu * mu + 1e-16)).clamp(
            self.params.log_alpha_min, self.params.log_alpha_max
        )

    def layer_penalty(self, layer, lam):  # clamped whatever authors_clamp says, as log_alpha
        return AdditiveKL.apply(
            layer.unit_scale if layer.grouped else layer.weight,
            layer.log_sigma2,
            self.params.log_alpha_min,
            self.params.log_alpha_max,
            layer.configs is not None,
        )

    def weight_sample(self, layer):
        """The additive weight-noise form, theta + sigma eps (a group's: theta (mu_g + sigma_g eps_g))."""
        sigma = torch.exp(0.5 * layer.log_sigma2)
        if layer.grouped:
            return layer.weight * (layer.unit_scale + sigma * noise.gaussian_like(sigma))
        return layer.weight + sigma * noise.gaussian_like(sigma)

    def forward(self, layer, x):
        if layer.grouped:
            return layer.product_with_unit_noise(
                x, layer.weight, layer.bias, layer.unit_scale, torch.exp(0.5 * layer.log_sigma2)
            )
        return self.local_reparameterisation(layer, x, torch.exp(layer.log_sigma2))

    def unmasked_weight(self, layer):
        return layer.weight * layer.unit_scale.detach() if layer.grouped else layer.weight

    def effective_weight(self, layer, lam):
        return self.unmasked_weight(layer) * self.keep_mask(layer, lam)


@register
class VarDropLR(VarDrop):
    name = "vardrop_lr"

    def variance_weight(self, layer) -> torch.Tensor:
        """sigma^2 = alpha theta^2, the weights of the pre-activations' variance; with authors_clamp
        exp(2 clamp(log alpha / 2 + log(1e-16 + |theta|), -10, 10)), LinearSVDO's clamp of log sigma."""
        if self.params.authors_clamp:
            log_sigma = layer.log_alpha_param / 2.0 + torch.log(1e-16 + layer.weight.abs())
            return torch.exp(2.0 * log_sigma.clamp(AUTHORS_LOG_SIGMA_MIN, AUTHORS_LOG_SIGMA_MAX))
        return torch.exp(self.log_alpha(layer)) * layer.weight * layer.weight

    def forward(self, layer, x):
        if layer.grouped:
            return layer.product_with_unit_noise(
                x, layer.weight, layer.bias, 1.0, torch.exp(0.5 * self.log_alpha(layer))
            )
        return self.local_reparameterisation(layer, x, self.variance_weight(layer))


@register
class VarDropPlain(VarDrop):
    name = "vardrop"

    # forward: Method's, the layer's product with weight_sample (the weight-noise form)
