"""Benchmark: seconds per training epoch of adrop against the paper authors' own code and Sparse VD's loop.

    python scripts/benchmarks/bench_authors.py --authors-dir DIR --svdo-dir DIR [--data DIR] [--threads 1]
                                               [--rounds 3] [--feed notebook|tensors|both]

--authors-dir is a checkout of dlej/adaptive-dropout, --svdo-dir one of senya-ashukha/sparse-vd-pytorch; neither is
part of adrop (their code is read from there at run time). Without them only adrop's contenders run.

Contenders, LeNet-300-100 (784-300-100-10) on MNIST at batch 128, in one process with torch.set_num_threads(--threads),
each epoch 48,000 examples trained and 12,000 evaluated (adrop's split of MNIST's 60,000 training images; skorch's
own 80/20 split of them for the authors); one epoch each per round, alternating, after a warm-up epoch each; median
over rounds:
  adrop <m>     one epoch of `adrop train method=<m>` in-process: Engine.fit for one more epoch (the training steps,
                the validation error, the run's files), for dense, logsum and vardrop_lr_ar
  authors <m>   the skorch NeuralNetClassifier of the authors' notebook (experiments/Sparse MNIST.ipynb) with their
                modules (dropout/), built by the notebook's own cells: its setting LogSum (PenalizedNet, LogSumPenalty)
                and VariationalDropout (their VarDrop+LR+AR: VarDropNet of LinearSVDOAdditiveReparam); one skorch
                epoch: the training steps, the validation pass, the notebook's callbacks and scoring
  svdo <m>      Sparse VD's LinearSVDO (log sigma learnt: VarDrop+LR+AR) and SGVLB (svdo-solution.ipynb), three layers
                of it as LeNet-300-100, set up by the notebook's cell and trained by one pass of its epoch loop's body:
                the training steps, its test loop over the 12,000, its Logger
Two feeds for the notebooks' code (--feed, default both side by side): `notebook`, their own: torchvision's MNIST
dataset (ToTensor, Normalize), every image decoded anew by a DataLoader each epoch; `tensors`, the contenders named
"(tensors)": adrop's decoded, normalised tensors in memory, so that their model and training code alone is timed.
adrop keeps its data on the device either way.
What differs from the notebooks, each to run them here alike: the CPU (the authors' kl_reg moves its constants with
.cuda(), a no-op while their epochs run); no DataLoader workers (the authors' notebook: 4), the data decoded on the
threads the benchmark gives; skorch's ValidSplit for the CVSplit it was renamed from; skorch's epoch table not printed
(verbose=0); Sparse VD's notebook trains two layers at batch 100 on all 60,000.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import platform
import statistics
import sys
import threading
import time
import warnings
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import Subset, TensorDataset

from adrop.train.data.tensors import validation_split
from adrop.train.errors import TrainError

from bench_train import adrop_run  # this file's folder (scripts/benchmarks/) is on the path when it runs

BATCH = 128
AUTHORS_SETTING = {"logsum": "LogSum", "vardrop_lr_ar": "VariationalDropout"}  # adrop's method: the notebook's name
SVDO_METHOD = "vardrop_lr_ar"
AUTHORS_NOTEBOOK = Path("experiments") / "Sparse MNIST.ipynb"
SVDO_NOTEBOOK = Path("svdo-solution.ipynb")
FEEDS = {"notebook": "", "tensors": " (tensors)"}  # the feed: how its contenders' names end
# the cells each notebook's code is read from, each by a line it holds; the last, a cell with the epoch loop
AUTHORS_CELLS = (
    "from skorch import",
    "class AdaptiveCallback",
    "class LinearDecay",
    "nets_settings = [",
    "def train_net",
)
SVDO_CELLS = (
    "from logger import Logger\nfrom torch.nn",
    "class LinearSVDO",
    "class SGVLB",
    "logger = Logger(",
    "for epoch in range",
)


def notebook_mnist(root):
    """MNIST's training set as both notebooks read it: torchvision's dataset, ToTensor and Normalize per image."""
    import torchvision
    from torchvision import transforms

    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    return torchvision.datasets.MNIST(root, train=True, download=False, transform=transform)


class NotebookError(Exception):
    """A checkout that is not the code this benchmark reads."""


def notebook_cells(path: Path, *markers: str) -> list[str]:
    """The source of the first code cell holding each marker, read from the notebook at run time."""
    if not path.is_file():
        raise NotebookError(f"{path} not found")
    try:
        cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    except (ValueError, KeyError, TypeError) as error:  # not JSON (UnicodeDecodeError is a ValueError), not cells
        raise NotebookError(f"{path.name} is not a notebook this benchmark reads ({type(error).__name__}: {error})")
    found = []
    for marker in markers:
        cell = next((c for c in cells if marker in c), None)
        if cell is None:
            raise NotebookError(f"{path.name} has no cell with {marker!r}")
        found.append(cell)
    return found


def split_at_loop(source: str):
    """A cell with a for loop: the statements before it and the loop's body, compiled."""
    tree = ast.parse(source)
    at = next((i for i, node in enumerate(tree.body) if isinstance(node, ast.For)), None)
    if at is None:
        raise NotebookError("the epoch loop's cell holds no for loop at its top level")
    code = lambda body: compile(ast.Module(body=body, type_ignores=[]), "<notebook>", "exec")
    return code(tree.body[:at]), code(tree.body[at].body)


