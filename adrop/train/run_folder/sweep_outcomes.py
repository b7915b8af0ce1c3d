"""What a sweep's jobs ended as, and what each returns to the sweeper, whichever sweeper and launcher ran them.

A job returns its `objective` (conf/config.yaml; default val_error; a list for several objectives) as a float, or a
tuple of floats: what Hydra's sweepers that optimise (Optuna's) take. A job that did not complete returns why, as a
string: Optuna's sweeper then records a failed trial (with optuna 2.10, which its plugin pins, a NaN would stop the
whole sweep: it tells the NaN, the trial becomes failed, and telling the failure again raises). The test error is
never an objective: a search that looks at the test set reports a biased test error.

How the jobs ended is read from the jobs themselves: those this process ran (the basic and stacked launchers) say so
here (`record`); those that ran elsewhere (joblib's workers, a cluster) left summary.json files in their folders, read
when the sweep ends: the folders adrop's sweepers launched (`launched`), or with another sweeper those written in the
sweep folder since the sweep began. So `adrop train -m` exits non-zero, naming the failures, under any sweeper.

A job is "refused" where its values, its data or its folder were (nothing trained: the command's exit status is then
2 unless another job failed), and "held" where another command holds its folder, training the same run: when the
sweep ends it counts as that command has left it (`held_ends`): completed, failed, or still training there.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

OBJECTIVES = ("val_error", "nonzero_fraction", "nonzero", "sparse_macs", "csr_bytes", "wall_time_s")
# val_error names the run's task's objective on validation: the error, a regression's RMSE, a language model's
# perplexity; a task's other metrics by their own names (val_r2, val_loss)
SWEEP: dict = {}  # this command's sweep: {"dir": its folder, "since": when it began}
OUTCOMES: dict = {}  # job folder (absolute) -> "completed", "failed", "refused", "held" or "interrupted", for jobs
#                       run here
JOBS: set = set()  # the folders of every job this command launched, where its sweeper says (adrop's sweepers)
RETURNED: dict = {}  # job folder -> why it did not complete, in its own words, for jobs that ran elsewhere
SAID: set = set()  # the reasons this sweep's jobs have said on stderr: each is said once
HELD = "held by another command, which is training it; this sweep counts how it ends there"  # a held job's line


def objectives(objective, task: str = "classification") -> list[str]:
    """The objective's names, checked for the task's results (ValueError, one line)."""
    from adrop.train.tasks import get

    names = [objective] if isinstance(objective, str) else list(objective)
    valid = [*OBJECTIVES, *(f"val_{m}" for m in get(task).metrics if f"val_{m}" not in OBJECTIVES)]
    for name in names:
        if name.startswith("test_"):
            raise ValueError(
                f"objective={name}: a search that looks at the test set reports a biased test error; "
                "use val_error (the test error stays in every summary.json)"
            )
        if name not in valid:
            raise ValueError(f"objective={name} is not a run's result; valid: {', '.join(valid)}")
    if not names:
        raise ValueError("objective names no result; valid: " + ", ".join(valid))
    return names


def validation(summary: dict) -> float | None:
    """A run's objective on validation (val_error; a regression's val_rmse, a language model's val_perplexity)."""
    from adrop.train.tasks import of

    return summary.get(f"val_{of(summary).metrics[0]}")


def value(summary: dict, objective):
    """The job's return value: its objective(s) from its summary; where the run did not complete, why (a string)."""
    if summary.get("status") != "completed":
        return f"{summary.get('status') or 'failed'}: {summary.get('error') or 'see its summary.json'}"[:300]

    def one(name):
        if name in ("sparse_macs", "csr_bytes"):
            return float((summary.get("cost") or {}).get(name, math.nan))
        found = validation(summary) if name == "val_error" else summary.get(name)
        return math.nan if found is None else float(found)

    names = objectives(objective, summary.get("task") or "classification")
    values = tuple(one(n) for n in names)
    return values[0] if len(values) == 1 else values  # one objective: a number, as a one-direction sweeper takes


def returned(summary: dict, objective):
    """value(), or why not for an objective that is no result (the job was refused for it when it started)."""
    try:
        return value(summary, objective)
    except ValueError as err:
        return f"failed: {err}"


def clear() -> None:
    """No sweep: what a command starts from (a process may run several, the tests')."""
    for state in (SWEEP, OUTCOMES, JOBS, RETURNED, SAID):
        state.clear()


def begin(sweep_dir) -> None:
    clear()
    SWEEP.update(dir=os.path.abspath(sweep_dir), since=time.time())  # as Hydra writes job folders: no ".."


def first_time(reason: str) -> bool:
    """Whether a job's reason for not completing is new to this sweep (then it is said, and remembered)."""
    if reason in SAID:
        return False
    SAID.add(reason)
    return True


def folder_of(ret) -> Path:
    """A launched job's folder, from what its launcher returned (a Hydra JobReturn)."""
    output = ret.hydra_cfg.hydra.runtime.get("output_dir") if ret.hydra_cfg is not None else None
    return Path(output or ret.working_dir)


def launched(returns) -> None:
    """The sweeper's word on which jobs are this command's: only they are counted, not those that another command
    starts in the same sweep folder meanwhile. What a job that ran elsewhere returned when it did not complete
    (`value`: "refused: ...", "failed: ...") is its word on why: a refused job's folder holds another run's summary."""
    for ret in returns:
        folder = os.path.abspath(folder_of(ret))
        JOBS.add(folder)
        said = getattr(ret, "_return_value", None)
        if isinstance(said, str) and folder not in OUTCOMES:
            RETURNED[folder] = said


def held_ends(ended: dict) -> dict:
    """{folder: {"status": ..., "error": ...}} of each job that another command held (status "held"), as that
    command has left it by now: "training" while a process still holds the folder, else its summary.json's status
    and error ("failed" where there is none)."""
    from adrop.train.run_folder import run_files

    out = {}
    for folder, status in ended.items():
        if status != "held":
            continue
        if run_files.in_use(Path(folder)):
            out[folder] = {"status": "training"}
            continue
        try:
            summary = run_files.read_summary(Path(folder)) or {}
        except (OSError, ValueError):
            summary = {}
        out[folder] = {
            "status": summary.get("status") or "failed",
            "error": summary.get("error") or (None if summary else "no summary.json"),
        }
    return out


def record(folder, status: str | None) -> None:
    OUTCOMES[os.path.abspath(folder)] = status or "failed"


def outcomes() -> dict:
    """Every job of this sweep and how it ended: those run here, and the others by their summary.json (in the folders
    launched; where no sweeper said which, those in the sweep folder written since the sweep began)."""
    out = dict(OUTCOMES)
    out.update({folder: said.split(":", 1)[0] for folder, said in RETURNED.items() if folder not in out})
    if JOBS:  # the sweeper said which jobs are this command's
        paths = [Path(folder) / "summary.json" for folder in JOBS if folder not in out]
    elif SWEEP.get("dir"):  # another sweeper (Optuna's): the summaries written in the sweep folder since it began
        paths = [
            path
            for path in Path(SWEEP["dir"]).glob("**/summary.json")
            if os.path.abspath(path.parent) not in out and path.stat().st_mtime >= SWEEP["since"] - 1
        ]
    else:
        paths = []
    for path in paths:
        try:
            out[os.path.abspath(path.parent)] = json.loads(path.read_text()).get("status", "failed")
        except (OSError, ValueError):  # no summary: the job never started its run
            out[os.path.abspath(path.parent)] = "failed"
    return out
