"""The smaller dense network that a sparse network's surviving units make: which units each layer keeps, the
architecture they form (the L0 paper's way: 784-300-100-10 -> 266-88-33-10), its multiply-adds, and the network
itself, in NumPy.

For adrop's built-in chains (adrop.train.nets.builtin: MLP, ConvNet): convolutions without padding, each followed by
ReLU and a 2 x 2 max-pool, then Linear layers with ReLU between, flattened in between. A unit is kept when a kept
unit downstream reads it (a nonzero weight on it; the classes are all kept) and it reads a kept unit upstream. Two
passes find them: backward, the units read; forward, the units that read. A unit that is read but reads nothing
outputs a constant, relu(b) (a max-pool of a constant is that constant), which is folded into the next layer's bias
(exact without padding); a unit that is not read is dropped. The compact network computes what the full one does,
to float32 rounding.

A chain's `input_index` says which inputs the compact network reads (an MLP's flat features, a conv net's
channels), `flat_index` which of the last convolution's flattened outputs its first Linear layer reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def relu(x):
    return np.maximum(x, 0, out=x)


def conv2d(x, w, b):
    """x (N, C, H, W) * w (O, C, k, k), stride 1, no padding: by im2col and one matrix product."""
    from numpy.lib.stride_tricks import sliding_window_view

    k = w.shape[-1]
    cols = sliding_window_view(x, (k, k), axis=(2, 3))  # N, C, H', W', k, k
    n, c, h, wd = cols.shape[:4]
    cols = cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * wd, c * k * k)
    out = cols @ w.reshape(w.shape[0], c * k * k).T + b  # explicit sizes: a layer may keep no filter (or no input)
    return out.reshape(n, h, wd, w.shape[0]).transpose(0, 3, 1, 2)


def max_pool2(x):
    n, c, h, w = x.shape
    return x[:, :, : h // 2 * 2, : w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def read_inputs(w: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per input unit of a layer (a Linear column, a conv input channel): whether one of the rows `rows` has a
    nonzero weight on it."""
    nonzero = w[rows] != 0
    return nonzero.any(axis=tuple(a for a in range(nonzero.ndim) if a != 1))


def reading_rows(w: np.ndarray) -> np.ndarray:
    """Per output unit: whether it has a nonzero weight."""
    return (w != 0).reshape(w.shape[0], -1).any(axis=1)


