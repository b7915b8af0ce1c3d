"""Magnitude pruning (Zhu & Gupta 2018): keep the top-k magnitudes, k shrinking on the cubic schedule

    s_t = s_f + (s_i - s_f) (1 - (t - t0) / (t1 - t0))^3     for t0 <= t <= t1 (s = fraction of zeros),

masks recomputed every `frequency` steps, per layer or globally; masked weights are set to 0 after every step (the
mask is folded into the weights). Its effective penalty is HardThresh(k) (paper Sec. 4.4); lam plays no role.
In a stack of K configurations each one has its own mask and threshold (top-k along its own weights).

structure=neuron: whole groups are pruned by their root mean square ||w_g|| / sqrt(|g|) (comparable across layers
whose groups differ in length), the sparsity still a fraction of weights: per layer, that fraction of its groups;
globally, the smallest groups until their weights make that fraction of all weights.

A floor, `min_kept` (default 1): a layer that the ranking would leave with fewer than min_kept weights (groups, with
structure=neuron) keeps its min_kept largest. One global ranking can otherwise empty a whole layer, and with it every
path from input to output: a layer whose weights are smaller than the rest's (LeNet-300-100's fc1 by groups, a
ResNet's fc by weights), or, per layer, one whose few weights or groups all round away (round(0.98 * 20) = 20).
A layer that keeps min_kept or more is left exactly as the ranking made it, so runs that never emptied a layer keep
their masks; where the floor acts the run ends with a few more nonzeros than final_sparsity asks for.
Why one: per group, one unit per layer makes a path through a chain of Linear layers (a kept input unit keeps its
whole column, which reaches every unit of the next layer, one of which that layer keeps). Per weight, no floor short
of one weight per unit lines the kept weights up into a path, and that one would keep every unit alive, changing the
architectures unstructured pruning finds; nor does a floor line up a convolution's kept filters with the columns a
Linear layer after it keeps. So the floor stops a layer from emptying; it does not by itself guarantee a path in
every network. min_kept=0 switches the floor off.
"""

from dataclasses import dataclass

import torch

from adrop.distributed import full, like

from .base import Method, register


@dataclass
class PruningParams:
    final_sparsity: float = 0.98  # the fraction of weights (of units' weights, structure=neuron) zeroed in the end
    initial_sparsity: float = 0.0  # the cubic schedule's start
    start: float = 0.0  # fraction of training at which pruning starts
    end: float = 0.5  # ... and reaches final_sparsity
    frequency: int = 100  # steps between mask updates
    scope: str = "global"  # "layer": each layer to the target; "global": one threshold over all layers
    min_kept: int = 1  # each layer keeps at least its min_kept largest weights (groups); 0: no floor

    def __post_init__(self):
        if not 0 <= self.initial_sparsity <= self.final_sparsity < 1:
            raise ValueError("need 0 <= initial_sparsity <= final_sparsity < 1")
        if not 0 <= self.start < self.end <= 1:
            raise ValueError("need 0 <= start < end <= 1 (fractions of training)")
        if self.scope not in ("layer", "global"):
            raise ValueError(f"scope must be 'layer' or 'global', got {self.scope!r}")
        if self.frequency < 1:
            raise ValueError("frequency must be >= 1")
        if self.min_kept < 0:
            raise ValueError("min_kept must be >= 0")


class Masked(Method):
    """Weights under a fixed-for-now mask (a boolean buffer): masked weights are zero and stay zero, their gradients
    zeroed before each update. The forward pass uses the weights as they are: multiplying by the mask there would
    give the same numbers (masked weights are already 0) at the price of a pass over every weight, forward and
    backward, each step (measured: docs/notebook.md)."""

    def add_parameters(self, layer):
        layer.register_buffer("mask", torch.ones(layer.group_shape, dtype=torch.bool))

    @torch.no_grad()
    def before_update(self, layers):
        for layer in layers:  # mul_, not masked_fill_: the product's gradient had the sign of g * 0 (-0 too), bitwise
            layer.weight.grad.mul_(like(layer.mask, layer.weight.grad))

    def keep_mask(self, layer, lam):
        return like(layer.mask, layer.weight) & (layer.weight != 0)  # a shard's (FSDP2) with the whole mask

    def unmasked_weight(self, layer):
        return layer.weight * layer.mask  # the mask is part of the forward pass, not an evaluation rule


