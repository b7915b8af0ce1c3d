"""`adrop bench-inference RUN_DIR`: what a run's sparsity buys at inference, measured.

    adrop bench-inference outputs/runs/<time> [--batches 1,256] [--seconds 1.0] [--data DIR]

Latency and throughput of the dense network (the masked weights as dense float32 matrices, torch) against its sparse
forms: the compact network (dead units and filters removed, adrop.compact; dense torch), torch CSR (torch.sparse_csr
products; fully connected networks), scipy.sparse CSR (a conv net's conv layers dense), and onnxruntime (the ONNX
export of the compact network, when onnxruntime is installed, and the same runtime on the uncompacted network, to tell
the runtime's gain from sparsity's). With CUDA: the dense and compact networks on the GPU too (end to end: rows in,
logits out). Inputs are the run's test rows. For each contender and batch size: the median over repeated calls in this
one process (for about --seconds each, after a warm-up, the contenders taking turns in 5 rounds), milliseconds per
call, examples per second, and the speed-up over dense. Every contender's logits are checked against dense first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from adrop.commands import one_line

ROUNDS = 5  # contenders take turns, so that a drift in the machine's speed reaches all of them alike


def samples(fn, seconds: float) -> list[float]:
    """Seconds per call of fn, over about `seconds` of calls (at least 5)."""
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 5:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def timed_side_by_side(forms: dict, seconds: float) -> dict:
    """name -> median seconds per call, the contenders timed in turn over ROUNDS rounds after a warm-up of each."""
    for fn in forms.values():
        fn()
    times = {name: [] for name in forms}
    for _ in range(ROUNDS):
        for name, fn in forms.items():
            times[name] += samples(fn, seconds / ROUNDS)
    return {name: statistics.median(t) for name, t in times.items()}


def contenders(run, image):
    """name -> predict(x: float32 numpy rows) for every form this network has."""
    import torch

    from adrop import export

    names = run.names
    dense = [(torch.from_numpy(run.weights[n][0]), torch.from_numpy(run.weights[n][1])) for n in names]

    def torch_dense(x):
        with torch.no_grad():
            return network(torch.from_numpy(x), dense).numpy()

    def network(x, layers, product=None):
        for i, (w, b) in enumerate(layers):
            if w.dim() == 4:
                x = x.view(-1, *image) if x.dim() == 2 else x
                x = torch.nn.functional.max_pool2d(torch.relu(torch.nn.functional.conv2d(x, w, b)), 2)
                continue
            x = x.flatten(1)
            x = product(x, w, b) if product else torch.addmm(b, x, w.t())
            if i < len(layers) - 1:
                x = torch.relu(x)
        return x

    out = {"dense (torch)": torch_dense}
    arrays, _ = export.compact(run, image)
    # Linear weights stored input-major (x @ W^T with W^T contiguous: measured 0.18 against 0.23 ms at batch 256 for
    # the compact network; dense gains nothing from it), the first layer reading every input (export.compact_layers)
    small = [
        (torch.from_numpy(w if w.ndim == 4 else np.ascontiguousarray(w.T)), torch.from_numpy(b))
        for w, b in export.compact_layers(arrays)
    ]

    def compact(x):
        with torch.no_grad():
            return network(torch.from_numpy(x), small, product=lambda x, wt, b: torch.addmm(b, x, wt)).numpy()

    out["compact (torch)"] = compact
    if not run.conv:
        with warnings.catch_warnings():  # "sparse CSR support is in beta": known, and what is measured here
            warnings.simplefilter("ignore")
            sparse = [(w.to_sparse_csr(), b) for w, b in dense]

        def torch_csr(x):
            with torch.no_grad():
                return network(
                    torch.from_numpy(x), sparse, product=lambda x, w, b: torch.sparse.mm(w, x.t()).t() + b
                ).numpy()

        out["CSR (torch.sparse)"] = torch_csr
    if torch.cuda.is_available():  # end to end: the rows to the GPU and the logits back (.cpu() waits for the GPU)
        gpu = torch.device("cuda")
        on_gpu = {
            "dense (torch, cuda)": [(w.to(gpu), b.to(gpu)) for w, b in dense],
            "compact (torch, cuda)": [(wt.to(gpu), b.to(gpu)) for wt, b in small],
        }
        for label, layers in on_gpu.items():
            product = (lambda x, wt, b: torch.addmm(b, x, wt)) if "compact" in label else None

            def cuda(x, layers=layers, product=product):
                with torch.no_grad():
                    return network(torch.from_numpy(x).to(gpu), layers, product=product).cpu().numpy()

            out[label] = cuda
    arrays = export.csr(run)
    out["CSR (scipy.sparse)"] = lambda x: export.csr_predict(arrays, x, image)
    try:
        import onnxruntime as ort

        options = ort.SessionOptions()
        # no busy-waiting between calls: onnxruntime's spinning threads would otherwise slow the torch contenders
        # timed after it in this process
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        model = export.onnx_model(run, image)
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        out["onnxruntime (compact)"] = lambda x: session.run(["logits"], {"x": x})[0]
        # the same runtime on the uncompacted network: what is sparsity's and what the runtime's
        full = export.onnx_model(run, image, compact=False)
        full_session = ort.InferenceSession(full.SerializeToString(), options, providers=["CPUExecutionProvider"])
        out["onnxruntime (dense)"] = lambda x: full_session.run(["logits"], {"x": x})[0]
    except (ImportError, export.ExportError):
        pass
    return out


def measure(folder: Path, batches: list[int], seconds: float, data_root: str | None) -> tuple[str, list[tuple]]:
    """A header line saying what was measured, and rows (contender, batch, seconds per call, speed-up over dense)."""
    import torch

    from adrop import export

    run = export.read(folder)
    if not run.built_in:
        raise export.ExportError(
            f"bench-inference times the forms of adrop's built-in networks; "
            f"{run.summary.get('architecture')} is another network (adrop export --format onnx "
            "gives it to onnxruntime's own tools)"
        )
    x, _, image = export.test_split(run, data_root)
    x = np.ascontiguousarray(x, dtype=np.float32)
    forms = contenders(run, image)
    reference = forms["dense (torch)"](x[:256])
    for name, fn in forms.items():  # every form computes the same network
        if not np.allclose(fn(x[:256]), reference, atol=1e-3, rtol=1e-3):
            raise export.ExportError(f"{name} does not compute the dense network's logits")
    summary = run.summary
    header = (
        f"{folder}: {summary.get('method')}, {summary.get('architecture')}, nonzero "
        f"{summary.get('nonzero_fraction'):.4f}; torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"median over about {seconds:g} s of calls each"
    )
    rows = []
    for batch in batches:
        inputs = x[:batch]
        medians = timed_side_by_side({name: (lambda fn=fn: fn(inputs)) for name, fn in forms.items()}, seconds)
        base = medians["dense (torch)"]
        rows += [(name, batch, t, base / t) for name, t in medians.items()]
    return header, rows


def bench(folder: Path, batches: list[int], seconds: float, data_root: str | None) -> str:
    header, rows = measure(folder, batches, seconds, data_root)
    lines = [f"# {header}", f"{'contender':28s} {'batch':>5s} {'ms/call':>9s} {'examples/s':>12s} {'x dense':>8s}"]
    lines += [f"{name:28s} {batch:5d} {t * 1e3:9.3f} {batch / t:12.0f} {ratio:8.2f}" for name, batch, t, ratio in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = one_line.Parser(
        prog="adrop bench-inference",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.split("\n")[2:]),
    )
    p.add_argument("run", type=Path, help="a finished run's folder")
    p.add_argument("--batches", default="1,256", help="comma-separated batch sizes")
    p.add_argument("--seconds", type=float, default=1.0, help="about how long to time each contender")
    p.add_argument("--data", help="the folder that holds MNIST/raw/ (default: the run's data.root)")
    args = p.parse_args(argv)
    from adrop.export import ExportError

    try:
        batches = [int(b) for b in args.batches.split(",")]
        print(bench(args.run, batches, args.seconds, args.data))
    except (ExportError, ValueError) as err:
        print(f"adrop bench-inference: error: {err}", file=sys.stderr)
        return 2
    return 0
