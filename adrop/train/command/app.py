"""The Hydra app of `adrop train` (its command line: adrop/commands/train.py): a run's job and how it ends, a
sweep's last line, and the one-line errors of everything a user or the environment can cause, each with its exit
status (errors.REFUSED: the command or its data is wrong; errors.FAILED: a run failed; the table: docs/guide.md)."""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from adrop import interrupts
from adrop.train import errors, tasks
from adrop.train.command import registry, start_checks
from adrop.train.command.start_checks import CREATED, StartRefused
from adrop.train.config import refusals
from adrop.train.config.settings import resolve
from adrop.train.loop import collapse, lifecycle
from adrop.train.run_folder import run_files, sweep_outcomes
from adrop.train.runtime import Interrupted, interruption, sigterm_stops_training

log = logging.getLogger("adrop.train")
registry.register()  # adrop's plugins and schema, before Hydra composes
STARTED: dict = {}  # this command's single run folder, once it trains: where an interruption leaves it


def one_line(summary: dict) -> str:
    first = f"{tasks.of(summary).metrics[0]}_unmasked"
    unmasked = f" (unmasked {summary[f'test_{first}']:.4f})" if summary.get(f"test_{first}") is not None else ""
    return (
        f"{summary['method']}: {tasks.headline(summary)}{unmasked}, "
        f"{tasks.headline(summary, 'val', first=True)}, nonzero {summary['nonzero_fraction']:.4f} "
        f"({summary['nonzero']}/{summary['total']}{whole_network(summary)}), "
        f"{summary['epochs']} epochs in {summary['wall_time_s']:.1f} s on {summary['device']}"
    )


def whole_network(summary: dict) -> str:
    """The whole network's nonzero count beside the sparsified weights', where parameters also train densely."""
    params = summary.get("parameters") or {}
    return f"; {params['nonzero']}/{params['total']} of all parameters" if params.get("dense") else ""


def resume_command(argv: list[str]) -> str:
    """The command that resumes what this one started: its arguments with the folder it trained in."""
    if sweep_outcomes.SWEEP.get("dir"):
        key, folder = "hydra.sweep.dir", Path(sweep_outcomes.SWEEP["dir"])
    elif STARTED.get("run"):
        key, folder = "hydra.run.dir", STARTED["run"]
    else:
        return "nothing was trained"
    kept = [a for a in argv if not a.startswith(f"{key}=")]
    return "resume with: " + shlex.join(["adrop", "train", *kept, f"{key}={folder}"])


def report(message: str, multirun: bool, folder: Path) -> None:
    """A run's one line on stderr; a sweep's job says a reason that an earlier job of the sweep said already only
    once (offline, every job of a sweep would say the same download failure)."""
    if multirun and not sweep_outcomes.first_time(message):
        return
    where = f"{folder.name}: " if multirun else ""
    print(f"adrop train: error: {where}{message}", file=sys.stderr)


def task(cfg: DictConfig):
    """One run. A sweep's job records how it ended and returns its objective to the sweeper (sweep_outcomes); a
    single run returns its summary."""
    hc = HydraConfig.get()
    folder = Path(hc.runtime.output_dir)
    multirun = hc.mode == RunMode.MULTIRUN
    summary = job(cfg, hc, folder, multirun)
    if not multirun:
        return summary
    summary = summary or {"status": "failed"}
    sweep_outcomes.record(folder, summary.get("status"))
    return sweep_outcomes.returned(summary, cfg.objective)


def job(cfg, hc, folder: Path, multirun: bool) -> dict | None:
    """One job through the lifecycle every launcher shares (adrop.train.loop.lifecycle); said, and for a single run
    ended with its exit status, here."""
    this = lifecycle.Job(cfg, folder, HydraConfig.instance().cfg, hc.overrides.task, hc.runtime.choices.get("method"))
    held: list = []  # until this job ends: a second command on the folder is refused
    try:
        settings = resolve if multirun else start_checks.settings_of  # a single run's: resolved before, where it can be
        started = lifecycle.start(this, held, record=multirun, settings=settings)
        if isinstance(started, dict):
            return ended(this, started, multirun)
        return train(this, started, multirun, hc)
    finally:
        for hold in held:
            hold.close()


