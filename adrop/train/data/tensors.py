"""Datasets as tensors on the training device: no per-step Python data pipeline.

mnist and fashion_mnist: the 60k training images split into train / validation at random (split_seed), the 10k
test set kept for the final test error, x = (pixel/255 - mean) / std, flattened. synthetic: Gaussian classes,
generated (small, for tests). torchvision downloads missing files when it can; when it cannot, the error says which
files are missing where and how to provide them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from adrop.train import tasks
from adrop.train.data import datasets
from adrop.train.data.datasets import DataError
from adrop.train.errors import cannot_download


@dataclass
class Split:
    x: torch.Tensor
    y: torch.Tensor

    def __len__(self):
        return self.y.shape[0]


@dataclass
class Data:
    train: Split
    val: Split
    test: Split
    in_features: int
    classes: int  # the network's outputs per example (classes, targets) or per token (the vocabulary)
    image: tuple | None = None  # (channels, height, width) of image rows; None: flat vectors
    augment: str = "none"  # crop_flip: 4-pixel-padded crops and left-right flips of each training batch; shift
    mean: list | None = None  # the normalisation x = (x - mean) / std the inputs went through (one number, or one per
    std: list | None = None  # channel or feature): summary.json records it, so a user can feed the network alike
    classes_from: str = "the dataset"  # where `classes` came from: the dataset, dataset.classes, or y_train's labels
    notes: tuple = ()  # what the run's opening lines say of the data (a class with few training examples)
    targets: dict | None = None  # regression: the targets' normalisation (the training split's mean and std)
    vocabulary: list | None = None  # text: the symbol of each token id


IDX_FILES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]


def from_splits(full: Split, test: Split, dataset, data, device, pixels: bool) -> Data:
    """Labelled data given as (train, test) splits: a validation part of val_size at random (split_seed) taken from
    the training split, data.train_limit of the rest; `pixels`: rows of pixel bytes, normalised with dataset.mean
    and std only for the rows a run keeps."""
    val_idx, train_idx = validation_split(len(full), dataset)
    if data.train_limit is not None:
        if data.train_limit < 1:
            raise DataError(f"data.train_limit must be >= 1 or null, got {data.train_limit}")
        train_idx = train_idx[: data.train_limit]

    def put(split, rows=None):
        if pixels:
            split = pixel_rows(split, rows, dataset)
        elif rows is not None:
            split = Split(split.x[rows], split.y[rows])
        return Split(split.x.to(device), split.y.to(device))

    image = tuple(dataset.image) if dataset.get("image") else None
    if image and math.prod(image) != full.x.shape[1]:
        raise DataError(f"dataset.image={list(image)} does not hold the {full.x.shape[1]} features of {dataset.name}")
    return Data(
        put(full, train_idx),
        put(full, val_idx),
        put(test),
        full.x.shape[1],
        int(full.y.max()) + 1,
        image,
        augmentation(dataset, image),
        *(([float(dataset.mean)], [float(dataset.std)]) if pixels else ()),
    )


def validation_count(val_size, n: int) -> int:
    """How many of n training examples dataset.val_size takes: a fraction of them (0 < val_size < 1, rounded, at
    least one) or a count; DataError naming the data's size where that leaves no training example."""
    fraction = 0 < val_size < 1
    count = max(1, round(val_size * n)) if fraction else val_size
    if not (fraction or float(val_size).is_integer()) or not 0 < count < n:
        raise DataError(
            f"dataset.val_size={val_size:g} does not fit the data's {n} training examples: give a "
            f"fraction in (0, 1) (0.1: a tenth of them) or a count from 1 to {n - 1}"
        )
    return int(count)


def validation_split(n: int, dataset) -> tuple[torch.Tensor, torch.Tensor]:
    """(validation indices, training indices) of n training examples: val_size of them at random (split_seed)."""
    count = validation_count(dataset.val_size, n)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(dataset.split_seed))
    return order[:count], order[count:]


