"""Each data set's keys: the schema of its `dataset` node (structured configs, no torch: the help reads them).

A data set's class (adrop.train.data.sources) names its schema (`Config`); conf/dataset/<name>.yaml starts from it
(`defaults: [/dataset_schema/<its schema's name>@_here_, _self_]`, registered in the `dataset_schema` group by
adrop.train.config.schema), so that
`dataset=<name>` has exactly its own keys, with their defaults, and a key another data set has is refused. A user's
data set is checked against its class's `Config` when the run starts (a Source subclass's own, else
OptionsConfig's keys: its arguments in dataset.options).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from omegaconf import MISSING


@dataclass
class DatasetConfig:
    """What every data set has."""

    name: str = MISSING  # the data set's name (choose one with dataset=<name>; adrop's classes refuse another)
    # the data set's class: adrop's (adrop.train.data.sources, named by each conf/dataset file), or a user's: a Source
    # subclass, or any class whose instance holds x_train, y_train, x_test, y_test (optionally x_val, y_val, classes)
    _target_: Optional[str] = None
    # the validation split, taken from the training set at random (split_seed) unless the data has x_val: a fraction
    # of the training examples (0 < val_size < 1) or a count (MNIST's 12000, the paper's split)
    val_size: Union[int, float] = 0.1
    split_seed: int = 42  # the random validation split's seed (the same split for every run's seed)
    mean: Any = None  # normalisation x = (x - mean) / std (x in [0, 1] for pixels): one number or one per
    std: Any = None  # channel; null: the data set's usual values, else computed on the training split
    classes: Optional[int] = None  # null: the labels' largest value + 1
    augment: str = "none"  # crop_flip: random padded crops and flips of training images (CIFAR); shift: +-2 px


@dataclass
class ImagesConfig(DatasetConfig):
    """MNIST and Fashion-MNIST: idx files of images."""

    image: Optional[List[int]] = None  # channels, height, width (MNIST: [1, 28, 28]); null: flat vectors


@dataclass
class SyntheticConfig(DatasetConfig):
    """Gaussian classes, generated."""

    features: int = 20  # input dimension
    n_train: int = 2000  # training examples (validation taken from them)
    n_test: int = 500  # test examples
    separation: float = 2.0  # distance between the classes' means (larger: easier)
    image: Optional[List[int]] = None  # channels, height, width the features are seen as; null: flat vectors


@dataclass
class HeldOutConfig(DatasetConfig):
    """A bundled set without a test split of its own (digits, diabetes)."""

    test_size: Union[int, float] = 360  # held out as the test set: a count or a fraction


@dataclass
class NpzConfig(DatasetConfig):
    """One .npz file of arrays."""

    path: str = MISSING  # the file (x_train, y_train, x_test, y_test; optionally x_val, y_val)


@dataclass
class TextConfig(DatasetConfig):
    """A text file as next-token windows."""

    path: str = MISSING  # the text file
    context: int = 64  # tokens a window holds (the model's context)
    level: str = "char"  # char (UTF-8 characters) or byte tokens
    test_size: Union[int, float] = 0.05  # the file's last fraction (or count of windows) for the test part


@dataclass
class OptionsConfig(DatasetConfig):
    """A class made with arguments: a user's (dataset._target_), or torchvision's."""

    options: Dict[str, Any] = field(default_factory=dict)  # more arguments of the class


@dataclass
class TorchvisionConfig(OptionsConfig):
    """A torchvision.datasets class, named by dataset.name."""

    source: str = "torchvision"  # where dataset.name is looked up: torchvision.datasets.<name>


# the schemas conf/dataset/*.yaml start from (`- /dataset_schema/<name>@_here_` in their defaults lists)
SCHEMAS = {
    "images": ImagesConfig,
    "synthetic": SyntheticConfig,
    "held_out": HeldOutConfig,
    "npz": NpzConfig,
    "text": TextConfig,
    "options": OptionsConfig,
    "torchvision": TorchvisionConfig,
}
