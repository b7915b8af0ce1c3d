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
from adrop.train.runtime import Interrupted


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
    """Resolve (`settings(cfg, method_choice)`), hold the folder (appended to `held`, for the caller to close once
    the job ends), claim it, and with `record` (a sweep's job) begin it. A job that ends here returns its result:
    with `record`, a failure is recorded in its folder (record_failure); without (a single run, begun by `train` once
    its data and network are accepted), nothing is written, and the result's `stage` says where it ended
    ("settings", "hold", "held", "claim", "taken": holding another run, "begin"): its command removes a folder it made
    only where the folder is not another command's."""
    run, stage = None, "settings"
    try:
        run = settings(job.cfg, job.method_choice)
        stage = "hold"
        # held first, then claimed: a folder that another command is setting up is in use, not "holds no run"
        hold = run_files.Held(job.folder)
        held.append(hold)
        stage = "claim"
        state = run_files.claim(job.folder, run.identity)
        if state == "completed":  # nothing to do there: the folder is let go at once
            held.remove(hold)
            hold.close()
            return {**run_files.read_summary(job.folder), "status": "completed"}
        if record:
            stage = "begin"
            begin(job, run)
    except run_files.FolderInUse as err:  # another command trains this very run: counted as it ends there
        return {"status": "held", "error": str(err), "method": job.cfg.method.name, "stage": "held"}
    except run_files.FolderTaken as err:  # nothing written: the folder is another run's, let go at once
        held.remove(hold)
        hold.close()
        return {"status": "refused", "error": str(err), "method": job.cfg.method.name, "stage": "taken"}
    except (KeyboardInterrupt, Interrupted):
        raise
    except Exception as err:  # its values refused (TrainError), a folder or file that cannot be written, or a bug
        refused = isinstance(err, (TrainError, ValueError))
        message = message_of(err, job.folder)
        if not record:
            status = "refused" if refused else "failed"
            return {"status": status, "error": message, "method": job.cfg.method.name, "stage": stage}
        return record_failure(job, message, run.identity if run else None, refused=refused)
    checkpoint = run_files.load_checkpoint(job.folder, "cpu") if state == "resume" else None
    return Started(run, state, checkpoint["epoch"] if checkpoint else 0)


def begin(job: Job, run: Settings) -> None:
    """The job's folder begun: .hydra/ and a pending summary (run_files.begin)."""
    run_files.begin(job.folder, run.cfg, job.hydra_cfg, job.overrides, job.cfg.method.name, run.identity)


def train(jobs: list[Job], runs: list[Settings], multirun: bool = True, on_start=None) -> list[dict]:
    """Train one stack of jobs (in this process or a launcher's worker) and return its jobs' summaries; a failure
    while training is recorded in each job's folder, never raised. A sweep's jobs were begun by `start`; a single
    run (not `multirun`) is begun here once the engine has accepted its data and network, and a start that fails
    before that writes nothing (its result's `stage`: "engine" or "begin"). `on_start(engine)` runs before the first
    step. What SIGTERM does while it trains is the caller's (runtime.sigterm_stops_training where the process is
    adrop's; a cluster job's own handler elsewhere)."""
    try:
        engine = Engine(runs, [job.folder for job in jobs], multirun=multirun)
        if not multirun:
            for job, run in zip(jobs, runs):
                begin(job, run)
    except (KeyboardInterrupt, Interrupted):
        raise
    except Exception as err:  # the data or network refused (TrainError, ValueError), a write, or a bug
        refused = isinstance(err, (TrainError, ValueError))
        message = message_of(err, jobs[0].folder)
        if not multirun:
            stage = "begin" if isinstance(err, run_files.WriteFailed) else "engine"
            status = "refused" if refused else "failed"
            return [{"status": status, "error": message, "method": j.cfg.method.name, "stage": stage} for j in jobs]
        return [record_failure(job, message, run.identity, refused=refused) for job, run in zip(jobs, runs)]
    if on_start is not None:
        on_start(engine)
    try:
        return engine.fit()
    except (KeyboardInterrupt, Interrupted):  # the engine recorded it in the stack's folders
        raise
    except Exception as err:
        return [record_failure(job, message_of(err, job.folder), run.identity) for job, run in zip(jobs, runs)]


def message_of(err: Exception, folder: Path) -> str:
    """An error in one line: a check's own message, a write the system refused in plain words
    (run_files.write_failed), else a bug (errors.bug: the traceback in the log and under HYDRA_FULL_ERROR=1)."""
    if isinstance(err, (TrainError, ValueError, run_files.WriteFailed)):
        return str(err)
    found = run_files.os_error(err)
    if found is not None and found.errno in run_files.WRITE_ERRNOS:
        return str(run_files.write_failed(folder, err))
    return errors.bug(err)


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
