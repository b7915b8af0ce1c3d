"""K configurations of a network's dense modules that hold tensors of their own (BatchNorm, LayerNorm, GroupNorm,
an embedding, PReLU): in a stack each configuration keeps its own copies, and its own running statistics.

`Stacked(module, K)` takes the module's place in the network and holds its parameters and buffers with a leading
axis of K, under the module's own names (so a stack's state has the keys of the network's). Its input is a folded
batch, (K * batch, ...), configuration-major; each configuration's rows meet that configuration's tensors through
torch.func: `functional_call` of the module, `vmap`ped over K (at K = 1 the module itself on row 0, no vmap).
Modules without tensors of their own (activations, pooling, flatten, dropout, residual sums) need nothing: they act
on each example alike, whatever configuration it belongs to.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call, vmap


def owns_tensors(module: nn.Module) -> bool:
    """Whether the module itself (not its children) holds parameters or buffers."""
    return any(True for _ in module.named_parameters(recurse=False)) or any(
        b is not None for _, b in module.named_buffers(recurse=False))


def needs_stacking(module: nn.Module) -> bool:
    """Whether a stack must run the module per configuration: it holds tensors, or it is a batch norm (which mixes the
    examples of its batch even when it keeps no statistics)."""
    return owns_tensors(module) or isinstance(module, nn.modules.batchnorm._BatchNorm)


class Stacked(nn.Module):
    def __init__(self, module: nn.Module, configs: int):
        super().__init__()
        self.configs = configs
        self.__dict__["inner"] = module  # not a child: its tensors are this module's, stacked
        with torch.no_grad():
            for name, p in module.named_parameters(recurse=False):
                self.register_parameter(name, nn.Parameter(p.unsqueeze(0).repeat(configs, *[1] * p.dim()),
                                                           requires_grad=p.requires_grad))
            for name, b in module.named_buffers(recurse=False):
                if b is not None:
                    self.register_buffer(name, b.unsqueeze(0).repeat(configs, *[1] * b.dim()),
                                         persistent=name not in module._non_persistent_buffers_set)

    def extra_repr(self) -> str:
        return f"{self.configs} x {self.inner!r}"

    def forward(self, *inputs):
        self.inner.train(self.training)
        state = {**dict(self.named_parameters(recurse=False)),
                 **{n: b for n, b in self.named_buffers(recurse=False) if b is not None}}
        K = self.configs
        if K == 1:
            return functional_call(self.inner, {n: t[0] for n, t in state.items()}, inputs)
        per_config = [x.view(K, x.shape[0] // K, *x.shape[1:]) if isinstance(x, torch.Tensor) else x
                      for x in inputs]
        dims = tuple(0 if isinstance(x, torch.Tensor) else None for x in inputs)
        out = vmap(lambda s, *xs: functional_call(self.inner, s, xs), in_dims=(0, *dims),
                   randomness="different")(state, *per_config)
        return out.flatten(0, 1)
