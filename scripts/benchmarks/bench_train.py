"""Benchmark: seconds per training epoch of every `adrop train` method against the usual PyTorch loop.

    python scripts/benchmarks/bench_train.py [--data DIR] [--device cpu|cuda] [--rounds 3] [--model lenet5]

    python scripts/benchmarks/bench_train.py --previous e144b81  (also the engines of an earlier commit, side by side)

Contenders, all at batch 128 on the same 48k MNIST training split and device, alternating (one epoch each per round,
after a warm-up epoch each), median over rounds:
  usual loop   torchvision MNIST (ToTensor, Normalize) + DataLoader(batch 128, shuffle) + nn.Sequential 784-300-100-10
               + Adam: the textbook loop
  adrop <m>    one training epoch of `adrop train method=<m>` (the engine with a stack of one: data on the device, the
               method's layers and hooks)
  previous <m> with --previous REV: the training engine of commit REV (a git worktree of it, in a second process
               with the same threads, asked for one epoch at a time so that the two never run at once; REV from the
               one engine on)
  matmuls only the epoch's matrix products alone (the shapes of a dense step's forward and backward, 375 times): the
               floor of any batch-128 epoch on this device, with no model, optimiser or data around them
With --custom, each method also trains LeNet-300-100 written as a user's plain module
(scripts/benchmarks/plain_networks.py, an nn.Sequential of Linear and ReLU) through `model=custom` (`adrop <m> (user
module)`), beside the built-in network.
With --library, each method also trains in a user's own loop with adrop.sparsify (`library <m>`: the network as a
plain module, the engine's data on the device, torch.optim.Adam fused, LambdaLR per step), and the time of
adrop.sparsify itself is printed.
With --neuron, each method also trains with structure=neuron (`adrop <m> (neuron)`: its group form, one eta, mask,
gate or noise per unit), beside its per-weight form.
With --model lenet5 the network is LeNet-5-Caffe for adrop and for the usual loop (nn.Sequential of Conv2d,
ReLU, MaxPool2d, Linear); the matmul floor and the arithmetic limit are then not printed (they count LeNet-300-100's
products). With --compile, each method also runs with compile=true (torch.compile; its compile time falls in the
warm-up).
Also printed: the FLOPs of an epoch (FLOPS_PER_EXAMPLE * 48,000: forward and weight gradient of the three matmuls,
and the input gradients of the second and third layer; the first layer's input gradient is never computed), the rate
of a large float32 matrix product on the same device, the fraction of that rate each contender reaches, the time of one
masked evaluation of the 12k validation set, and memory (CUDA: each contender's peak allocation; CPU: its training
state, i.e. parameters, gradients, Adam's two moments and buffers; the data, 188 MB of float32 for all MNIST, is
shared by all and the same for the usual loop's decoded dataset).
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

import previous_tree  # this file's folder (scripts/benchmarks/) is on the path when it runs
import torch
import torch.nn.functional as F
from hydra import compose, initialize_config_module

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
        self.loader = torch.utils.data.DataLoader(
            torch.utils.data.Subset(full, train_idx.tolist()), batch_size=BATCH, shuffle=True
        )
        self.device = device
        nn = torch.nn
        if model == "lenet5":
            self.model = nn.Sequential(
                nn.Conv2d(1, 20, 5),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(20, 50, 5),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Flatten(),
                nn.Linear(800, 500),
                nn.ReLU(),
                nn.Linear(500, 10),
            ).to(device)
        else:
            self.model = nn.Sequential(
                nn.Flatten(), nn.Linear(784, 300), nn.ReLU(), nn.Linear(300, 100), nn.ReLU(), nn.Linear(100, 10)
            ).to(device)
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


class LibraryLoop:
    """A user's own loop with the library (adrop.sparsify): the engine's network built as a plain module, its data
    already on the device, batch 128, torch.optim.Adam (fused, as the engine's) with a per-step linear lr schedule
    (LambdaLR), the method's penalty added to the loss and its hooks attached to the optimizer."""

    def __init__(self, run):
        from omegaconf import OmegaConf

        import adrop
        from adrop.train.nets import network as network_mod

        cfg, self.data = run.runs[0].cfg, run.data
        self.shape = network_mod.input_shape_of(self.data)
        module = network_mod.instantiate(cfg.model, self.shape, self.data.classes).to(run.device)
        params = OmegaConf.to_container(cfg.method.params, resolve=True)
        self.steps = run.steps_per_epoch
        t = time.perf_counter()
        self.sp = adrop.sparsify(
            module,
            method=cfg.method.name,
            lam=run.runs[0].lam,
            total_steps=run.total_steps,
            steps_per_epoch=self.steps,
            **params,
        )
        self.sparsify_s = time.perf_counter() - t
        self.model = module
        self.opt = torch.optim.Adam(module.parameters(), lr=run.runs[0].lr, fused=True)
        self.sp.attach(self.opt)
        total = run.total_steps
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda step: max(0.0, 1 - step / total))

    def epoch(self):
        x, y = self.data.train.x, self.data.train.y
        order = torch.randperm(len(y), device=x.device)
        self.model.train()
        for b in range(self.steps):
            idx = order[b * BATCH : (b + 1) * BATCH]
            loss = F.cross_entropy(self.model(x[idx].view(-1, *self.shape)), y[idx]) + self.sp.penalty()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.schedule.step()


