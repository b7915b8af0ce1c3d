"""Networks written as a user writes them (plain torch.nn, nothing of adrop), for the benchmarks of `model=custom`:
scripts/benchmarks/ is on the path when a benchmark there runs, so `model._target_=plain_networks.lenet_300_100` finds
them."""

import math

from torch import nn


def lenet_300_100(input_shape, classes):
    """LeNet-300-100 as an nn.Sequential of Linear and ReLU."""
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(math.prod(input_shape), 300),
        nn.ReLU(),
        nn.Linear(300, 100),
        nn.ReLU(),
        nn.Linear(100, classes),
    )