@dataclass
class Compact:
    names: list[str]
    layers: list[tuple[np.ndarray, np.ndarray]]  # the compact (weight, bias) per layer, float32
    input_index: np.ndarray  # the inputs read: flat features (MLP) or channels (conv net)
    flat_index: np.ndarray | None  # conv nets: the flattened conv outputs the first Linear reads
    image: tuple | None  # conv nets: the input's (channels, height, width)
    before: list[str]  # the full network's units, input first (conv layers as c<filters>)
    after: list[str]  # the compact network's
    inputs: int  # the full network's input features (MLP) or channels (conv net)

    @property
    def architecture(self) -> str:
        return "-".join(self.after)

    def macs(self) -> int:
        """Multiply-adds of one example through the compact network (a convolution's at every output position)."""
        total, size = 0, None if self.image is None else self.image[1]
        for w, _ in self.layers:
            if w.ndim == 4:
                size = size - w.shape[-1] + 1
                total += w.size * size * size
                size //= 2
            else:
                total += w.size
        return int(total)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Logits of flat normalised inputs (N, features), as the full network's forward gives them."""
        x = np.asarray(x, np.float32)
        if self.image is not None:
            x = x.reshape(-1, *self.image)[:, self.input_index]
        else:
            x = x[:, self.input_index]
        last = len(self.layers) - 1
        for i, (w, b) in enumerate(self.layers):
            if w.ndim == 4:
                x = max_pool2(relu(conv2d(x, w, b)))
                continue
            if x.ndim > 2:
                x = x.reshape(len(x), -1)[:, self.flat_index]
            x = x @ w.T + b
            if i < last:
                x = relu(x)
        return x

    @property
    def spread(self) -> int:
        """A conv net's positions per channel at the flattening (the last pooled feature map's height x width)."""
        size = self.image[1]
        for w, _ in self.layers:
            if w.ndim == 4:
                size = (size - w.shape[-1] + 1) // 2
        return size * size

    def runtime_layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The compact network's layers for a runtime that is given the full inputs, without gathers: the first layer
        widened back to every input (zero weights on the unread ones) and a conv net's first Linear to every position
        of the kept channels. Why: a Gather of the inputs the network reads measured slower than reading them all,
        in torch and onnxruntime alike (LeNet-300-100 at 1.3% nonzero, 784-300-100 -> 472-64-40, batch 256:
        onnxruntime 0.56 ms with the Gather, 0.16 ms without; torch 0.40 and 0.18; docs/results/inference.md)."""
        layers = [(w.copy(), b) for w, b in self.layers]
        w, b = layers[0]
        first = np.zeros((w.shape[0], self.inputs, *w.shape[2:]), np.float32)
        first[:, self.input_index] = w
        layers[0] = (first, b)
        if self.image is not None:
            linear = next((i for i, (w, _) in enumerate(layers) if w.ndim == 2), None)
            if linear is not None:
                w, b = layers[linear]
                channels = layers[linear - 1][0].shape[0]
                full = np.zeros((w.shape[0], channels * self.spread), np.float32)
                full[:, self.flat_index] = w
                layers[linear] = (full, b)
        return layers

    def arrays(self) -> dict:
        """The compact network as arrays for an .npz: `layers`, `input_index`, `inputs`, `architecture` (before ->
        after), `<name>.weight`, `<name>.bias`, and for a conv net `flat_index` and `image`."""
        out = {
            "layers": np.array(self.names),
            "input_index": self.input_index.astype(np.int64),
            "inputs": np.array(self.inputs),
            "architecture": np.array(f"{'-'.join(self.before)} -> {self.architecture}"),
        }
        if self.image is not None:
            out["flat_index"], out["image"] = self.flat_index.astype(np.int64), np.array(self.image)
        for name, (w, b) in zip(self.names, self.layers):
            out[f"{name}.weight"], out[f"{name}.bias"] = w, b
        return out

    @classmethod
    def from_arrays(cls, arrays) -> "Compact":
        """The compact network an .npz of `arrays()` holds."""
        names = [str(n) for n in arrays["layers"]]
        before, _, after = str(arrays["architecture"]).partition(" -> ")
        image = tuple(int(v) for v in arrays["image"]) if "image" in arrays else None
        return cls(
            names,
            [(arrays[f"{n}.weight"], arrays[f"{n}.bias"]) for n in names],
            arrays["input_index"],
            arrays["flat_index"] if "flat_index" in arrays else None,
            image,
            before.split("-"),
            after.split("-"),
            int(arrays["inputs"]),
        )


def compact(names: list[str], weights: dict, image: tuple | None = None) -> Compact:
    """The compact network of a built-in chain: `weights` name -> (W, b or None) in torch layout (the effective
    weights: weights.npz), `image` the input's (channels, height, width) for a conv net."""
    ws = [np.asarray(weights[n][0], np.float32) for n in names]
    bs = [
        np.zeros(w.shape[0], np.float32) if weights[n][1] is None else np.array(weights[n][1], np.float32)
        for n, w in zip(names, ws)
    ]
    conv = [w.ndim == 4 for w in ws]
    n = len(ws)
    # the flattening: the last convolution's channels, each spread over `spread` columns of the first Linear
    spread = ws[sum(conv)].shape[1] // ws[sum(conv) - 1].shape[0] if any(conv) else 1
    to_linear = [conv[i] and i + 1 < n and not conv[i + 1] for i in range(n)]

    read = [None] * n  # backward: the units of each layer's output that a kept unit downstream reads
    read[-1] = np.ones(ws[-1].shape[0], bool)
    for i in range(n - 1, 0, -1):
        inputs = read_inputs(ws[i], read[i])
        read[i - 1] = inputs.reshape(-1, spread).any(axis=1) if to_linear[i - 1] else inputs

    kept_in = read_inputs(ws[0], read[0])  # forward: the units that read a kept input
    input_index, flat_index, layers = np.flatnonzero(kept_in), None, []
    for i in range(n):
        w = ws[i][:, kept_in]
        if i == n - 1:
            kept = np.ones(w.shape[0], bool)
        else:
            reads = reading_rows(w)
            kept, constant = read[i] & reads, read[i] & ~reads
            value = np.maximum(bs[i][constant], 0)  # what a constant unit outputs, for every input
            following = ws[i + 1]
            if conv[i + 1]:
                bs[i + 1] += following[:, constant].sum(axis=(2, 3)) @ value
            elif to_linear[i]:
                bs[i + 1] += following.reshape(following.shape[0], -1, spread)[:, constant].sum(axis=2) @ value
            else:
                bs[i + 1] += following[:, constant] @ value
        layers.append((np.ascontiguousarray(w[kept]), bs[i][kept]))
        if i == n - 1:
            break
        if to_linear[i]:  # the first Linear's columns: a kept channel's positions that kept rows read
            columns = np.repeat(kept, spread) & read_inputs(ws[i + 1], read[i + 1])
            kept_channel = np.cumsum(kept) - 1  # a kept channel's index in the compact convolution's output
            positions = np.flatnonzero(columns)
            flat_index = kept_channel[positions // spread] * spread + positions % spread
            kept_in = columns
        else:
            kept_in = kept
    image = tuple(image) if image is not None else None
    return Compact(
        list(names),
        layers,
        input_index,
        flat_index,
        image,
        units([w.shape for w in ws], image),
        units([w.shape for w, _ in layers], image, len(input_index)),
        ws[0].shape[1],
    )


def units(shapes: list[tuple], image: tuple | None, inputs: int | None = None) -> list[str]:
    """Units per stage of a chain with these weight shapes, input first: an MLP's features then each layer's
    outputs; a conv net's CxHxW input, each convolution's filters as c<n>, the first Linear's inputs, then each Linear's
    outputs. `inputs`: how many features (or channels) are read, if not all."""
    if image is None:
        return [str(shapes[0][1] if inputs is None else inputs), *(str(s[0]) for s in shapes)]
    parts = ["x".join(map(str, (image[0] if inputs is None else inputs, *image[1:])))]
    parts += [f"c{s[0]}" for s in shapes if len(s) == 4]
    linear = [s for s in shapes if len(s) == 2]
    if linear:
        parts += [str(linear[0][1]), *(str(s[0]) for s in linear)]
    return parts
