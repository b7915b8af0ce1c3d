"""The networks, built from the method's sparse layers (adrop.methods: the layer owns the product, the method the
elementwise math).

    lenet_300_100   784-300-100-10 (the input and output sizes come from the dataset)
    mlp             any hidden widths (model.hidden), at least one hidden layer
    linear          no hidden layer (multinomial logistic regression), only when asked for by this name
    lenet5          LeNet-5-Caffe: conv 20 5x5, max-pool 2, conv 50 5x5, max-pool 2, fc 800-500, fc 500-10, with ReLU
                    after every layer but the last (model.conv = [[20, 5], [50, 5]], model.hidden = [500])
    conv_small      a small conv net for tests (model.conv = [[4, 5]], model.hidden = [16])

Conv nets need images (the dataset's image shape: MNIST's 1 x 28 x 28); each conv is followed by ReLU and a 2 x 2
max-pool. A model records what it is (`architecture`, e.g. "784-300-100-10" or "1x28x28-c20k5-p2-c50k5-p2-800-500-10")
in every run's summary.json. `predict(x, weights)` is the forward pass with given (effective) weights, plain
functional calls, which is how evaluation and weights.npz's readers compute errors.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

MODELS = ("lenet_300_100", "mlp", "linear", "lenet5", "conv_small")
CONV_MODELS = ("lenet5", "conv_small")


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

    def positions(self) -> list[int]:
        """How many times each layer's weights act per example (1 for a Linear layer): for the cost accounting."""
        return [1] * len(self.layers)

    @staticmethod
    def predict(x, weights):
        """Logits of flat inputs (batch, features) with weights [(name, W, b)] (out x in): x W^T + b, ReLU between."""
        for i, (_, w, b) in enumerate(weights):
            x = torch.addmm(b, x, w.t())
            if i < len(weights) - 1:
                x = torch.relu_(x)
        return x


class ConvNet(nn.Module):
    """Convolutions (each followed by ReLU and a 2 x 2 max-pool), then fully connected layers (ReLU between).
    Inputs are the dataset's flat rows, viewed as images; a stack of K views them as (batch, K x channels, H, W)."""

    def __init__(self, image: list[int], conv: list[list[int]], hidden: list[int], classes: int, method,
                 configs: int | None = None):
        super().__init__()
        self.image, self.configs = tuple(image), configs
        channels, size = image[0], image[1]
        layers, names, parts, self.conv_positions = [], [], ["x".join(map(str, image))], []
        for i, (out, kernel) in enumerate(conv):
            layers.append(method.build_conv(channels, out, kernel, configs))
            names.append(f"conv{i + 1}")
            self.conv_positions.append((size - kernel + 1) ** 2)  # output positions, before the pool
            channels, size = out, (size - kernel + 1) // 2
            parts += [f"c{out}k{kernel}", "p2"]
        self.n_conv = len(conv)
        self.flat = channels * size * size
        widths = [self.flat, *hidden, classes]
        layers += [method.build_layer(a, b, configs) for a, b in zip(widths[:-1], widths[1:])]
        names += [f"fc{i + 1}" for i in range(len(widths) - 1)]
        self.layers, self.names = nn.ModuleList(layers), names
        self.architecture = "-".join(parts + [str(w) for w in widths])

    def forward(self, x):
        if self.configs is None:
            x = x.view(-1, *self.image)
        else:  # (K, B, features) -> (B, K * C, H, W): configuration-major channels for the grouped convolutions
            K, B = x.shape[:2]
            x = x.view(K, B, *self.image).transpose(0, 1).reshape(B, K * self.image[0], *self.image[1:])
        for layer in self.layers[:self.n_conv]:
            x = relu_pool(layer(x))
        if self.configs is None:
            x = x.flatten(1)
        else:
            B = x.shape[0]
            x = x.reshape(B, self.configs, self.flat).transpose(0, 1)  # (K, B, flat)
        fc = self.layers[self.n_conv:]
        for i, layer in enumerate(fc):
            x = layer(x)
            if i < len(fc) - 1:
                x = torch.relu(x)
        return x

    def positions(self) -> list[int]:
        """How many times each layer's weights act per example: a conv's output positions, then 1 per Linear."""
        return self.conv_positions + [1] * (len(self.layers) - self.n_conv)

    def predict(self, x, weights):
        """Logits with weights [(name, W, b)]: conv2d, ReLU, max_pool2d for conv layers, then x W^T + b, ReLU."""
        x = x.view(-1, *self.image)
        for name, w, b in weights[:self.n_conv]:
            x = relu_pool(F.conv2d(x, w, b))
        return MLP.predict(x.flatten(1), weights[self.n_conv:])


def hidden_widths(model_cfg) -> list[int]:
    """The hidden widths a model config asks for, checked (ValueError with the fix in its message)."""
    name, hidden = model_cfg.name, list(model_cfg.hidden)
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; valid models: {', '.join(MODELS)}")
    if any(h < 1 for h in hidden):
        raise ValueError(f"model.hidden must be positive widths, got {hidden}")
    if name == "linear" and hidden:
        raise ValueError(f"model=linear has no hidden layer, got model.hidden={hidden}; use model=mlp for hidden layers")
    if name not in ("linear", *CONV_MODELS) and not hidden:
        raise ValueError(f"model={name} with model.hidden=[] has no hidden layer; ask for model=linear by name")
    if name == "lenet_300_100" and hidden != [300, 100]:
        raise ValueError(f"model=lenet_300_100 has hidden widths [300, 100], got {hidden}; use model=mlp "
                         f"model.hidden={hidden} for other widths")
    return hidden


def check_fits(model_cfg, dataset_cfg) -> None:
    """A model that cannot take the dataset's inputs fails here, before anything runs (ValueError, one line)."""
    hidden_widths(model_cfg)
    conv = [list(c) for c in model_cfg.conv]
    if model_cfg.name not in CONV_MODELS:
        if conv:
            raise ValueError(f"model={model_cfg.name} has no convolutions, got model.conv={conv}")
        return
    image = dataset_cfg.image
    if not image:
        raise ValueError(f"model={model_cfg.name} is a conv net and needs images; dataset={dataset_cfg.name} gives "
                         f"flat vectors (use dataset=mnist or fashion_mnist, or a model without convolutions)")
    if not conv or any(len(c) != 2 or min(c) < 1 for c in conv):
        raise ValueError(f"model.conv must be a list of [out channels, kernel size], got {conv}")
    size = image[1]
    for out, kernel in conv:
        if size - kernel + 1 < 2:
            raise ValueError(f"model={model_cfg.name} does not fit {'x'.join(map(str, image))} images: a {kernel}x"
                             f"{kernel} convolution meets a {size}x{size} input (each conv is followed by a 2x2 pool)")
        size = (size - kernel + 1) // 2


def build(model_cfg, data, method, configs: int | None = None):
    """The network for `data` (its in_features, classes and image shape)."""
    hidden = hidden_widths(model_cfg)
    if model_cfg.name in CONV_MODELS:
        if not data.image:
            raise ValueError(f"model={model_cfg.name} is a conv net and needs images")
        return ConvNet(list(data.image), [list(c) for c in model_cfg.conv], hidden, data.classes, method, configs)
    return MLP([data.in_features, *hidden, data.classes], method, configs)
