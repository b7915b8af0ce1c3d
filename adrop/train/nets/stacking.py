"""K configurations of a module that holds tensors and that the sparse layers cannot batch (a BatchNorm, LayerNorm or
PReLU; nn.MultiheadAttention, torch's Transformer layers, an embedding, a module with a class token of its own beside
its layers): in a stack each configuration keeps its own copies, and its own running statistics.

`Stacked(module, K)` takes the module's place in the network and holds every parameter and buffer of it (at any depth)
with a leading axis of K, under the module's own names (so a stack's state has the keys of the network's). Its input is
a folded batch, (K * batch, ...), configuration-major; each configuration's rows meet that configuration's tensors
through torch.func: `functional_call` of the module, `vmap`ped over K (at K = 1 the module itself on row 0, no vmap).
Modules without tensors of their own (activations, pooling, flatten, dropout, residual sums) need nothing: they act
on each example alike, whatever configuration it belongs to.

The weights a method trains inside such a module (`sparse`: their paths in it) are SparseParameters with the leading
K (`Stacked.sparse`, what the method's hooks and penalty see): each forward pass draws each one's training weight
(Method.weight_sample, the weight-noise form, all K at once) and hands it to the module in the tensor's place; in eval
mode the tensor itself, which evaluation sets to the effective weight. With K = None (one unstacked network: what
evaluation runs) the same, without the leading axis.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings

import torch
from torch import nn
from torch.func import functional_call, vmap
from torch.utils import _pytree as pytree

from adrop.methods.sparse_parameter import SparseParameter, heads_of

# vmap runs attention (scaled_dot_product_attention) configuration by configuration where torch has no batching rule
# for its CPU kernel; the warning says nothing the user can act on
warnings.filterwarnings(
    "ignore", message="There is a performance drop because we have not yet implemented the batching rule"
)

MASKS = {"attn_mask", "mask", "src_mask", "tgt_mask", "memory_mask"}  # torch's names for attention masks
FOLDED = contextvars.ContextVar("folded_batch", default=None)  # K * batch of the stack's forward pass under way


@contextlib.contextmanager
def folded(rows: int):
    """The network's forward pass on a folded batch of `rows` rows: what tells a Stacked module's per-configuration
    inputs (rows first) from shared ones (positions, an attention mask)."""
    token = FOLDED.set(rows)
    try:
        yield
    finally:
        FOLDED.reset(token)


def owns_tensors(module: nn.Module) -> bool:
    """Whether the module itself (not its children) holds parameters or buffers."""
    return any(True for _ in module.named_parameters(recurse=False)) or any(
        b is not None for _, b in module.named_buffers(recurse=False)
    )


def needs_stacking(module: nn.Module) -> bool:
    """Whether a stack must run the module per configuration: it holds tensors, or it is a batch norm (which mixes the
    examples of its batch even when it keeps no statistics)."""
    return owns_tensors(module) or isinstance(module, nn.modules.batchnorm._BatchNorm)


class Stacked(nn.Module):
    def __init__(self, module: nn.Module, configs: int | None, method=None, sparse: list[str] = ()):
        super().__init__()
        self.configs = configs
        self.__dict__["inner"] = module  # not a child: its tensors are this module's, stacked

        def holder(path: str) -> nn.Module:
            """The module of this one that holds the tensors of the inner module at `path` (made as needed)."""
            at = self
            for part in filter(None, path.split(".")):
                if part not in at._modules:
                    at.add_module(part, nn.Module())
                at = at._modules[part]
            return at

        def stacked(t: torch.Tensor) -> torch.Tensor:
            return t if configs is None else t.unsqueeze(0).repeat(configs, *[1] * t.dim())

        heads = {
            path: heads_of(module.get_submodule(path.rpartition(".")[0]), path.rpartition(".")[2], method.structure)
            for path in sparse
        }
        self._tensors = []  # (name in the inner module, its holder here, attribute)
        with torch.no_grad():
            for name, p in module.named_parameters():
                where, _, attr = name.rpartition(".")
                at = holder(where)
                t = p if configs is None else stacked(p)
                if heads.get(name):  # held in the layout its method sees (SparseParameter)
                    t = t.reshape(*t.shape[:-2], 3, heads[name], p.shape[-1] // heads[name], p.shape[-1])
                at.register_parameter(attr, p if t is p else nn.Parameter(t, requires_grad=p.requires_grad))
                self._tensors.append((name, at, attr))
            for where, sub in module.named_modules():
                for attr, b in sub.named_buffers(recurse=False):
                    if b is not None:
                        at = holder(where)
                        at.register_buffer(attr, stacked(b), persistent=attr not in sub._non_persistent_buffers_set)
                        self._tensors.append((f"{where}.{attr}".lstrip("."), at, attr))
        self.sparse_paths = list(sparse)
        self.sparse = nn.ModuleList(
            SparseParameter(holder(path.rpartition(".")[0]), path.rpartition(".")[2], method, configs, heads[path])
            for path in self.sparse_paths
        )
        for path, layer in zip(self.sparse_paths, self.sparse):
            method.init_weights(layer)
            where, _, tensor = path.rpartition(".")  # a Linear's or conv's weight: its bias, counted in its cost
            layer.host_bias = tensor == "weight" and getattr(module.get_submodule(where), "bias", None) is not None

    def extra_repr(self) -> str:
        return f"{self.configs} x {type(self.inner).__name__}"

    def state(self) -> dict:
        """The inner module's tensors as this configuration's forward gives them to it: the weights a method trains
        drawn (training) or as they are (eval)."""
        out = {name: getattr(at, attr) for name, at, attr in self._tensors}
        for path, layer in zip(self.sparse_paths, self.sparse):
            out[path] = layer.as_module(layer.method.weight_sample(layer) if self.training else layer.weight)
        return out

    def forward(self, *inputs, **options):
        self.inner.train(self.training)
        state, K = self.state(), self.configs
        if K is None:
            return functional_call(self.inner, state, inputs, options)
        if K == 1:
            return functional_call(self.inner, {n: t[0] for n, t in state.items()}, inputs, options)
        rows = FOLDED.get() or next(
            x.shape[0] for x in pytree.tree_leaves((inputs, options)) if isinstance(x, torch.Tensor)
        )

        # a tensor argument whose first axis is the folded batch is each configuration's own (a key padding mask);
        # any other is the same for all; torch's attention masks by name: over positions (L x S) the same for all,
        # per example and head (B * H x L x S) each configuration's
        def per_config(x, name=None):
            if not isinstance(x, torch.Tensor) or x.dim() == 0:
                return False
            if name in MASKS:
                return x.dim() == 3 and x.shape[0] % rows == 0
            return x.shape[0] == rows

        def split(x):
            return x.view(K, x.shape[0] // K, *x.shape[1:])

        mine = [per_config(x) for x in inputs]
        ours = {k: per_config(v, k) for k, v in options.items()}
        args = (
            tuple(split(x) if m else x for x, m in zip(inputs, mine)),
            {k: split(v) if ours[k] else v for k, v in options.items()},
        )
        dims = (tuple(0 if m else None for m in mine), {k: 0 if m else None for k, m in ours.items()})
        if not any(mine) and not any(ours.values()):
            raise ValueError(f"{type(self.inner).__name__} is fed no batch of examples: a stack cannot run it")
        kinds = []  # which leaves of the output are tensors (vmap returns only tensors; None and numbers come back)

        def one(s, packed):
            xs, kw = packed
            leaves, spec = pytree.tree_flatten(functional_call(self.inner, s, xs, kw))
            kinds[:] = [(isinstance(v, torch.Tensor), v, spec) for v in leaves]
            return tuple(v for v in leaves if isinstance(v, torch.Tensor))

        outs = iter(vmap(one, in_dims=(0, dims), randomness="different")(state, args))
        leaves = [next(outs).flatten(0, 1) if tensor else value for tensor, value, _ in kinds]
        return pytree.tree_unflatten(leaves, kinds[0][2])
