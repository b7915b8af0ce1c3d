"""Magnitude pruning (Zhu & Gupta 2018): keep the top-k magnitudes, k shrinking on the cubic schedule

    s_t = s_f + (s_i - s_f) (1 - (t - t0) / (t1 - t0))^3     for t0 <= t <= t1 (s = fraction of zeros),

masks recomputed every `frequency` steps, per layer or globally; masked weights are set to 0 after every step (the
mask is folded into the weights). Its effective penalty is HardThresh(k) (paper Sec. 4.4); lam plays no role.
"""
from dataclasses import dataclass

import torch

from .base import Method, SparseLinear, register


@dataclass
class PruningParams:
    final_sparsity: float = 0.98
    initial_sparsity: float = 0.0
    start: float = 0.0        # fraction of training at which pruning starts
    end: float = 0.5          # ... and reaches final_sparsity
    frequency: int = 100      # steps between mask updates
    scope: str = "global"     # "layer": each layer to the target; "global": one threshold over all layers

    def __post_init__(self):
        if not 0 <= self.initial_sparsity <= self.final_sparsity < 1:
            raise ValueError("need 0 <= initial_sparsity <= final_sparsity < 1")
        if not 0 <= self.start < self.end <= 1:
            raise ValueError("need 0 <= start < end <= 1 (fractions of training)")
        if self.scope not in ("layer", "global"):
            raise ValueError(f"scope must be 'layer' or 'global', got {self.scope!r}")
        if self.frequency < 1:
            raise ValueError("frequency must be >= 1")


class PrunedLinear(SparseLinear):
    def __init__(self, in_features, out_features, method):
        super().__init__(in_features, out_features, method)
        self.register_buffer("mask", torch.ones(out_features, in_features, dtype=torch.bool))

    def train_forward(self, x):
        return torch.nn.functional.linear(x, self.weight * self.mask, self.bias)

    def keep_mask(self):
        return self.mask & (self.weight != 0)


@register
class MagnitudePruning(Method):
    name = "magnitude_pruning"
    layer = PrunedLinear
    Params = PruningParams

    def target(self, step: int) -> float:
        p = self.params
        t0, t1 = p.start * self.total_steps, p.end * self.total_steps
        if step < t0:
            return 0.0
        progress = min((step - t0) / max(t1 - t0, 1), 1.0)
        return p.final_sparsity + (p.initial_sparsity - p.final_sparsity) * (1 - progress) ** 3

    @torch.no_grad()
    def after_step(self, layers, optimizer, step):
        if step % self.params.frequency == 0 or step == self.total_steps:
            sparsity = self.target(step)
            if self.params.scope == "global":
                magnitudes = torch.cat([layer.weight.abs().flatten() for layer in layers])
                k = int(round(sparsity * magnitudes.numel()))
                cut = torch.kthvalue(magnitudes, k).values if k > 0 else None
                for layer in layers:
                    layer.mask.copy_(layer.weight.abs() > cut if cut is not None else torch.ones_like(layer.mask))
            else:
                for layer in layers:
                    k = int(round(sparsity * layer.weight.numel()))
                    keep = torch.ones_like(layer.mask).flatten()
                    if k > 0:
                        keep[torch.topk(layer.weight.abs().flatten(), k, largest=False).indices] = False
                    layer.mask.copy_(keep.view_as(layer.mask))
        for layer in layers:
            layer.weight.mul_(layer.mask)
