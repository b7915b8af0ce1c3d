"""Networks as a user writes them (plain torch.nn), for the tests of `model=custom`, and datasets as a user writes
them, for `dataset._target_`: importable as `user_nets.<name>` from the tests folder (the tests put it on PYTHONPATH
for the command line)."""

import math

import numpy as np
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)

    def forward(self, x):
        return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


class TinyResNet(nn.Module):
    """A residual network with BatchNorm: stem conv, one basic block, global average pool, a Linear head."""

    def __init__(self, classes: int = 10, width: int = 8, in_channels: int = 1):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU()
        )
        self.blocks = nn.ModuleList([Block(width)])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.head(self.pool(x).flatten(1))


def plain_mlp(input_shape, classes, hidden: int = 32):
    """A function that returns an nn.Sequential, sized by the data it is given."""
    features = 1
    for s in input_shape:
        features *= s
    return nn.Sequential(nn.Flatten(), nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))


class Scaled(nn.Module):
    """Multiplies by a constant held in a buffer that is not saved."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(2.0), persistent=False)

    def forward(self, x):
        return x * self.scale


class StatelessNorm(nn.Module):
    """BatchNorm that keeps no statistics and no affine parameters (it mixes the examples of its batch all the same),
    and a module with a buffer that is not saved."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.norm = nn.BatchNorm2d(4, affine=False, track_running_stats=False)
        self.scaled = Scaled()
        self.head = nn.Linear(4 * 64, classes)

    def forward(self, x):
        return self.head(self.scaled(self.norm(torch.relu(self.conv(x))).flatten(1)))


class Tied(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.a = nn.Linear(64, 64)
        self.b = nn.Linear(64, 64)
        self.b.weight = self.a.weight
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        return self.head(self.b(self.a(x.flatten(1))))


class WeightNormed(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.fc = nn.utils.parametrizations.weight_norm(nn.Linear(64, classes))

    def forward(self, x):
        return self.fc(x.flatten(1))


class OnlyNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.BatchNorm1d(64)

    def forward(self, x):
        return self.norm(x.flatten(1))


class ThreeOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 3)

    def forward(self, x):
        return self.fc(x.flatten(1))


class WrongWidth(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(100, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))


class ReadsANumber(nn.Module):
    """A module with a tensor of its own whose forward reads a Python number from its input: trains alone, but
    torch.func cannot vmap it, so it does not stack."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return x * self.scale / max(1.0, float(x.abs().max()))


class NumberReadingNet(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.norm = ReadsANumber()
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        return self.fc(self.norm(x.flatten(1)))


class GRUClassifier(nn.Module):
    """A recurrent classifier reading an image row by row: a GRU and a LayerNorm (which no method sparsifies: they
    train densely) before a Linear head."""

    def __init__(self, input_shape, classes: int, hidden: int = 16):
        super().__init__()
        self.rows, self.width = input_shape[-2], input_shape[-1]
        self.gru = nn.GRU(self.width, hidden, batch_first=True)
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        out, _ = self.gru(x.reshape(-1, self.rows, self.width))
        return self.head(self.norm(out[:, -1]))


class TinyViT(nn.Module):
    """Patches of a (1, 8, 8) image, a class token, a positional embedding, torch's TransformerEncoder, a head."""

    def __init__(self, classes=4, dim=16, heads=2, layers=1, patch=4, size=8):
        super().__init__()
        self.patch = nn.Conv2d(1, dim, patch, stride=patch)
        n = (size // patch) ** 2
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(0.02 * torch.randn(1, n + 1, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.norm(self.encoder(x)[:, 0]))


class TinyGPT(nn.Module):
    """Token and position embeddings, causal self-attention (nn.MultiheadAttention), an MLP, a head."""

    def __init__(self, vocab=12, dim=16, heads=2, context=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=idx.device), 1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        x = x + self.mlp(self.ln2(x))
        return self.head(x)


class TinyCausal(nn.Module):
    """A vector read as a sequence of tokens (its features in chunks), a causal nn.MultiheadAttention given its mask
    as a keyword, an embedding of the position, the last token's state classified."""

    def __init__(self, input_shape=(64,), classes=10, dim=16, heads=2, token=8):
        super().__init__()
        self.token, self.tokens = token, math.prod(input_shape) // token
        self.embed = nn.Linear(token, dim)
        self.pos = nn.Embedding(self.tokens, dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        t = self.tokens
        h = self.embed(x.reshape(len(x), t, self.token)) + self.pos(torch.arange(t, device=x.device))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), 1)
        h = h + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return self.head(h[:, -1])


class TokenClassifier(nn.Module):
    """A GPT-style classifier of token ids (N x T, int64): token and position embeddings, causal
    nn.MultiheadAttention, an MLP, the last token's state classified."""

    def __init__(self, input_shape=(8,), classes=3, vocab=12, dim=16, heads=2):
        super().__init__()
        self.gpt = TinyGPT(vocab=vocab, dim=dim, heads=heads, context=input_shape[-1])
        self.gpt.head = nn.Linear(dim, classes)

    def forward(self, idx):
        return self.gpt(idx)[:, -1]


class Blobs:
    """A user's dataset class (dataset._target_=user_nets.Blobs): two Gaussian classes in `features` dimensions,
    as arrays x_train, y_train, x_test, y_test."""

    def __init__(self, n=400, features=6, seed=0):
        rng = np.random.default_rng(seed)
        y = rng.integers(0, 2, n)
        x = rng.normal(size=(n, features)).astype(np.float32) + 2.0 * y[:, None]
        cut = n * 3 // 4
        self.x_train, self.y_train, self.x_test, self.y_test = x[:cut], y[:cut], x[cut:], y[cut:]


class Line:
    """A user's regression dataset as tensors: y = x . w + noise, with a validation split of its own and the task it
    is for."""

    task = "regression"

    def __init__(self, n=300, features=4):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(n, features, generator=g)
        y = x @ torch.arange(1.0, features + 1) + 0.1 * torch.randn(n, generator=g)
        self.x_train, self.y_train = x[:200], y[:200]
        self.x_val, self.y_val = x[200:250], y[200:250]
        self.x_test, self.y_test = x[250:], y[250:]
