"""Networks as a user writes them (plain torch.nn), for the tests of `model=custom`: importable as `user_nets.<name>`
from the tests folder (the tests put it on PYTHONPATH for the command line)."""
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
        self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width),
                                  nn.ReLU())
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
