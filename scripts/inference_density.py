"""Where sparsity stops paying at inference: LeNet-300-100 pruned to a range of densities, each benchmarked.

    python scripts/inference_density.py [--data ../shared/data] [--densities 0.5,0.2,0.1,0.05,0.02,0.013]
                                        [--epochs 3] [--seconds 0.5] [--folder outputs/inference_density]
    python scripts/inference_density.py --runs RUN_DIR [RUN_DIR ...] [--seconds 1.0]


For each density d: `adrop train method=magnitude_pruning method.params.final_sparsity=1-d` (one global threshold,
the cubic schedule over the first half of --epochs epochs), then `adrop bench-inference` on the run: the speed-up over
dense of every sparse form at batch 1 and 256. The runs are short (their errors are not the point: inference cost
depends only on the shapes and the sparsity pattern); magnitude pruning's pattern stands in for the other methods'.
With --runs: no training, `adrop bench-inference` on each finished run given (docs/inference.md's real runs).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from hydra import compose, initialize_config_module

from adrop import bench_inference
from adrop.train import run_files, schema
from adrop.train.loop import Run


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--densities", default="0.5,0.2,0.1,0.05,0.02,0.013")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=0.5)
    p.add_argument("--folder", default="outputs/inference_density")
    p.add_argument("--runs", nargs="*", default=[], help="finished run folders to benchmark instead")
    args = p.parse_args()
    if args.runs:
        for folder in args.runs:
            print(bench_inference.bench(Path(folder), [1, 256], args.seconds, args.data), flush=True)
            print()
        return
    schema.register()
    root = Path(args.folder) / time.strftime("%Y-%m-%d_%H-%M-%S")
    for density in (float(d) for d in args.densities.split(",")):
        with initialize_config_module(version_base="1.3", config_module="adrop.conf"):
            cfg = compose("config", overrides=["method=magnitude_pruning", f"method.params.final_sparsity={1 - density}",
                                               f"epochs={args.epochs}", f"data.root={args.data}", "progress=never",
                                               "device=cpu", "data.download=false"])
        folder = root / f"density={density}"
        Run(cfg, folder).fit()
        run_files.write_config(folder, cfg, {}, [])
        print(bench_inference.bench(folder, [1, 256], args.seconds, args.data), flush=True)
        print()


if __name__ == "__main__":
    main()
