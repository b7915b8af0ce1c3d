"""Random pruning, the floor a sparsification method must clear: at the start each layer keeps a random `keep`
fraction of its weights (round(keep * n) of its n, one at least, drawn uniformly; per configuration of a stack, from
its noise, as a stack's noise methods draw theirs), the others are set to zero and stay zero, and the kept ones train
as the dense network would (a fixed mask, as fixed_mask's: no noise, no penalty).
The same fraction in every layer, as in Liu et al. 2022 ("The unreasonable effectiveness of random pruning"), whose
uniform ratio this is. With structure=neuron whole groups (units, filters, heads) are drawn: round(keep * groups) of
each layer's. lam plays no role.
"""

from dataclasses import dataclass

import torch

from .base import noise, register
from .magnitude_pruning import Masked


@dataclass
class RandomPruningParams:
    keep: float = 0.1  # the fraction of each layer's weights kept, chosen at random at the start

    def __post_init__(self):
        if not 0 < self.keep <= 1:
            raise ValueError(f"keep must be in (0, 1], got {self.keep}")


@register
class RandomPruning(Masked):  # a mask per weight, or per unit (structure=neuron), fixed at the start
    name = "random_pruning"
    Params = RandomPruningParams

    @torch.no_grad()
    def start(self, layers) -> None:
        for layer in layers:
            rows = layer.configs or 1
            shape = layer.group_shape if layer.grouped else layer.weight.shape
            # float32 scores: in bfloat16 many tie, and ties would go by position
            scores = noise.uniform_like(layer.weight.new_empty(shape, dtype=torch.float32)).reshape(rows, -1)
            k = max(1, round(self.params.keep * scores.shape[1]))  # a layer keeps one at least: no layer empties
            mask = torch.zeros_like(scores, dtype=torch.bool)
            mask.scatter_(1, torch.topk(scores, k, dim=1).indices, True)
            layer.mask.copy_(mask.view(shape))
            layer.weight.mul_(layer.mask)
