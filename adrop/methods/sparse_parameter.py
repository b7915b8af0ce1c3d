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
an output unit or filter, an embedding's token), but in nn.MultiheadAttention's packed input projection
(`in_proj_weight`, 3E x E), where a group is a head: its rows of q, k and v (3 x E/H rows). The method sees that tensor
in the head layout (3, H, E/H, E), the groups on axis 1, and the module reads it as it is. A head whose v rows are
zero outputs its v bias whatever it attends to, a constant that out_proj's bias can take: the head can go
(adrop.heads); out_proj's columns for it then read nothing.

`adrop train`'s stacks (adrop.train.nets.stacking) hold a SparseParameter with `configs=K` for a tensor they run per
configuration: its host then holds the tensor with a leading axis of K, the method's tensors have it too, and the
stack, not a parametrization, hands the module its weight.
"""

from __future__ import annotations

import torch
from torch import nn

from .base import Method, SparseLayer


def stores_inputs_first(module: nn.Module) -> bool:
    """Whether the module holds its weight inputs x outputs: Hugging Face transformers' Conv1D (GPT-2's layers: a
    Linear whose weight is transposed), known by its classes' names so that transformers is never imported. Its rows,
    a group under structure=neuron, are then its input features."""
    return any(
        kind.__name__ == "Conv1D" and kind.__module__.startswith("transformers.") for kind in type(module).__mro__
    )


def units_kept(nonzero: torch.Tensor, inputs_first: bool = False) -> tuple[int, int, int, int]:
    """(inputs kept, inputs, outputs kept, outputs) of a weight from its nonzero mask: an output (a row, a filter, an
    embedding's token) kept when one of its weights is nonzero, an input (a column, an input channel) likewise;
    `inputs_first` for a weight stored inputs x outputs (stores_inputs_first). A vector's entries are both."""
    if nonzero.dim() < 2:
        kept = int(nonzero.sum())
        return kept, len(nonzero), kept, len(nonzero)
    inputs = nonzero.transpose(0, 1).reshape(nonzero.shape[1], -1).any(1)
    outputs = nonzero.reshape(nonzero.shape[0], -1).any(1)
    if inputs_first:
        inputs, outputs = outputs, inputs
    return int(inputs.sum()), len(inputs), int(outputs.sum()), len(outputs)


def heads_of(host: nn.Module, tensor_name: str, structure: str) -> int | None:
    """The heads whose groups a tensor is trained in (structure=neuron on nn.MultiheadAttention's in_proj_weight), or
    None: its rows are its groups."""
    if structure == "neuron" and isinstance(host, nn.MultiheadAttention) and tensor_name == "in_proj_weight":
        return host.num_heads
    return None


class SparseParameter(SparseLayer):
    """The method's view of `host`'s tensor `tensor_name`; `register()` puts it in place. `heads`: the tensor is an
    attention's packed input projection trained by heads (heads_of)."""

    def __init__(
        self, host: nn.Module, tensor_name: str, method: Method, configs: int | None = None, heads: int | None = None
    ):
        nn.Module.__init__(self)
        self._host = [host]  # a list: the host holds this module, not the other way round
        self.tensor_name = tensor_name
        self.inputs_first = tensor_name == "weight" and stores_inputs_first(host)  # units_kept reads it so
        self.configs, self.method, self.bias = configs, method, None
        lead = () if configs is None else (configs,)
        stored = tuple(getattr(host, tensor_name).shape)[len(lead) :]
        if heads:  # (3E, E) as (3, H, E/H, E), the heads' groups on axis 1 (whatever the host holds it as)
            embed = stored[-1]
            self.shape, self.layout = lead + (3 * embed, embed), lead + (3, heads, embed // heads, embed)
            self.right_inverse = lambda value: value.reshape(self.layout)  # the layout stored once registered
        else:
            self.shape = self.layout = lead + stored
        shape = self.layout
        dims = len(shape) - len(lead)  # the tensor's own axes, a stack's leading K aside
        self.unit_axes = (-4, -2, -1) if heads else tuple(range(1 - dims, 0)) if dims > 1 else ()
        self.grouped = method.structure == "neuron" and bool(self.unit_axes)
        self.group_size = 1
        group_shape = list(shape)
        if self.grouped:
            for axis in self.unit_axes:
                self.group_size *= group_shape[axis]
                group_shape[axis] = 1
        self.group_shape = tuple(group_shape)
        method.add_parameters(self)
        tensor = getattr(host, tensor_name)
        self.to(device=tensor.device, dtype=tensor.dtype)  # the method's tensors where the host's tensor lives

    @property
    def weight(self) -> torch.Tensor:
        """The tensor itself (the host's parameter, under the parametrization once registered), in the method's
        layout."""
        from torch.nn.utils import parametrize

        host = self._host[0]
        if parametrize.is_parametrized(host, self.tensor_name):
            t = host.parametrizations[self.tensor_name].original
        else:
            t = getattr(host, self.tensor_name)
        return t if tuple(t.shape) == self.layout else t.view(self.layout)

    def as_module(self, w: torch.Tensor) -> torch.Tensor:
        """A tensor in the method's layout as the module reads it."""
        return w if self.layout == self.shape else w.reshape(self.shape)

    def register(self) -> "SparseParameter":
        from torch.nn.utils import parametrize

        self.method.init_weights(self)
        parametrize.register_parametrization(self._host[0], self.tensor_name, self, unsafe=True)
        return self

    def forward(self, original):
        if self.training:
            return self.as_module(self.method.weight_sample(self))
        return self.as_module(self.eval_weight(original))

    def extra_repr(self) -> str:
        return f"{self.method.name}, {self.tensor_name} {tuple(self.weight.shape)}"


@torch.no_grad()
def unparametrize(host: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    """Take adrop's parametrizations off `host`, each tensor a plain parameter again holding its weight in `weights`
    (by tensor name, in the module's shape): the same nn.Parameter the parametrization trained (an optimizer that
    holds it goes on training it). Not through parametrize.remove_parametrizations, which takes the tensor's property
    off the class that a copy of the module (copy.deepcopy) shares with it."""
    originals = {name: chain.original for name, chain in host.parametrizations.items()}
    del host._modules["parametrizations"]
    host.__class__ = type(host).__bases__[0]  # the class parametrize made for it, undone
    for name, weight in weights.items():
        original = originals[name]
        if original.shape == weight.shape:
            original.copy_(weight)
        else:  # stored in the head layout: the module's shape again
            original.data = weight.clone()
        host.register_parameter(name, original)
