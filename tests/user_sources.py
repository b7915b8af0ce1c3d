"""A data set of a user's own, as a Source subclass (tests/test_sources.py names it by `_target_`)."""

from dataclasses import dataclass

import numpy as np
import torch

from adrop.train.data import schemas
from adrop.train.data.datasets import Raw
from adrop.train.data.sources import Arrays, Source


class Blobs(Arrays):
    """Two Gaussian blobs in dataset.options.features dimensions."""

    def shape(self, task: str):
        return ((int(self.cfg.options.features),), 2) if task == "classification" else None

    def raw(self, data) -> Raw:
        rng = np.random.default_rng(int(self.cfg.split_seed))
        d = int(self.cfg.options.features)

        def part(n):
            y = rng.integers(0, 2, n)
            return torch.tensor(rng.normal(size=(n, d)) + 3.0 * y[:, None], dtype=torch.float32), torch.tensor(y)

        return Raw(*part(400), *part(100), classes=2)


class Intruder:
    """A user's data class that, while the run starts, stands for another command writing beside the run's folder
    (`other`: a file it creates), then fails."""

    def __init__(self, other: str):
        from pathlib import Path

        Path(other).parent.mkdir(parents=True, exist_ok=True)
        Path(other).write_text("another command's")
        raise RuntimeError("no data here")


class Unfinished(Source):
    """A Source subclass that forgot its load(): it cannot be made."""

    def shape(self, task: str):
        return (5,), 2


class Shapeless(Blobs):
    """A data set whose shape() fails."""

    def shape(self, task: str):
        raise KeyError("features")


class Unreadable(Blobs):
    """A data set whose arrays fail to load when the run starts."""

    def raw(self, data) -> Raw:
        raise RuntimeError("disk gone")


@dataclass
class RingsConfig(schemas.DatasetConfig):
    features: int = 5  # its own key, with its default


class Rings(Blobs):
    """A data set with keys of its own (a Config), not in dataset.options."""

    Config = RingsConfig

    def shape(self, task: str):
        return ((int(self.cfg.features),), 2) if task == "classification" else None

    def raw(self, data) -> Raw:
        rng = np.random.default_rng(int(self.cfg.split_seed))

        def part(n):
            y = rng.integers(0, 2, n)
            x = rng.normal(size=(n, int(self.cfg.features))) * (1.0 + 3.0 * y[:, None])  # an inner and an outer ring
            return torch.tensor(x, dtype=torch.float32), torch.tensor(y)

        return Raw(*part(400), *part(100), classes=2)
