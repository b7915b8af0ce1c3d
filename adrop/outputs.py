"""Where commands write, without ever overwriting an earlier run's files."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path


def new_folder(kind: str, root: str | Path = "outputs") -> Path:
    """A fresh folder outputs/<kind>/<date>_<time>[_n] (created; a suffix if the second is already taken)."""
    stamp = _dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    base = Path(root) / kind / stamp
    path, n = base, 1
    while True:
        try:
            path.mkdir(parents=True, exist_ok=False)
            return path
        except FileExistsError:
            path, n = base.with_name(f"{stamp}_{n}"), n + 1


def claim(folder: str | Path, names: list[str]) -> Path:
    """Create `folder` if needed and check that none of `names` exists in it yet (FileExistsError otherwise)."""
    folder = Path(folder)
    taken = [name for name in names if (folder / name).exists()]
    if taken:
        raise FileExistsError(
            f"{folder} already holds {', '.join(taken)}; adrop never overwrites earlier outputs, choose another --out"
        )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def create_new(folder: str | Path, name: str):
    """Open `folder/name` for writing text, created exclusively (open's "x"): if it exists, whether an earlier
    command's or one running beside this one, the first of stem.2.suffix, stem.3.suffix, ... that does not.
    Returns (path, file)."""
    folder = Path(folder)
    stem, dot, suffix = name.partition(".")
    n = 1
    while True:
        path = folder / (name if n == 1 else f"{stem}.{n}{dot}{suffix}")
        try:
            return path, open(path, "x", newline="", encoding="utf-8")
        except FileExistsError:
            n += 1
