"""Any weight tensor of any module, trained by a method: attention's projections, embeddings, Conv1d and Conv3d,
transposed convolutions, a user's own nn.Parameter.

A `SparseParameter` is a parametrization (torch.nn.utils.parametrize) of one tensor of its module: the module keeps
its class and its forward and reads its tensor as always, and gets the method's weight: in training its weight-noise
form (Method.weight_sample: one draw of noise or gates per weight, or per group, each time the module reads it), in
eval mode the effective weight at `eval_lam` (the keep rule and deterministic gates folded in), or the tensor as it is
where eval_lam is None. The tensor itself stays the module's parameter (at `<module>.parametrizations.<name>.original`,
the same nn.Parameter, so an optimizer made before or after holds it); the method's own tensors (eta, gates, log
sigma^2) are this module's.

Linear and Conv2d keep their own layers (SparseLinear, SparseConv2d) outside torch's fused transformer modules: they
own their product, which VarDrop's local reparameterisation needs and stacks batch. A method whose math needs the
product uses its weight-noise form here (the VarDrop methods: theta (1 + sqrt(alpha) eps), or theta + sigma eps).

Structure: per weight; with structure="neuron" a group is a row (all of a tensor's entries that share its first index:
an output unit or filter, an embedding's token, one output feature of q, k or v).
"""
from __future__ import annotations

import torch
from torch import nn

from .base import Method, SparseLayer


class SparseParameter(SparseLayer):
    """The method's view of `host`'s tensor `tensor_name`; `register()` puts it in place."""

    def __init__(self, host: nn.Module, tensor_name: str, method: Method):
        nn.Module.__init__(self)
        self._host = [host]  # a list: the host holds this module, not the other way round
        self.tensor_name = tensor_name
        self.configs, self.method, self.bias = None, method, None
        shape = tuple(self.weight.shape)
        self.unit_axes = tuple(range(1 - len(shape), 0)) if len(shape) > 1 else ()
        self.grouped = method.structure == "neuron" and bool(self.unit_axes)
        self.group_size = 1
        group_shape = list(shape)
        if self.grouped:
            for axis in self.unit_axes:
                self.group_size *= group_shape[axis]
                group_shape[axis] = 1
        self.group_shape = tuple(group_shape)
        method.add_parameters(self)

    @property
    def weight(self) -> torch.Tensor:
        """The tensor itself (the host's parameter, under the parametrization once registered)."""
        from torch.nn.utils import parametrize

        host = self._host[0]
        if parametrize.is_parametrized(host, self.tensor_name):
            return host.parametrizations[self.tensor_name].original
        return getattr(host, self.tensor_name)

    def register(self) -> "SparseParameter":
        from torch.nn.utils import parametrize

        self.method.init_weights(self)
        parametrize.register_parametrization(self._host[0], self.tensor_name, self, unsafe=True)
        return self

    def forward(self, original):
        if self.training:
            return self.method.weight_sample(self)
        return original if self.eval_lam is None else self.method.effective_weight(self, self.eval_lam)

    @torch.no_grad()
    def remove(self, weight: torch.Tensor) -> None:
        """Take the parametrization off, the host's tensor a plain parameter again holding `weight`."""
        from torch.nn.utils import parametrize

        host = self._host[0]
        parametrize.remove_parametrizations(host, self.tensor_name, leave_parametrized=False)
        getattr(host, self.tensor_name).copy_(weight)

    def extra_repr(self) -> str:
        return f"{self.method.name}, {self.tensor_name} {tuple(self.weight.shape)}"
