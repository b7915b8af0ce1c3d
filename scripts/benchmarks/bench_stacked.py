"""Benchmark: a sweep of K configurations run as K separate runs, as one stack, and several runs or stacks at once.

    python scripts/benchmarks/bench_stacked.py [--data DIR] [--device cpu|cuda] [--ks 1,4,16,64]
                                               [--methods dense,logsum,vardrop_lr_ar,hard_concrete] [--train-limit 8192]
                                               [--model lenet_300_100|lenet5] [--compile] [--previous REV]
                                               [--model custom --target plain_networks.lenet_300_100]

For each method at batch 128, seconds per configuration-epoch (a training epoch of one configuration, evaluation
left out) of:
  separate    K runs one after another, as the basic launcher runs them (a single run, the engine with a stack of
              one, all threads: the same for any K)
  1 x N       N single runs at once (N = cores), one thread each, each in its own process: how the joblib launcher
              runs a sweep on this machine, and the stacked launcher with stacks of one
  stack K     one stack of K configurations (seeds 0..K-1), all threads
  K x N       N stacks of K at once, one thread each: the stacked launcher's CPU default (its hydra.launcher.n_jobs
              workers, each training one stack at a time)
and the ratios to `separate` (above 1: faster). Each measurement runs in its own process (a warm-up epoch, then the
median of --rounds timed epochs) so that its peak memory (resident set; CUDA: peak allocation) is its own. The
training slice is the first --train-limit MNIST examples (the per-epoch times scale with it). --compile adds, for
K = 1 and each K of --ks, the same stacks with compile=true (`stack K compiled`, `K x N compiled`: the loss, and
Adam's update fused with the method's after_step, traced by torch.compile; its compilation in the warm-up epoch). A
stack of conv nets (--model lenet5) computes each convolution as one grouped convolution (groups = K). --model custom
--target <module.Class> measures a user's network (scripts/benchmarks/plain_networks.py holds LeNet-300-100 as an
nn.Sequential).
With --previous REV every contender is also measured with the code of commit REV (a git worktree of it,
scripts/benchmarks/previous_tree.py; REV from the one engine on), right after ours.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
import previous_tree  # noqa: E402  (this file's folder, scripts/benchmarks/, is on the path when it runs)


def measure(args) -> dict:
    """In this process: one contender's seconds per configuration-epoch and peak memory."""
    import resource

    import torch
    from hydra import compose, initialize_config_module

    register, resolve, Engine, denormals_flushed = previous_tree.engine_api()  # this checkout's, or --previous's

    def make(cfgs, folders):
        return Engine([resolve(c) for c in cfgs], folders)

    register()

    def cfg(seed):
        with initialize_config_module(version_base="1.3", config_module="adrop.conf"):
            return compose(
                "config",
                overrides=[
                    f"data.root={args.data}",
                    f"data.train_limit={args.train_limit}",
                    "data.download=false",
                    f"device={args.device}",
                    "progress=never",
                    f"method={args.method}",
                    f"seed={seed}",
                    "epochs=100",
                    f"model={args.model}",
                    f"compile={args.compiled}",
                    *([f"model._target_={args.target}"] if args.target else []),
                ],
            )

    folder = Path(tempfile.mkdtemp())
    n = max(args.k, 1)
    run, per = make([cfg(s) for s in range(n)], [folder / f"k{s}" for s in range(n)]), n
    device = run.device
    times = []
    with denormals_flushed(device):
        for i in range(args.rounds + 1):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t = time.perf_counter()
            run.train_epoch()
            run.epoch += 1
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if i:  # the first epoch warms up
                times.append(time.perf_counter() - t)
    peak = (
        torch.cuda.max_memory_allocated(device)
        if device.type == "cuda"
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    )
    return {"seconds": statistics.median(times) / per, "peak_mb": peak / 2**20}


