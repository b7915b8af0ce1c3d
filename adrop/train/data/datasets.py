"""A user's data and the standard image sets, as raw arrays: adrop.train.data.tensors splits, normalises and checks
them.

    dataset=digits         scikit-learn's bundled 8 x 8 digits (1,797 images, offline): a test part (test_size, at
                           random, split_seed) is held out
    dataset=npz            a file of arrays x_train, y_train, x_test, y_test (and optionally x_val, y_val): images
                           N x C x H x W (or N x H x W, one channel) or flat N x D, integer labels
    dataset=torchvision    any torchvision.datasets class by name (CIFAR10, CIFAR100, SVHN, KMNIST, FakeData, ...),
                           in its own layout under data.root, downloaded by torchvision where asked and possible
    dataset=diabetes       scikit-learn's bundled diabetes regression set (442 patients, 10 features, offline)
    dataset=text           a text file as next-token data: characters (or bytes) as token ids, windows of
                           dataset.context tokens, the train / validation / test parts by position
    dataset._target_=...   a user's class: its instance holds x_train, y_train, x_test, y_test (optionally x_val,
                           y_val, classes), arrays or tensors; dataset.options go to its constructor

Each source gives a `Raw`: float32 inputs (unsigned bytes scaled to [0, 1]) or int64 token ids, the targets (labels,
real numbers or next tokens: the run's task checks them), the number of classes (or the vocabulary's size) where the
source knows it, and the task its data are for where that is fixed (diabetes: regression; text: language_model).
"""

from __future__ import annotations

import inspect
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from adrop.train.errors import brief, cannot_download, unreachable

