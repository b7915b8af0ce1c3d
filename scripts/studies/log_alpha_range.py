"""Where VarDrop's log alpha ends: does a clamp bind at the end of training? From finished runs' checkpoints.

    python scripts/studies/log_alpha_range.py RUN_FOLDER... [--bound 10] [--out log_alpha_range.csv]

Per run (per-weight VarDrop, VarDrop+LR or VarDrop+LR+AR; any checkpoint whose model holds `log_alpha_param`): the
smallest and largest log alpha parameter over all layers, the fraction of parameters beyond +-bound (where adrop's
default clamp of log alpha to [-10, 10] cuts the gradient), and the fraction of log sigma = log alpha / 2 +
log(1e-16 + |theta|) beyond +-bound (where the authors' clamp of log sigma binds, `authors_clamp=true` of
vardrop_lr). Used on the authors_clamp runs of docs/results/authors_code.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import torch

from adrop.train.run_folder import run_files


def ranges(folder: Path, bound: float) -> dict:
    state = run_files.load_checkpoint(folder, "cpu")
    if state is None:
        raise SystemExit(f"log_alpha_range: {folder} holds no {run_files.CHECKPOINT}")
    model = state["model"]
    names = [k for k in model if k.endswith("log_alpha_param")]
    if not names:
        raise SystemExit(f"log_alpha_range: {folder} has no log alpha parameter (not a per-weight VarDrop run)")
    weights = [k.removesuffix("log_alpha_param") + "weight" for k in names]
    if any(model[k].shape != model[w].shape for k, w in zip(names, weights)):
        raise SystemExit(
            f"log_alpha_range: {folder}: one log alpha per group, not per weight (structure=neuron): "
            "log sigma per weight is not defined there"
        )
    log_alpha = torch.cat([model[k].flatten() for k in names]).double()
    theta = torch.cat([model[w].flatten() for w in weights]).double()
    log_sigma = log_alpha / 2 + torch.log(1e-16 + theta.abs())
    return {
        "run": f"{folder.parent.name}/{folder.name}",
        "parameters": log_alpha.numel(),
        "log_alpha_min": log_alpha.min().item(),
        "log_alpha_max": log_alpha.max().item(),
        "log_alpha_beyond": (log_alpha.abs() > bound).double().mean().item(),
        "log_sigma_below": (log_sigma < -bound).double().mean().item(),
        "log_sigma_above": (log_sigma > bound).double().mean().item(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--bound", type=float, default=10.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.out and args.out.exists():
        raise SystemExit(f"log_alpha_range: {args.out} exists: choose another --out")
    table = pd.DataFrame([ranges(f, args.bound) for f in args.folders])
    with pd.option_context("display.width", 200, "display.max_colwidth", 70, "display.float_format", "{:.4g}".format):
        print(table.to_string(index=False))
    if args.out:
        table.to_csv(args.out, index=False, mode="x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
