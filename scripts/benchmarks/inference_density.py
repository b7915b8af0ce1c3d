"""Where sparsity stops paying at inference: LeNet-300-100 pruned to a range of densities, each benchmarked.

    python scripts/benchmarks/inference_density.py [--data DIR] [--densities 0.5,0.2,0.1,0.05,0.02,0.013]
                                                   [--epochs 3] [--seconds 0.5] [--folder outputs/inference_density]
    python scripts/benchmarks/inference_density.py --runs RUN_DIR [RUN_DIR ...] [--seconds 1.0]


For each density d: `adrop train method=magnitude_pruning method.params.final_sparsity=1-d` (one global threshold,
the cubic schedule over the first half of --epochs epochs), then `adrop bench-inference` on the run: the speed-up over
dense of every sparse form at batch 1 and 256. The runs are short (their errors are not the point: inference cost
depends only on the shapes and the sparsity pattern); magnitude pruning's pattern stands in for the other methods'.
With --runs: no training, `adrop bench-inference` on each finished run given (docs/results/inference.md's real runs;
docs/results/structured.md's runs with whole units, labelled with the units they keep).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from hydra import compose, initialize_config_module

from adrop.commands import bench_inference
from adrop.train.command import registry
from adrop.train.config.settings import resolve
from adrop.train.loop.engine import Engine
from adrop.train.run_folder import run_files


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.environ.get("ADROP_DATA") or "data")
    p.add_argument("--densities", default="0.5,0.2,0.1,0.05,0.02,0.013")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=0.5)
    p.add_argument("--folder", default="outputs/inference_density")
    p.add_argument("--runs", nargs="*", default=[], help="finished run folders to benchmark instead")
    args = p.parse_args()
    if args.runs:
        summaries = [run_files.read_summary(Path(folder)) or {} for folder in args.runs]
        print_tables([(label(s), Path(folder)) for s, folder in zip(summaries, args.runs)], args)
        return
    registry.register()
    root = Path(args.folder) / time.strftime("%Y-%m-%d_%H-%M-%S")
    runs = []
    for density in (float(d) for d in args.densities.split(",")):
        with initialize_config_module(version_base="1.3", config_module="adrop.conf"):
            cfg = compose(
                "config",
                overrides=[
                    "method=magnitude_pruning",
                    f"method.params.final_sparsity={1 - density}",
                    f"epochs={args.epochs}",
                    f"data.root={args.data}",
                    "progress=never",
                    "device=cpu",
                    "data.download=false",
                ],
            )
        folder = root / f"density={density}"
        Engine([resolve(cfg)], [folder]).fit()
        run_files.write_config(folder, cfg, {}, [])
        runs.append((label(run_files.read_summary(folder) or {}), folder))
    print_tables(runs, args)


def label(summary: dict) -> str:
    """A run as its column says it: method, nonzero fraction, and the units its compact network keeps."""
    text = f"{summary.get('method')}, {summary.get('nonzero_fraction') or 0:.1%} nonzero"
    if summary.get("kept_architecture"):
        text += f", {summary['kept_architecture']}"
    return text


def print_tables(runs, args) -> None:
    """Each run's measurements as `adrop bench-inference` prints them, then per batch size a markdown table of the
    speed-ups over dense (dense's milliseconds per call in brackets), one column per run (docs/results/inference.md)."""
    results = []
    for label, folder in runs:
        header, rows = bench_inference.measure(folder, [1, 256], args.seconds, args.data)
        print(f"# {header}", flush=True)
        for name, batch, t, ratio in rows:
            print(f"{name:28s} {batch:5d} {t * 1e3:9.3f} {ratio:8.2f}", flush=True)
        results.append((label, {(name, batch): (t, ratio) for name, batch, t, ratio in rows}))
    for batch in (1, 256):
        forms = list(dict.fromkeys(name for _, r in results for name, b in r if b == batch))
        print(f"\nBatch {batch}: speed-up over dense (dense's milliseconds per call in brackets)\n")
        print("| form | " + " | ".join(label for label, _ in results) + " |")
        print("|---|" + "---:|" * len(results))
        for form in forms:
            cells = []
            for _, r in results:
                t, ratio = r.get((form, batch), (None, None))
                dense = form == "dense (torch)"
                cells.append("-" if t is None else f"{ratio:.2f}" + (f" ({t * 1e3:.3f} ms)" if dense else ""))
            print(f"| {form} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
