"""The methods that set eta = eta_hat(w) (AdaProx, AdaTikhonov, LogSum): a plain weight whose keep probability is
alpha = eta_hat(w) / (eta_hat(w) + lam), and the penalty object they share (from adrop.penalties; LogSum(eps=2) in
the paper).

With structure=neuron, eta = eta_hat(||w_g||) per group and each group's lam is lam sqrt(|g|), the group lasso's
scaling (Yuan & Lin 2006): the penalty is sum_g sqrt(|g|) Omega(||w_g||), so that layers of long and short groups
meet one lam on an equal footing (||w_g|| grows like sqrt(|g|))."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from adrop import keep_rule, penalties
from adrop.distributed import full
from adrop.penalties.tabulated import TabulatedEtaHat

from .base import Method


@dataclass
class PenaltyParams:
    penalty: str = "logsum"  # the penalty Omega whose eta_hat the method uses (`adrop penalty --list`)
    penalty_params: dict = field(default_factory=dict)  # none: the penalty's defaults (LogSum eps=2)


class EtaHatMethod(Method):
    Params = PenaltyParams

    def __init__(self, params, steps_per_epoch, epochs, structure="weight"):
        super().__init__(params, steps_per_epoch, epochs, structure)
        self.pen = trainable_penalty(params.penalty, dict(params.penalty_params))

    def keep_probability(self, layer, lam) -> torch.Tensor:
        return keep_rule.keep_probability(
            self.pen.eta_hat(layer.group_norm(layer.weight.detach())), group_lam(layer, lam)
        )

    def keep_statistic(self, layer, lam):
        return "keep_probability", self.keep_probability(layer, lam)

    def critical_lam(self, layer):
        """eta_hat / (eta_hat + lam_g) >= KEEP_THRESHOLD holds for lam_g up to eta_hat (1 / KEEP_THRESHOLD - 1); lam_g
        is lam times the layer's lam_scale and the group's sqrt(|g|) (group_lam)."""
        eta = self.pen.eta_hat(layer.group_norm(full(layer.weight.detach())))
        return eta * (1.0 / keep_rule.KEEP_THRESHOLD - 1.0) / group_lam(layer, 1.0)

    def keep_mask(self, layer, lam):
        return self.keep_probability(layer, lam) >= keep_rule.KEEP_THRESHOLD

    @torch.no_grad()
    def prox(self, layer, lam, rho, eta=None) -> None:
        """The adaptive Tikhonov prox with eta = eta_hat(w) (given, where the caller has it), in place:
        w <- w eta / (eta + rho lam) (AdaProx's step, and Algorithm 1's after its noisy gradient step)."""
        w = layer.weight
        eta = self.pen.eta_hat(layer.group_norm(w)) if eta is None else eta
        w.mul_(torch.where(torch.isinf(eta), 1.0, eta / (eta + rho * group_lam(layer, lam))))


def group_weight(layer) -> float:
    """sqrt(|g|): a group's weight in the penalty (1 per weight)."""
    return math.sqrt(layer.group_size)


def group_lam(layer, lam):
    """Each group's lam, shaped for the layer: the layer's lam (lam_scale included) times sqrt(|g|) (times 1 per
    weight)."""
    lam = layer.layer_lam(lam)
    return lam if layer.group_size == 1 else lam * group_weight(layer)


def trainable_penalty(name: str, params: dict):
    """The penalty `name`, with an eta_hat that works on torch tensors (training needs one): its closed form, or for a
    penalty whose eta_hat is numerical (the variational dropout dual) a table of it (adrop.penalties.tabulated).
    A penalty that has neither is refused in one line that names those that train."""
    pen = penalties.get(name, **params)
    try:
        return _on_tensors(pen)
    except ValueError as err:
        usable = [n for n in penalties.names() if _trains(n)]
        raise ValueError(
            f"penalty {name!r} has no eta_hat that training can use ({err}); penalties that train: {', '.join(usable)}"
        ) from None


def _on_tensors(pen):
    try:
        if isinstance(pen.eta_hat(torch.zeros(1)), torch.Tensor):
            return pen
    except TypeError:
        pass
    return TabulatedEtaHat(pen)


def _trains(name: str) -> bool:
    try:
        _on_tensors(penalties.get(name))
        return True
    except (TypeError, ValueError):
        return False
