"""Benchmark: a stack's convolution product, one grouped convolution (what SparseConv2d does) against one
convolution per configuration, concatenated; forward and backward at LeNet-5's two shapes, batch 128.

    python scripts/benchmarks/bench_conv_product.py [--ks 1,4,16] [--threads 1] [--device cpu|cuda] [--rounds 5]

Prints milliseconds per step for each and their ratio (above 1: grouped is faster), and per configuration, so that
what stacking a conv net saves (or not) on this device reads off the last column.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

SHAPES = ((1, 20, 28), (20, 50, 12))  # LeNet-5-Caffe: (in channels, out channels, input size), 5x5 kernels


def timed(step, device, rounds: int) -> float:
    step()  # warm-up
    times = []
    for _ in range(rounds):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ks", default="1,4,16")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    g = torch.Generator().manual_seed(0)
    print(f"# bench_conv_product: device {args.device}, {args.threads} thread(s), batch 128, median of {args.rounds}")
    header = f"{'K':>4}{'layer':>12}{'grouped ms':>12}{'looped ms':>11}{'x looped':>10}{'grouped ms/config':>19}"
    print(header)
    print("-" * len(header))
    for k in (int(v) for v in args.ks.split(",")):
        for cin, cout, size in SHAPES:
            x = torch.randn(128, k * cin, size, size, generator=g).to(device).requires_grad_(cin > 1)
            w = torch.randn(k, cout, cin, 5, 5, generator=g).to(device).requires_grad_()
            grad = torch.randn(128, k * cout, size - 4, size - 4, generator=g).to(device)

            def grouped():
                F.conv2d(x, w.reshape(k * cout, cin, 5, 5), groups=k).backward(grad)

            def looped():
                parts = x.split(cin, 1)
                torch.cat([F.conv2d(parts[i], w[i]) for i in range(k)], 1).backward(grad)

            a, b = timed(grouped, device, args.rounds), timed(looped, device, args.rounds)
            print(f"{k:>4}{f'{cin}->{cout}':>12}{a:>12.2f}{b:>11.2f}{b / a:>10.2f}{a / k:>19.2f}", flush=True)


if __name__ == "__main__":
    main()
