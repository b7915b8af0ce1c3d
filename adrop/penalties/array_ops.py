"""One formula for NumPy and torch: the closed forms are written with `ops(x)`, so that the same code gives float64
values for the penalty calculus and differentiable tensors for training (adrop.methods) — no second copy.

    o = ops(x); o.where(x > 0, o.log(x), 0.0)
"""

from __future__ import annotations

import sys

import numpy as np


class _NumPy:
    # staticmethod: NumPy 2's np.where is a Python function and would otherwise bind as a method
    where, log, log1p, exp = staticmethod(np.where), staticmethod(np.log), staticmethod(np.log1p), staticmethod(np.exp)
    sqrt, abs, isinf = staticmethod(np.sqrt), staticmethod(np.abs), staticmethod(np.isinf)

    @staticmethod
    def sigmoid(x):
        from scipy.special import expit  # imported when used: a training process never needs scipy.special

        return expit(x)

    @staticmethod
    def softplus(x):
        return np.logaddexp(0.0, x)


class _Torch:
    def __init__(self, torch):
        self.t = torch
        self.log, self.log1p, self.exp, self.sqrt = torch.log, torch.log1p, torch.exp, torch.sqrt
        self.abs, self.isinf, self.sigmoid = torch.abs, torch.isinf, torch.sigmoid
        self.softplus = torch.nn.functional.softplus

    def where(self, cond, a, b):
        return self.t.where(cond, a, b)


NUMPY = _NumPy()
_TORCH = None


def is_tensor(x) -> bool:
    torch = sys.modules.get("torch")  # never imports torch for the NumPy path
    return torch is not None and isinstance(x, torch.Tensor)


def ops(x):
    global _TORCH
    if is_tensor(x):
        if _TORCH is None:
            _TORCH = _Torch(sys.modules["torch"])
        return _TORCH
    return NUMPY