def from_raw(raw: datasets.Raw, dataset, data, device, task: tasks.Task | None = None) -> Data:
    """A source's arrays checked (targets as the task wants them, finite inputs), split (a validation part of
    val_size at random, unless the source has one), normalised (dataset.mean and std, per channel or one for all;
    null: the source's usual values, else computed on the training split, per channel for images and per feature for
    vectors), flattened to rows, on the device. Integer inputs (token ids) are not normalised."""
    task = task or tasks.get("classification")
    parts = {"train": (raw.x_train, raw.y_train), "test": (raw.x_test, raw.y_test)}
    if raw.x_val is not None:
        parts["val"] = (raw.x_val, raw.y_val)
    where = f"{dataset.name}" + (f" ({dataset.path})" if dataset.get("path") else "")
    for split, (x, y) in parts.items():
        if len(y) == 0:
            raise DataError(f"{where}: the {split} split is empty")
    known = raw.classes or int(dataset.get("classes") or 0)
    try:
        classes = task.targets({split: y for split, (_, y) in parts.items()}, where, known or None, raw.task)
    except tasks.TargetsError as err:
        raise DataError(str(err)) from None
    source = (
        "the dataset"
        if raw.classes
        else "dataset.classes"
        if known
        else "y_train's labels"
        if task.name == "classification"
        else "the targets"
    )
    for split, (x, y) in parts.items():
        if x.is_floating_point() and not bool(torch.isfinite(x).all()):
            raise DataError(f"{where}: x_{split} holds NaN or infinite values")
    x_train, y_train = parts["train"]
    if "val" not in parts:
        val_idx, train_idx = validation_split(len(y_train), dataset)
        parts["val"] = (x_train[val_idx], y_train[val_idx])
        x_train, y_train = x_train[train_idx], y_train[train_idx]
    tokens = not x_train.is_floating_point()
    if tokens and dataset.mean is not None:
        raise DataError(
            f"{where}: x_train holds integers (token ids), which are not normalised: drop dataset.mean and dataset.std"
        )
    if tokens and task.name == "language_model":
        for split, (x, _) in [("train", (x_train, None)), *((k, v) for k, v in parts.items() if k != "train")]:
            if bool(((x < 0) | (x >= classes)).any()):
                raise DataError(
                    f"{where}: x_{split} holds a token id outside the vocabulary [0, {classes}) the "
                    f"targets hold: set dataset.classes to the vocabulary's size"
                )
    task.fit(y_train)  # a regression's targets standardised with the training split's mean and std
    mean, std = (torch.tensor(0), torch.tensor(1)) if tokens else normalisation(dataset, x_train)
    if data.train_limit is not None:
        x_train, y_train = x_train[: data.train_limit], y_train[: data.train_limit]
    image = tuple(x_train.shape[1:]) if x_train.dim() == 4 else None
    kind = augmentation(dataset, image)

    def put(x, y):
        return Split((x if tokens else (x - mean) / std).flatten(1).contiguous().to(device), task.prepare(y).to(device))

    return Data(
        put(x_train, y_train),
        put(*parts["val"]),
        put(*parts["test"]),
        math.prod(x_train.shape[1:]),
        classes,
        image,
        kind,
        None if tokens else mean.flatten().tolist(),
        None if tokens else std.flatten().tolist(),
        source,
        task.notes(y_train, classes),
        task.normalisation() if hasattr(task, "normalisation") else None,
        raw.vocabulary,
    )