@contextlib.contextmanager
def cuda_calls_on_cpu():
    """Tensor.cuda() gives the tensor back: the authors' kl_reg moves its three constants to the GPU at every call."""
    cuda = torch.Tensor.cuda
    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    try:
        yield
    finally:
        torch.Tensor.cuda = cuda


class AdropEpochs:
    """`adrop train method=<m>`'s engine, one epoch per call."""

    def __init__(self, method, root, folder, extra=()):
        self.engine = adrop_run(method, root, "cpu", folder, extra=extra)

    def epoch(self) -> float:
        t = time.perf_counter()
        self.engine.fit(stop_after=self.engine.epoch + 1)
        return time.perf_counter() - t


class AuthorsEpochs:
    """One of the notebook's NetSettings trained by skorch's fit in a thread of its own, which a callback holds
    before each epoch until epoch() lets it go; epoch() returns the seconds from that epoch's start to its end."""

    def __init__(self, folder: Path, setting: str, x, y, threads: int, epochs: int):
        import skorch.dataset
        from skorch.callbacks import Callback

        setup, callbacks, helpers, settings, train_net = notebook_cells(folder / AUTHORS_NOTEBOOK, *AUTHORS_CELLS)
        if not hasattr(skorch.dataset, "CVSplit"):  # the notebook's name; skorch now calls it ValidSplit
            skorch.dataset.CVSplit = skorch.dataset.ValidSplit
        sys.path.insert(0, str(folder))  # their package, dropout/
        ns = {"__name__": "authors_notebook"}
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(setup, ns)
            ns.update(mnist_train=x, y_train=y, cv_split=ns["CVSplit"](0.2, random_state=42))  # its data cell's names
            for cell in (callbacks, helpers, settings):
                exec(cell, ns)
            chosen = next((s for s in ns["nets_settings"] if s.name == setting), None)
            if chosen is None:
                raise NotebookError(f"the notebook has no setting {setting!r}")
            made = {}
            ns["NeuralNetClassifier"] = lambda *args, **kwargs: made.update(args=args, kwargs=kwargs) or Unfitted()
            exec(train_net, ns)
            ns["train_net"](chosen)  # the notebook's own arguments, recorded
        gate = self
        self.go, self.done = threading.Semaphore(0), threading.Semaphore(0)
        self.seconds, self.error = 0.0, None

        class Gate(Callback):
            def on_epoch_begin(self, net, **kwargs):
                gate.go.acquire()
                gate.started = time.perf_counter()

            def on_epoch_end(self, net, **kwargs):
                gate.seconds = time.perf_counter() - gate.started
                gate.done.release()

        from skorch import NeuralNetClassifier

        kwargs = {
            **made["kwargs"],
            "device": "cpu",
            "iterator_train__num_workers": 0,
            "iterator_valid__num_workers": 0,
            "verbose": 0,
            "max_epochs": epochs,
            "callbacks": made["kwargs"]["callbacks"] + [Gate()],
        }
        self.net = NeuralNetClassifier(*made["args"], **kwargs)
        self.thread = threading.Thread(target=self.fit, args=(x, y, threads), daemon=True)
        self.thread.start()

    def fit(self, x, y, threads):
        torch.set_num_threads(threads)  # the setting is per thread
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.net.fit(x, y)
        except Exception as error:  # handed to the main thread
            self.error = error
            self.done.release()

    def epoch(self) -> float:
        with cuda_calls_on_cpu():  # the main thread waits meanwhile: the patch reaches their code alone
            self.go.release()
            self.done.acquire()
        if self.error is not None:
            raise self.error
        return self.seconds

    def close(self):
        self.thread.join()


