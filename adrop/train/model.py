"""The networks: a multilayer perceptron of the method's sparse Linear layers with ReLU between them.

    lenet_300_100   784-300-100-10 (the input and output sizes come from the dataset)
    mlp             any hidden widths (model.hidden), at least one hidden layer
    linear          no hidden layer (multinomial logistic regression), only when asked for by this name

A model records what it is (`architecture`, e.g. "784-300-100-10") in every run's summary.json.
"""
from __future__ import annotations

import torch
from torch import nn

MODELS = ("lenet_300_100", "mlp", "linear")


class MLP(nn.Module):
    """configs=K: K stacked copies (parameters with a leading axis of K, inputs (K, batch, features))."""

    def __init__(self, widths: list[int], method, configs: int | None = None):
        super().__init__()
        self.architecture = "-".join(map(str, widths))
        self.names = [f"fc{i + 1}" for i in range(len(widths) - 1)]
        self.layers = nn.ModuleList(method.build_layer(a, b, configs) for a, b in zip(widths[:-1], widths[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


def hidden_widths(model_cfg) -> list[int]:
    """The hidden widths a model config asks for, checked (ValueError with the fix in its message)."""
    name, hidden = model_cfg.name, list(model_cfg.hidden)
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; valid models: {', '.join(MODELS)}")
    if any(h < 1 for h in hidden):
        raise ValueError(f"model.hidden must be positive widths, got {hidden}")
    if name == "linear" and hidden:
        raise ValueError(f"model=linear has no hidden layer, got model.hidden={hidden}; use model=mlp for hidden layers")
    if name != "linear" and not hidden:
        raise ValueError(f"model={name} with model.hidden=[] has no hidden layer; ask for model=linear by name")
    if name == "lenet_300_100" and hidden != [300, 100]:
        raise ValueError(f"model=lenet_300_100 has hidden widths [300, 100], got {hidden}; use model=mlp "
                         f"model.hidden={hidden} for other widths")
    return hidden


def build(model_cfg, in_features: int, classes: int, method, configs: int | None = None) -> MLP:
    return MLP([in_features, *hidden_widths(model_cfg), classes], method, configs)
