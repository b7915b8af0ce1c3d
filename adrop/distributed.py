"""adrop.sparsify and torch's data-parallel wrappers: the order that trains every rank together, and the orders that
would not, refused in one line.

DistributedDataParallel all-reduces the gradients of the parameters it held when it was made. `sparsify` replaces a
model's Linear and Conv2d weights by its layers' (and adds the methods' own: gates, log sigma^2): a DDP made before
holds the replaced tensors, reduces nothing of what trains, and every rank trains alone. So: sparsify first, then wrap;
a DDP object given to sparsify, and a training forward run through a DDP that does not hold the sparse layers'
parameters, are refused. Made in that order, every parameter a method trains is reduced like the weights, and its
buffers (adaptive dropout's alphas, pruning's masks) are recomputed from the reduced weights or broadcast by DDP, so
they agree across ranks.

FSDP2 (`torch.distributed.fsdp.fully_shard`, after sparsify) shards each parameter into a DTensor, the layers' and the
methods' alike; the methods' buffers (masks, keep probabilities) stay whole on every rank. Between forwards the
methods' hooks see the shards: their elementwise math runs on the DTensors (each rank its own rows), a buffer meets
a shard as a replicated DTensor (`like`), and a buffer or a statistic made from the weights reads them whole (`full`:
an all-gather, which every rank makes as every rank runs the hooks). The penalty is summed per layer and made whole
(a scalar all-reduce), so `loss + sp.penalty()` is a plain tensor and each shard gets its own penalty gradient.
FSDP1 (FullyShardedDataParallel) flattens parameters into views the methods cannot read by rows: refused.
"""

from __future__ import annotations

import sys
import weakref
from contextlib import contextmanager
from typing import Callable

import torch
from torch import nn
from torch.nn.parallel import DataParallel, DistributedDataParallel


def _loaded(module: str, name: str):
    """torch.distributed's `name` where its module is imported already, else None: no DTensor, FSDP module or
    flattened parameter can exist before (importing them costs every `import adrop` half a second)."""
    return getattr(sys.modules.get(module), name, None)


ORDER = (
    "call adrop.sparsify(model) first, then wrap the model (DistributedDataParallel(model)), and make the optimizer "
    "from the wrapped model's parameters"
)


FSDP1 = (
    "FullyShardedDataParallel (FSDP1) flattens the weights into views the methods cannot read by rows: shard with "
    "torch.distributed.fsdp.fully_shard (FSDP2) after adrop.sparsify"
)


def wrapper_problem(model: nn.Module) -> str | None:
    """Why sparsify cannot take this model as it is (a data-parallel wrapper, a sharded model), or None."""
    if isinstance(model, (DistributedDataParallel, DataParallel)):
        return f"sparsify the module inside {type(model).__name__}, before wrapping it: {ORDER}"
    fsdp1 = _loaded("torch.distributed.fsdp", "FullyShardedDataParallel")
    if fsdp1 is not None and any(isinstance(m, fsdp1) for m in model.modules()):
        return FSDP1
    if any(is_sharded(p) for p in model.parameters()):
        return (
            "the model's parameters are sharded already (fully_shard, or a DTensor): call adrop.sparsify(model) "
            "first, then fully_shard its blocks and the model, then make the optimizer"
        )
    return None


def fsdp1_problem(tensors) -> str | None:
    """Why training cannot go on, or None: FSDP1 holds these tensors (the sparse layers' weights, or an optimizer's
    parameters): FSDP1 marks the tensors it flattened, and in its forward a weight is a view of its flat parameter."""
    if any(getattr(t, "_fsdp_flattened", False) or getattr(t._base, "_fsdp_flattened", False) for t in tensors):
        return FSDP1
    return None


def is_sharded(t) -> bool:
    dtensor = _loaded("torch.distributed.tensor", "DTensor")
    return dtensor is not None and isinstance(t, dtensor)


def full(t: torch.Tensor) -> torch.Tensor:
    """t, or a DTensor's whole value (an all-gather; differentiable: each shard gets its slice of the gradient)."""
    return t.full_tensor() if is_sharded(t) else t


def like(t: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """t (whole on every rank, a buffer) as an operand for `ref`: a replicated DTensor where ref is a shard."""
    if is_sharded(ref) and not is_sharded(t):
        from torch.distributed.tensor import DTensor, Replicate

        return DTensor.from_local(t, ref.device_mesh, [Replicate()] * ref.device_mesh.ndim, run_check=False)
    return t


_VERDICTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def ddp_problem(parameters: Callable[[], list]) -> str | None:
    """Why a training forward now cannot go on, or None: it runs inside a DistributedDataParallel that does not hold
    the sparse layers' parameters (`parameters()`; made before sparsify, or around a model sparsified after
    wrapping)."""
    ddp = DistributedDataParallel._active_ddp_module  # set by DDP while its forward runs (torch's own guard for dynamo)
    if ddp is None:
        return None
    if ddp not in _VERDICTS:
        held = {id(p) for p in ddp._module_parameters}
        missing = [p for p in parameters() if p.requires_grad and id(p) not in held]
        _VERDICTS[ddp] = (
            f"DistributedDataParallel was made before adrop.sparsify: it all-reduces the tensors sparsify "
            f"replaced, so each process would train alone; {ORDER}"
            if missing
            else None
        )
    return _VERDICTS[ddp]


@contextmanager
def unsharded(model: nn.Module, module: nn.Module, tensors: list):
    """Within it, `module` (a part of `model`) holds its whole parameters where FSDP2 shards them: its nearest
    fully_shard-ed ancestor unshards (an all-gather; every rank enters it alike) and reshards after. Yields whether
    it did: a tensor kept from within must then be copied (resharding frees the whole ones). `tensors`: what the
    module's weight is made of (a parametrized tensor's lives in its host, not among the layer's parameters)."""
    owner = None
    fsdp = _loaded("torch.distributed.fsdp", "FSDPModule")
    if fsdp is not None and any(is_sharded(t) for t in tensors):
        parents = {child: parent for parent in model.modules() for child in parent.children()}
        owner = module
        while owner is not None and not isinstance(owner, fsdp):
            owner = parents.get(owner)
    if owner is None:
        yield False
        return
    owner.unshard()
    try:
        yield True
    finally:
        owner.reshard()