def train(this: lifecycle.Job, started: lifecycle.Started, multirun: bool, hc) -> dict | None:
    """One run: a stack of one. A single run says where it trains and what, once its engine holds the data."""
    folder, trained = this.folder, []

    def begin(engine) -> None:
        trained.append(True)
        if not multirun:  # said once it trains: a start that fails leaves no folder to name
            STARTED["run"] = folder.absolute()
            print(f"adrop train: {this.cfg.method.name} into {folder.absolute()}", flush=True)
            for line in engine.describe():
                print(f"adrop train: {line}", flush=True)

    summary = lifecycle.train([this], [started.run], multirun=multirun, on_start=begin)[0]
    if summary["status"] != "completed" and not trained:  # its data or network refused, or its start failed
        return ended(this, {**summary, "claimed": started.state}, multirun)
    if summary["status"] == "failed" and summary.get("collapsed") and multirun and collapse.searched(hc.sweeper):
        print(collapse.probe_line(folder.name, summary), flush=True)
        return summary
    if summary["status"] == "failed":  # recorded in the folder (divergence, collapse, an error while training)
        log.info("failed: %s", summary["error"])  # the job's log file; the user gets the one line below
        report(summary["error"], multirun, folder)
        if not multirun:
            sys.exit(errors.FAILED)
        return summary
    print(
        f"{one_line(summary)}; files in {folder.absolute()}" if not multirun else f"{folder.name}: {one_line(summary)}",
        flush=True,
    )
    log.info(one_line(summary))
    return summary


def let_go_of_logs(folder: Path) -> None:
    """Close and detach the log files Hydra opened in `folder` (its job's log), so that removing the folder leaves no
    handler writing into it (in a process that goes on: a test, a notebook)."""
    for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        for handler in list(getattr(logger, "handlers", [])):
            name = getattr(handler, "baseFilename", None)
            if name and Path(name).is_relative_to(folder.absolute()):
                handler.close()
                logger.removeHandler(handler)


def held_elsewhere(folder: Path, cfg, message: str) -> dict:
    """A sweep's job whose folder another command holds, training this same run: not trained twice, and counted,
    when the sweep ends, as that command has left it by then (sweep_ended)."""
    print(f"adrop train: {folder.name}: {sweep_outcomes.HELD}", flush=True)
    return {"status": "held", "error": message, "method": cfg.method.name}


def ended(this: lifecycle.Job, result: dict, multirun: bool) -> dict:
    """A job that ended before training, said: completed already, held by another command, refused (its values, data
    or folder: errors.REFUSED) or failed (a folder or file that cannot be written: errors.FAILED). A sweep's job
    returns it (the lifecycle recorded it in the folder where it could) and the sweep goes on; a single run exits
    with its status, and removes the folder this command made, unless the folder turned out to be another command's
    (held by it, or holding another run: stage "held" or "taken"), and of the folders above it only those this command
    made and nothing else came into (`claimed`: what the claim found there; a folder another command filled
    meanwhile, with a run to resume or retry, stays)."""
    folder, status = this.folder, result["status"]
    stage, claimed = result.pop("stage", None), result.pop("claimed", "new")
    if status == "completed":
        print(f"{folder} already holds this run, completed; nothing to do ({one_line(result)})")
        return result
    if status == "held" and multirun:
        return held_elsewhere(folder, this.cfg, result["error"])
    report(result["error"], multirun, folder)
    if multirun:
        return result
    top = CREATED.get(folder.absolute())
    mine = stage not in ("held", "taken") and claimed == "new" and top is not None
    if mine and folder.is_dir():  # made by this command: it goes,
        let_go_of_logs(folder)
        shutil.rmtree(folder)  # and each folder above it that this command made, where nothing else came into it
        for parent in folder.parents:
            if not parent.is_relative_to(top) or any(parent.iterdir()):
                break
            parent.rmdir()
    sys.exit(errors.FAILED if status == "failed" else errors.REFUSED)


