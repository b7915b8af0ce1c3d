"""Stacks as cluster jobs: the stacked launcher's stacks, each submitted as one submitit job (all of them one job
array), for `hydra/launcher=stacked_slurm` and `stacked_submitit_local` (the Hydra side:
hydra_plugins/adrop_plugins/stacked_submitit.py).

Each job keeps the run-folder contract: it checks and holds its folders itself (the flock, on the node that trains),
records `stacked` in summary.json and resumes what is unfinished. A preempted or timed-out job (submitit's signal,
USR2 by default) stops at once, its runs marked interrupted after their last checkpoint, and is requeued (at most
`max_num_timeout` times for timeouts); the requeued job resumes each configuration from that checkpoint.
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

from omegaconf import OmegaConf

from adrop.train import runtime
from adrop.train.loop import lifecycle
from adrop.train.run_folder import run_files
from adrop.train.runtime import Interrupted, raise_interrupted
from adrop.train.sweep import stacked_jobs

POLL_S = 1.0  # how often the command asks whether a job has ended


class TrainStack:
    """What one submitit job runs: one stack, trained in the job's process. Checkpointable: submitit's preemption
    signal stops the training (the runs' files say so), then submitit requeues this same call (`checkpoint`)."""

    def __init__(self, logging_config: Any, verbose: Any, threads: int | None) -> None:
        self.logging_config, self.verbose, self.threads = logging_config, verbose, threads

    def __call__(self, jobs: list) -> list[dict]:
        import submitit
        import torch
        from hydra.core.utils import configure_log

        configure_log(OmegaConf.create(self.logging_config), self.verbose)
        runtime.SIGTERM_IS_THE_CLUSTERS.append(True)
        if self.threads:
            torch.set_num_threads(self.threads)
        preempted = submitit.JobEnvironment._usr_sig()
        requeue = signal.getsignal(preempted)  # submitit's: checkpoint and requeue (or fail: timed out too often)
        signal.signal(preempted, raise_interrupted)
        try:
            return stacked_jobs.run(jobs, max_stack=len(jobs), n_jobs=1)
        except Interrupted as stop:
            if stop.args[0] == preempted and callable(requeue):
                requeue(preempted, None)  # exits this process, requeued; raises if it may not be
            raise
        finally:
            signal.signal(preempted, requeue)

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)


def submit(
    executor, kind: str, jobs: list, max_stack: int | None, device: str | None, train: TrainStack, folder: str
) -> list[dict]:
    """Train `jobs` (lifecycle.Job) as stacks, one submitit job each, and wait for them: every job's summary.
    Jobs decided without training (failed checks, a folder that holds another run, a completed run) are not sent.
    `device` ("cpu", "cuda" or None: this machine's) sets the default stack size (stacked_jobs.default_max_stack)."""
    results, runs, groups = stacked_jobs.examine(jobs)
    stacks = stacked_jobs.plan(jobs, runs, groups, max_stack, 1, device)
    if not stacks:
        return results
    submitted = executor.map_array(train, [[jobs[i] for i in stack] for stack in stacks])
    print(
        f"stacked launcher: {len(submitted)} {kind} job{'s' if len(submitted) > 1 else ''} submitted "
        f"({', '.join(job.job_id for job in submitted)}); their logs: {folder}",
        flush=True,
    )
    pending = dict(enumerate(submitted))
    try:
        while pending:  # each stack's lines as its job ends
            for n, job in list(pending.items()):
                if job.done():
                    del pending[n]
                    for i, summary in zip(
                        stacks[n],
                        outcome(job, [jobs[i] for i in stacks[n]], [runs[i].identity for i in stacks[n]], kind),
                    ):
                        results[i] = summary
                        stacked_jobs.tell(jobs[i], summary, f"{kind} job {job.job_id}, stack {n + 1} of {len(stacks)}")
            if pending:
                time.sleep(POLL_S)
    except BaseException:  # Ctrl-C, SIGTERM: the jobs still queued or training stop too (rerun the command to resume)
        for job in pending.values():
            job.cancel(check=False)
        if pending:
            print(
                f"stacked launcher: cancelled {len(pending)} {kind} job{'s' if len(pending) > 1 else ''}",
                file=sys.stderr,
                flush=True,
            )
        raise
    return results


def outcome(job, jobs: list, identities: list, kind: str) -> list[dict]:
    """A finished submitit job's summaries; if it ended without a result (killed, timed out too often, a bug), what
    its runs' folders say (`ended`)."""
    try:
        return job.results()[0]
    except Exception as err:
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]  # a traceback: its last line says why
        why = f"its {kind} job {job.job_id} ended without a result ({lines[-1][:200] if lines else type(err).__name__})"
        return [ended(j, why, identity) for j, identity in zip(jobs, identities)]


def ended(job, why: str, identity: dict) -> dict:
    """A run whose cluster job ended without a result: what its folder says where the run recorded how it ended
    (completed, failed, interrupted); failed, with `why`, where it did not (the process was killed)."""
    summary = run_files.read_summary(job.folder) or {}
    if summary.get("status") in ("completed", "failed", "interrupted"):
        return summary
    return lifecycle.record_failure(job, why, identity)


def slurm_device(device: str, params: dict) -> str:
    """Where a SLURM job trains (for the default stack size): the device asked for, or with device=auto a GPU where
    the job requests one."""
    if device != "auto":
        return "cpu" if device == "cpu" else "cuda"
    gpus = params.get("gpus_per_node") or params.get("gpus_per_task") or "gpu" in str(params.get("gres") or "")
    return "cuda" if gpus else "cpu"
