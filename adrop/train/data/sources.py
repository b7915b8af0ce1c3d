"""The data sets, each one class named by `_target_` in its conf/dataset/<name>.yaml, as a model is: what the
config says of its data without reading them (their shape, the task they are for, whether the inputs are token ids)
and the data themselves, as tensors on the device (adrop.train.data.tensors).

A new data set is a class here (or anywhere: a subclass of Source, by `_target_`) and a YAML file; its keys are its
class's `Config` (adrop.train.data.schemas: checked by `checked` when a run starts). A user's own
class that is not a Source (its instance holds x_train, y_train, x_test, y_test, ...; dataset=custom) is read through
Custom. A run made before its config named the class (no `_target_`) is read by its dataset's name (BY_NAME).
"""

from __future__ import annotations

import difflib
import importlib
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
from omegaconf import OmegaConf

from adrop.train import tasks
from adrop.train.data import datasets, schemas, tensors
from adrop.train.data import text as text_source
from adrop.train.data.datasets import DataError, Raw
from adrop.train.errors import brief


class Source(ABC):
    """One data set, from its config node (`dataset`)."""

    task: ClassVar[str | None] = "classification"  # the task its data are for; None where only the data can say
    name: ClassVar[str | None] = None  # the dataset.name an adrop data set answers to (None: any)
    Config: ClassVar[type] = schemas.OptionsConfig  # its keys (a user's class: its arguments in dataset.options)

    def __init__(self, cfg) -> None:
        self.cfg = cfg

    def shape(self, task: str) -> tuple[tuple, int] | None:
        """(input shape, outputs) as the config implies them for `task`; None where only the data can say."""
        return None

    def tokens(self) -> bool:
        """Whether the inputs are token ids, as far as the config says without reading the data."""
        return False

    def identity(self) -> dict:
        """What of this data set's settings, beyond those every data set has, makes two runs differ: a class of the
        user's, its own path."""
        return {} if type(self).__module__ == __name__ else {"dataset_target": self.cfg._target_}

    @abstractmethod
    def load(self, data, device, task: tasks.Task) -> tensors.Data:
        """The data, checked for the task, split, normalised, on the device (`data`: the run's data settings,
        data.root among them)."""


class Arrays(Source):
    """A data set given as arrays (a Raw), which adrop.train.data.tensors.from_raw checks, splits and normalises."""

    def load(self, data, device, task: tasks.Task) -> tensors.Data:
        return tensors.from_raw(self.raw(data), self.cfg, data, device, task)

    @abstractmethod
    def raw(self, data) -> Raw:
        """The data set's arrays."""


class Labelled(Source):
    """Images or vectors with class labels, made into tensors by a path of their own (pixel bytes normalised only
    for the rows a run keeps)."""

    def load(self, data, device, task: tasks.Task) -> tensors.Data:
        if task.name != "classification":
            raise DataError(f"dataset={self.cfg.name} holds class labels: use task=classification")
        return tensors.from_splits(*self.splits(data), self.cfg, data, device, pixels=self.pixels)

    pixels: ClassVar[bool] = False

    @abstractmethod
    def splits(self, data) -> tuple[tensors.Split, tensors.Split]:
        """(train, test)."""


class IdxImages(Labelled):
    """MNIST-like images in torchvision's layout under data.root, read from their idx files (downloaded where
    missing, by torchvision, where data.download allows)."""

    Config = schemas.ImagesConfig
    folder: ClassVar[str]
    pixels = True

    def shape(self, task: str) -> tuple[tuple, int] | None:
        if task != "classification":
            return None
        return (tuple(self.cfg.image) if self.cfg.image else (28 * 28,)), 10

    def splits(self, data):
        return tensors.idx_split(self.folder, data)


class MNIST(IdxImages):
    name = "mnist"
    folder = "MNIST"


class FashionMNIST(IdxImages):
    name = "fashion_mnist"
    folder = "FashionMNIST"


