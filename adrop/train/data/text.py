"""dataset=text: a text file as next-token data for task=language_model.

Its characters (dataset.level=char, UTF-8) or bytes (level=byte) are the tokens, numbered in the order of the
vocabulary: the sorted symbols the file holds. The file is cut by position into train, validation and test parts
(the last val_size + test_size of it, as fractions), and each part into windows of dataset.context + 1 tokens that do
not overlap: x is a window's first context tokens, y the next token of each (x shifted by one).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import torch

from adrop.train.data.datasets import DataError, Raw

LEVELS = ("char", "byte")


def read(dataset) -> tuple[np.ndarray, list]:
    """(token ids of the whole file, vocabulary): DataError where the file is missing, empty or not text."""
    if not dataset.get("path"):
        raise DataError("dataset=text needs dataset.path=<a text file>")
    path = Path(dataset.path).expanduser().absolute()
    level = str(dataset.get("level") or "char")
    if level not in LEVELS:
        raise DataError(f"dataset.level={level}: valid are {', '.join(LEVELS)}")
    try:
        stat = path.stat()
    except OSError as err:
        raise DataError(f"dataset.path={path}: {err.strerror.lower() if err.strerror else err}") from None
    return decoded(path, stat.st_mtime_ns, stat.st_size, level)


@functools.lru_cache(maxsize=1)  # the config's check, the stack probe and the run read one file once
def decoded(path: Path, mtime: int, size: int, level: str) -> tuple[np.ndarray, list]:
    """(token ids, vocabulary) of a file as it is now (its time and size key the cache)."""
    raw = path.read_bytes()
    if not raw:
        raise DataError(f"dataset.path={path} is empty")
    if b"\0" in raw:
        raise DataError(f"dataset.path={path} is not text (it holds NUL bytes at byte {raw.index(0)})")
    if level == "byte":
        codes = np.frombuffer(raw, dtype=np.uint8).astype(np.int64)
        symbols = np.unique(codes)
        return np.searchsorted(symbols, codes), [int(s) for s in symbols]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(
            f"dataset.path={path} is not UTF-8 text (byte {err.start}); dataset.level=byte reads it as bytes"
        ) from None
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    symbols = np.unique(codes)
    return np.searchsorted(symbols, codes), [chr(s) for s in symbols]


def windows(ids: np.ndarray, context: int, part: str, path) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, y) of one part: its windows of context + 1 tokens that do not overlap."""
    n = (len(ids) - 1) // context
    if n < 1:
        raise DataError(
            f"{path}: its {part} part has {len(ids)} tokens, fewer than dataset.context + 1 = "
            f"{context + 1}: a longer text, a smaller context or a larger {part} part"
        )
    x = torch.from_numpy(ids[: n * context].reshape(n, context).copy())
    y = torch.from_numpy(ids[1 : n * context + 1].reshape(n, context).copy())
    return x, y


def text(dataset) -> Raw:
    ids, vocabulary = read(dataset)
    context = int(dataset.get("context") or 0)
    if context < 1:
        raise DataError(f"dataset.context={context}: a window holds at least one token")
    fractions = {"val": float(dataset.val_size), "test": float(dataset.test_size)}
    for part, f in fractions.items():
        if not 0 < f < 1:
            raise DataError(f"dataset.{part}_size={f:g}: dataset=text takes fractions of the file in (0, 1)")
    if fractions["val"] + fractions["test"] >= 1:
        raise DataError("dataset.val_size + dataset.test_size must leave some of the file for training")
    n = len(ids)
    test_start = n - round(fractions["test"] * n)
    val_start = test_start - round(fractions["val"] * n)
    path = Path(dataset.path).expanduser().absolute()
    train = windows(ids[:val_start], context, "train", path)
    val = windows(ids[val_start:test_start], context, "val", path)
    test = windows(ids[test_start:], context, "test", path)
    return Raw(*train, *test, *val, classes=len(vocabulary), task="language_model", vocabulary=vocabulary)


def shape(dataset) -> tuple[tuple, int]:
    """(input shape, vocabulary size), the file read and cut as a run cuts it (DataError where it does not fit)."""
    raw = text(dataset)
    return (raw.x_train.shape[1],), raw.classes
