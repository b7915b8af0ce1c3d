"""The networks: a multilayer perceptron of the method's sparse Linear layers with ReLU between them.
lenet_300_100 is 784-300-100-10; mlp takes any hidden widths (model.hidden)."""
from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, widths: list[int], method):
        super().__init__()
        self.names = [f"fc{i + 1}" for i in range(len(widths) - 1)]
        self.layers = nn.ModuleList(method.build_layer(a, b) for a, b in zip(widths[:-1], widths[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


def build(model_cfg, in_features: int, classes: int, method) -> MLP:
    if model_cfg.name not in ("lenet_300_100", "mlp"):
        raise ValueError(f"unknown model {model_cfg.name!r}; valid models: lenet_300_100, mlp")
    hidden = list(model_cfg.hidden)
    if any(h < 1 for h in hidden):
        raise ValueError(f"model.hidden must be positive widths, got {hidden}")
    return MLP([in_features, *hidden, classes], method)
