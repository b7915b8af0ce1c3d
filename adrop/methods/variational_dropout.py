"""Variational dropout (Molchanov et al. 2017) in the paper's three variants (Sec. 5):

    vardrop_lr_ar   local reparameterisation + additive reparameterisation: parameters theta and log sigma^2,
                    log alpha = log sigma^2 - log theta^2; pre-activations ~ N(x theta^T + b, x^2 (sigma^2)^T)
    vardrop_lr      local reparameterisation, log alpha a parameter: variance x^2 (alpha theta^2)^T
    vardrop         no reparameterisation trick: one weight sample W = theta (1 + sqrt(alpha) eps) per minibatch

The regulariser is sum_j KL(alpha_j) with Molchanov's fit of the KL (adrop.penalties.variational_dropout, f = 2 KL)
and lam = 1/N. Molchanov's alpha is lam / eta, so the keep probability eta / (eta + lam) is 1 / (1 + alpha): a
weight counts as zero when log alpha > log(0.95 / 0.05) = 2.944. Evaluation uses theta with those weights zeroed.
"""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from adrop.keep_rule import LOG_ALPHA_ZERO  # 2.944: alpha = 1 / (1 + alpha_Molchanov) < 0.05
from adrop.penalties.variational_dropout import kl_approx_log

from .base import Method, SparseLinear, register


@dataclass
class VarDropParams:
    init_log_alpha: float = -5.0       # log eta_bar = 5 as in the paper (vardrop_lr, vardrop)
    init_log_sigma2: float = -10.0     # Molchanov's initialisation (vardrop_lr_ar)
    log_alpha_min: float = -10.0
    log_alpha_max: float = 10.0


class VariationalLinear(SparseLinear):
    def __init__(self, in_features, out_features, method):
        super().__init__(in_features, out_features, method)
        self.p = method.params

    def log_alpha(self) -> torch.Tensor:
        return self.log_alpha_param.clamp(self.p.log_alpha_min, self.p.log_alpha_max)

    def penalty(self):
        return kl_approx_log(-self.log_alpha()).sum()  # log(eta / lam) = -log alpha

    def keep_mask(self):
        return self.log_alpha().detach() < LOG_ALPHA_ZERO

    def local_reparameterisation(self, x, variance_weight):
        mean = F.linear(x, self.weight, self.bias)
        var = F.linear(x * x, variance_weight)
        return mean + torch.sqrt(var + 1e-8) * torch.randn_like(mean)


class AdditiveLinear(VariationalLinear):
    def __init__(self, in_features, out_features, method):
        super().__init__(in_features, out_features, method)
        self.log_sigma2 = nn.Parameter(torch.full((out_features, in_features), method.params.init_log_sigma2))

    def log_alpha(self):
        return (self.log_sigma2 - torch.log(self.weight * self.weight + 1e-16)).clamp(
            self.p.log_alpha_min, self.p.log_alpha_max)

    def train_forward(self, x):
        return self.local_reparameterisation(x, torch.exp(self.log_sigma2))


class LocalLinear(VariationalLinear):
    def __init__(self, in_features, out_features, method):
        super().__init__(in_features, out_features, method)
        self.log_alpha_param = nn.Parameter(torch.full((out_features, in_features), method.params.init_log_alpha))

    def train_forward(self, x):
        return self.local_reparameterisation(x, torch.exp(self.log_alpha()) * self.weight * self.weight)


class WeightNoiseLinear(LocalLinear):
    def train_forward(self, x):
        noise = torch.randn_like(self.weight) * torch.exp(0.5 * self.log_alpha())
        return F.linear(x, self.weight * (1 + noise), self.bias)


class VarDrop(Method):
    Params = VarDropParams


@register
class VarDropLRAR(VarDrop):
    name = "vardrop_lr_ar"
    layer = AdditiveLinear


@register
class VarDropLR(VarDrop):
    name = "vardrop_lr"
    layer = LocalLinear


@register
class VarDropPlain(VarDrop):
    name = "vardrop"
    layer = WeightNoiseLinear