def child(
    args, k: int, threads: int | None = None, extra_env=None, compiled: bool = False, tree: Path | None = None
) -> subprocess.Popen:
    """One measurement in its own process; with `tree` (--previous), of that commit's code."""
    env = {**(previous_tree.env(tree) if tree else os.environ), **(extra_env or {})}
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    command = [
        sys.executable,
        __file__,
        "--measure",
        "--k",
        str(k),
        "--method",
        args.method,
        "--data",
        args.data,
        "--device",
        args.device,
        "--rounds",
        str(args.rounds),
        "--train-limit",
        str(args.train_limit),
        "--model",
        args.model,
        *(["--compiled"] if compiled else []),
        *(["--target", args.target] if args.target else []),
    ]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)


def result(process) -> dict:
    out, _ = process.communicate()
    if process.returncode:
        raise SystemExit(f"a measurement failed (exit {process.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.environ.get("ADROP_DATA") or str(ROOT / "data"))  # MNIST's root
    p.add_argument("--device", default="cpu")
    p.add_argument("--ks", default="1,4,16,64")
    p.add_argument("--methods", default="dense,logsum,vardrop_lr_ar,hard_concrete")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--train-limit", type=int, default=8192)
    p.add_argument("--model", default="lenet_300_100", help="lenet_300_100 (default) or lenet5")
    p.add_argument("--compile", action="store_true", help="also the stacks with compile=true")
    p.add_argument("--target", help="with --model custom: the network's class (model._target_)")
    p.add_argument("--previous", metavar="REV", help="also every contender with the code of this earlier commit")
    p.add_argument("--compiled", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--k", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.measure:
        print(json.dumps(measure(args)))
        return
    cores = os.cpu_count() or 1
    print(
        f"# bench_stacked: {platform.processor() or platform.machine()}, {cores} cores, device {args.device}, "
        f"model {args.model}{' ' + args.target if args.target else ''}, batch 128, first {args.train_limit} MNIST "
        f"examples, median of {args.rounds} epochs "
        "after a warm-up"
    )
    header = f"{'method':<18}{'contender':<26}{'s/config-epoch':>15}{'x separate':>12}{'peak MB':>10}"
    print(header)
    print("-" * len(header))
    tree = previous_tree.make(args.previous) if args.previous else None
    try:
        for method in args.methods.split(","):
            args.method = method
            rows(args, cores, tree)
    finally:
        if tree:
            previous_tree.remove(tree)


def rows(args, cores: int, tree: Path | None) -> None:
    """One method's contenders (each with its --previous twin right after it), printed."""
    versions = [("", None)] + ([("previous ", tree)] if tree else [])
    out = []
    for prefix, code in versions:  # a single run: the engine with a stack of one
        out.append((f"{prefix}separate", result(child(args, 1, tree=code))))
    separate = out[0][1]
    for compiled in (False, True) if args.compile else (False,):
        suffix = " compiled" if compiled else ""
        ks = [int(v) for v in args.ks.split(",")]
        for k in [1] + [k for k in ks if k != 1]:
            for prefix, code in versions:
                if k > 1 or compiled:  # a stack of one is the single run above
                    out.append((f"{prefix}stack {k}{suffix}", result(child(args, k, compiled=compiled, tree=code))))
            for prefix, code in versions if args.device == "cpu" else ():
                runs = [
                    result(j) for j in [child(args, k, threads=1, compiled=compiled, tree=code) for _ in range(cores)]
                ]
                out.append(
                    (
                        f"{prefix}{k} x {cores}{suffix}",
                        {
                            "seconds": max(r["seconds"] for r in runs) / cores,
                            "peak_mb": sum(r["peak_mb"] for r in runs),
                        },
                    )
                )
    for name, r in out:
        print(
            f"{args.method:<18}{name:<26}{r['seconds']:>15.4f}{separate['seconds'] / r['seconds']:>12.2f}"
            f"{r['peak_mb']:>10.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
