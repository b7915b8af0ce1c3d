"""A job's lifecycle, the same whichever launcher runs it (a single run, the basic and joblib launchers, the stacked
launcher, submitit and SLURM): its settings resolved, its folder held (no second command trains there) and claimed
(new, resumed, retried, or completed already), begun (.hydra/ and a pending summary), trained through the engine in
a stack (of one, for a single run or one job of the basic launcher), and a failure recorded in its folder.

`start` and `train` end a job in a result dict rather than raising: its `status` says how it ended ("refused": its
values, data or folder; "failed": a file that cannot be written, or training; "held": another command trains it;
"completed"), its `error` why. What a command says of it, and its exit status, are the command's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adrop.train import errors
from adrop.train.config.settings import Settings, resolve
from adrop.train.errors import TrainError
from adrop.train.loop.engine import Engine
from adrop.train.run_folder import run_files
from adrop.train.runtime import Interrupted, sigterm_stops_training


@dataclass
class Job:
    cfg: object
    folder: Path
    hydra_cfg: object
    overrides: list
    method_choice: str | None


@dataclass
class Started:
    """A job ready to train: its settings, the state of its folder ("new", "resume", "retry") and the epoch it
    resumes from."""

    run: Settings
    state: str
    epoch: int


def start(job: Job, held: list, record: bool = True, settings=resolve) -> Started | dict:
    """Resolve (`settings(cfg, method_choice)`; a single run's were resolved before its folder existed), hold the
    folder (appended to `held`, for the caller to close once the job ends), claim it, begin it. A job that ends here
    returns its result: with `record`, a failure is recorded in its folder (record_failure); without, nothing is
    written (a single run's start leaves no trace)."""
    hold = run = None
    try:
        run = settings(job.cfg, job.method_choice)
        # held first, then claimed: a folder that another command is setting up is in use, not "holds no run"
        hold = run_files.Held(job.folder)
        state = run_files.claim(job.folder, run.identity)
        if state == "completed":
            hold.close()
            return {**run_files.read_summary(job.folder), "status": "completed"}
        held.append(hold)
        run_files.begin(job.folder, run.cfg, job.hydra_cfg, job.overrides, job.cfg.method.name, run.identity)
    except (TrainError, run_files.WriteFailed) as err:
        refused = isinstance(err, TrainError)
        if not record:
            return {"status": "refused" if refused else "failed", "error": str(err), "method": job.cfg.method.name}
        return record_failure(job, str(err), run.identity if run else None, refused=refused)
    except run_files.FolderInUse as err:  # another command trains this very run: counted as it ends there
        return {"status": "held", "error": str(err), "method": job.cfg.method.name}
    except run_files.FolderTaken as err:  # nothing written: the folder is another run's
        hold.close()
        return {"status": "refused", "error": str(err), "method": job.cfg.method.name}
    checkpoint = run_files.load_checkpoint(job.folder, "cpu") if state == "resume" else None
    return Started(run, state, checkpoint["epoch"] if checkpoint else 0)


def train(jobs: list[Job], runs: list[Settings], multirun: bool = True, on_start=None) -> list[dict]:
    """Train one stack of begun jobs (in this process or a launcher's worker) and return its jobs' summaries; a
    failure is recorded in each job's folder, never raised (a single run, not `multirun`, refused before its first
    step writes nothing: its command removes what it made). `on_start(engine)` runs once the engine holds the data
    and networks, before the first step."""
    record = multirun
    with sigterm_stops_training():
        try:
            engine = Engine(runs, [job.folder for job in jobs], multirun=multirun)
        except (TrainError, ValueError) as err:  # the data or network refused
            if not record:
                return [{"status": "refused", "error": str(err), "method": j.cfg.method.name} for j in jobs]
            return [record_failure(job, str(err), run.identity, refused=True) for job, run in zip(jobs, runs)]
        except (KeyboardInterrupt, Interrupted):
            raise
        except Exception as err:
            return fail_all(jobs, runs, err)
        if on_start is not None:
            on_start(engine)
        try:
            return engine.fit()
        except (KeyboardInterrupt, Interrupted):  # the engine recorded it in the stack's folders
            raise
        except Exception as err:
            return fail_all(jobs, runs, err)


def fail_all(jobs: list[Job], runs: list[Settings], err: Exception) -> list[dict]:
    """Every job of a stack failed with `err`: said in plain words (a write the system refused, a check's message),
    else as a bug (one line; the traceback in the log and under HYDRA_FULL_ERROR=1)."""
    if isinstance(err, (TrainError, ValueError, run_files.WriteFailed)):
        message = str(err)
    else:
        found = run_files.os_error(err)
        write = found is not None and found.errno in run_files.WRITE_ERRNOS
        message = str(run_files.write_failed(jobs[0].folder, err)) if write else errors.bug(err)
    return [record_failure(job, message, run.identity) for job, run in zip(jobs, runs)]


def record_failure(job: Job, message: str, identity: dict | None = None, refused: bool = False) -> dict:
    """The job failed, or was `refused` (its values or data): its folder says why (summary.json, status failed),
    and what it returns says which. A job refused before its folder was claimed (identity None) writes nothing into a
    folder that holds a run already; nor does a folder that cannot be written."""
    status = "refused" if refused else "failed"
    failure = {"status": status, "error": message, "method": job.cfg.method.name}
    if identity is None and (job.folder / run_files.SUMMARY).exists():
        return failure
    try:
        run_files.make_folder(job.folder)
        run_files.write_config(job.folder, job.cfg, job.hydra_cfg, job.overrides)
        return {**run_files.mark_failed(job.folder, message, job.cfg.method.name, identity), "status": status}
    except (OSError, run_files.WriteFailed):
        return failure
