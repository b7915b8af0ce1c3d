"""Benchmark: seconds per training epoch of every `adrop train` method against the usual PyTorch loop.

    python scripts/bench_train.py [--data ../shared/data] [--device cpu|cuda] [--rounds 3] [--model lenet5]

Contenders, all at batch 128 on the same 48k MNIST training split and device, measured in one process, alternating
(one epoch each per round, after a warm-up epoch each), median over rounds:
  usual loop   torchvision MNIST (ToTensor, Normalize) + DataLoader(batch 128, shuffle) + nn.Sequential 784-300-100-10
               + Adam: the textbook loop
  adrop <m>    one training epoch of `adrop train method=<m>` (data on the device, the method's layers and hooks)
  matmuls only the epoch's matrix products alone (the shapes of a dense step's forward and backward, 375 times): the
               floor of any batch-128 epoch on this device, with no model, optimiser or data around them
With --model lenet5 the network is LeNet-5-Caffe for adrop and for the usual loop (nn.Sequential of Conv2d,
ReLU, MaxPool2d, Linear); the matmul floor and the arithmetic limit are then not printed (they count LeNet-300-100's
products). With --compile, each method also runs with compile=true (torch.compile; its compile time falls in the warm-up).
Also printed: the FLOPs of an epoch (FLOPS_PER_EXAMPLE * 48,000: forward and weight gradient of the three matmuls,
and the input gradients of the second and third layer; the first layer's input gradient is never computed), the rate of a
large float32 matrix product on the same device, the fraction of that rate each contender reaches, the time of one
masked evaluation of the 12k validation set, and memory (CUDA: each contender's peak allocation; CPU: its training
state, i.e. parameters, gradients, Adam's two moments and buffers; the data, 188 MB of float32 for all MNIST, is
shared by all and the same for the usual loop's decoded dataset).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from hydra import compose, initialize_config_module

from adrop import methods
from adrop.train import schema
from adrop.train.loop import Run, denormals_flushed

BATCH = 128
LAYERS = [(784, 300), (300, 100), (100, 10)]
# 2 FLOPs per multiply-add: forward and weight gradient of every layer, input gradient of all but the first
FLOPS_PER_EXAMPLE = 4 * sum(i * o for i, o in LAYERS) + 2 * sum(i * o for i, o in LAYERS[1:])  # 1,126,800


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_rate(device, n=4096, repeat=5) -> float:
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    a @ b
    sync(device)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


class UsualLoop:
    """The textbook loop: a torchvision dataset through a DataLoader."""

    def __init__(self, root, train_idx, device, model="lenet_300_100"):
        import torchvision
        from torchvision import transforms

        tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
        full = torchvision.datasets.MNIST(root, train=True, download=False, transform=tf)
        self.loader = torch.utils.data.DataLoader(torch.utils.data.Subset(full, train_idx.tolist()),
                                                  batch_size=BATCH, shuffle=True)
        self.device = device
        nn = torch.nn
        if model == "lenet5":
            self.model = nn.Sequential(nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(20, 50, 5), nn.ReLU(),
                                       nn.MaxPool2d(2), nn.Flatten(), nn.Linear(800, 500), nn.ReLU(),
                                       nn.Linear(500, 10)).to(device)
        else:
            self.model = nn.Sequential(nn.Flatten(), nn.Linear(784, 300), nn.ReLU(), nn.Linear(300, 100), nn.ReLU(),
                                       nn.Linear(100, 10)).to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)

    def epoch(self):
        self.model.train()
        for x, y in self.loader:
            x, y = x.to(self.device), y.to(self.device)
            loss = F.cross_entropy(self.model(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()


class MatmulsOnly:
    """The matrix products of a dense epoch and nothing else: the floor for any batch-128 epoch."""

    def __init__(self, device, steps=48_000 // BATCH):
        self.steps = steps
        self.x = torch.randn(BATCH, LAYERS[0][0], device=device)
        self.w = [torch.randn(o, i, device=device) for i, o in LAYERS]
        self.b = [torch.randn(o, device=device) for _, o in LAYERS]

    def epoch(self):
        for _ in range(self.steps):
            h, inputs = self.x, []
            for w, b in zip(self.w, self.b):  # forward
                inputs.append(h)
                h = torch.addmm(b, h, w.t())
            delta = h
            for k in reversed(range(len(self.w))):  # backward: weight gradient, and the input gradient but for x
                delta.t() @ inputs[k]
                if k:
                    delta = delta @ self.w[k]


def adrop_run(method, root, device, folder, compiled=False, model="lenet_300_100"):
    with initialize_config_module(version_base="1.3", config_module="adrop.conf"):
        cfg = compose("config", overrides=[f"method={method}", f"model={model}", f"data.root={root}",
                                           f"device={device}",
                                           "epochs=1000", "progress=never", "data.download=false",
                                           f"compile={str(compiled).lower()}"])
    return Run(cfg, folder)


def state_mib(model, extra=0) -> float:
    """Training state: parameters, gradients and Adam's two moments (4 copies), plus buffers (masks)."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    return (4 * params + buffers + extra) / 2**20


