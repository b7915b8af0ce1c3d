"""adrop's built-in networks: plain nn.Modules of nn.Linear and nn.Conv2d layers, which a method trains as it trains
a user's own network (adrop.train.nets.network).

    lenet_300_100   784-300-100-10 (the input and output sizes come from the dataset)
    mlp             any hidden widths (model.hidden), at least one hidden layer
    linear          no hidden layer (multinomial logistic regression), only when asked for by this name
    lenet5          LeNet-5-Caffe: conv 20 5x5, max-pool 2, conv 50 5x5, max-pool 2, fc 800-500, fc 500-10, with ReLU
                    after every layer but the last (model.conv = [[20, 5], [50, 5]], model.hidden = [500])
    conv_small      a small conv net for tests (model.conv = [[4, 5]], model.hidden = [16])

Layers are named fc1, fc2, ... and conv1, conv2, ... (their module paths). Conv nets need images (MNIST's
1 x 28 x 28); each conv is followed by ReLU and a 2 x 2 max-pool. A network records what it is (`architecture`, e.g.
"784-300-100-10" or "1x28x28-c20k5-p2-c50k5-p2-800-500-10") in every run's summary.json.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from adrop.train import current_paths

BUILT_IN = ("lenet_300_100", "mlp", "linear", "lenet5", "conv_small")
TARGETS = ("adrop.train.nets.builtin.MLP", "adrop.train.nets.builtin.ConvNet")


def relu_pool(x):
    """max_pool2d(relu(x), 2), bit for bit in values and gradients, faster. ReLU commutes with max, so it runs on the
    pooled quarter; and on a CPU PyTorch's max-pool is much faster on channels-last memory than on NCHW (measured on
    LeNet-5's two pools, forward and backward, one thread: 9.2 -> 6.8 ms and 2.4 -> 1.1 ms per batch of 128, the
    copies there and back included), while the result comes back NCHW so the next convolution computes exactly as
    before. Ties go to the same element either way (tested), so the gradients are the same bits."""
    if x.device.type == "cpu":
        return torch.relu(F.max_pool2d(x.contiguous(memory_format=torch.channels_last), 2)).contiguous()
    return torch.relu(F.max_pool2d(x, 2))


class MLP(nn.Module):
    """Fully connected layers fc1, fc2, ... with ReLU between; inputs flattened."""

    def __init__(self, hidden: list[int], input_shape: list[int], classes: int):
        super().__init__()
        widths = [math.prod(input_shape), *hidden, classes]
        self.architecture = "-".join(map(str, widths))
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
            self.add_module(f"fc{i + 1}", nn.Linear(a, b))

    def forward(self, x):
        x = x.flatten(1)
        layers = list(self.children())
        for i, layer in enumerate(layers):
            x = layer(x)
            if i < len(layers) - 1:
                x = torch.relu(x)
        return x


class ConvNet(nn.Module):
    """Convolutions conv1, conv2, ... (each followed by ReLU and a 2 x 2 max-pool), then fully connected layers fc1,
    fc2, ... (ReLU between)."""

    def __init__(self, conv: list[list[int]], hidden: list[int], input_shape: list[int], classes: int):
        super().__init__()
        if len(input_shape) != 3:
            raise ValueError(
                f"a conv net needs images (channels, height, width); the data gives flat vectors of "
                f"{math.prod(input_shape)} features (use an image dataset, or a model without "
                "convolutions)"
            )
        if not conv or any(len(c) != 2 or min(c) < 1 for c in conv):
            raise ValueError(f"model.conv must be a list of [out channels, kernel size], got {conv}")
        channels, size = input_shape[0], input_shape[1]
        parts = ["x".join(map(str, input_shape))]
        for i, (out, kernel) in enumerate(conv):
            if size - kernel + 1 < 2:
                raise ValueError(
                    f"the conv net does not fit {'x'.join(map(str, input_shape))} images: a {kernel}x"
                    f"{kernel} convolution meets a {size}x{size} input (each conv is followed by a 2x2 "
                    "pool)"
                )
            self.add_module(f"conv{i + 1}", nn.Conv2d(channels, out, kernel))
            channels, size = out, (size - kernel + 1) // 2
            parts += [f"c{out}k{kernel}", "p2"]
        self.n_conv = len(conv)
        widths = [channels * size * size, *hidden, classes]
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
            self.add_module(f"fc{i + 1}", nn.Linear(a, b))
        self.architecture = "-".join(parts + [str(w) for w in widths])

    def forward(self, x):
        layers = list(self.children())
        for layer in layers[: self.n_conv]:
            x = relu_pool(layer(x))
        x = x.flatten(1)
        fc = layers[self.n_conv :]
        for i, layer in enumerate(fc):
            x = layer(x)
            if i < len(fc) - 1:
                x = torch.relu(x)
        return x


def check_hidden(model_cfg) -> None:
    """A built-in model asked for with widths that are another model's: ValueError with the fix in its message."""
    if current_paths(model_cfg.get("_target_")) not in (None, *TARGETS):
        return  # another class under a built-in name: its own arguments
    name, hidden = model_cfg.name, list(model_cfg.get("hidden", []))
    if any(h < 1 for h in hidden):
        raise ValueError(f"model.hidden must be positive widths, got {hidden}")
    if name == "linear" and hidden:
        raise ValueError(
            f"model=linear has no hidden layer, got model.hidden={hidden}; use model=mlp for hidden layers"
        )
    if name in ("mlp", "lenet_300_100") and not hidden:
        raise ValueError(f"model={name} with model.hidden=[] has no hidden layer; ask for model=linear by name")
    if name == "lenet_300_100" and hidden != [300, 100]:
        raise ValueError(
            f"model=lenet_300_100 has hidden widths [300, 100], got {hidden}; use model=mlp "
            f"model.hidden={hidden} for other widths"
        )
