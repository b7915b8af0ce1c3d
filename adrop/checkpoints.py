"""What `model.state_dict()` of a sparsified model holds, and how it loads back: one convention for every checkpoint
a user makes (torch.save of the state_dict, safetensors, Hugging Face's save_pretrained and Trainer.save_model).

A sparsified weight is saved twice over:
- under its plain key (`fc.weight`, `attn.in_proj_weight`, `embed.weight`): its effective weight, the one eval mode
  and `adrop.strip` use (the keep rule and deterministic gates folded in), in the module's own layout. The user's
  plain class reads it as it is: `load_state_dict(..., strict=False)` and `from_pretrained` give the trained sparse
  model, never the dense weights under it;
- under adrop's keys: the weight training goes on from (`fc.weight_orig` for a Linear or Conv2d layer, torch's
  pruning name; `embed.parametrizations.weight.original` for a parametrized tensor, torch's parametrize name), with
  the method's own tensors (`fc.log_a`, `fc.alpha`, ...).

A strict load into the plain class refuses those extra keys (torch's error lists them). `plain_state_dict` gives the
plain keys alone. Loading into the sparsified model (a resume) takes the training weights and drops the effective
ones, which are derived; a plain checkpoint (only `fc.weight`) loads as the training weight.
"""

from __future__ import annotations

import torch
from torch import nn

ORIG = "_orig"


def _effective(layer) -> torch.Tensor:
    from adrop.distributed import full, is_sharded

    with torch.no_grad():
        lam = layer.eval_lam if layer.eval_lam is not None else 0.0
        weight = layer.method.effective_weight(layer, lam)
        if is_sharded(weight) and getattr(layer, "layout", None) != getattr(layer, "shape", None):
            weight = full(weight)  # a layout by heads does not reshape back across FSDP2's row shards: whole
        return layer.as_module(weight).detach().clone()


def _save_layer(layer, destination, prefix, local_metadata):
    """A Linear or Conv2d layer's: `weight` the effective weight, `weight_orig` the trained one."""
    key = prefix + "weight"
    if key in destination:
        destination[key + ORIG] = destination.pop(key)
        destination[key] = _effective(layer)


def _load_layer(layer, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
    key = prefix + "weight"
    if key + ORIG in state_dict:
        state_dict.pop(key, None)
        state_dict[key] = state_dict.pop(key + ORIG)


def _parametrized(host: nn.Module):
    """(tensor name, SparseParameter) of each tensor of host that adrop parametrizes."""
    from torch.nn.utils import parametrize

    from adrop.methods.sparse_parameter import SparseParameter

    if not parametrize.is_parametrized(host):
        return []
    return [
        (name, chain[0])
        for name, chain in host.parametrizations.items()
        if len(chain) == 1 and isinstance(chain[0], SparseParameter)
    ]


def _save_host(host, destination, prefix, local_metadata):
    """A parametrized tensor's module: the effective weight under the tensor's plain key."""
    for name, tensor in _parametrized(host):
        if prefix + f"parametrizations.{name}.original" in destination:
            destination[prefix + name] = _effective(tensor)


def _load_host(host, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
    for name, tensor in _parametrized(host):
        original = prefix + f"parametrizations.{name}.original"
        plain = state_dict.pop(prefix + name, None)
        if original not in state_dict and plain is not None:  # a plain checkpoint: its weight is the trained one
            state_dict[original] = plain.reshape(tensor.weight.shape)


def install(layers) -> list:
    """Register the convention's hooks on the sparse layers (and on the modules of the parametrized tensors); the
    handles, which `remove` takes off."""
    from adrop.methods.sparse_parameter import SparseParameter

    handles, hosts = [], {}
    for layer in layers:
        if isinstance(layer, SparseParameter):
            hosts[id(layer._host[0])] = layer._host[0]
            continue
        handles.append(layer.register_state_dict_post_hook(_save_layer))
        handles.append(layer.register_load_state_dict_pre_hook(_load_layer))
    for host in hosts.values():
        handles.append(host.register_state_dict_post_hook(_save_host))
        handles.append(host.register_load_state_dict_pre_hook(_load_host))
    return handles


def plain_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state_dict the model's plain class takes strictly: every plain key with the effective weights, without
    adrop's training keys (the `_orig` weights, the parametrizations' originals, the methods' tensors)."""
    from adrop.methods.base import SparseLayer
    from adrop.methods.sparse_parameter import SparseParameter

    state = model.state_dict()
    drop = set()
    for path, module in model.named_modules():
        prefix = path + "." if path else ""
        if isinstance(module, SparseLayer) and not isinstance(module, SparseParameter):
            keep = {prefix + "weight", prefix + "bias"}
            drop |= {k for k in state if k.startswith(prefix) and k not in keep and k[len(prefix) :].count(".") == 0}
        if _parametrized(module):
            drop |= {k for k in state if k.startswith(prefix + "parametrizations.")}
    return {k: v for k, v in state.items() if k not in drop}
