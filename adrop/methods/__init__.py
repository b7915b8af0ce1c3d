"""The sparsification methods of `adrop train`, one module each, found by name.

    dense, vardrop_lr_ar, vardrop_lr, vardrop, eta_trick, adaprox, adatikhonov, logsum, magnitude_pruning,
    hard_concrete, random_pruning (the floor), and fixed_mask (fine-tuning what another run kept)

Every module of this package is imported here, so a new method registers itself (@register) by being a file in
adrop/methods/: there is no list to edit.
"""

import importlib
import pkgutil

from .base import METHODS, STRUCTURES, Method, SparseLinear, get, names

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["METHODS", "STRUCTURES", "Method", "SparseLinear", "get", "names"]
