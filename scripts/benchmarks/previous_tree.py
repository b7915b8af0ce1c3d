"""An earlier commit's code beside this checkout: the benchmarks' "previous" contenders run in a second process with
PYTHONPATH set to it (env()), so that one run measures both side by side."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def make(rev: str) -> Path:
    """A git worktree of `rev` in a new temporary folder, with conf/ where the installed package has it
    (adrop.conf), so that `import adrop` from it composes its own configs."""
    tree = Path(tempfile.mkdtemp(prefix="adrop-previous-")) / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev], check=True, capture_output=True
    )
    (tree / "adrop" / "conf").symlink_to(tree / "conf")
    return tree


def env(tree: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree)}


def remove(tree: Path) -> None:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False, capture_output=True
    )
    shutil.rmtree(tree.parent, ignore_errors=True)
