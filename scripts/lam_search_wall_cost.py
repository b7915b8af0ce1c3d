"""A lam search's wall time in single runs' wall time, at any length, from its table and a benchmark's epoch ratio.

    python scripts/lam_search_wall_cost.py --bench BENCH.csv [--bench BENCH2.csv ...] [--workers 2] TABLE [TABLE ...]

TABLE is a search table (search.csv) or a folder of them (search*.csv, a run once); BENCH.csv is
scripts/bench_lam_search.py's output, whose epoch_ratio per method is a search's full run's median epoch (one
thread, beside the other worker's run) over a single run's (the basic launcher, every core), measured side by side.
The machine's speed drifts over minutes, so one benchmark's ratio is noisy: with several, the cost is printed as the
range their ratios give.

A search's rounds run one after another, and within a round the stacked launcher's workers (one per core, stacks of
one run, as for every method that searches) share the round's runs, which all train the same epochs. So the search
takes about its busiest workers' epochs, the sum over rounds of ceil(runs / workers) x the round's epochs, at the
paired epoch's seconds, where a single run takes its epochs at the single run's: the search costs
    path / full epochs x epoch_ratio
single runs. An epoch costs the same at any lam and lr and in a short run as in a full one (the same network and
batches), and process start-up, left out, is a few seconds against minutes of a 200-epoch run. A run a later command
into the folder trained again (a replayed round) is counted once, as the table has it.
"""
from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from pathlib import Path

from hydra_plugins.adrop_plugins.search_table import read_search_tables


def read_table(path: Path) -> list[dict]:
    if path.is_dir():
        return read_search_tables(path)
    with open(path, newline="", encoding="utf-8") as fh:
        return list({r["folder"]: r for r in csv.DictReader(fh)}.values())


def worker_path(rows: list[dict], workers: int) -> dict[int, int]:
    """Per round, the busiest worker's epochs: ceil(runs / workers) x the round's epochs."""
    rounds: dict[int, list[int]] = {}
    for r in rows:
        rounds.setdefault(int(r["round"]), []).append(int(r["epochs"]))
    path = {}
    for number, epochs in sorted(rounds.items()):
        if len(set(epochs)) > 1:
            raise ValueError(f"round {number} trains runs of different lengths ({sorted(set(epochs))})")
        path[number] = math.ceil(len(epochs) / workers) * epochs[0]
    return path


def method_of(rows: list[dict]) -> str:
    combinations = {r["combination"] for r in rows}
    if len(combinations) > 1:
        raise ValueError(f"a table of {len(combinations)} combinations (give one per table)")
    found = re.search(r"(?:^| )method=(\S+)", combinations.pop())
    if not found:
        raise ValueError("the combination names no method")
    return found.group(1)


def wall_cost(rows: list[dict], epoch_ratio: float, workers: int) -> dict:
    path = worker_path(rows, workers)
    full = max(int(r["epochs"]) for r in rows)
    return {"method": method_of(rows), "rounds": len(path), "runs": len(rows),
            "short_runs": sum(int(r["epochs"]) < full for r in rows), "path_epochs": sum(path.values()),
            "full_epochs": full, "epoch_ratio": epoch_ratio,
            "single_runs": round(sum(path.values()) / full * epoch_ratio, 2)}


def span(values: list[float], digits: int = 2) -> str:
    low, high = min(values), max(values)
    return f"{low:.{digits}f}" if round(low, digits) == round(high, digits) else f"{low:.{digits}f}-{high:.{digits}f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tables", nargs="+", type=Path)
    parser.add_argument("--bench", type=Path, action="append", required=True,
                        help="scripts/bench_lam_search.py's CSV (repeat for several)")
    parser.add_argument("--workers", type=int, default=2, help="the search's workers (default: 2, one per core)")
    args = parser.parse_args(argv)
    try:
        ratios: dict[str, list[float]] = {}
        for bench in args.bench:
            with open(bench, newline="") as fh:
                for r in csv.DictReader(fh):
                    if r.get("epoch_ratio"):
                        ratios.setdefault(r["method"], []).append(float(r["epoch_ratio"]))
        costs = []
        for table in args.tables:
            rows = read_table(table)
            if not rows:
                raise ValueError(f"{table}: no search table there")
            method = method_of(rows)
            if method not in ratios:
                raise ValueError(f"no benchmark table has an epoch_ratio for {method}")
            costs.append([wall_cost(rows, ratio, args.workers) | {"table": str(table)} for ratio in ratios[method]])
    except (OSError, KeyError, ValueError) as error:
        print(f"lam_search_wall_cost: {error}", file=sys.stderr)
        return 2
    print("| method | rounds | runs (short) | busiest worker's epochs | epoch ratio | single runs' wall time | table |")
    print("|---|---|---|---|---|---|---|")
    for each in costs:
        c = each[0]
        print(f"| {c['method']} | {c['rounds']} | {c['runs']} ({c['short_runs']}) | {c['path_epochs']} "
              f"({c['path_epochs'] / c['full_epochs']:.2f} full runs) | {span([e['epoch_ratio'] for e in each])} "
              f"| {span([e['single_runs'] for e in each])} | {c['table']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
