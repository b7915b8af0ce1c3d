"""Benchmark: what a command costs before it does its work (start-up), against the targets a newcomer expects.

    python scripts/benchmarks/bench_startup.py [--data DIR] [--repeat 3]   (DIR: MNIST's root; default $ADROP_DATA)

Each contender runs as the user runs it, a new process each time (the median of --repeat, after one warm-up so that
the file system's cache is warm), in one run of this script:
  adrop --help          the dispatcher's usage                                      target: under 1 s
  adrop train --help    the training command's help                                 target: under 1 s
  job fixed cost        `adrop train` of 1 epoch on 512 MNIST examples, minus the   target: under 3 s
                        epoch's own seconds (metrics.csv): imports, configuration,
                        data, the run folder's files, evaluation
  adrop export          a finished run's CSR export, checked against its test error target: under 5 s
The help reads the methods' parameters from their sources, without torch (adrop.train.command.help_page).
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGETS = {"adrop --help": 1.0, "adrop train --help": 1.0, "job fixed cost": 3.0, "adrop export": 5.0}


def timed(args: list[str], cwd: Path) -> float:
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "adrop", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t


def job_fixed_cost(data: str, cwd: Path, n: int) -> tuple[float, Path]:
    folder = cwd / f"run{n}"
    total = timed(
        [
            "train",
            "epochs=1",
            "data.train_limit=512",
            f"data.root={data}",
            "data.download=false",
            "device=cpu",
            f"hydra.run.dir={folder}",
        ],
        cwd,
    )
    with open(folder / "metrics.csv") as fh:
        epoch = sum(float(row["seconds"]) for row in csv.DictReader(fh))
    return total - epoch, folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("ADROP_DATA") or str(ROOT / "data"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = str(Path(args.data).resolve())
    cwd = Path(tempfile.mkdtemp(prefix="adrop-startup-"))
    times = {name: [] for name in TARGETS}
    run = None
    for i in range(args.repeat + 1):  # the first round warms the caches up and is not counted
        results = {"adrop --help": timed(["--help"], cwd), "adrop train --help": timed(["train", "--help"], cwd)}
        results["job fixed cost"], run = job_fixed_cost(data, cwd, i)
        results["adrop export"] = timed(["export", str(run), "--out", str(cwd / f"net{i}.npz")], cwd)
        for name, seconds in results.items():
            if i:
                times[name].append(seconds)
    print(
        f"# bench_startup: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"median of {args.repeat} after a warm-up"
    )
    print(f"{'contender':<20}{'seconds':>9}{'target':>8}{'x target':>10}")
    for name, values in times.items():
        s = statistics.median(values)
        print(f"{name:<20}{s:>9.2f}{TARGETS[name]:>8.1f}{s / TARGETS[name]:>10.2f}")


if __name__ == "__main__":
    main()
