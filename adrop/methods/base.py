"""What a sparsification method is to the training loop, and the registry that finds one by name.

A method makes the network's Linear layers (`SparseLinear` subclasses) and may act after each optimiser step.
The loop only ever calls:

    layer(x)                   training forward (noise, gates, masks) or, in eval mode, x W_eff^T + b
    method.start(layers)       once, before the first step of a new run (not on resume)
    method.penalty(layers)     the regulariser R; the loop minimises  data term + lam * R
    method.after_step(...)     e.g. a proximal step or a pruning schedule
    layer.keep_mask()          which weights count as nonzero (the paper's rule, adrop.keep_rule)
    layer.effective_weight()   the weight evaluation uses, masks and deterministic gates folded in

Adding a method means one module here (registered with @register) and one file conf/method/<name>.yaml.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

METHODS: dict[str, type["Method"]] = {}


def register(cls):
    METHODS[cls.name] = cls
    return cls


def names() -> list[str]:
    return sorted(METHODS)


def get(name: str) -> type["Method"]:
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; valid methods: {', '.join(names())}")
    return METHODS[name]


class SparseLinear(nn.Module):
    """A Linear layer (out x in weight, bias) whose weight a method sparsifies; by default a plain dense layer."""

    def __init__(self, in_features: int, out_features: int, method: "Method"):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.lam = method.lam
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # as nn.Linear
        bound = 1 / math.sqrt(in_features)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        if self.training:
            return self.train_forward(x)
        return F.linear(x, self.effective_weight(), self.bias)

    def train_forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def penalty(self) -> torch.Tensor:
        return self.weight.new_zeros(())

    def keep_mask(self) -> torch.Tensor:
        return self.weight != 0

    def effective_weight(self) -> torch.Tensor:
        return self.weight * self.keep_mask()


@dataclass
class NoParams:
    pass


class Method:
    """Base of every method: its name, its Linear layer, its parameters (a dataclass, so typos fail fast)."""

    name: ClassVar[str] = ""
    layer: ClassVar[type[SparseLinear]] = SparseLinear
    Params: ClassVar[type] = NoParams

    def __init__(self, lam: float, params, steps_per_epoch: int, epochs: int):
        self.lam, self.params = float(lam), params
        self.steps_per_epoch, self.total_steps = steps_per_epoch, steps_per_epoch * epochs

    def build_layer(self, in_features: int, out_features: int) -> SparseLinear:
        return self.layer(in_features, out_features, self)

    def start(self, layers) -> None:
        """Called once before the first training step of a new run (after init_from), not when one resumes."""

    def penalty(self, layers) -> torch.Tensor:
        return sum(layer.penalty() for layer in layers)

    def after_step(self, layers, optimizer, step: int) -> None:
        """Called after every optimiser step (step counts from 1)."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass
