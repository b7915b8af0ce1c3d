"""Do two sweeps of the same configurations land in the same place? Now `adrop report --compare OLD NEW`
(adrop.report.compare); this script stays for the commands the result pages show.

    python scripts/compare_sweeps.py OLD_SWEEP NEW_SWEEP [--out comparison.csv]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adrop.report.compare import compare, completed, printed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    table = compare(completed(args.old), completed(args.new))
    if table.empty:
        print("compare_sweeps: no method has completed runs in both sweeps", file=sys.stderr)
        return 2
    print(printed(table))
    if args.out:
        table.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