@hydra.main(version_base="1.3", config_path="pkg://adrop.conf", config_name="config")
def hydra_main(cfg: DictConfig):
    return task(cfg)


def main(argv: list[str] | None = None) -> int:
    """The app on these arguments: Hydra reads sys.argv, so hand it ours; Hydra raises, we report one line. Returns
    the exit status (the table: adrop/commands/train.py)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    wrong = flag_error(argv)
    if wrong is not None:  # argparse would print its usage block first: one line instead
        print(f"adrop train: error: {wrong} (adrop train --help lists what it takes)", file=sys.stderr)
        return errors.REFUSED
    saved = {key: os.environ.get(key) for key in ("HYDRA_FULL_ERROR", errors.DEBUG)}  # restored on the way out
    debug = saved["HYDRA_FULL_ERROR"] == "1" or saved[errors.DEBUG] == "1"
    os.environ.update({"HYDRA_FULL_ERROR": "1", errors.DEBUG: "1" if debug else "0"})
    sys.argv = ["adrop train", *argv]
    sweep_outcomes.clear()
    STARTED.clear()
    start_checks.RESOLVED.clear()  # a command in the same process (a test, a notebook) starts afresh
    CREATED.clear()
    try:
        with sigterm_stops_training():
            hydra_main()
    except (KeyboardInterrupt, Interrupted) as stop:
        if debug:
            raise
        return stopped(stop, argv)
    except SystemExit as stop:  # a run's own exit (errors.REFUSED, errors.FAILED), or Hydra's (--help: 0)
        return stop.code if isinstance(stop.code, int) else errors.FAILED if stop.code else 0
    except BrokenPipeError:  # `adrop train --help | head`: the reader has gone, nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except run_files.WriteFailed as err:  # a file of a run that cannot be written: the run failed
        if debug:
            raise
        print(f"adrop train: error: {err}", file=sys.stderr)
        return errors.FAILED
    except (StartRefused, Exception) as err:
        if debug:
            raise
        if interrupts.STOPS:  # a stop that a library's cleanup turned into another error (OmegaConf's, composing)
            return stopped(KeyboardInterrupt(), argv)
        found = run_files.os_error(err)
        if found is not None and found.errno in run_files.WRITE_ERRNOS:  # a folder Hydra could not make, a log
            print(f"adrop train: error: {run_files.write_failed(found.filename or '.', found)}", file=sys.stderr)
            return errors.FAILED
        print(f"adrop train: error: {refusals.one_line(err)}", file=sys.stderr)
        if sweep_outcomes.SWEEP.get("dir") and failed_jobs(sweep_outcomes.outcomes()):
            return sweep_ended()  # a sweeper that stopped over failed jobs (Optuna with no trial completed)
        return errors.REFUSED
    finally:
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
    if not sweep_outcomes.SWEEP.get("dir"):
        return 0
    return sweep_ended()


def stopped(stop: BaseException, argv: list[str]) -> int:
    """An interrupted command's one line (with the command that resumes what it started) and exit status: 130 for
    SIGINT, 143 for SIGTERM (also where adrop.interrupts turned it into a KeyboardInterrupt)."""
    if isinstance(stop, KeyboardInterrupt) and interrupts.STOPS:
        print(f"adrop train: interrupted ({interrupts.name()}); {resume_command(argv)}", file=sys.stderr)
        return 128 + interrupts.STOPS[-1]
    print(f"adrop train: {interruption(stop)}; {resume_command(argv)}", file=sys.stderr)
    return getattr(stop, "exit_code", 130)


def flag_error(argv: list[str]) -> str | None:
    """What Hydra's argument parser would refuse in `argv` (an unknown --flag, a --cfg value it does not take), said
    as argparse says it; None where it takes them (--version: Hydra prints it and exits, as it would)."""
    from hydra._internal.utils import get_args_parser  # the parser hydra.main parses sys.argv with

    if "--version" in argv:
        return None
    parser = get_args_parser()

    def error(message):
        raise ValueError(message)

    parser.error = error
    try:
        parser.parse_args(argv)
    except ValueError as err:
        return str(err)
    return None


def failed_jobs(ended: dict) -> list[str]:
    """Every job that did not complete and was not refused or held: failed, interrupted, or still "running" (a
    killed worker)."""
    return [status for status in ended.values() if status not in ("completed", "refused", "held")]


def untold(ended: dict, held: dict) -> list[tuple[str, str]]:
    """(folder, why) of each job that did not complete and ran in another process (joblib's workers, submitit's jobs:
    their own output went to a log, not necessarily to this terminal), from its summary.json; not those another
    command held (`held`: sweep_ended tells them)."""
    out = []
    for folder, status in sorted(ended.items()):
        if status in ("completed", "held") or folder in sweep_outcomes.OUTCOMES or folder in held:
            continue
        if folder in sweep_outcomes.RETURNED:  # the job's own words
            out.append((folder, sweep_outcomes.RETURNED[folder]))
            continue
        try:
            summary = run_files.read_summary(Path(folder)) or {}
        except (OSError, ValueError):
            summary = {}
        out.append((folder, f"{status}: {summary.get('error') or 'no summary.json: it never started'}"))
    return out


def sweep_ended() -> int:
    """The sweep's last line, from its jobs' own word whichever sweeper and launcher ran them: errors.FAILED when any
    failed (also in another command that held it), else errors.REFUSED when any was refused, else 0 (a job that
    another command holds and still trains is named, and that command reports it)."""
    ended = sweep_outcomes.outcomes()
    elsewhere = sweep_outcomes.held_ends(ended)  # the held jobs as the commands that held them have left them
    ended.update(
        {folder: "held" if end["status"] == "training" else end["status"] for folder, end in elsewhere.items()}
    )
    folder = sweep_outcomes.SWEEP["dir"]
    probes = sweep_outcomes.SWEEP.get("collapsed", set())  # lam_search's collapsed trials: bracket ends, not failures
    judged = {job: status for job, status in ended.items() if job not in probes}
    failures = failed_jobs(judged)
    refused = [status for status in ended.values() if status == "refused"]
    training = sorted(f for f, end in elsewhere.items() if end["status"] == "training")
    unmet = sweep_outcomes.SWEEP.get("unmet")  # lam_search: combinations it could not bring to the target
    for folder_of_job, line in untold(judged, elsewhere):
        if sweep_outcomes.first_time(line.split(": ", 1)[-1]):
            print(f"adrop train: error: {Path(folder_of_job).name}: {line}", file=sys.stderr)
    for folder_of_job, end in sorted(elsewhere.items()):
        if end["status"] not in ("completed", "training"):
            print(
                f"adrop train: error: {Path(folder_of_job).name}: held by another command, where it ended "
                f"{end['status']}: {end.get('error') or 'see its summary.json'}",
                file=sys.stderr,
            )
    for folder_of_job in training:
        print(f"adrop train: {Path(folder_of_job).name}: held by another command (still training)")
    if failures:
        also = f" and {len(refused)} refused" if refused else ""
        print(
            f"adrop train: error: {len(failures)} of {len(ended)} jobs failed{also}: see {folder} (each failed "
            f"job's summary.json says why)",
            file=sys.stderr,
        )
    elif refused:
        print(
            f"adrop train: error: {len(refused)} of {len(ended)} jobs refused (their settings, data or folder, "
            f"as said above; nothing trained in them): see {folder}",
            file=sys.stderr,
        )
    if unmet:
        print(f"adrop train: error: {unmet}", file=sys.stderr)
    if failures or unmet:
        return errors.FAILED
    if refused:
        return errors.REFUSED
    done = len(ended) - len(training)
    by_others = sum(end["status"] == "completed" for end in elsewhere.values())
    others = f" ({by_others} of them by another command that held them)" if by_others else ""
    still = (
        f", {len(training)} held by another command (still training: that command reports "
        f"{'it' if len(training) == 1 else 'them'})"
        if training
        else ""
    )
    print(f"adrop train: {done} jobs done{others}{still}; files in {folder}")
    return 0
