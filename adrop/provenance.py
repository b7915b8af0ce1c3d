"""Which code made a result: the git commit of the adrop checkout (with '+dirty' for uncommitted changes), or the
installed version when adrop is not a checkout. Recorded in every run's summary.json."""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path

from adrop import __version__


@lru_cache(maxsize=1)
def code_version() -> str:
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return f"adrop {__version__}"