USER_MODULE = ["model=custom", "model._target_=plain_networks.lenet_300_100"]


def adrop_config(method, root, device, compiled=False, model="lenet_300_100", extra=()):
    chosen = USER_MODULE if model == "user module" else [f"model={model}"]
    with initialize_config_module(version_base="1.3", config_module="adrop.conf"):
        return compose(
            "config",
            overrides=[
                f"method={method}",
                *chosen,
                f"data.root={root}",
                f"device={device}",
                "epochs=1000",
                "progress=never",
                "data.download=false",
                f"compile={str(compiled).lower()}",
                *extra,
            ],
        )


def adrop_run(method, root, device, folder, compiled=False, model="lenet_300_100", extra=()):
    """The engine with a stack of one, as `adrop train` trains a run."""
    from adrop.train.config.settings import resolve
    from adrop.train.loop.engine import Engine

    return Engine([resolve(adrop_config(method, root, device, compiled, model, extra))], [folder])


def serve_previous(args):
    """In the second process (PYTHONPATH: the earlier commit's worktree): its engines for each method, one epoch per
    line read from stdin (a contender's name), each answered with the seconds it took."""
    register, resolve, Engine, denormals_flushed = previous_tree.engine_api()  # the earlier commit's
    register()
    scratch = Path(tempfile.mkdtemp(prefix="adrop-previous-"))
    engines = {}
    for m in args.methods.split(","):
        cfg = adrop_config(m, args.data, args.device, model=args.model)
        engines[f"previous {m}"] = Engine([resolve(cfg)], [scratch / m])
    device = torch.device(args.device)
    print(json.dumps(list(engines)), flush=True)
    with denormals_flushed(device):
        for line in sys.stdin:
            engine = engines[line.strip()]
            t = time.perf_counter()
            engine.train_epoch()
            sync(device)
            print(time.perf_counter() - t, flush=True)