class Unfitted:
    """What the notebook's train_net gets instead of a NeuralNetClassifier: its fit does nothing."""

    def fit(self, *args, **kwargs):
        return self


class SparseVDEpochs:
    """Sparse VD's notebook: its LinearSVDO and SGVLB, its setup cell (model, Adam, MultiStepLR, Logger, data, loss)
    with Net three layers of LinearSVDO (LeNet-300-100) and get_mnist the benchmark's tensors at batch 128, and its
    epoch loop's body, one pass per call."""

    def __init__(self, folder: Path, train, test, scratch: Path):
        """train and test: each a torch Dataset."""
        imports, layer, loss, setup, loop = notebook_cells(folder / SVDO_NOTEBOOK, *SVDO_CELLS)
        sys.path.insert(0, str(folder))  # its logger.py
        ns = {"__name__": "svdo_notebook"}
        exec(imports, ns)
        exec(layer, ns)
        exec(loss, ns)
        linear_svdo = ns["LinearSVDO"]

        class Net(nn.Module):  # the notebook's Net with LeNet-300-100's three layers
            def __init__(self, threshold):
                super().__init__()
                self.fc1, self.fc2, self.fc3 = (
                    linear_svdo(i, o, threshold) for i, o in ((784, 300), (300, 100), (100, 10))
                )
                self.threshold = threshold

            def forward(self, x):
                x = nn.functional.relu(self.fc1(x))
                x = nn.functional.relu(self.fc2(x))
                return nn.functional.log_softmax(self.fc3(x), dim=1)

        def get_mnist(batch_size):  # the benchmark's data, at the benchmark's batch
            loader = lambda split: torch.utils.data.DataLoader(split, batch_size=BATCH, shuffle=True)
            return loader(train), loader(test)

        ns.update(Net=Net, get_mnist=get_mnist)
        scratch.mkdir(parents=True, exist_ok=True)
        with contextlib.chdir(scratch), contextlib.redirect_stdout(io.StringIO()):  # its Logger writes ./logs
            exec(setup, ns)
        ns["logger"].output = str(scratch / ns["logger"].output)
        before, self.body = split_at_loop(loop)
        exec(before, ns)
        ns["epoch"] = 0
        self.ns = ns

    def epoch(self) -> float:
        self.ns["epoch"] += 1
        t = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(self.body, self.ns)
        return time.perf_counter() - t


