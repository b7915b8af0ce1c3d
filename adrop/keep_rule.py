"""The paper's rule for which weights a run keeps, written once for the linear lab and the deep methods.

A weight with dual variable eta is kept by dropout with probability alpha = eta / (eta + lam) (Sec. 3); it counts as
zero when alpha < 0.05 (App. C). eta = inf keeps it for sure; eta = 0 drops it. For variational dropout, whose
Molchanov alpha is lam / eta, the same rule reads log alpha_Molchanov > log(0.95 / 0.05) = 2.944.
Works on NumPy arrays and torch tensors alike.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from adrop.penalties.array_ops import is_tensor, ops

KEEP_THRESHOLD = 0.05
LOG_ALPHA_ZERO = math.log((1 - KEEP_THRESHOLD) / KEEP_THRESHOLD)  # 2.944: variational dropout's form of the rule


def keep_probability(eta, lam):
    """alpha = eta / (eta + lam), 1 where eta = inf."""
    o = ops(eta)
    # NumPy's 0/0 warnings silenced; torch has none (and np.errstate would break a torch.compile graph)
    with contextlib.nullcontext() if is_tensor(eta) else np.errstate(invalid="ignore", divide="ignore"):
        return o.where(o.isinf(eta), 1.0, eta / (eta + lam))


def kept(eta, lam):
    """The weights that count as nonzero: alpha >= 0.05 (with lam = 0 alpha is 1, or 0/0 where eta = 0: not kept)."""
    return keep_probability(eta, lam) >= KEEP_THRESHOLD
