"""Fine-tuning a sparse network: the weights that are zero when training starts stay zero, the others train freely.

Meant to start from another run's weights (`init_from=<run folder>`): a method sparsifies, then `fixed_mask`
trains what it kept without noise, gates or penalty. Pruning pipelines do this last step (retraining after
pruning); for variational dropout it removes the train/test mismatch of a network trained under noise and
evaluated without it. Starting without a single zero (a random initialisation) is refused: that would be dense
training under another name.
"""

import torch

from adrop.distributed import full

from .base import register
from .magnitude_pruning import Masked


@register
class FixedMask(Masked):
    name = "fixed_mask"  # a mask buffer; masked weights get zero gradients and stay zero

    def add_parameters(self, layer):  # per weight whatever the structure: a dead unit's weights are zeros too
        layer.register_buffer("mask", torch.ones(layer.weight.shape, dtype=torch.bool))

    @torch.no_grad()
    def start(self, layers) -> None:
        for layer in layers:
            layer.mask.copy_(full(layer.weight) != 0)
        if all(bool(layer.mask.all()) for layer in layers):
            raise ValueError(
                "fixed_mask keeps the zeros of the starting weights and there are none: set "
                "init_from=<the folder of a finished run that sparsified>"
            )