class Synthetic(Labelled):
    """Gaussian classes, generated (small, for tests)."""

    name = "synthetic"
    Config = schemas.SyntheticConfig

    def shape(self, task: str) -> tuple[tuple, int] | None:
        return ((int(self.cfg.features),), int(self.cfg.classes)) if task == "classification" else None

    def splits(self, data):
        return tensors.synthetic(self.cfg)


class Digits(Arrays):
    """scikit-learn's bundled 8 x 8 digits."""

    name = "digits"
    Config = schemas.HeldOutConfig

    def shape(self, task: str) -> tuple[tuple, int] | None:
        return ((1, 8, 8), 10) if task == "classification" else None

    def raw(self, data) -> Raw:
        return datasets.digits(self.cfg)


class Diabetes(Arrays):
    """scikit-learn's bundled diabetes regression set."""

    name = "diabetes"
    Config = schemas.HeldOutConfig
    task = "regression"

    def raw(self, data) -> Raw:
        return datasets.diabetes(self.cfg)


class Npz(Arrays):
    """A file of arrays x_train, y_train, x_test, y_test (and optionally x_val, y_val)."""

    name = "npz"
    Config = schemas.NpzConfig
    task = None

    def shape(self, task: str) -> tuple[tuple, int] | None:
        return datasets.npz_shape(self.cfg) if task == "classification" else None

    def tokens(self) -> bool:
        dtype = datasets.npz_headers(datasets.npz_file(self.cfg), dtypes=True).get("x_train")
        return dtype is not None and np.issubdtype(dtype, np.signedinteger)

    def raw(self, data) -> Raw:
        return datasets.npz(self.cfg)


class Text(Arrays):
    """A text file as next-token data (adrop.train.data.text)."""

    name = "text"
    Config = schemas.TextConfig
    task = "language_model"

    def shape(self, task: str) -> tuple[tuple, int] | None:
        return text_source.shape(self.cfg)

    def tokens(self) -> bool:
        return True

    def identity(self) -> dict:
        c = self.cfg
        return {"text": {"context": c.context, "level": c.level, "val_size": c.val_size, "test_size": c.test_size}}

    def raw(self, data) -> Raw:
        return text_source.text(self.cfg)


class Torchvision(Arrays):
    """Any torchvision.datasets class by dataset.name, in its own layout under data.root."""

    Config = schemas.TorchvisionConfig

    def shape(self, task: str) -> tuple[tuple, int] | None:
        return datasets.torchvision_shape(self.cfg) if task == "classification" else None

    def raw(self, data) -> Raw:
        return datasets.torchvision_set(self.cfg, data)


class Custom(Arrays):
    """A user's class by dataset._target_ (not a Source): its instance holds the arrays; dataset.options are its
    arguments."""

    task = None

    def identity(self) -> dict:
        return {"dataset_target": self.cfg._target_}

    def raw(self, data) -> Raw:
        return datasets.user(self.cfg)


BY_NAME = {  # a config without `_target_`: made before configs named their class, or a user's YAML of a built-in name
    "mnist": MNIST,
    "fashion_mnist": FashionMNIST,
    "synthetic": Synthetic,
    "digits": Digits,
    "diabetes": Diabetes,
    "npz": Npz,
    "text": Text,
}


def source_class(cfg) -> type:
    """The class a `dataset` config node names: by its `_target_`, else by its name. adrop's own classes must agree
    with dataset.name and dataset.source (dataset=mnist dataset.name=fashion_mnist would otherwise train MNIST under
    Fashion-MNIST's name): choose another data set with dataset=<name>."""
    target = cfg.get("_target_")
    if target:
        cls = importable(str(target))
        if cls is None or not (isinstance(cls, type) and issubclass(cls, Source)):
            return Custom  # a user's class of arrays (one that does not import: Custom says so, in one line)
        if cls.__module__ == __name__:
            agrees = cls.name in (None, cfg.get("name")) and (cfg.get("source") == "torchvision") == (
                cls is Torchvision
            )
            if not agrees:
                raise DataError(
                    f"dataset.name={cfg.get('name')} (source {cfg.get('source') or 'adrop'}) is not what "
                    f"dataset._target_={target} reads: choose the data set with dataset=<name> "
                    "(dataset=torchvision dataset.name=<class> for torchvision's)"
                )
        return cls
    if cfg.get("source") == "torchvision":
        return Torchvision
    if cfg.name == "custom":
        raise DataError("dataset=custom needs dataset._target_=<your dataset class>")
    if cfg.name not in BY_NAME:
        raise DataError(
            f"unknown dataset {cfg.name!r}; valid datasets: diabetes, digits, fashion_mnist, mnist, "
            "npz, synthetic, text, dataset=torchvision dataset.name=<a torchvision.datasets class>, or "
            "a class of yours by dataset._target_"
        )
    return BY_NAME[cfg.name]


