"""Where one training epoch spends its time: torch.profiler over one epoch of `adrop train method=<m>`.

    python scripts/benchmarks/profile_train.py dense --data DIR [--rows 15]

Prints the time of two plain epochs (the first warms up), then the profiler's table for a third, sorted by self time.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from hydra import compose, initialize_config_module
from torch.profiler import ProfilerActivity, profile

from adrop.train.command import registry
from adrop.train.config.settings import resolve
from adrop.train.loop.engine import Engine
from adrop.train.runtime import denormals_flushed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("method", nargs="?", default="dense")
    parser.add_argument("--data", default=os.environ.get("ADROP_DATA") or "data")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rows", type=int, default=15)
    args = parser.parse_args()
    registry.register()
    with initialize_config_module(version_base="1.3", config_module="adrop.conf"):
        cfg = compose(
            "config",
            overrides=[
                f"method={args.method}",
                f"data.root={args.data}",
                f"device={args.device}",
                "epochs=1000",
                "progress=never",
                "data.download=false",
            ],
        )
    run = Engine([resolve(cfg)], [tempfile.mkdtemp(prefix="adrop-profile-")])  # a single run
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device.startswith("cuda") else [])
    with denormals_flushed(run.device):  # as Engine.fit trains
        for i in range(2):
            t = time.perf_counter()
            run.train_epoch()
            print(f"epoch {i + 1}: {time.perf_counter() - t:.3f} s")
        with profile(activities=activities) as prof:
            run.train_epoch()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows))


if __name__ == "__main__":
    main()
