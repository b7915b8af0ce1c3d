"""The sparsification methods of `adrop train`, one module each, found by name.

    dense, vardrop_lr_ar, vardrop_lr, vardrop, eta_trick, adaprox, adatikhonov, logsum, magnitude_pruning,
    hard_concrete, and fixed_mask (fine-tuning what another run kept)
"""
from . import (adaprox, adatikhonov, dense, eta_trick, fixed_mask, hard_concrete, logsum,  # noqa: F401  (register)
               magnitude_pruning, variational_dropout)
from .base import METHODS, Method, SparseLinear, get, names

__all__ = ["METHODS", "Method", "SparseLinear", "get", "names"]