def normalisation(dataset, x_train: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, std) broadcasting against the inputs: given (one number, or one per channel), the source's usual
    values, or computed on the training split."""
    axes = (0, 2, 3) if x_train.dim() == 4 else (0,)
    shape = (1, -1, 1, 1) if x_train.dim() == 4 else (1, -1)
    known = datasets.KNOWN.get(str(dataset.name)) if dataset.get("source") == "torchvision" else None
    if (dataset.mean is None) != (dataset.std is None):
        raise DataError("dataset.mean and dataset.std go together: give both, or neither (then they are computed)")
    if dataset.mean is not None:
        mean, std = (
            torch.tensor(v if isinstance(v, (int, float)) else list(v), dtype=torch.float32)
            for v in (dataset.mean, dataset.std)
        )
    elif known is not None:
        mean, std = torch.tensor(known[2]), torch.tensor(known[3])
    else:
        mean, std = x_train.mean(axes), x_train.std(axes)
        std = torch.where(std > 0, std, torch.ones_like(std))
    if mean.dim() == 0:
        return mean, std
    channels = x_train.shape[1]
    if mean.numel() != channels or std.numel() != channels:
        raise DataError(
            f"dataset.mean and dataset.std must be one number or {channels} (one per "
            f"{'channel' if x_train.dim() == 4 else 'feature'}), got {mean.numel()} and {std.numel()}"
        )
    return mean.view(shape), std.view(shape)


AUGMENTATIONS = ("none", "crop_flip", "shift")
PADS = {"crop_flip": 4, "shift": 2}


def augmentation(dataset, image) -> str:
    """dataset.augment, checked: one of AUGMENTATIONS, and none but "none" for data that are not images."""
    kind = str(dataset.get("augment") or "none")
    if kind not in AUGMENTATIONS or (kind != "none" and image is None):
        raise DataError(f"dataset.augment={kind}: valid are {', '.join(AUGMENTATIONS)} (all but none for images only)")
    return kind


def augment(x: torch.Tensor, image, kind: str, fill=None) -> torch.Tensor:
    """A training batch (..., C * H * W rows) augmented on its device: crop_flip pads each image by 4 pixels of
    `fill` (per channel: a black pixel after normalisation, -mean / std; zeros when not given), takes a random crop
    of its size, and flips it left-right with probability 1/2 (the CIFAR recipe); shift pads by 2 and crops, with no
    flip (digits: a random translation of up to 2 pixels each way)."""
    if kind == "none":
        return x
    lead = x.shape[:-1]
    c, h, w = image
    imgs = x.reshape(-1, c, h, w)
    n, pad = imgs.shape[0], PADS[kind]
    padded = imgs.new_zeros(n, c, h + 2 * pad, w + 2 * pad)
    if fill is not None:
        padded += fill.view(1, -1, 1, 1)
    padded[:, :, pad:-pad, pad:-pad] = imgs
    dy = torch.randint(0, 2 * pad + 1, (n, 1), device=x.device)
    dx = torch.randint(0, 2 * pad + 1, (n, 1), device=x.device)
    rows = (dy + torch.arange(h, device=x.device)).view(n, 1, h, 1)
    cols = (dx + torch.arange(w, device=x.device)).view(n, 1, 1, w)
    out = padded[
        torch.arange(n, device=x.device).view(n, 1, 1, 1), torch.arange(c, device=x.device).view(1, c, 1, 1), rows, cols
    ]
    if kind == "crop_flip":
        flip = torch.rand(n, device=x.device) < 0.5
        out = torch.where(flip.view(n, 1, 1, 1), out.flip(-1), out)
    return out.reshape(*lead, c * h * w)


def idx_split(folder: str, data):
    """(train, test) of MNIST or Fashion-MNIST (`folder`, also torchvision's class) from torchvision's layout,
    `data.root/<folder>/raw/` (torchvision downloads what is missing, where asked to), as rows of pixel bytes and byte
    labels (pixel_rows makes inputs)."""
    names = IDX_FILES
    raw = Path(data.root) / folder / "raw"
    missing = [name for name in names if not (raw / name).exists()]
    if missing and data.download:
        import torchvision

        cls = getattr(torchvision.datasets, folder)
        try:
            cls(data.root, train=True, download=True)
            cls(data.root, train=False, download=True)
        except Exception as err:  # no network, a proxy, a mirror down: say what is missing and how to fix it
            raise DataError(cannot_download(folder, data.root, missing, len(names), err)) from None
        missing = [name for name in names if not (raw / name).exists()]
    if missing:
        raise DataError(_missing_message(raw, missing, "downloads are off (data.download=false)"))
    files = tuple((raw / name).resolve() for name in names)
    key = (folder, files, tuple(p.stat().st_mtime_ns for p in files))
    if key not in _DECODED:  # a sweep's jobs in one process (the basic launcher) read the files once
        _DECODED.clear()  # one data set at a time, as stored: 55 MB of bytes for MNIST
        arrays = [read_idx(path) for path in files]
        _DECODED[key] = [(arrays[0], arrays[1]), (arrays[2], arrays[3])]  # (images, labels) of train, then test
    return [Split(pixels.reshape(len(pixels), -1), labels) for pixels, labels in _DECODED[key]]  # bytes: load()
    #         normalises only the rows a run keeps (pixel_rows), not all 70,000 of them


def pixel_rows(split: Split, rows, dataset) -> Split:
    """Rows of a split of pixel bytes as the run's own float inputs, normalised: (x / 255 - mean) / std."""
    x, y = (split.x, split.y) if rows is None else (split.x[rows], split.y[rows])
    return Split(x.float().div_(255.0).sub_(dataset.mean).div_(dataset.std), y.long())  # copies: the cache's stay


_DECODED: dict = {}  # the last data set read, by its files (and their times)


def read_idx(path: Path) -> torch.Tensor:
    """An idx file of unsigned bytes (MNIST's format: magic 0 0 8 dims, then each dimension as a big-endian int32,
    then the bytes), as a uint8 tensor of its shape; DataError naming the file when it is not as long as its header
    says (torchvision would fail with a reshape error that names no file). Read here rather than through
    torchvision's dataset classes: the same bytes, 0.045 s, where importing torchvision alone took 1.5 s a process."""
    data = path.read_bytes()
    dims = data[3] if len(data) >= 4 and data[:3] == b"\0\0\x08" else None
    shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims)] if dims is not None else []
    expected = 4 + 4 * dims + math.prod(shape) if dims is not None and len(data) >= 4 + 4 * dims else None
    if expected != len(data):
        promise = f"its header promises {expected}" if expected is not None else "no idx header of unsigned bytes"
        raise DataError(
            f"{path.resolve()} is truncated or corrupt ({len(data)} bytes, {promise}): replace it, or "
            "delete it and let torchvision download it again"
        )
    return torch.from_numpy(np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape).copy())


def _missing_message(raw: Path, missing, why: str) -> str:
    gz = [name for name in missing if (raw / f"{name}.gz").exists()]
    if gz:  # torchvision unpacks what it downloaded; an archive it could not unpack is left there
        why += (
            f" ({', '.join(n + '.gz' for n in gz)} {'is' if len(gz) == 1 else 'are'} there but not unpacked: "
            "truncated or corrupt? delete and download again)"
        )
    return (
        f"{len(missing)} data file(s) missing in {raw.resolve()}: {', '.join(missing)}; {why}. Put the "
        f"uncompressed idx files there (the layout torchvision reads), or point data.root (or the ADROP_DATA "
        f"environment variable) at a folder that holds {raw.parent.name}/raw/"
    )


def synthetic(dataset):
    """Gaussian classes in `features` dimensions, means at distance ~separation; n_train + n_test examples."""
    g = torch.Generator().manual_seed(dataset.split_seed)
    means = torch.randn(dataset.classes, dataset.features, generator=g) * dataset.separation / 2
    out = []
    for n in (dataset.n_train, dataset.n_test):
        y = torch.randint(dataset.classes, (n,), generator=g)
        x = means[y] + torch.randn(n, dataset.features, generator=g)
        out.append(Split(x, y))
    return out
