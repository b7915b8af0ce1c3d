"""Benchmark: what `hydra/sweeper=lam_search` costs to find lam for a target nonzero fraction, in single runs' time.

    python scripts/benchmarks/bench_lam_search.py [--data DIR] [--epochs 10] [--target 0.02] [--methods a,b]
        [--out bench_lam_search.csv] [-- extra overrides for both contenders]

Per method, side by side in one run of this script, each a new `adrop train` process timed from start to exit:
  single run   `adrop train method=M` at the method's default lam, the basic launcher (what one run costs a user)
  lam_search   `adrop train -m hydra/sweeper=lam_search hydra/launcher=stacked hydra.sweeper.target_nonzero=T
               method=M`, its defaults otherwise (short rounds of a tenth of the epochs, then full ones)
both in `experiment=paper_lenet300` with `epochs=E` on MNIST. Printed per method: both wall times and their ratio
(target: at most 4), the rounds and runs the search took (short ones apart), the nonzero fraction of the full run
closest to the target and whether it is within the tolerance (5%, relative), which the search's exit code says.
Also per method: the mean seconds of an epoch after the first (whose compilation and warm-up belong to start-up) of
the single run and of the search's full runs (one thread each, side by side), and their ratio, which
scripts/reproduce/lam_search_wall_cost.py scales to longer searches.
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

from hydra_plugins.adrop_plugins.search_table import SEARCH_CSV

ROOT = Path(__file__).resolve().parents[2]
METHODS = (
    "logsum",
    "eta_trick",
    "adaprox",
    "adatikhonov",
    "adaptive_dropout",
    "vardrop",
    "vardrop_lr",
    "vardrop_lr_ar",
    "hard_concrete",
    "magnitude_pruning",
)


def timed(args: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "adrop", "train", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(cwd / "cache")},
    )
    return time.perf_counter() - start, done


def steady_epoch_s(metrics_csv: Path) -> float:
    """The mean seconds of a run's epochs after the first (metrics.csv): the run's wall time less its start-up, per
    epoch (a mean, as wall times add up)."""
    with open(metrics_csv) as fh:
        seconds = [float(row["seconds"]) for row in csv.DictReader(fh)]
    return statistics.fmean(seconds[1:] or seconds)


def bench(method: str, common: list[str], epochs: int, target: float, cwd: Path) -> dict:
    single_s, single = timed([f"method={method}", *common, f"hydra.run.dir={cwd / method / 'single'}"], cwd)
    if single.returncode != 0:
        raise SystemExit(f"bench_lam_search: the single run of {method} failed: {single.stderr.strip()[-300:]}")
    sweep = cwd / method / "search"
    search_s, search = timed(
        [
            "-m",
            "hydra/sweeper=lam_search",
            "hydra/launcher=stacked",
            f"hydra.sweeper.target_nonzero={target}",
            f"method={method}",
            *common,
            f"hydra.sweep.dir={sweep}",
        ],
        cwd,
    )
    if not (sweep / SEARCH_CSV).exists():
        raise SystemExit(
            f"bench_lam_search: the search of {method} wrote no {SEARCH_CSV}: {search.stderr.strip()[-300:]}"
        )
    with open(sweep / SEARCH_CSV) as fh:
        rows = list(csv.DictReader(fh))
    full = [r for r in rows if int(r["epochs"]) == epochs and r["status"] == "completed"]
    best = min(full, key=lambda r: abs(float(r["nonzero_fraction"]) - target)) if full else None
    single_epoch = steady_epoch_s(cwd / method / "single" / "metrics.csv")
    search_epoch = statistics.fmean(steady_epoch_s(Path(r["folder"]) / "metrics.csv") for r in full) if full else None
    return {
        "method": method,
        "single_s": round(single_s, 1),
        "search_s": round(search_s, 1),
        "ratio": round(search_s / single_s, 2),
        "rounds": max(int(r["round"]) for r in rows),
        "runs": len(rows),
        "short_runs": sum(int(r["epochs"]) < epochs for r in rows),
        "lam": float(best["lam"]) if best else None,
        "nonzero": round(float(best["nonzero_fraction"]), 5) if best else None,
        "val_error": float(best["val_error"]) if best else None,
        "within": search.returncode == 0,
        "single_epoch_s": round(single_epoch, 3),
        "search_epoch_s": round(search_epoch, 3) if search_epoch is not None else None,
        "epoch_ratio": round(search_epoch / single_epoch, 3) if search_epoch is not None else None,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("ADROP_DATA") or str(ROOT / "data"))  # MNIST's root
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--target", type=float, default=0.02)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--out", type=Path)
    parser.add_argument("overrides", nargs="*", help="more overrides for both contenders")
    args = parser.parse_args(argv)
    if args.out and Path(args.out).exists():
        raise SystemExit(f"bench_lam_search: {args.out} exists: choose another --out")
    common = [
        "experiment=paper_lenet300",
        f"epochs={args.epochs}",
        f"data.root={Path(args.data).resolve()}",
        "data.download=false",
        "device=cpu",
        "progress=never",
        *args.overrides,
    ]
    cwd = Path(tempfile.mkdtemp(prefix="adrop-lam-search-"))
    print(
        f"# bench_lam_search: {platform.machine()}, {os.cpu_count()} cores, {' '.join(common[:2])}, "
        f"target nonzero {args.target}, files in {cwd}",
        flush=True,
    )
    header = (
        f"{'method':<18}{'single s':>9}{'search s':>10}{'ratio':>7}{'rounds':>7}{'runs':>6}{'short':>6}"
        f"{'lam':>11}{'nonzero':>9}{'val error':>10}{'epoch s':>9}{'in search':>10}{'ratio':>7}  within"
    )
    print(header + "\n" + "-" * len(header), flush=True)
    results = []
    for method in args.methods.split(","):
        r = bench(method, common, args.epochs, args.target, cwd)
        results.append(r)
        lam = f"{r['lam']:.4g}" if r["lam"] is not None else "-"
        nonzero = f"{r['nonzero']:.4f}" if r["nonzero"] is not None else "-"
        val = f"{r['val_error']:.4f}" if r["val_error"] is not None else "-"
        epoch = (
            f"{r['search_epoch_s']:>10.3f}{r['epoch_ratio']:>7.2f}"
            if r["epoch_ratio"] is not None
            else f"{'-':>10}{'-':>7}"
        )
        print(
            f"{method:<18}{r['single_s']:>9.1f}{r['search_s']:>10.1f}{r['ratio']:>7.2f}{r['rounds']:>7}"
            f"{r['runs']:>6}{r['short_runs']:>6}{lam:>11}{nonzero:>9}{val:>10}{r['single_epoch_s']:>9.3f}{epoch}"
            f"  {'yes' if r['within'] else 'NO'}",
            flush=True,
        )
    if args.out:
        with open(args.out, "x", newline="") as fh:  # never over an earlier benchmark's table
            writer = csv.DictWriter(fh, fieldnames=list(results[0]))
            writer.writeheader()
            writer.writerows(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
