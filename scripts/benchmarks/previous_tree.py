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


def engine_api():
    """(register, resolve, Engine, denormals_flushed) of the adrop on the path: this checkout's, or an earlier commit's
    from the one engine on (before adrop/train/ was sorted into rooms, the same four lived at adrop/train/'s top;
    before the plugins stored their own configs, the schema's register was all a composition needed)."""
    try:
        from adrop.train.config.settings import resolve
        from adrop.train.loop.engine import Engine

        try:
            from adrop.train.command.registry import register
        except ImportError:
            from adrop.train.config.schema import register  # type: ignore[no-redef]
    except ImportError:
        from adrop.train.engine import Engine  # type: ignore[no-redef]
        from adrop.train.schema import register  # type: ignore[no-redef]
        from adrop.train.settings import resolve  # type: ignore[no-redef]
    from adrop.train.runtime import denormals_flushed

    return register, resolve, Engine, denormals_flushed