def smallest(magnitudes: torch.Tensor, k: int) -> torch.Tensor:
    """The k smallest entries of each row (one row per configuration), as a boolean mask of the same shape."""
    drop = torch.zeros_like(magnitudes, dtype=torch.bool)
    if k > 0:
        drop.scatter_(-1, torch.topk(magnitudes, k, largest=False).indices, True)
    return drop


def with_floor(keep: torch.Tensor, magnitudes: torch.Tensor, least: int) -> torch.Tensor:
    """keep, a boolean (rows, n), with each row that keeps fewer than `least` entries keeping its `least` largest
    magnitudes too; a row that keeps enough is returned as it is."""
    least = min(least, magnitudes.shape[1])
    if least == 0:
        return keep
    largest = torch.zeros_like(keep).scatter_(1, torch.topk(magnitudes, least).indices, True)
    return keep | (largest & (keep.sum(1, keepdim=True) < least))


@register
class MagnitudePruning(Masked):
    name = "magnitude_pruning"
    Params = PruningParams

    def target(self, step: int) -> float:
        p = self.params
        t0, t1 = p.start * self.total_steps, p.end * self.total_steps
        if step < t0:
            return 0.0
        progress = min((step - t0) / max(t1 - t0, 1), 1.0)
        return p.final_sparsity + (p.initial_sparsity - p.final_sparsity) * (1 - progress) ** 3

    def mask_update_due(self, step: int) -> bool:
        return step % self.params.frequency == 0 or step == self.total_steps

    def after_step_is_elementwise(self, step):
        return not self.mask_update_due(step)  # the mask update is Python control flow; the fold is elementwise

    @torch.no_grad()
    def after_step(self, layers, step, lam, step_size):
        if step is not None and self.mask_update_due(step):
            self.update_masks(layers, self.target(step))
        for layer in layers:
            layer.weight.mul_(like(layer.mask, layer.weight))

    def update_masks(self, layers, sparsity):
        """Each configuration (a row: a stack's leading axis, or the one run) keeps its own largest magnitudes."""
        rows = layers[0].configs or 1
        if layers[0].grouped:
            return self.update_group_masks(layers, sparsity, rows)
        if self.params.scope == "global":
            magnitudes = torch.cat([full(layer.weight).abs().reshape(rows, -1) for layer in layers], dim=1)
            k = int(round(sparsity * magnitudes.shape[1]))
            if k == 0:
                for layer in layers:
                    layer.mask.fill_(True)
                return
            cut = torch.kthvalue(magnitudes, k, dim=1).values.unsqueeze(1)
            for layer in layers:
                flat = full(layer.weight).abs().reshape(rows, -1)
                layer.mask.copy_(with_floor(flat > cut, flat, self.params.min_kept).view_as(layer.mask))
        else:
            for layer in layers:
                flat = full(layer.weight).abs().reshape(rows, -1)
                k = int(round(sparsity * flat.shape[1]))
                layer.mask.copy_(with_floor(~smallest(flat, k), flat, self.params.min_kept).view_as(layer.mask))

    def update_group_masks(self, layers, sparsity, rows):
        rms = [(layer.group_norm(full(layer.weight)) / layer.group_size**0.5).reshape(rows, -1) for layer in layers]
        if self.params.scope == "layer":
            for layer, r in zip(layers, rms):
                keep = ~smallest(r, int(round(sparsity * r.shape[1])))
                layer.mask.copy_(with_floor(keep, r, self.params.min_kept).view_as(layer.mask))
            return
        magnitudes = torch.cat(rms, dim=1)
        sizes = torch.cat(
            [torch.full((r.shape[1],), layer.group_size, device=r.device) for layer, r in zip(layers, rms)]
        )
        order = torch.argsort(magnitudes, dim=1, stable=True)
        dropped = torch.cumsum(sizes[order], dim=1) <= sparsity * sizes.sum()  # the smallest groups, by weights
        drop = torch.zeros_like(magnitudes, dtype=torch.bool).scatter_(1, order, dropped)
        start = 0
        for layer, r in zip(layers, rms):
            keep = ~drop[:, start : start + r.shape[1]]
            layer.mask.copy_(with_floor(keep, r, self.params.min_kept).view_as(layer.mask))
            start += r.shape[1]