def source(cfg) -> Source:
    """The data set a `dataset` config node names, made (source_class)."""
    cls = source_class(cfg)
    try:
        return cls(cfg)
    except DataError:
        raise
    except Exception as err:  # a user's class that cannot be made (an abstract method left, a bad argument)
        raise DataError(f"dataset._target_={cfg.get('_target_')} could not be made: {brief(err)}") from None


def checked(cfg):
    """The `dataset` node as its class's schema (Config) has it: its defaults filled in, its values typed; a key the
    schema does not have, or one it needs and the node leaves unset, is refused in one line (a user's keys go in
    dataset.options, or in a Config of the class's own). A `_target_` that does not import is said first."""
    target = cfg.get("_target_")
    if target:
        imported(str(target))  # a class that does not import: why, before its keys are judged
    base = OmegaConf.structured(source_class(cfg).Config)
    keys = list(base.keys())
    if "options" not in keys and "options" in cfg and not cfg.options:  # dataset=custom's empty options, for a
        cfg = OmegaConf.masked_copy(cfg, [k for k in cfg.keys() if k != "options"])  # class with a Config of its own
    for key in cfg.keys():
        if key not in keys:
            close = difflib.get_close_matches(str(key), keys, n=1, cutoff=0.6)
            hint = f" (did you mean dataset.{close[0]}?)" if close else ""
            raise DataError(
                f"unknown key dataset.{key} for dataset={cfg.get('name')}{hint}; its keys: {', '.join(keys)}"
            )
    try:
        merged = OmegaConf.merge(base, cfg)
    except Exception as err:  # a value of the wrong type
        key = getattr(err, "full_key", None)
        where = f"dataset.{key} of " if key else ""
        raise DataError(f"{where}dataset={cfg.get('name')}: {str(err).splitlines()[0]}") from None
    unset = sorted(OmegaConf.missing_keys(merged))
    if unset:
        raise DataError(
            f"dataset={cfg.get('name')} needs dataset.{unset[0]}=<...> (`adrop train dataset={cfg.get('name')} "
            "--help` shows its keys)"
        )
    return merged


def imported(target: str):
    """The object at a dotted path; a DataError saying why where it does not import (the module or the name missing,
    or the module's own error)."""
    module, _, attribute = target.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attribute)
    except Exception as err:
        raise DataError(f"dataset._target_={target} does not import ({brief(err)})") from None


def importable(target: str):
    """The object at a dotted path, or None where it does not import (quietly: the load says why, once)."""
    try:
        return imported(target)
    except DataError:
        return None


def load(cfg, data, device, task: tasks.Task | None = None) -> tensors.Data:
    """The data a run trains on, checked for its task (classification when none is given)."""
    return source(cfg).load(data, device, task or tasks.get("classification"))


def shape_of(cfg, task: str = "classification") -> tuple[tuple, int] | None:
    """(input shape, outputs) that a dataset config implies without reading its data (a text file's vocabulary is
    read); None where only the data can say."""
    return source(cfg).shape(task)


def fixed_task(cfg) -> str | None:
    """The task a data set's data are for, as its config says; None where only the data can say."""
    return source(cfg).task


def tokens(cfg) -> bool:
    """Whether a dataset config's inputs are token ids, as far as the config says without reading the data."""
    return source(cfg).tokens()
