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


def lenet_300_100(input_shape, classes):
    """LeNet-300-100 as a user would write it: a Sequential of Linear and ReLU."""
    features = 1
    for s in input_shape:
        features *= s
    return nn.Sequential(nn.Flatten(), nn.Linear(features, 300), nn.ReLU(), nn.Linear(300, 100), nn.ReLU(),
                         nn.Linear(100, classes))


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
