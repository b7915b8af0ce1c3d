"""A lam search's wall time in single runs' wall time, at any length, from its table and a benchmark's epoch ratio.

    python scripts/reproduce/lam_search_wall_cost.py --bench BENCH.csv [--bench BENCH2.csv ...] [--workers 2]
        TABLE [TABLE ...]

TABLE is a search table (search.csv) or a sweep folder holding them (search.csv, search.2.csv, ...: each run counted
once, in the command that first trained it); BENCH.csv is scripts/benchmarks/bench_lam_search.py's output, whose
epoch_ratio per method is a search's full run's mean epoch (one thread, beside the other worker's run) over a single
run's (the basic launcher, every core), measured one after the other. The machine's speed drifts over minutes, so one
benchmark's ratio is noisy: with several, the cost is printed as the range their ratios give.

A search's rounds run one after another, and within a round the stacked launcher's workers (one per core, stacks of
one run, as for every method that searches) share the round's runs, which all train the same epochs. So the search
takes about its busiest worker's epochs, the sum over rounds of ceil(runs / workers) x the round's epochs, at the
paired epoch's seconds, where a single run takes its epochs at the single run's: the search costs
    busiest worker's epochs / full epochs x epoch_ratio
single runs. An epoch costs the same at any lam and lr and in a short run as in a full one (the same network and
batches); process start-up and compilation are left out. A run refused (its folder held another run) trained nothing
and is not counted; a failed run is counted in full, which overstates it. The full epochs are the combination's
`epochs=` (the longest run in the table where it names none).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from pathlib import Path

from hydra_plugins.adrop_plugins.search_table import SEARCH_CSV, read_search_tables

NEEDED = {"combination", "round", "epochs", "status", "folder"}


def read_table(path: Path) -> list[dict]:
    """The table's runs that trained, each once (for a folder, search_table's reading: a run in the command that first
    trained it)."""
    if path.is_dir():
        rows = read_search_tables(path)
        if not rows:
            raise ValueError(f"no {SEARCH_CSV} there")
        columns = set(rows[0])
    else:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            columns = set(reader.fieldnames or [])
            rows = list(reader)
    missing = NEEDED - columns
    if missing:
        raise ValueError(f"not a search table (no {', '.join(sorted(missing))} column)")
    # refused runs trained nothing; round 0's were reused from another search (hydra.sweeper.reuse), trained there
    return [r for r in {r["folder"]: r for r in rows}.values() if r["status"] != "refused" and str(r["round"]) != "0"]


def busiest_worker_epochs(rows: list[dict], workers: int) -> dict[tuple[int, int], int]:
    """Per (command, round), the busiest worker's epochs: ceil(runs / workers) x the round's epochs."""
    rounds: dict[tuple[int, int], list[int]] = {}
    for r in rows:
        rounds.setdefault((int(r.get("command", 0)), int(r["round"])), []).append(int(r["epochs"]))
    busiest = {}
    for key, epochs in sorted(rounds.items()):
        if len(set(epochs)) > 1:
            raise ValueError(f"round {key[1]} trains runs of different lengths ({sorted(set(epochs))})")
        busiest[key] = math.ceil(len(epochs) / workers) * epochs[0]
    return busiest


def combination_of(rows: list[dict]) -> str:
    combinations = {r["combination"] for r in rows}
    if len(combinations) != 1:
        raise ValueError(f"a table of {len(combinations)} combinations (give one per table)")
    return combinations.pop()


def setting(combination: str, key: str) -> str | None:
    found = re.search(rf"(?:^| ){re.escape(key)}=(\S+)", combination)
    return found.group(1) if found else None


def wall_cost(rows: list[dict], epoch_ratio: float | None, workers: int) -> dict:
    combination = combination_of(rows)
    busiest = busiest_worker_epochs(rows, workers)
    full = int(setting(combination, "epochs") or max(int(r["epochs"]) for r in rows))
    epochs = sum(busiest.values())
    return {
        "method": setting(combination, "method") or "?",
        "rounds": len({round_ for _, round_ in busiest}),
        "runs": len(rows),
        "short_runs": sum(int(r["epochs"]) < full for r in rows),
        "busiest_epochs": epochs,
        "full_epochs": full,
        "epoch_ratio": epoch_ratio,
        "single_runs": None if epoch_ratio is None else round(epochs / full * epoch_ratio, 2),
    }


def value_range(values: list[float]) -> str:
    if not values:
        return "-"
    low, high = min(values), max(values)
    return f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}-{high:.2f}"


def workers_count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number of workers, at least 1 (not {text})")
    return int(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tables", nargs="+", type=Path)
    parser.add_argument(
        "--bench",
        type=Path,
        action="append",
        required=True,
        help="scripts/benchmarks/bench_lam_search.py's CSV (repeat for several)",
    )
    parser.add_argument("--workers", type=workers_count, default=2, help="the search's workers (default: 2)")
    args = parser.parse_args(argv)
    ratios: dict[str, list[float]] = {}
    lines = []
    try:
        for bench in args.bench:
            with open(bench, newline="") as fh:
                for r in csv.DictReader(fh):
                    if r.get("epoch_ratio"):
                        ratios.setdefault(r["method"], []).append(float(r["epoch_ratio"]))
        for table in args.tables:
            try:
                rows = read_table(table)
                if not rows:
                    raise ValueError("no run that trained")
                method = setting(combination_of(rows), "method")
                costs = [wall_cost(rows, ratio, args.workers) for ratio in ratios.get(method, [None])]
            except (KeyError, ValueError) as error:  # a missing field, a blank number
                raise ValueError(f"{table}: {error}") from None
            c = costs[0]
            lines.append(
                f"| {c['method']} | {c['rounds']} | {c['runs']} ({c['short_runs']}) | {c['busiest_epochs']} "
                f"({c['busiest_epochs'] / c['full_epochs']:.2f} full runs) "
                f"| {value_range([e['epoch_ratio'] for e in costs if e['epoch_ratio'] is not None])} "
                f"| {value_range([e['single_runs'] for e in costs if e['single_runs'] is not None])} "
                f"| {table} |"
            )
    except (OSError, ValueError) as error:
        print(f"lam_search_wall_cost: {error}", file=sys.stderr)
        return 2
    print("| method | rounds | runs (short) | busiest worker's epochs | epoch ratio | single runs' wall time | table |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
