"""`adrop report DIR [DIR ...]`: every run under the DIRs (runs, multiruns, folders of them) into a table and figures.

    adrop report outputs/multirun/paper_lenet300_e200            results.csv, results.md, figures
    adrop report outputs/multirun/... --paper --out docs/results/<topic>  with the paper's numbers beside ours
    adrop report outputs/multirun/sweep_a outputs/multirun/sweep_b   two sweeps in one table
    adrop report docs/results/e40 outputs/multirun/more  an earlier report's runs (their folders gone) and new ones
    adrop report --compare OLD NEW                      two sets of runs of the same configurations: do they land
                                                        in the same place (Welch's and the paired t-test per method)
    adrop report --equivalence logsum SWEEP [SWEEP ...]  each other group against logsum's, paired by seed: two
                                                        one-sided tests within --margin, the kept weights' overlap
    adrop report --matched FOLDER [FOLDER ...] --target 0.02   every method at one sparsity, one FOLDER a method
                                                        (scripts/reproduce/matched_sparsity.sh's): its search's
                                                        answer, its seeds' errors, what the search cost

Writes into --out (default: a new folder outputs/reports/<time>/ here), never over existing files:
  results.csv    one row per run: run folder, overrides, status, method, lam, lr, seed, epochs, test_error,
                 val_error, nonzero_fraction, nonzero_<layer>, wall_time_s, device, error
  histories.csv  one row per run and epoch: its metrics.csv (loss, val_error, nonzero_fraction, lr, seconds) and
                 nonzero_<layer>, units_<layer>: the curves of the figures
  results.md     the table in the layout of the paper's Tables 4 and 5 (mean ± std over seeds), unfinished runs below
  figure2.png    validation error against fraction nonzero over training (the paper's Figure 2)
  pareto.png     final test error against fraction nonzero
  layers.png     per-layer fraction nonzero over epochs
  units.png      the units (filters) each layer keeps over epochs
With --compare, comparison.csv instead (adrop.report.compare: per method and metric the means, standard deviations,
difference, Welch's p and, over shared seeds, the paired p), also printed; OLD and NEW are folders or results.csv files.
With --equivalence REFERENCE, differences.csv, tost.csv and jaccard.csv instead (adrop.report.equivalence).
With --matched, matched.csv instead (adrop.report.matched), its markdown table printed.
Unfinished sweeps are fine: running and failed jobs are reported as such. A DIR holding an earlier report
(results.csv, histories.csv where kept, no run folder under it) brings in the runs it reported, named under it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adrop.commands import one_line
from adrop.outputs import claim, new_folder
from adrop.report import FILES, HISTORIES_CSV, RESULTS_CSV

COMPARISON_CSV = "comparison.csv"


def parser():
    p = one_line.Parser(
        prog="adrop report",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.split("\n")[2:]),
    )
    p.add_argument(
        "dir",
        type=Path,
        nargs="+",
        help="run folders, sweep folders, any folders above runs, or an earlier report's folder (with "
        "--compare: two, each also a results.csv)",
    )
    p.add_argument("--out", type=Path, help="output folder (default: outputs/reports/<time>/)")
    p.add_argument(
        "--paper",
        action="store_true",
        help="set the published numbers beside ours: the paper's LeNet-300-100 rows; in the figure also "
        "Sparse VD's point, and for LeNet-5 runs the Sparse VD paper's Table 1",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="compare two sets of runs (OLD NEW) per method: Welch's and the paired t-test",
    )
    p.add_argument(
        "--equivalence",
        metavar="REFERENCE",
        help="each other group against this one (a report label, or a method with one group), paired by "
        "seed: two one-sided tests of test error within --margin, and the kept weights' overlap",
    )
    p.add_argument(
        "--margin",
        type=float,
        default=0.001,
        help="--equivalence: the margin in test error (default 0.001: 0.1 points)",
    )
    p.add_argument(
        "--matched",
        action="store_true",
        help="every method at one sparsity (--target): one DIR per method, holding its lam search's tables "
        "(search*.csv) and results.csv",
    )
    p.add_argument("--target", type=float, help="--matched: the target fraction of nonzero weights")
    p.add_argument("--epochs", type=int, default=200, help="--matched: a full run's epochs (default 200)")
    p.add_argument("--tolerance", type=float, default=0.05, help="--matched: relative (default 0.05, lam_search's)")
    p.add_argument(
        "--max-val-error",
        type=float,
        default=0.5,
        help="--matched: seed 0's run erring more on validation failed at the target (default 0.5)",
    )
    p.add_argument(
        "--pool",
        type=Path,
        action="append",
        default=[],
        metavar="EARLIER_OUT",
        help="--equivalence: an earlier output folder whose per-seed rows join the new runs' (repeatable)",
    )
    return p


def equivalent(args) -> list[Path]:
    from adrop.report import equivalence

    if args.compare:
        raise ValueError("--compare and --equivalence are two reports: ask for one")
    try:  # computed first, written into a folder made only then
        if args.out is not None:
            claim(args.out, equivalence.FILES)  # --out taken: refused before the work
        text, frames = equivalence.compute(args.dir, args.equivalence, args.margin, args.pool)
        written = equivalence.write(args.out or new_folder("reports"), frames)
    except equivalence.ERRORS as err:
        raise ValueError(str(err)) from None
    print(text)
    return written


def compared(args) -> list[Path]:
    from adrop.report import compare

    if len(args.dir) != 2:
        raise ValueError(f"--compare takes two sets of runs, OLD and NEW, got {len(args.dir)}")
    for source in args.dir:
        if not (source.is_dir() or (source.suffix == ".csv" and source.is_file())):
            raise FileNotFoundError(f"{source} is neither a folder nor a results.csv")
    old, new = (compare.completed(source) for source in args.dir)
    table = compare.compare(old, new)
    if table.empty:
        raise ValueError(f"no method has completed runs in both {args.dir[0]} and {args.dir[1]}")
    out = claim(args.out, [COMPARISON_CSV]) if args.out else new_folder("reports")
    table.to_csv(out / COMPARISON_CSV, index=False)
    print(compare.printed(table))
    return [out / COMPARISON_CSV]


def matched(args) -> list[Path]:
    from adrop.report import matched as matched_table

    if args.target is None:
        raise ValueError("--matched needs --target (the fraction of nonzero weights the methods were searched for)")
    if args.out is not None:
        claim(args.out, [matched_table.MATCHED_CSV])  # --out taken: refused before the work
    text, table = matched_table.compute(args.dir, args.target, args.tolerance, args.epochs, args.max_val_error)
    out = args.out or new_folder("reports")
    with open(out / matched_table.MATCHED_CSV, "x", newline="", encoding="utf-8") as fh:  # never over a file
        table.to_csv(fh, index=False)
    print(text)
    return [out / matched_table.MATCHED_CSV]


def run(args) -> list[Path]:
    from adrop.report import collect, figures, paper, tables

    if args.matched:
        return matched(args)
    if args.equivalence is not None:
        return equivalent(args)
    if args.compare:
        return compared(args)
    for folder in args.dir:
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder} is not a folder")
    table = collect.results(args.dir)
    for skipped in table.attrs.get("skipped", []):
        print(f"adrop report: skipped {skipped}", file=sys.stderr)
    if table.attrs.get("repeated"):
        print(
            f"adrop report: {table.attrs['repeated']} reported run(s) read already, from their folders or another "
            "report, counted once",
            file=sys.stderr,
        )
    out = claim(args.out, FILES) if args.out else new_folder("reports")
    table.to_csv(out / RESULTS_CSV, index=False)
    history = collect.histories(args.dir, table)
    tables.histories_table(history).to_csv(out / HISTORIES_CSV, index=False)
    (out / "results.md").write_text(tables.markdown_table(table, with_paper=args.paper))
    figures.figure2(table, history, out / "figure2.png")
    models = set(table.model.fillna(""))
    lenet300 = bool(models & set(paper.MODELS))  # the paper's points mean nothing beside LeNet-5 alone
    figures.pareto(
        table,
        out / "pareto.png",
        reference=paper.table() if args.paper and lenet300 else None,
        published=paper.published(models) if args.paper else (),
    )
    figures.layers(table, history, out / "layers.png")
    figures.units(table, history, out / "units.png")
    counts = table.status.value_counts().to_dict()
    print(
        f"{len(table)} runs under {', '.join(map(str, args.dir))}: "
        + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    )
    return [out / name for name in FILES]


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.paper and (args.compare or args.equivalence is not None):
        p.error("--paper belongs to the report of runs, not to --compare or --equivalence")
    if args.equivalence is None and (args.margin != 0.001 or args.pool):
        p.error("--margin and --pool belong to --equivalence")
    if args.matched and (args.compare or args.equivalence is not None or args.paper):
        p.error("--matched is a report of its own: not with --compare, --equivalence or --paper")
    matched_only = args.target is not None or args.epochs != 200 or args.tolerance != 0.05 or args.max_val_error != 0.5
    if matched_only and not args.matched:
        p.error("--target, --epochs, --tolerance and --max-val-error belong to --matched")
    try:
        written = run(args)
    except (OSError, ValueError) as err:  # a missing folder, an --out taken or not writable
        print(f"adrop report: error: {one_line.said(err)}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.absolute()}")
    return 0
