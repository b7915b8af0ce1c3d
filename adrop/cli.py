"""The `adrop` command: a small dispatcher over subcommands.

    adrop penalty --plot           Figure 1 of the paper, into a new folder under outputs/
    adrop penalty --list           the penalties and their parameters
    adrop train method=logsum      train with a sparsification method (a Hydra app)
    adrop report outputs/multirun/...   tables and figures from runs and sweeps
    adrop export outputs/runs/...       a finished run's sparse network (CSR, compact), checked against the run
    adrop <command> --help         help for one command

Each subcommand owns the rest of the command line (Hydra apps must see their own argv untouched), so the dispatcher
only picks the module and hands over the remaining arguments. Ctrl-C (SIGTERM) at any moment, while a subcommand
imports torch too, ends in one line and exit status 130 (143) (adrop.interrupts; the exit statuses: docs/guide.md,
"Errors, faults and exit codes").
"""

from __future__ import annotations

import gc
import importlib
import os
import signal
import sys

from adrop import interrupts

COMMANDS = {
    "penalty": ("adrop.commands.penalty", "the penalty calculus: Omega, f, eta_hat; --plot draws Figure 1"),
    "train": ("adrop.commands.train", "train a network with a sparsification method (Hydra: key=value overrides, -m)"),
    "report": ("adrop.commands.report", "turn runs and sweeps into the paper's tables and figures"),
    "export": (
        "adrop.commands.export",
        "a finished run's sparse network as CSR, a compact dense network or ONNX, checked",
    ),
    "bench-inference": ("adrop.commands.bench_inference", "measured inference speed of a run's dense and sparse forms"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: adrop <command> [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", "Run `adrop <command> --help` for the options of one command."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] in ("-V", "--version"):
        from adrop import __version__

        print(f"adrop {__version__}")
        return 0
    command, rest = argv[0], argv[1:]
    if command in ("-sc", "--shell-completion"):  # Hydra's completion script asks the program itself: `adrop train`'s
        if not completing_train():  # the command's name being typed: the commands; another's arguments: nothing
            words = (os.environ.get("COMP_LINE") or "").split(" ")
            if len(words) == 2:
                print(" ".join(c for c in COMMANDS if c.startswith(words[1])))
            return 0
        command, rest = "train", argv
    if command not in COMMANDS:
        print(f"adrop: unknown command {command!r}; valid commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    with interrupts.recorded():
        try:
            module = importlib.import_module(COMMANDS[command][0])
            return module.main(rest)
        except SystemExit:
            raise
        except BaseException as err:  # a stop the subcommand did not report itself (while torch imports, say), also
            if interrupts.STOPS or isinstance(err, KeyboardInterrupt):  # where a library turned it into another error
                return interrupts.said(f"adrop {command}", "; nothing was trained" if command == "train" else "")
            raise


def completing_train() -> bool:
    """Whether Hydra's completion (-sc) is for `adrop train`: installing it, or completing a line `adrop train ...`,
    then made what `adrop train`'s app reads, without the word `train` (Hydra takes the first word for the program
    and every other for an override)."""
    line, point = os.environ.get("COMP_LINE"), os.environ.get("COMP_POINT")
    if line is None:  # install=bash, uninstall=bash
        return True
    words = line.split(" ")
    if len(words) < 3 or words[1] != "train":  # still typing the command's name, or another command's arguments
        return False
    cut = len(words[0]) + 1 + len("train ")
    os.environ["COMP_LINE"] = words[0] + " " + line[cut:]
    if point and point.isdigit():
        os.environ["COMP_POINT"] = str(max(len(words[0]) + 1, int(point) - len("train ")))
    return True


def entry() -> None:
    """The `adrop` command as a process (the console script, `python -m adrop`): main(), then exit. The collector is
    frozen first: at exit its last passes over torch's objects took 0.23 s of every command here, for memory the
    ending process gives back anyway (main() itself, called in a process that goes on, leaves the collector alone).
    A stop said by the dispatcher ends the process at once (interrupts.exit_now), one during the exit quietly."""
    try:
        code = main()
    except KeyboardInterrupt:  # in the dispatcher itself, before a subcommand was chosen
        code = interrupts.said("adrop")
    if interrupts.SAID:
        interrupts.exit_now(code)
    for s in interrupts.SIGNALS:
        if signal.getsignal(s) in (signal.default_int_handler, signal.SIG_DFL):
            signal.signal(s, interrupts.while_exiting)
    gc.freeze()
    sys.exit(code)
