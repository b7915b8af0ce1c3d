"""adrop.sparsify and torch's data-parallel wrappers: the order that trains every rank together, and the orders that
would not, refused in one line.

DistributedDataParallel all-reduces the gradients of the parameters it held when it was made. `sparsify` replaces a
model's Linear and Conv2d weights by its layers' (and adds the methods' own: gates, log sigma^2): a DDP made before
holds the replaced tensors, reduces nothing of what trains, and every rank trains alone. So: sparsify first, then wrap;
a DDP object given to sparsify, and a training forward run through a DDP that does not hold the sparse layers'
parameters, are refused. Made in that order, every parameter a method trains is reduced like the weights, and its
buffers (adaptive dropout's alphas, pruning's masks) are recomputed from the reduced weights or broadcast by DDP, so
they agree across ranks.
"""

from __future__ import annotations

import weakref
from typing import Callable

from torch import nn
from torch.nn.parallel import DataParallel, DistributedDataParallel

ORDER = (
    "call adrop.sparsify(model) first, then wrap the model (DistributedDataParallel(model)), and make the optimizer "
    "from the wrapped model's parameters"
)


def wrapper_problem(model: nn.Module) -> str | None:
    """Why sparsify cannot take this model as it is (a data-parallel wrapper), or None."""
    if isinstance(model, (DistributedDataParallel, DataParallel)):
        return f"sparsify the module inside {type(model).__name__}, before wrapping it: {ORDER}"
    return None


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