def peak_memory(device, model) -> str:
    if model is None:
        return "-"
    if device.type == "cuda":
        return f"{torch.cuda.max_memory_allocated(device) / 2**20:7.1f} MiB GPU peak"
    return f"{state_mib(model):7.1f} MiB state"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("ADROP_DATA", "../shared/data"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=3)
    # fixed_mask is left out: it needs another run's weights (init_from), and its step is magnitude_pruning's masked one
    parser.add_argument("--methods", default=",".join(["dense"] + [m for m in methods.names()
                                                                   if m not in ("dense", "fixed_mask")]))
    parser.add_argument("--folder", default="outputs/bench_train", help="scratch folder for the runs' files")
    parser.add_argument("--compile", action="store_true", help="also measure each method with compile=true")
    parser.add_argument("--model", default="lenet_300_100", choices=["lenet_300_100", "lenet5"])
    args = parser.parse_args()
    schema.register()
    device = torch.device(args.device)
    scratch = Path(args.folder) / time.strftime("%Y-%m-%d_%H-%M-%S")

    contenders, models = {}, {}
    wanted = args.methods.split(",")
    if "dense" not in wanted:
        parser.error("--methods must include dense (the ratios are to it)")
    for m in wanted:
        run = adrop_run(m, args.data, args.device, scratch / m, model=args.model)
        contenders[f"adrop {m}"] = run.train_epoch
        models[f"adrop {m}"] = run.model
        if m == "dense":
            dense_run = run
        if args.compile:
            compiled = adrop_run(m, args.data, args.device, scratch / f"{m}_c", True, model=args.model)
            contenders[f"adrop {m} (compiled)"], models[f"adrop {m} (compiled)"] = compiled.train_epoch, compiled.model
    g = torch.Generator().manual_seed(42)
    order = torch.randperm(60000, generator=g)
    usual = UsualLoop(args.data, order[12000:], device, args.model)
    contenders = {"usual loop": usual.epoch, **contenders}
    models = {"usual loop": usual.model, **models}
    lenet300 = args.model == "lenet_300_100"
    if lenet300:  # the floor and the limit count LeNet-300-100's products
        floor = MatmulsOnly(device)
        contenders["matmuls only"], models["matmuls only"] = floor.epoch, None

    with denormals_flushed(device):  # as Run.fit trains
        memory, times = {}, {name: [] for name in contenders}
        for name, fn in contenders.items():  # warm-up
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            fn()
            sync(device)
            memory[name] = peak_memory(device, models[name])
        for _ in range(args.rounds):
            for name, fn in contenders.items():
                t = time.perf_counter()
                fn()
                sync(device)
                times[name].append(time.perf_counter() - t)

        t = time.perf_counter()
        dense_run.evaluate(dense_run.data.val)
        sync(device)
        eval_s = time.perf_counter() - t
    flops = FLOPS_PER_EXAMPLE * 48_000
    rate = matmul_rate(device)
    limit = flops / rate if lenet300 else float("nan")
    med = {name: statistics.median(v) for name, v in times.items()}
    dense_s, usual_s = med["adrop dense"], med["usual loop"]
    name_dev = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or platform.machine())
    print(f"device: {device} ({name_dev}), {os.cpu_count()} CPU cores, torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}")
    if lenet300:
        print(f"epoch: 48,000 examples, batch {BATCH}, {flops / 1e9:.1f} GFLOP; large float32 matmul "
              f"{rate / 1e9:.1f} GFLOP/s, so the arithmetic limit is {limit:.3f} s per epoch")
    else:
        print(f"epoch: 48,000 examples, batch {BATCH}, model {args.model} (no arithmetic limit computed)")
    print(f"{'contender':32s} {'s/epoch':>8s} {'x dense':>8s} {'x usual':>8s} {'x limit':>8s} {'% of peak':>9s}  memory")
    for name in contenders:
        s = med[name]
        vs_limit = f"{s / limit:8.2f} {100 * limit / s:8.1f}%" if lenet300 else f"{'-':>8s} {'-':>9s}"
        print(f"{name:32s} {s:8.3f} {s / dense_s:8.2f} {s / usual_s:8.3f} {vs_limit}  {memory[name]}")
    print(f"masked evaluation of the 12k validation set: {eval_s:.3f} s ({100 * eval_s / dense_s:.1f}% of a dense epoch)")
    print(f"rounds: {args.rounds}, median seconds; every contender ran once as warm-up first")


if __name__ == "__main__":
    main()