def refuse(message: str):
    """One line on stderr, exit 2: the command or its checkouts are wrong."""
    print(f"bench_authors: {message}", file=sys.stderr)
    sys.exit(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("ADROP_DATA") or "data")
    parser.add_argument("--authors-dir", type=Path, help="a checkout of dlej/adaptive-dropout")
    parser.add_argument("--svdo-dir", type=Path, help="a checkout of senya-ashukha/sparse-vd-pytorch")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--feed",
        choices=["notebook", "tensors", "both"],
        default="both",
        help="the notebooks' data: their torchvision dataset, adrop's tensors, or both side by side",
    )
    parser.add_argument("--train-limit", type=int, help="adrop's data.train_limit (a quick check; no comparison then)")
    parser.add_argument("--folder", default="outputs/bench_authors", help="scratch folder for the runs' files")
    args = parser.parse_args()
    if args.threads < 1 or args.rounds < 1:
        refuse("--threads and --rounds must be at least 1")
    if args.train_limit is not None and (args.authors_dir or args.svdo_dir):
        refuse("--train-limit times adrop alone: leave out --authors-dir and --svdo-dir")
    for folder, notebook, repository in (
        (args.authors_dir, AUTHORS_NOTEBOOK, "dlej/adaptive-dropout"),
        (args.svdo_dir, SVDO_NOTEBOOK, "senya-ashukha/sparse-vd-pytorch"),
    ):
        if folder is not None and not (folder / notebook).is_file():
            refuse(f"{folder} holds no {notebook}: give a checkout of {repository}")
    try:  # the notebooks' cells, found and compiled before any data is read or network built
        for folder, notebook, markers in (
            (args.authors_dir, AUTHORS_NOTEBOOK, AUTHORS_CELLS),
            (args.svdo_dir, SVDO_NOTEBOOK, SVDO_CELLS),
        ):
            if folder is not None:
                cells = notebook_cells(folder / notebook, *markers)
                for marker, cell in zip(markers, cells):
                    compile(cell, f"{notebook.name}, the cell with {marker.splitlines()[0]!r}", "exec")
                if notebook == SVDO_NOTEBOOK:  # its epoch loop runs one pass per call
                    split_at_loop(cells[-1])
    except SyntaxError as error:
        refuse(f"{error.filename} does not compile: {error.msg} (line {error.lineno})")
    except NotebookError as error:
        refuse(str(error))
    from adrop.train.command import registry

    registry.register()
    torch.set_num_threads(args.threads)
    scratch = Path(args.folder).resolve() / time.strftime("%Y-%m-%d_%H-%M-%S")
    extra = [] if args.train_limit is None else [f"data.train_limit={args.train_limit}"]
    contenders = {}  # name: a function training one epoch and returning its seconds
    authors = []
    try:
        for m in ("dense", *AUTHORS_SETTING):
            run = AdropEpochs(m, args.data, scratch / m, extra)
            contenders[f"adrop {m}"] = run.epoch
        data = run.engine.data
        for feed in ([*FEEDS] if args.feed == "both" else [args.feed]) if args.authors_dir or args.svdo_dir else []:
            if feed == "notebook":
                images = notebook_mnist(args.data)
                val_idx, train_idx = validation_split(len(images), run.engine.runs[0].cfg.dataset)  # adrop's split
                full, labels = images, images.targets.numpy()
                train, test = Subset(images, train_idx.tolist()), Subset(images, val_idx.tolist())
            else:
                full, labels = torch.cat([data.train.x, data.val.x]), torch.cat([data.train.y, data.val.y]).numpy()
                train, test = TensorDataset(data.train.x, data.train.y), TensorDataset(data.val.x, data.val.y)
            if args.authors_dir:
                for m, setting in AUTHORS_SETTING.items():
                    authors.append(
                        AuthorsEpochs(args.authors_dir.resolve(), setting, full, labels, args.threads, 1 + args.rounds)
                    )
                    contenders[f"authors {m}{FEEDS[feed]}"] = authors[-1].epoch
            if args.svdo_dir:
                svdo = SparseVDEpochs(args.svdo_dir.resolve(), train, test, scratch / f"svdo_{feed}")
                contenders[f"svdo {SVDO_METHOD}{FEEDS[feed]}"] = svdo.epoch
    except (TrainError, NotebookError, ImportError, FileNotFoundError) as error:
        refuse(str(error))
    # each method's contenders next to each other in every round, so a slower minute of a shared machine falls on
    # all of them alike
    order = ["dense", *AUTHORS_SETTING]
    contenders = dict(sorted(contenders.items(), key=lambda item: order.index(item[0].split()[1])))
    times = {name: [] for name in contenders}
    for fn in contenders.values():  # warm-up
        fn()
    for _ in range(args.rounds):
        for name, fn in contenders.items():
            times[name].append(fn())
    for run in authors:
        run.close()
    report(args, {name: statistics.median(v) for name, v in times.items()}, len(data.train), len(data.val))


def report(args, med: dict, trained: int, evaluated: int):
    import importlib.metadata

    try:
        skorch = f", skorch {importlib.metadata.version('skorch')}"
    except importlib.metadata.PackageNotFoundError:
        skorch = ""
    dense = med["adrop dense"]
    print(
        f"device: cpu ({platform.processor() or platform.machine()}), {os.cpu_count()} CPU cores, torch "
        f"{torch.__version__}{skorch}, threads {args.threads}"
    )
    print(f"epoch: LeNet-300-100, batch {BATCH}, {trained:,} examples trained and {evaluated:,} evaluated")
    print(f"{'contender':28s} {'s/epoch':>8s} {'x adrop dense':>14s}")
    for name, s in med.items():
        print(f"{name:28s} {s:8.3f} {s / dense:14.2f}")
    for who in ("authors", "svdo"):
        for ending in FEEDS.values():
            ratios = [
                f"{m} {med[f'{who} {m}{ending}'] / med[f'adrop {m}']:.2f}x"
                for m in AUTHORS_SETTING
                if f"{who} {m}{ending}" in med
            ]
            if ratios:
                print(f"{who}{ending} / adrop, per epoch: {', '.join(ratios)}")
    print(f"rounds: {args.rounds}, median seconds; every contender ran once as warm-up first")


if __name__ == "__main__":
    main()
