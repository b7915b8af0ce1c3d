"""A sweep's jobs as stacks: the stacked launcher's work once Hydra has composed each job (hydra_plugins/adrop_plugins/
stacked_launcher.py). Every job gets what the basic launcher gives it: the same checks, the same refusal of a folder
that holds another run, a finished job skipped, a failed one recorded in its folder; then the jobs that can train
together (adrop.train.config.settings.stack_key, and the same epoch to resume from) train as stacks of at most
max_stack, each through the engine (adrop.train.loop.engine). A job whose values or data are refused says "refused", one
whose folder another command holds, training the same run, "held" (the sweep counts it as that command leaves it,
adrop.train.run_folder.sweep_outcomes).
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import torch

from adrop.train import tasks
from adrop.train.config.settings import resolve, stack_key
from adrop.train.errors import TrainError
from adrop.train.loop import collapse, lifecycle
from adrop.train.loop.lifecycle import Job
from adrop.train.run_folder import run_files, sweep_outcomes
from adrop.train.runtime import Interrupted, device_type, interruption, sigterm_stops_training

log = logging.getLogger("adrop.train")
# The default stack size on a CPU, per method (scripts/benchmarks/bench_stacked.py, docs/results/stacked_speed.md): a
# stack shares the matrix products' overhead but multiplies the working set of every per-weight pass, which then leaves
# the caches; so stacks of 4 where a step is mostly matrix products and Adam (dense 1.68x the basic launcher, one stack
# per core; magnitude pruning and fixed_mask, dense plus a gradient mask, 1.57x), stacks of one for the rest. On a GPU,
# where a LeNet-300-100 step is mostly launch overhead, GPU_STACK: an expectation, not measured.
CPU_STACK = {"dense": 4, "magnitude_pruning": 4, "fixed_mask": 4, "random_pruning": 4}  # the last: fixed_mask's step
GPU_STACK = 64
IN_WORKER: list = []  # not empty in a worker process of the launcher (start_worker)


def default_max_stack(cfg, device: str | None = None) -> int:
    """GPU_STACK on a GPU; on a CPU the method's CPU_STACK (1 where it has none). `device` ("cpu" or "cuda"): where
    the jobs will train, when that is not this machine (a cluster's nodes); by default device_type(cfg.device)."""
    return CPU_STACK.get(cfg.method.name, 1) if (device or device_type(cfg.device)) == "cpu" else GPU_STACK


def split(members: list, size: int, workers: int) -> list[list]:
    """members (in order) as stacks of at most `size`, at least as many as there are workers while members last, of
    sizes that differ by at most one: 9 jobs on 2 workers with size 4 are 3, 3, 3 (not 4, 4, 1), 4 jobs are 2, 2
    (not one stack of 4 and an idle core)."""
    n = max(math.ceil(len(members) / size), min(len(members), workers))
    q, r = divmod(len(members), n)
    out, start = [], 0
    for i in range(n):
        end = start + q + (i < r)
        out.append(members[start:end])
        start = end
    return out


def default_n_jobs(cfg) -> int:
    """Worker processes when the user gives none: on a CPU one per core (one thread each, as the joblib launcher
    runs jobs: measured faster than one process with all threads, docs/results/stacked_speed.md); on a GPU one."""
    if device_type(cfg.device) != "cpu":
        return 1
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def threads_per(workers: int) -> int:
    return max(1, torch.get_num_threads() // workers)


def start_worker(threads: int, parent: int) -> None:
    """A worker process's setup: its torch threads, and a watch on the launcher. A worker outlives a launcher that is
    killed (SIGTERM, SIGKILL: only Ctrl-C reaches the whole process group) and would go on writing into run folders
    that a rerun of the same command resumes; so it exits, at its last checkpoint, once its parent is gone."""
    torch.set_num_threads(threads)
    IN_WORKER.append(True)
    # Ctrl-C reaches the launcher, which stops its workers with SIGTERM: a worker training a stack records it as
    # interrupted (train_stack), an idle one just ends
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(128 + signum))

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def train_stack(jobs: list[Job], runs: list) -> list[dict]:
    """One stack trained (lifecycle.train), in this process or a worker's: a worker that is stopped ends here, rather
    than take the next stack from the queue (the engine recorded the stop in the stack's folders)."""
    try:
        with sigterm_stops_training():
            return lifecycle.train(jobs, runs)
    except (KeyboardInterrupt, Interrupted) as stop:
        if IN_WORKER:
            os._exit(getattr(stop, "exit_code", 130))
        raise


def run(jobs: list[Job], max_stack: int | None, n_jobs: int | None = None) -> list[dict]:
    held = []  # the folders this sweep trains in, held until it ends (a second command on them is refused)
    try:
        return _run(jobs, max_stack, n_jobs, held)
    except (KeyboardInterrupt, Interrupted) as stop:  # its jobs not yet finished say so, and no other folder
        for h in held:
            run_files.mark_interrupted(h.folder, f"{interruption(stop)} before it finished")
        raise
    finally:
        for h in held:
            h.close()


def examine(jobs: list[Job], held: list | None = None) -> tuple[list, dict, dict]:
    """Each job checked as the basic launcher checks it: (results, runs, groups). results[i] is set for a job decided
    without training (its checks failed, its folder holds another run, or its run is completed); runs[i] is the
    settings of each job that passed its checks; groups maps what can train together (stack_key, and the epoch to
    resume from) to the indices of the jobs to train. With `held` (the process that trains them), each folder to
    train is held (run_files.Held, appended to `held`) and begun; without, nothing is written but failures."""
    results: list[dict | None] = [None] * len(jobs)
    groups: dict[tuple, list[int]] = {}
    runs = {}
    for i, job in enumerate(jobs):
        started = lifecycle.start(job, held) if held is not None else check(job)
        if isinstance(started, dict):
            results[i] = started
            status = started["status"]
            if status == "held":
                print(f"adrop train: {job.folder.name}: {sweep_outcomes.HELD}", flush=True)
            elif status == "completed":
                print(f"{job.folder} already holds this run, completed; nothing to do")
            else:
                say_failed(job, started["error"])
            continue
        runs[i] = started.run
        groups.setdefault((stack_key(job.cfg), started.epoch), []).append(i)
    return results, runs, groups


def check(job: Job) -> lifecycle.Started | dict:
    """A job examined by a process that does not train it (a cluster's launcher): resolved and claimed, its folder
    neither held nor begun (the cluster job that trains it does both)."""
    run = None
    try:
        run = resolve(job.cfg, job.method_choice)
        state = run_files.claim(job.folder, run.identity)
    except run_files.FolderTaken as err:
        return {"status": "refused", "error": str(err), "method": job.cfg.method.name}
    except Exception as err:  # its values refused (TrainError), or a bug: recorded as every launcher records it
        refused = isinstance(err, (TrainError, ValueError))
        message = lifecycle.message_of(err, job.folder)
        return lifecycle.record_failure(job, message, run.identity if run else None, refused=refused)
    if state == "completed":
        return {**run_files.read_summary(job.folder), "status": "completed"}
    checkpoint = run_files.load_checkpoint(job.folder, "cpu") if state == "resume" else None
    return lifecycle.Started(run, state, checkpoint["epoch"] if checkpoint else 0)


def plan(
    jobs: list[Job], runs: dict, groups: dict, max_stack: int | None, workers: int, device: str | None = None
) -> list[list[int]]:
    """The groups as stacks of job indices, in the sweep's order: at most max_stack each (None: default_max_stack
    for `device`, "cpu" or "cuda", by default the jobs' own), at least `workers` while jobs last."""
    stacks = []
    for members in groups.values():
        size = max_stack or default_max_stack(jobs[members[0]].cfg, device)
        if size > 1 and len(members) > 1:
            why = stack_problem(runs[members[0]])
            if why is not None:
                print(
                    f"stacked launcher: model={jobs[members[0]].cfg.model.name} cannot be stacked ({why}); its "
                    f"{len(members)} jobs train in stacks of one",
                    flush=True,
                )
                size = 1
        stacks += split(members, size, workers)
    stacks.sort(key=lambda stack: stack[0])  # in the sweep's order (by each stack's first job): seeds first if asked
    if stacks:
        count = f"{len(stacks)} stack{'s' if len(stacks) > 1 else ''}"
        print(
            f"stacked launcher: {sum(map(len, stacks))} jobs in {count}, of sizes "
            f"{', '.join(str(len(s)) for s in stacks)}",
            flush=True,
        )
    return stacks


def tell(job: Job, summary: dict, where: str) -> None:
    """A job's one line when it ends: its result, or (stderr) why it did not complete."""
    if summary.get("status") == "completed":
        print(
            f"{job.folder.name}: {tasks.headline(summary)}, nonzero {summary['nonzero_fraction']:.4f} "
            f"({where}, {summary['wall_time_s']:.1f} s)",
            flush=True,
        )
    elif summary.get("collapsed") and collapse.searched(job.hydra_cfg.hydra.sweeper):
        print(collapse.probe_line(job.folder.name, summary), flush=True)
    elif summary.get("status") in ("failed", "interrupted", "refused"):
        say_failed(job, summary.get("error"))


def _run(jobs: list[Job], max_stack: int | None, n_jobs: int | None, held: list) -> list[dict]:
    results, runs, groups = examine(jobs, held)
    first = next((jobs[m[0]].cfg for m in groups.values()), None)
    n_workers = n_jobs or (default_n_jobs(first) if first is not None else 1)
    stacks = plan(jobs, runs, groups, max_stack, n_workers)
    work = [([jobs[i] for i in members], [runs[i] for i in members]) for members in stacks]
    workers = min(n_workers, max(len(stacks), 1))

    def report(n, summaries):
        for i, summary in zip(stacks[n], summaries):
            results[i] = summary
            if summary.get("status") != "interrupted":  # an interruption is told once, by the command
                tell(jobs[i], summary, f"stack {n + 1} of {len(stacks)}, {len(stacks[n])} configurations")

    if workers <= 1:
        for n, (stack_jobs, stack_ids) in enumerate(work):
            report(n, train_stack(stack_jobs, stack_ids))
        return results
    threads = threads_per(workers)
    print(f"stacked launcher: {workers} worker processes, {threads} torch thread(s) each", flush=True)
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=start_worker,
        initargs=(threads, os.getpid()),
    )
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the workers start with Ctrl-C ignored (start_worker)
    try:
        futures = {pool.submit(train_stack, *w): n for n, w in enumerate(work)}
    finally:
        signal.signal(signal.SIGINT, before)
    try:
        for future in as_completed(futures):
            n = futures[future]
            try:
                summaries = future.result()
            except Exception as err:  # the worker died (killed, out of memory): its stack failed, the rest goes on
                summaries = [
                    lifecycle.record_failure(
                        job, f"the worker process training it ended ({type(err).__name__}: {err})", run.identity
                    )
                    for job, run in zip(*work[n])
                ]
            report(n, summaries)
    finally:  # however this ends, no worker goes on training into folders this sweep no longer holds
        for process in list(pool._processes.values()):  # a training worker records the stop (train_stack)
            if process.is_alive():
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
    return results


def stack_problem(run) -> str | None:
    """Why a configuration's network cannot train stacked (adrop.train.nets.network.stack_problem), where the data's
    shape is known from the configuration; None otherwise."""
    from adrop.train.data import sources as data
    from adrop.train.nets import network

    try:
        shape = run.source.shape(run.task)
    except data.DataError:
        return None
    if shape is None:
        return None
    return network.stack_problem(run, shape[0], shape[1], run.make_method(1), run.source.tokens())


def say_failed(job: Job, why) -> None:
    """A job's one line on stderr; a reason that an earlier job of the sweep said already is said once."""
    if sweep_outcomes.first_time(str(why)):
        print(f"adrop train: error: {job.folder.name}: {why}", file=sys.stderr, flush=True)