class Previous:
    """The earlier commit's engines in a second process (serve_previous), one epoch at a time."""

    def __init__(self, rev, args):
        self.tree = previous_tree.make(rev)
        self.process = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve-previous",
                "--methods",
                args.methods,
                "--data",
                args.data,
                "--device",
                args.device,
                "--model",
                args.model,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=previous_tree.env(self.tree),
            cwd=self.tree,
        )
        self.names = json.loads(self.process.stdout.readline())

    def epoch(self, name):
        self.process.stdin.write(name + "\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self):
        self.process.stdin.close()
        self.process.wait()
        previous_tree.remove(self.tree)


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
    from adrop import methods

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("ADROP_DATA") or "data")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=3)
    # fixed_mask is left out: it needs another run's weights (init_from), and its step is magnitude_pruning's masked one
    parser.add_argument(
        "--methods", default=",".join(["dense"] + [m for m in methods.names() if m not in ("dense", "fixed_mask")])
    )
    parser.add_argument("--folder", default="outputs/bench_train", help="scratch folder for the runs' files")
    parser.add_argument("--compile", action="store_true", help="also measure each method with compile=true")
    parser.add_argument("--model", default="lenet_300_100", choices=["lenet_300_100", "lenet5"])
    parser.add_argument("--previous", metavar="REV", help="also the training engines of this earlier commit")
    parser.add_argument("--custom", action="store_true", help="also LeNet-300-100 as a user's nn.Sequential")
    parser.add_argument("--neuron", action="store_true", help="also each method with structure=neuron")
    parser.add_argument(
        "--library",
        action="store_true",
        help="also each method in a user's own loop with adrop.sparsify (`library <m>`)",
    )
    parser.add_argument("--serve-previous", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_previous:
        return serve_previous(args)
    if args.custom and args.model != "lenet_300_100":
        parser.error("--custom compares LeNet-300-100 written as a user's module with the built-in lenet_300_100")
    from adrop.train.command import registry
    from adrop.train.loop import evaluate
    from adrop.train.runtime import denormals_flushed

    registry.register()
    device = torch.device(args.device)
    scratch = Path(args.folder) / time.strftime("%Y-%m-%d_%H-%M-%S")

    contenders, models, sparsify_ms = {}, {}, {}
    wanted = args.methods.split(",")
    if "dense" not in wanted:
        parser.error("--methods must include dense (the ratios are to it)")
    for m in wanted:
        run = adrop_run(m, args.data, args.device, scratch / m, model=args.model)
        contenders[f"adrop {m}"] = run.train_epoch
        models[f"adrop {m}"] = run.model
        if m == "dense":
            dense_run = run
        if args.custom:
            user = adrop_run(m, args.data, args.device, scratch / f"{m}_user", model="user module")
            contenders[f"adrop {m} (user module)"], models[f"adrop {m} (user module)"] = user.train_epoch, user.model
        if args.neuron:
            grouped = adrop_run(
                m, args.data, args.device, scratch / f"{m}_neuron", model=args.model, extra=["structure=neuron"]
            )
            contenders[f"adrop {m} (neuron)"], models[f"adrop {m} (neuron)"] = grouped.train_epoch, grouped.model
        if args.library:
            library = LibraryLoop(run)
            contenders[f"library {m}"], models[f"library {m}"] = library.epoch, library.model
            sparsify_ms[m] = 1000 * library.sparsify_s
        if args.compile:
            compiled = adrop_run(m, args.data, args.device, scratch / f"{m}_c", True, model=args.model)
            contenders[f"adrop {m} (compiled)"], models[f"adrop {m} (compiled)"] = compiled.train_epoch, compiled.model
    g = torch.Generator().manual_seed(42)
    order = torch.randperm(60000, generator=g)
    usual = UsualLoop(args.data, order[12000:], device, args.model)
    contenders = {"usual loop": usual.epoch, **contenders}
    models = {"usual loop": usual.model, **models}
    previous = Previous(args.previous, args) if args.previous else None
    for name in previous.names if previous else []:  # timed in the other process: the fn returns its seconds
        contenders[name], models[name] = (lambda name=name: previous.epoch(name)), None
    lenet300 = args.model == "lenet_300_100"
    if lenet300:  # the floor and the limit count LeNet-300-100's products
        floor = MatmulsOnly(device)
        contenders["matmuls only"], models["matmuls only"] = floor.epoch, None

    # each method's contenders next to each other in every round, so that a slower minute of a shared machine falls
    # on all of them alike
    def method_of(name):
        return next((m for m in wanted if name.endswith(f" {m}") or f" {m} " in name), name)

    contenders = dict(
        sorted(
            contenders.items(),
            key=lambda item: wanted.index(method_of(item[0])) if method_of(item[0]) in wanted else -1,
        )
    )
    with denormals_flushed(device):  # as Engine.fit trains
        memory, times = {}, {name: [] for name in contenders}
        for name, fn in contenders.items():  # warm-up
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            fn()
            sync(device)
            memory[name] = (
                peak_memory(device, models[name])
                if models[name] is not None or name == "matmuls only"
                else "(its own process)"
            )
        for _ in range(args.rounds):
            for name, fn in contenders.items():
                t = time.perf_counter()
                elsewhere = fn()
                sync(device)
                times[name].append(elsewhere if isinstance(elsewhere, float) else time.perf_counter() - t)
        if previous:
            previous.close()
        t = time.perf_counter()
        weights = dense_run.weights(0, evaluate.effective(dense_run.model, dense_run.method, dense_run.lam))
        evaluate.error(dense_run.single.predict, weights, dense_run.data.val)
        sync(device)
        eval_s = time.perf_counter() - t
    flops = FLOPS_PER_EXAMPLE * 48_000
    rate = matmul_rate(device)
    limit = flops / rate if lenet300 else float("nan")
    med = {name: statistics.median(v) for name, v in times.items()}
    dense_s, usual_s = med["adrop dense"], med["usual loop"]
    name_dev = (
        torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or platform.machine())
    )
    print(
        f"device: {device} ({name_dev}), {os.cpu_count()} CPU cores, torch {torch.__version__}, "
        f"threads {torch.get_num_threads()}"
    )
    if lenet300:
        print(
            f"epoch: 48,000 examples, batch {BATCH}, {flops / 1e9:.1f} GFLOP; large float32 matmul "
            f"{rate / 1e9:.1f} GFLOP/s, so the arithmetic limit is {limit:.3f} s per epoch"
        )
    else:
        print(f"epoch: 48,000 examples, batch {BATCH}, model {args.model} (no arithmetic limit computed)")
    print(
        f"{'contender':32s} {'s/epoch':>8s} {'x dense':>8s} {'x usual':>8s} {'x limit':>8s} {'% of peak':>9s}  memory"
    )
    for name in contenders:
        s = med[name]
        vs_limit = f"{s / limit:8.2f} {100 * limit / s:8.1f}%" if lenet300 else f"{'-':>8s} {'-':>9s}"
        print(f"{name:32s} {s:8.3f} {s / dense_s:8.2f} {s / usual_s:8.3f} {vs_limit}  {memory[name]}")
    print(
        f"masked evaluation of the 12k validation set: {eval_s:.3f} s ({100 * eval_s / dense_s:.1f}% of a dense epoch)"
    )
    for m in sparsify_ms:
        ratio = med[f"library {m}"] / med[f"adrop {m}"]
        print(f"library {m}: {ratio:.3f} x adrop's epoch; adrop.sparsify on {args.model}: {sparsify_ms[m]:.1f} ms")
    print(f"rounds: {args.rounds}, median seconds; every contender ran once as warm-up first")


if __name__ == "__main__":
    main()
