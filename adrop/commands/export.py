"""`adrop export RUN_DIR`: a finished run's sparse network as files a user can ship (adrop.export).

    adrop export outputs/runs/<time>                          csr: <run>/export/network.csr.npz
    adrop export outputs/runs/<time> --format compact         the smaller dense network, its architecture printed
    adrop export outputs/runs/<time> --format onnx            an ONNX model onnxruntime runs
                                                              (pip install -e '.[export]')
    adrop export outputs/runs/<time> --out model.npz --data data
    adrop export --check outputs/multirun/<time> [DIR ...]    every completed run under the DIRs exported (in --format,
                                                              here onnx by default) into a temporary folder: checked

Each export recomputes the run's test error from the exported arrays alone and is written only if it equals the run's
summary.json test_error. A run that is not finished, a folder that is not a run, an output file that exists, or an
export that does not reproduce its run: one line on stderr, exit 2. --check says one line per run and a last line;
it exits 1 where any export failed, 2 where the DIRs hold no completed run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from adrop.commands import one_line

FORMATS = ("csr", "compact", "onnx")
SUFFIX = {"csr": "csr.npz", "compact": "compact.npz", "onnx": "onnx"}


def parser() -> argparse.ArgumentParser:
    p = one_line.Parser(
        prog="adrop export",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.split("\n")[2:]),
    )
    p.add_argument("run", type=Path, nargs="+", help="a finished run's folder (with --check: folders of runs)")
    p.add_argument("--format", choices=FORMATS, help="csr (the default), compact or onnx (--check's default)")
    p.add_argument("--out", type=Path, help="output file (default: <run>/export/network.<format>.npz); never replaced")
    p.add_argument("--data", help="the folder that holds MNIST/raw/ (default: the run's data.root)")
    p.add_argument(
        "--check",
        action="store_true",
        help="export every completed run under the folders into a temporary folder: does each reproduce "
        "its test error?",
    )
    return p


def run(args) -> str:
    from adrop import export

    args.format = args.format or "csr"
    if len(args.run) != 1:
        raise export.ExportError(f"adrop export takes one run folder, got {len(args.run)} (--check takes several)")
    run_dir = args.run[0]
    finished = export.read(run_dir)
    out = args.out or run_dir / "export" / f"network.{SUFFIX[args.format]}"
    if out.exists():
        raise FileExistsError(f"{out} exists; adrop never overwrites: choose another --out")
    if args.format == "compact":
        export.check_compact(finished)  # refused before the data is read, where the network has no compact form
    data = export.test_data(finished, args.data)
    x, y, image, classes = data.test.x.numpy(), data.test.y.numpy(), data.image, data.classes
    shape = export.input_shape(finished, x, image)
    if args.format == "csr":
        arrays, note = export.csr(finished), f"architecture {finished.summary.get('architecture')}"
        if finished.built_in:
            logits = export.csr_predict(arrays, x, image)
        else:  # a fresh instance of the user's module, loaded from the file's arrays alone
            module = export.module_of(finished, export.csr_state(arrays), shape, classes)
            logits = export.module_predict(module, x, shape)
        error = export.check(finished, logits, y, "csr")
    elif args.format == "compact":
        arrays, note = export.compact(finished, image)
        error = export.check(finished, export.compact_predict(arrays, x), y, "compact")
    else:
        if finished.built_in:
            model = export.onnx_model(finished, image)
            note = f"compact network {export.compact(finished, image)[1]}"
        else:
            module, went = export.without_dead_heads(export.module_of(finished, finished.state, shape, classes))
            model = export.onnx_of_module(module, shape, tokens=np.issubdtype(x.dtype, np.integer))
            note = f"{finished.summary.get('architecture')}, input x of shape N x {' x '.join(map(str, shape))}" + (
                f"; {went}" if went else ""
            )
            x = x.reshape(-1, *shape)
        error = export.check(finished, export.onnx_predict(model, x), y, "onnx")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "xb") as fh:  # "x": created here, never over another file
        if args.format == "onnx":
            fh.write(export.with_metadata(model, finished).SerializeToString())
        else:
            np.savez(fh, **arrays)
    return f"wrote {out} ({args.format}, {out.stat().st_size:,} bytes; {note}); {error}, as the run's"


def check(args) -> int:
    """--check: each completed run under the folders exported into a temporary folder; one line each."""
    import json
    import tempfile

    from adrop.export import ExportError

    missing = [str(folder) for folder in args.run if not Path(folder).is_dir()]
    if missing:
        print(f"adrop export: error: {missing[0]} is not a folder", file=sys.stderr)
        return 2
    summaries = sorted(p for folder in args.run for p in Path(folder).rglob("summary.json"))
    completed, skipped, failed = [], 0, 0
    for path in summaries:
        try:
            done = json.loads(path.read_text()).get("status") == "completed"
        except (OSError, ValueError):
            done = False
        if done:
            completed.append(path.parent)
        else:
            skipped += 1
    if not completed:
        print(f"adrop export: error: no completed run under {', '.join(map(str, args.run))}", file=sys.stderr)
        return 2
    fmt = args.format or "onnx"
    with tempfile.TemporaryDirectory() as tmp:
        for i, folder in enumerate(completed):
            out = Path(tmp) / f"{i}.{SUFFIX[fmt]}"
            try:
                said = run(argparse.Namespace(run=[folder], format=fmt, out=out, data=args.data))
                print(f"{folder}: {said.replace(f'wrote {out} ', 'exported ')}", flush=True)
            except Exception as err:  # any run that cannot be exported is counted; the others are checked all the same
                failed += 1
                said = one_line.said(err) if isinstance(err, (ExportError, OSError)) else f"{type(err).__name__}: {err}"
                print(f"{folder}: FAILED: {' '.join(said.split())[:300]}", flush=True)
    verdict = "each export reproduces its run's test error" if not failed else f"{failed} exports FAILED"
    print(f"{len(completed)} completed runs checked ({fmt}), {skipped} not completed skipped: {verdict}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from adrop.export import ExportError

    if args.check:
        if args.out is not None:
            print("adrop export: error: --check writes into a temporary folder; it takes no --out", file=sys.stderr)
            return 2
        return check(args)
    try:
        print(run(args))
    except (ExportError, OSError) as err:  # also an --out that cannot be written
        print(f"adrop export: error: {one_line.said(err)}", file=sys.stderr)
        return 2
    return 0
