"""A text corpus every machine with Python has offline: the source of a fixed list of pure-Python standard-library
modules, concatenated in that order. The text depends on the Python version (printed, with the file's sha256), so a
result names both; rebuild it with the same version to get the same bytes:

    python scripts/reproduce/stdlib_corpus.py data/stdlib.txt
    adrop train experiment=gpt_tiny_text dataset.path=data/stdlib.txt
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import sysconfig
from pathlib import Path

MODULES = [
    "argparse.py",
    "difflib.py",
    "textwrap.py",
    "string.py",
    "functools.py",
    "dataclasses.py",
    "enum.py",
    "shutil.py",
    "inspect.py",
    "typing.py",
    "fractions.py",
    "_pydecimal.py",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the text file to write (refused where it exists)")
    args = parser.parse_args()
    lib = Path(sysconfig.get_paths()["stdlib"])
    missing = [m for m in MODULES if not (lib / m).is_file()]
    if missing:
        sys.exit(f"stdlib_corpus: {lib} has no {', '.join(missing)} (this Python's standard library differs)")
    text = "".join((lib / m).read_text(encoding="utf-8") for m in MODULES)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(args.out, "x", encoding="utf-8", newline="") as fh:  # never over another file
            fh.write(text)
    except FileExistsError:
        sys.exit(f"stdlib_corpus: {args.out} exists; it is not replaced (remove it, or use it as it is)")
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(
        f"wrote {args.out}: {len(text):,} characters from {len(MODULES)} modules of Python "
        f"{sys.version.split()[0]}; sha256 {digest}"
    )


if __name__ == "__main__":
    main()
