"""How a Sparsifier reads the optimizer it is attached to: which parameters it must hold, and the step it just took.

The step size is read from the optimizer as it is at that step: its current param_groups (a scheduler's lr, the
groups `optimizer.load_state_dict` puts in place) and its current state, never from dicts captured at attach.
"""

from __future__ import annotations

from typing import Callable

import torch

from adrop.selection import SparsifyError


def trained_parameters(names, layers) -> list[tuple[str, torch.nn.Parameter]]:
    """The sparse layers' trainable parameters by name: weights, biases and the method's own (a parametrized tensor's
    weight is its module's, not the SparseParameter's: added here)."""
    from adrop.methods.sparse_parameter import SparseParameter

    out = []
    for layer_name, layer in zip(names, layers):
        if isinstance(layer, SparseParameter):  # named by the module's path, or by its own for another tensor
            tensor = f"{layer_name}.weight" if layer.tensor_name == "weight" else layer_name
            out += [(tensor, layer.weight)] if layer.weight.requires_grad else []
        out += [(f"{layer_name}.{n}", p) for n, p in layer.named_parameters() if p.requires_grad]
    return out


def missing_from(optimizer: torch.optim.Optimizer, names, layers) -> list[str]:
    """The sparse layers' trainable parameters that the optimizer does not hold (an optimizer made before sparsify
    holds the replaced tensors, not these)."""
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    return [name for name, p in trained_parameters(names, layers) if id(p) not in held]


def reader(optimizer: torch.optim.Optimizer) -> Callable[[], Callable[[torch.Tensor], torch.Tensor]] | None:
    """A function that, called after a step, gives step_size(p): per coordinate, the step the optimizer just took for
    parameter p. Adam and AdamW: lr / (sqrt(v_hat) + eps) from their state (v_hat the bias-corrected second moment,
    as the authors' `update_alphas_Adam` reads it); SGD, with or without momentum: its lr. None for an optimizer
    adrop cannot read."""
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):

        def adam(p, group):
            state = optimizer.state.get(p, {})
            if "exp_avg_sq" not in state:  # a parameter without a gradient yet (a branch not taken): not stepped
                return torch.zeros_like(p)
            second = state["max_exp_avg_sq"] if group.get("amsgrad") else state["exp_avg_sq"]
            v_hat = second / (1 - group["betas"][1] ** float(state["step"]))
            return float(group["lr"]) / (v_hat.sqrt() + group["eps"])

        kind = adam
    elif isinstance(optimizer, torch.optim.SGD):
        kind = lambda p, group: torch.full_like(p, float(group["lr"]))
    else:
        return None

    def now():
        groups = {id(p): group for group in optimizer.param_groups for p in group["params"]}

        def step_size(p):
            if id(p) not in groups:
                raise SparsifyError(
                    "the attached optimizer no longer holds a sparsified weight: attach the optimizer that trains "
                    "the model (sp.attach(optimizer))"
                )
            return kind(p, groups[id(p)])

        return step_size

    return now