# torchvision classes' input shape, classes and usual normalisation (per-channel mean and std of the training set)
KNOWN = {
    "CIFAR10": ((3, 32, 32), 10, (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "CIFAR100": ((3, 32, 32), 100, (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
    "SVHN": ((3, 32, 32), 10, (0.4377, 0.4438, 0.4728), (0.1980, 0.2010, 0.1970)),
    "MNIST": ((1, 28, 28), 10, (0.1307,), (0.3081,)),
    "FashionMNIST": ((1, 28, 28), 10, (0.2860,), (0.3530,)),
    "KMNIST": ((1, 28, 28), 10, (0.1918,), (0.3483,)),
}
NPZ_ARRAYS = ("x_train", "y_train", "x_test", "y_test")


class DataError(Exception):
    """Data that cannot be loaded; the message says what to do."""


@dataclass
class Raw:
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    x_val: torch.Tensor | None = None
    y_val: torch.Tensor | None = None
    classes: int | None = None
    task: str | None = None  # the task these data are for, where the source fixes it
    vocabulary: list | None = None  # the symbols of token ids 0, 1, ... (text)


def as_inputs(x: np.ndarray, where: str) -> torch.Tensor:
    """float32 inputs; unsigned bytes (pixels) scaled to [0, 1]; N x H x W images given one channel; signed integers
    (token ids, N x T) as int64, as they are."""
    if x.dtype == np.uint8:
        out = torch.from_numpy(np.ascontiguousarray(x)).float().div_(255.0)
    elif np.issubdtype(x.dtype, np.signedinteger):
        out = torch.from_numpy(np.ascontiguousarray(x, dtype=np.int64))
        if out.dim() != 2:
            raise DataError(f"{where} holds integers of shape {list(x.shape)}; integer inputs (token ids) are N x T")
        return out
    elif np.issubdtype(x.dtype, np.number) and not np.issubdtype(x.dtype, np.complexfloating):
        out = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    else:
        raise DataError(f"{where} holds {x.dtype} values; inputs must be numbers")
    if out.dim() == 3:
        out = out.unsqueeze(1)
    if out.dim() not in (2, 4):
        raise DataError(f"{where} has shape {list(x.shape)}; inputs are N x D vectors or N x C x H x W images")
    return out


def as_targets(y, where: str) -> torch.Tensor:
    """Targets as they are: integers as int64, real numbers as float32 (the run's task checks their shape and
    values: adrop.train.tasks)."""
    y = y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
    if np.issubdtype(y.dtype, np.integer) or y.dtype == np.bool_:
        return torch.from_numpy(y.astype(np.int64))
    if np.issubdtype(y.dtype, np.floating):
        return torch.from_numpy(np.ascontiguousarray(y, dtype=np.float32))
    raise DataError(f"{where} holds {y.dtype} values; targets must be numbers")


def as_labels(y: np.ndarray, where: str) -> torch.Tensor:
    y = np.asarray(y)
    if y.ndim != 1:
        raise DataError(f"{where} has shape {list(y.shape)}; labels are one integer per example")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.issubdtype(y.dtype, np.floating) or not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise DataError(f"{where} holds {y.dtype} values that are not whole numbers; labels are integers")
    return torch.from_numpy(y.astype(np.int64))


def digits(dataset) -> Raw:
    """scikit-learn's 8 x 8 digits (pixels 0..16), a test part of test_size held out at random (split_seed)."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = torch.from_numpy(bunch.images.astype(np.float32) / 16.0).unsqueeze(1)
    y = torch.from_numpy(bunch.target.astype(np.int64))
    n, test = len(y), held_out(dataset.test_size, len(y), "digits")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(dataset.split_seed + 1))
    return Raw(x[order[test:]], y[order[test:]], x[order[:test]], y[order[:test]], classes=10)


def npz_file(dataset) -> Path:
    if not dataset.path:
        raise DataError("dataset=npz needs dataset.path=<a .npz file with x_train, y_train, x_test, y_test>")
    path = Path(dataset.path).expanduser().absolute()
    if not path.is_file():
        raise DataError(f"dataset.path={path}: no such file")
    return path


def npz_headers(path: Path, dtypes: bool = False) -> dict:
    """{array: shape} (with dtypes, {array: dtype}) of a .npz file, from the arrays' headers alone (nothing
    decompressed but the headers)."""
    shapes = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with archive.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    read = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = read(f)
                shapes[info.filename[:-4]] = dtype if dtypes else shape
    except (OSError, zipfile.BadZipFile, ValueError) as err:
        raise DataError(f"{path} is not a readable .npz file ({brief(err)})") from None
    return shapes


def npz_shape(dataset) -> tuple[tuple, int] | None:
    """(input shape, classes) of a .npz file: the shape from x_train's header, the classes from the labels (or
    dataset.classes)."""
    path = npz_file(dataset)
    shapes = npz_headers(path)
    missing = [a for a in NPZ_ARRAYS if a not in shapes]
    if missing:
        raise DataError(
            f"{path} has no {', '.join(missing)} (it holds {', '.join(sorted(shapes)) or 'nothing'}); "
            f"dataset=npz needs {', '.join(NPZ_ARRAYS)}, optionally x_val and y_val"
        )
    shape = tuple(shapes["x_train"][1:])
    shape = (1, *shape) if len(shape) == 2 else shape
    if dataset.classes:
        return shape, int(dataset.classes)
    try:
        with np.load(path, allow_pickle=False) as arrays:
            labels = [as_labels(arrays[k], f"{path}: {k}") for k in ("y_train", "y_test", "y_val") if k in arrays.files]
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise DataError(f"{path} could not be read ({brief(err)})") from None
    if not any(len(y) for y in labels):
        raise DataError(f"{path}: its label arrays are empty")
    return shape, 1 + max(int(y.max()) for y in labels if len(y))


def npz(dataset) -> Raw:
    path = npz_file(dataset)
    missing = [a for a in NPZ_ARRAYS if a not in npz_headers(path)]
    if missing:
        npz_shape(dataset)  # says which
    try:
        with np.load(path, allow_pickle=False) as arrays:
            got = {k: arrays[k] for k in arrays.files if k in (*NPZ_ARRAYS, "x_val", "y_val")}
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise DataError(f"{path} could not be read ({brief(err)})") from None
    if ("x_val" in got) != ("y_val" in got):
        raise DataError(f"{path} has {'x_val' if 'x_val' in got else 'y_val'} without its partner")
    parts = {}
    for split in ("train", "val", "test"):
        if f"x_{split}" not in got:
            continue
        x = as_inputs(got[f"x_{split}"], f"{path}: x_{split}")
        y = as_targets(got[f"y_{split}"], f"{path}: y_{split}")
        if len(x) != len(y):
            raise DataError(f"{path}: x_{split} has {len(x)} examples and y_{split} {len(y)}")
        parts[split] = (x, y)
    for split in ("val", "test"):
        if split in parts and parts[split][0].shape[1:] != parts["train"][0].shape[1:]:
            raise DataError(
                f"{path}: x_{split}'s examples are {list(parts[split][0].shape[1:])}, x_train's "
                f"{list(parts['train'][0].shape[1:])}"
            )
    val = parts.get("val", (None, None))
    return Raw(*parts["train"], *parts["test"], *val, classes=int(dataset.classes) if dataset.classes else None)


def torchvision_class(name: str):
    import torchvision

    cls = getattr(torchvision.datasets, str(name), None)
    if not inspect.isclass(cls):
        raise DataError(
            f"torchvision.datasets has no dataset {name!r} (for example CIFAR10, CIFAR100, SVHN, KMNIST, FakeData)"
        )
    return cls


def torchvision_shape(dataset) -> tuple[tuple, int] | None:
    if dataset.name == "FakeData":
        options = dict(dataset.options or {})
        return tuple(options.get("image_size", (3, 224, 224))), int(options.get("num_classes", 10))
    known = KNOWN.get(str(dataset.name))
    return None if known is None else (known[0], known[1])


def torchvision_set(dataset, data) -> Raw:
    """Train and test sets of a torchvision dataset class: `train=`, `split="train"/"test"` or (FakeData) two
    disjoint random offsets, whichever the class takes; dataset.options go to its constructor."""
    cls = torchvision_class(dataset.name)
    takes = inspect.signature(cls).parameters
    if "train" in takes:
        parts = [{"train": True}, {"train": False}]
    elif "split" in takes:
        parts = [{"split": "train"}, {"split": "test"}]
    elif "random_offset" in takes:
        parts = [{"random_offset": 0}, {"random_offset": 10**6}]
    else:
        raise DataError(
            f"torchvision.datasets.{dataset.name} takes neither train= nor split=: adrop cannot tell "
            "its training set from its test set (save it as a .npz and use dataset=npz)"
        )
    options = dict(dataset.options or {})
    if "download" in takes:
        options["download"] = bool(data.download)
    out = []
    for part in parts:
        try:
            if "root" in takes:
                made = cls(root=str(data.root), **part, **options)
            else:
                made = cls(**part, **options)
        except Exception as err:
            if data.download and "root" in takes and unreachable(err):  # offline: where to point instead
                raise DataError(
                    cannot_download(
                        f"torchvision.datasets.{dataset.name}",
                        data.root,
                        holding=(f"{dataset.name}'s files as torchvision stores them"),
                    )
                ) from None
            hint = "" if data.download else " (data.download=false)"
            raise DataError(
                f"torchvision.datasets.{dataset.name} could not be loaded from {Path(data.root).absolute()}"
                f"{hint}: {brief(err)}"
            ) from None
        try:
            out.append(arrays_of(made))
        except DataError:
            raise
        except Exception as err:  # images of different sizes, labels that are not numbers
            raise DataError(
                f"torchvision.datasets.{dataset.name} does not give images of one shape with integer "
                f"labels ({brief(err)}): save it as a .npz and use dataset=npz"
            ) from None
    (x_train, y_train), (x_test, y_test) = out
    known = torchvision_shape(dataset)
    return Raw(x_train, y_train, x_test, y_test, classes=None if known is None else known[1])


def arrays_of(made) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and labels of a torchvision dataset object: its `data` array where it has one (N x H x W x C for
    CIFAR, N x C x H x W for SVHN, N x H x W for the MNIST family), otherwise every example read once as a tensor."""
    labels = getattr(made, "targets", None)
    labels = getattr(made, "labels", None) if labels is None else labels
    data = getattr(made, "data", None)
    if data is not None and labels is not None and len(data) == len(labels):
        x = data.numpy() if isinstance(data, torch.Tensor) else np.asarray(data)
        if x.ndim == 4 and x.shape[-1] in (1, 3) and x.shape[1] not in (1, 3):
            x = x.transpose(0, 3, 1, 2)
        return as_inputs(x, type(made).__name__), as_labels(np.asarray(labels), type(made).__name__)
    from torchvision.transforms.functional import pil_to_tensor

    xs, ys = [], []
    for image, label in made:
        xs.append(pil_to_tensor(image) if not isinstance(image, torch.Tensor) else image)
        ys.append(int(label))
    x = torch.stack(xs)
    return as_inputs(x.numpy(), type(made).__name__), torch.tensor(ys, dtype=torch.int64)


def diabetes(dataset) -> Raw:
    """scikit-learn's diabetes set (442 patients, 10 features, a disease progression score a year on), a test part of
    test_size held out at random (split_seed): regression."""
    from sklearn.datasets import load_diabetes

    bunch = load_diabetes(scaled=False)
    x = torch.from_numpy(bunch.data.astype(np.float32))
    y = torch.from_numpy(bunch.target.astype(np.float32))
    n, test = len(y), held_out(dataset.test_size, len(y), "diabetes")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(dataset.split_seed + 1))
    return Raw(x[order[test:]], y[order[test:]], x[order[:test]], y[order[:test]], task="regression")


def held_out(size, n: int, name: str) -> int:
    """How many of n examples dataset.test_size holds out: a fraction (0 < size < 1) or a count."""
    count = round(size * n) if 0 < size < 1 else size
    if not float(count).is_integer() or not 0 < count < n:
        raise DataError(
            f"dataset.test_size={size:g} does not fit {name}'s {n} examples: give a fraction in (0, 1) or "
            f"a count from 1 to {n - 1}"
        )
    return int(count)


def user(dataset) -> Raw:
    """A user's dataset class (dataset._target_, its arguments in dataset.options): its instance's x_train, y_train,
    x_test, y_test (optionally x_val, y_val; `classes`, `task` and `vocabulary` where it knows them)."""
    from hydra.utils import instantiate

    target = str(dataset._target_)
    try:
        made = instantiate({"_target_": target, **dict(dataset.options or {})})
    except Exception as err:
        raise DataError(f"dataset._target_={target} could not be made ({brief(err)})") from None
    missing = [a for a in NPZ_ARRAYS if getattr(made, a, None) is None]
    if missing:
        raise DataError(
            f"dataset._target_={target} gives no {', '.join(missing)}: a dataset class's instance holds "
            f"{', '.join(NPZ_ARRAYS)} (optionally x_val and y_val)"
        )
    parts = {}
    for split in ("train", "val", "test"):
        x, y = getattr(made, f"x_{split}", None), getattr(made, f"y_{split}", None)
        if x is None and y is None:
            continue
        if x is None or y is None:
            raise DataError(f"dataset._target_={target} gives {'x' if y is None else 'y'}_{split} without its partner")
        x = as_inputs(
            x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x), f"{target}: x_{split}"
        )
        y = as_targets(y, f"{target}: y_{split}")
        if len(x) != len(y):
            raise DataError(f"{target}: x_{split} has {len(x)} examples and y_{split} {len(y)}")
        parts[split] = (x, y)
    val = parts.get("val", (None, None))
    task = getattr(made, "task", None)
    if task not in (None, "classification", "regression", "language_model"):
        raise DataError(
            f"dataset._target_={target}: its task {task!r} is none of classification, regression, language_model"
        )
    classes = getattr(made, "classes", None) or dataset.classes
    return Raw(
        *parts["train"],
        *parts["test"],
        *val,
        classes=int(classes) if classes else None,
        task=getattr(made, "task", None),
        vocabulary=getattr(made, "vocabulary", None),
    )
