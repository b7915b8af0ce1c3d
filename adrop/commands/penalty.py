"""`adrop penalty`: evaluate penalties, their duals and eta_hat; draw the paper's Figure 1.

    adrop penalty --list                                   the penalties, their parameters and defaults
    adrop penalty --method logsum,mcp --w 0,0.5,1,2        Omega(w) and eta_hat(w) for each scalar w
    adrop penalty --method lp --p 0.5 --vector 3,0,4       Omega and eta_hat of one (non-separable) vector
    adrop penalty --method variational_dropout --eta 0.1,1,10    the dual f(eta)
    adrop penalty --plot [--out DIR]                       Figure 1 (PNG, PDF) and penalties.csv
    adrop penalty --method variational_dropout --fit-logsum   the scaled LogSum(eps) nearest it on |w| <= 3, and
                                                           the gap of the paper's reading (LogSum(2) at lam = 2)

Parameters (--lam, --eps, --p, ...) go to every chosen method that has them; one that none of them has is an error.
Bad input ends with a one-line message and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from adrop import penalties
from adrop.commands import one_line
from adrop.outputs import claim, new_folder
from adrop.penalties import figure1

PARAMETERS = {  # option -> (type, help)
    "lam": (float, "lambda of the dropout penalties; the scale of SCAD and MCP"),
    "eps": (float, "epsilon of logsum and huber"),
    "p": (float, "p of lp and lpp, in (0, 2)"),
    "theta": (float, "theta of elastic_net, in [0, 1)"),
    "a": (float, "a of scad (> 2) and mcp (> 0)"),
    "k": (int, "k of hard_thresh and magnitude_pruning"),
    "beta": (float, "temperature of hard_concrete"),
    "gamma": (float, "lower stretch of hard_concrete (< 0)"),
    "zeta": (float, "upper stretch of hard_concrete (> 1)"),
    "w2": (float, "outgoing weight of standout"),
}
FIGURE_FILES = ["figure1.png", "figure1.pdf", "penalties.csv"]


class UsageError(Exception):
    """Bad input from the command line: reported in one line, exit status 2."""


def numbers(text: str, allow_inf: bool = False) -> np.ndarray:
    """Comma-separated finite numbers (NaN never; +inf only where it is a value of the calculus: eta = inf)."""
    try:
        values = np.array([float(v) for v in text.split(",") if v.strip()], dtype=np.float64)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    bad = np.isnan(values) | (np.isinf(values) & ~(allow_inf & (values > 0)))
    if bad.any():
        allowed = "finite numbers or inf" if allow_inf else "finite numbers"
        raise argparse.ArgumentTypeError(f"expected {allowed}, got {values[bad][0]:g} in {text!r}")
    return values


def etas(text: str) -> np.ndarray:
    return numbers(text, allow_inf=True)


def finite(text: str) -> float:
    value = float(text)
    if not np.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    p = one_line.Parser(
        prog="adrop penalty",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.split("\n")[2:]),
    )
    p.add_argument("--list", action="store_true", help="list the penalties and their parameters")
    p.add_argument("--method", help="comma-separated penalty names (default: those of Figure 1)")
    p.add_argument("--w", type=numbers, default=numbers("0,0.1,0.5,1,2,5"), help="scalar weights to evaluate")
    p.add_argument("--vector", type=numbers, help="one vector w (comma-separated) to evaluate as a whole")
    p.add_argument("--eta", type=etas, help="values of eta at which to print the dual f")
    p.add_argument("--weight", type=finite, default=1.0, help="lambda multiplying Omega in the figure (default 1)")
    p.add_argument("--approx", action="store_true", help="variational_dropout: Molchanov's KL approximation")
    for name, (kind, text) in PARAMETERS.items():
        p.add_argument(f"--{name}", type=finite if kind is float else kind, help=text)
    p.add_argument("--plot", action="store_true", help="draw Figure 1 (PNG and PDF) and write penalties.csv")
    p.add_argument(
        "--fit-logsum",
        action="store_true",
        help="the scaled LogSum(eps) nearest each chosen penalty on |w| <= 3 (least squares), with the gaps",
    )
    p.add_argument(
        "--group-size",
        type=int,
        default=1,
        metavar="N",
        help="a group of N weights: the penalty sqrt(N) Omega(||w_g||) of its norm (--w, --plot: the norm; "
        "structure=neuron's penalty)",
    )
    p.add_argument("--out", type=Path, help="folder for the files (default: a new folder under outputs/penalty/)")
    return p


def chosen(args) -> list[penalties.Penalty]:
    """The penalties named by --method, each with the command-line parameters it accepts."""
    names = [n.strip() for n in args.method.split(",") if n.strip()]
    given = {k: getattr(args, k) for k in PARAMETERS if getattr(args, k) is not None}
    if args.approx:
        given["approx"] = True
    for key in given:
        if not any(key in penalties.parameters(n) for n in names if n in penalties.REGISTRY):
            raise UsageError(f"--{key} applies to none of: {', '.join(names)}")
    pens = [penalties.get(n, **{k: v for k, v in given.items() if k in penalties.parameters(n)}) for n in names]
    if args.group_size == 1:
        return pens
    if args.vector is not None:
        raise UsageError("--group-size takes a group's norm as --w; --vector evaluates one vector of weights")
    from adrop.penalties.group import GroupPenalty

    return [GroupPenalty(p, args.group_size) for p in pens]


def listing() -> str:
    rows = []
    for name in penalties.names():
        cls = penalties.REGISTRY[name]
        params = (
            ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in penalties.parameters(name).items()
            )
            or "-"
        )
        kind = "closed form" if cls.closed_form else "numerical"
        rows.append((name, params, kind, cls.summary))
    table = pd.DataFrame(rows, columns=["name", "parameters (defaults)", "computed", "what"])
    return table.to_string(
        index=False, justify="left", formatters={c: f"{{:<{table[c].str.len().max()}}}".format for c in table.columns}
    )


def values_table(pens, w: np.ndarray) -> pd.DataFrame:
    rows = []
    for pen in pens:
        omega = pen.omega(w[:, None])  # each scalar as a vector of length one
        rows += [(pen.label(), x, o, e) for x, o, e in zip(w, omega, pen.eta_hat(w[:, None])[:, 0])]
    return pd.DataFrame(rows, columns=["penalty", "w", "omega", "eta_hat"])


def vector_table(pens, v: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(
        [(p.label(), float(p.omega(v)), np.array2string(p.eta_hat(v), precision=6)) for p in pens],
        columns=["penalty", "omega(vector)", "eta_hat(vector)"],
    )


def dual_table(pens, eta: np.ndarray) -> pd.DataFrame:
    rows = []
    for pen in pens:
        f = pen.f(eta[:, None])
        rows += [(pen.label(), e, v) for e, v in zip(eta, f)]
    return pd.DataFrame(rows, columns=["penalty", "eta", "f"])


def figure(args) -> Path:
    if args.method:
        specs = tuple(
            figure1.Curve(
                p.name,
                {k: v for k, v in p.params.items() if k != "group_size"},
                weight=args.weight,
                group_size=args.group_size,
            )
            for p in chosen(args)
        )
    elif args.group_size > 1:
        raise UsageError("--plot --group-size needs --method (separable penalties, e.g. logsum,l1,scad)")
    else:
        specs = figure1.PAPER + (figure1.HARD_THRESH,)
    out = claim(args.out, FIGURE_FILES) if args.out else new_folder("penalty")
    table = figure1.curves(specs)
    table.to_csv(out / "penalties.csv", index=False)
    fig = figure1.draw(table, specs)
    fig.savefig(out / "figure1.png", dpi=150)
    fig.savefig(out / "figure1.pdf")
    return out


def run(args) -> None:
    if args.list:
        print(listing())
        return
    if args.fit_logsum:
        if not args.method:
            raise UsageError("--fit-logsum needs --method (e.g. variational_dropout)")
        for pen in chosen(args):
            fit = figure1.fit_logsum(pen, weight=args.weight)
            print(
                f"{pen.label()} at lam={args.weight:g}, |w| <= {fit['w_max']:g}: nearest scaled LogSum is "
                f"{fit['scale']:.4f} * LogSum(eps={fit['eps']:.4f}), largest gap {fit['gap']:.4f} "
                f"({fit['relative_gap']:.1%} of its largest value); the paper's LogSum(2) at lam=2: largest gap "
                f"{fit['paper_gap']:.4f} ({fit['paper_relative_gap']:.1%})"
            )
        return
    if args.plot:
        out = figure(args)
        print(f"wrote {out / 'figure1.png'}, {out / 'figure1.pdf'} and {out / 'penalties.csv'}")
        return
    if not args.method:
        args.method = ",".join(spec.method for spec in figure1.PAPER)
    pens = chosen(args)
    separable = [p for p in pens if p.separable]
    tables = []
    if args.vector is not None:
        tables.append(("vector", vector_table(pens, args.vector)))
    else:
        if len(separable) < len(pens):
            skipped = ", ".join(p.name for p in pens if not p.separable)
            print(f"(not separable, evaluate with --vector: {skipped})")
        if separable:
            tables.append(("values", values_table(separable, args.w)))
    if args.eta is not None:
        tables.append(("dual", dual_table([p for p in pens if p.separable], args.eta)))
    with pd.option_context("display.float_format", "{:.6g}".format, "display.width", 120):
        for _, table in tables:
            print(table.to_string(index=False))
            print()
    if args.out:
        out = claim(args.out, [f"{name}.csv" for name, _ in tables])
        for name, table in tables:
            table.to_csv(out / f"{name}.csv", index=False)
        print(f"wrote {', '.join(str(out / f'{name}.csv') for name, _ in tables)}")


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)  # one_line.Parser exits 2 with a one-line message on bad options
    try:
        run(args)
    except (UsageError, ValueError, OSError) as err:  # also an --out that cannot be written
        print(f"adrop penalty: error: {one_line.said(err)}", file=sys.stderr)
        return 2
    return 0
