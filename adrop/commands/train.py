"""`adrop train`: train a network with one sparsification method (a Hydra 1.3 app).

    adrop train                                    dense LeNet-300-100 on MNIST, 10 epochs
    adrop train method=vardrop_lr_ar epochs=5      any method: adrop train --help lists them
    adrop train -m method=logsum,adaprox lam=1e-4,1e-3     a sweep (multirun), one folder per job
    adrop train experiment=paper_lenet300 method=eta_trick  the paper's settings (200 epochs)
    adrop train data.root=data data.train_limit=2000 device=cpu

Outputs go to outputs/runs/<time>/ (or outputs/multirun/<time>/<overrides>/): metrics.csv, layers.csv,
summary.json, weights.npz, checkpoint.pt. The folder is printed at the start and in the last line; rerunning the same
command with hydra.run.dir=<that folder> (a sweep: hydra.sweep.dir=<its folder>) resumes it, and an interrupted
command (Ctrl-C, SIGTERM) prints that command.

Promises (each tested): a folder that holds another run is refused before anything in it is written; a refused or
failed start of a single run leaves no folder behind; a sweep's job whose folder another command holds, training the
same run, is not trained twice and counts as that command leaves it; every error a user can cause is one line on
stderr, with the traceback only under HYDRA_FULL_ERROR=1. The exit status (the same table: docs/guide.md, "Errors,
faults and exit codes"; tests/test_faults.py tests each row):

    0    done: every run completed (a sweep: here, or in another command that held the job, or still training there)
    1    a run failed: a NaN or a diverging loss, a file that cannot be written, an error in adrop itself (a sweep:
         any job failed, also in another command that held it)
    2    refused, nothing trained: the command or its data is wrong (a key, a value, a --flag; data missing, not
         downloadable or malformed; a network that does not fit them; a folder that holds another run or is in use);
         a sweep: no job failed and one or more were refused
    130  interrupted by SIGINT (Ctrl-C), at any moment, while torch imports too
    143  interrupted by SIGTERM
"""

from __future__ import annotations

import os
import sys

from adrop import interrupts
from adrop.train import errors
from adrop.train.command import help_page


def main(argv: list[str] | None = None) -> int:
    """Entry point for the dispatcher. The help is composed without torch (adrop.train.command.help_page); everything
    else is the Hydra app (adrop.train.command.app), imported only then."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if help_page.requested(argv):
        shown = show_help(argv)
        if shown is not None:
            return shown
    with interrupts.deferred():  # torch imports here
        from adrop.train.command import app

    return app.main(argv)


def show_help(argv: list[str]) -> int | None:
    """The help's exit code, or None where the help template asks for Hydra's own fields (then Hydra prints it)."""
    try:
        code = help_page.show(argv)
    except BrokenPipeError:  # `adrop train --help | head`: the reader has gone, nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:  # Ctrl-C while the first help after an edit imports the methods
        return interrupts.said("adrop train", "; nothing was trained")
    except Exception as err:  # a wrong override: one line, as the app says it
        if os.environ.get("HYDRA_FULL_ERROR") == "1" or os.environ.get(errors.DEBUG) == "1":
            raise
        from adrop.train.config import refusals  # what the configuration needs, only where it was refused

        print(f"adrop train: error: {refusals.one_line(err)}", file=sys.stderr)
        return 2
    return None if code < 0 else code
