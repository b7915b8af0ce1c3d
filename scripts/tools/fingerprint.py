"""Fingerprints of the training engine's files: every method on a small MLP (synthetic data) and on conv_small (the
first 512 MNIST examples), alone (the reference) and as a stack of three seeds, 2 epochs each. Prints one line per run:
sha256 of weights.npz's arrays (names, shapes and bytes) and of metrics.csv without its seconds.

A refactor that must keep the reference bit for bit runs this before and after and compares the outputs:

    python scripts/tools/fingerprint.py --data DIR > before.txt  (at the old revision)
    python scripts/tools/fingerprint.py --data DIR > after.txt && diff before.txt after.txt
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from hydra import compose, initialize_config_module

from adrop import methods
from adrop.train.command import registry
from adrop.train.config.settings import resolve
from adrop.train.loop.engine import Engine
from adrop.train.run_folder import run_files


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    arrays = run_files.read_weights(folder)
    for key in sorted(arrays):
        h.update(f"{key}{arrays[key].shape}{arrays[key].dtype}".encode())
        h.update(np.ascontiguousarray(arrays[key]).tobytes())
    metrics = pd.read_csv(folder / "metrics.csv").drop(columns="seconds")
    buffer = io.StringIO()
    metrics.to_csv(buffer, index=False, float_format="%.17g")
    h.update(buffer.getvalue().encode())
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("ADROP_DATA") or "data", help="the folder holding MNIST/raw/")
    args = parser.parse_args()
    torch.set_num_threads(1)
    registry.register()
    data = str(Path(args.data).absolute())
    setups = {
        "mlp": ["dataset=synthetic", "model=mlp"],
        "conv_small": ["model=conv_small", f"data.root={data}", "data.train_limit=512", "data.download=false"],
    }
    with initialize_config_module(version_base="1.3", config_module="adrop.conf"), tempfile.TemporaryDirectory() as tmp:
        pruned = Path(tmp) / "pruned"
        Engine(
            [
                resolve(
                    compose(
                        "config",
                        overrides=[
                            "dataset=synthetic",
                            "model=mlp",
                            "device=cpu",
                            "progress=never",
                            "method=magnitude_pruning",
                            "epochs=2",
                        ],
                    )
                )
            ],
            [pruned],
        ).fit()
        for setup, overrides in setups.items():
            for method in methods.names():
                extra = {
                    "magnitude_pruning": ["method.params.final_sparsity=0.5", "method.params.frequency=2"],
                    "fixed_mask": [f"init_from={pruned}"] if setup == "mlp" else None,
                }.get(method, [])
                if extra is None:
                    continue
                for seeds in ([0], [0, 1, 2]):
                    cfgs = [
                        compose(
                            "config",
                            overrides=[
                                *overrides,
                                f"method={method}",
                                "epochs=2",
                                "batch_size=128",
                                "device=cpu",
                                "progress=never",
                                f"seed={s}",
                                *extra,
                            ],
                        )
                        for s in seeds
                    ]
                    folders = [Path(tmp) / f"{setup}-{method}-{len(seeds)}-{s}" for s in seeds]
                    Engine([resolve(c) for c in cfgs], folders).fit()
                    print(setup, method, f"K={len(seeds)}", " ".join(digest(f) for f in folders), flush=True)


if __name__ == "__main__":
    main()
