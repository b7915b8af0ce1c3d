"""The Hydra app of `adrop train` (its command line: adrop/commands/train.py): a run's job and how it ends, a
sweep's last line, and the one-line errors of everything a user or the environment can cause."""
from __future__ import annotations

import logging
import os
import shlex
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from hydra.types import RunMode
from omegaconf import DictConfig

from adrop.train import errors, run_files, schema, sweep_outcomes
from adrop.train.engine import Engine
from adrop.train.hooks import CREATED, StartRefused
from adrop.train.runtime import Interrupted, interruption, sigterm_stops_training
from adrop.train.settings import TrainError, resolve

# Hydra's plugin scan re-executes the plugin modules it finds (BasicSweeper among them), so ours is imported after
# it, to subclass the class Hydra uses; and registered by hand, since an editable install hides it from the scan.
Plugins.instance()
from hydra_plugins.adrop_plugins import lam_search, stacked_launcher, stacked_submitit, sweeper  # noqa: E402

Plugins.instance().register(sweeper.AdropSweeper)
Plugins.instance().register(lam_search.LamSearchSweeper)
Plugins.instance().register(stacked_launcher.StackedLauncher)
if stacked_submitit.BaseSubmititLauncher is not None:  # stacks as submitit jobs: with the launchers extra
    stacked_submitit.register()
    Plugins.instance().register(stacked_submitit.StackedLocalLauncher)
    Plugins.instance().register(stacked_submitit.StackedSlurmLauncher)
log = logging.getLogger("adrop.train")
schema.register()
STARTED: dict = {}  # this command's single run folder, once it trains: where an interruption leaves it


def one_line(summary: dict) -> str:
    unmasked = (f" (unmasked {summary['test_error_unmasked']:.4f})"
                if summary.get("test_error_unmasked") is not None else "")
    return (f"{summary['method']}: test error {summary['test_error']:.4f}{unmasked}, "
            f"val error {summary['val_error']:.4f}, nonzero {summary['nonzero_fraction']:.4f} ({summary['nonzero']}/{summary['total']}"
            f"{whole_network(summary)}), "
            f"{summary['epochs']} epochs in {summary['wall_time_s']:.1f} s on {summary['device']}")


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
    try:
        run = resolve(cfg, hc.runtime.choices.get("method"))  # a sweep's job: its own values, checked here
        identity = run.identity
        state = run_files.claim(folder, identity)
        if state == "completed":
            previous = run_files.read_summary(folder)
            print(f"{folder} already holds this run, completed; nothing to do ({one_line(previous)})")
            return previous
        held = run_files.Held(folder)  # until this job ends: a second command on the folder is refused
    except TrainError as err:
        return failed_start(folder, cfg, str(err), multirun)
    except run_files.FolderTaken as err:  # nothing written: the folder is another run's, or in use
        report(str(err), multirun, folder)
        if not multirun:
            sys.exit(1)
        return {"status": "refused", "error": str(err), "method": cfg.method.name}
    with held:
        return train(run, folder, multirun, hc)


def train(run, folder: Path, multirun: bool, hc) -> dict | None:
    """One run: the engine with a stack of one."""
    cfg, identity = run.cfg, run.identity
    try:
        engine = Engine([run], [folder], multirun=multirun)
        run_files.begin(folder, run.cfg, HydraConfig.instance().cfg, hc.overrides.task, cfg.method.name, identity)
    except (TrainError, ValueError, run_files.WriteFailed) as err:
        return failed_start(folder, cfg, str(err), multirun, identity)
    except Exception as err:  # a bug
        return failed_start(folder, cfg, errors.bug(err), multirun, identity)
    if not multirun:  # said once it trains: a start that fails leaves no folder to name
        STARTED["run"] = folder.absolute()
        print(f"adrop train: {cfg.method.name} into {folder.absolute()}", flush=True)
        for line in engine.describe():
            print(f"adrop train: {line}", flush=True)
    try:
        summary = engine.fit()[0]
    except (TrainError, ValueError, run_files.WriteFailed) as err:
        return failed(folder, cfg, str(err), multirun, identity)
    except Exception as err:
        return failed(folder, cfg, errors.bug(err), multirun, identity)
    if summary["status"] == "failed":  # the engine recorded why in the folder (divergence)
        report(summary["error"], multirun, folder)
        if not multirun:
            sys.exit(1)
        return summary
    print(f"{one_line(summary)}; files in {folder.absolute()}" if not multirun else f"{folder.name}: {one_line(summary)}",
          flush=True)
    log.info(one_line(summary))
    return summary


def failed_start(folder: Path, cfg, message: str, multirun: bool, identity: dict | None = None):
    """A run that could not start. A single run leaves no new folder and an earlier run's folder untouched; a sweep's
    job records why in its own folder (summary.json, .hydra/) and the sweep goes on."""
    report(message, multirun, folder)
    if not multirun:
        top = CREATED.get(folder.absolute())
        if top is not None and top.is_dir():  # made by this command: all of it goes, empty parents included
            for path in sorted(top.rglob("*"), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()
            top.rmdir()
        sys.exit(1)
    if run_files.read_summary(folder) is None or identity is not None:
        run_files.write_config(folder, cfg, HydraConfig.instance().cfg, HydraConfig.get().overrides.task)
        return run_files.mark_failed(folder, message, cfg.method.name, identity)
    return {"status": "failed", "error": message, "method": cfg.method.name}


def failed(folder: Path, cfg, message: str, multirun: bool, identity: dict):
    """A run that failed while training: summary.json says so (its last good checkpoint stays); a single run exits
    non-zero, a sweep goes on with its other jobs."""
    summary = run_files.mark_failed(folder, message, cfg.method.name, identity)
    log.info("failed: %s", message)  # the job's log file; the user gets the one line below
    report(message, multirun, folder)
    if not multirun:
        sys.exit(1)
    return summary


@hydra.main(version_base="1.3", config_path="pkg://adrop.conf", config_name="config")
def hydra_main(cfg: DictConfig):
    return task(cfg)


def main(argv: list[str] | None = None) -> int:
    """The app on these arguments: Hydra reads sys.argv, so hand it ours; Hydra raises, we report one line."""
    argv = list(sys.argv[1:] if argv is None else argv)
    saved = {key: os.environ.get(key) for key in ("HYDRA_FULL_ERROR", errors.DEBUG)}
    debug = saved["HYDRA_FULL_ERROR"] == "1" or saved[errors.DEBUG] == "1"
    os.environ.update({"HYDRA_FULL_ERROR": "1", errors.DEBUG: "1" if debug else "0"})
    sys.argv = ["adrop train", *argv]
    sweep_outcomes.SWEEP.clear()
    sweep_outcomes.OUTCOMES.clear()
    sweep_outcomes.JOBS.clear()
    sweep_outcomes.RETURNED.clear()
    STARTED.clear()
    try:
        with sigterm_stops_training():
            hydra_main()
    except (KeyboardInterrupt, Interrupted) as stop:
        if debug:
            raise
        print(f"adrop train: {interruption(stop)}; {resume_command(argv)}", file=sys.stderr)
        return getattr(stop, "exit_code", 130)
    except BrokenPipeError:  # `adrop train --help | head`: the reader has gone, nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except run_files.WriteFailed as err:  # a file of a run that cannot be written: the run failed
        if debug:
            raise
        print(f"adrop train: error: {err}", file=sys.stderr)
        return 1
    except (StartRefused, Exception) as err:
        if debug:
            raise
        print(f"adrop train: error: {errors.one_line(err)}", file=sys.stderr)
        if sweep_outcomes.SWEEP.get("dir") and failed_jobs(sweep_outcomes.outcomes()):
            return sweep_ended()  # a sweeper that stopped over failed jobs (Optuna with no trial completed)
        return 2
    finally:
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
    if not sweep_outcomes.SWEEP.get("dir"):
        return 0
    return sweep_ended()


def failed_jobs(ended: dict) -> list[str]:
    """Every job that did not complete: failed, refused, interrupted, or still "running" (a killed worker)."""
    return [status for status in ended.values() if status != "completed"]


def untold(ended: dict) -> list[tuple[str, str]]:
    """(folder, why) of each job that did not complete and ran in another process (joblib's workers, submitit's jobs:
    their own output went to a log, not necessarily to this terminal), from its summary.json."""
    out = []
    for folder, status in sorted(ended.items()):
        if status == "completed" or folder in sweep_outcomes.OUTCOMES:
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
    """The sweep's last line, from its jobs' own word whichever sweeper and launcher ran them: 1 when any failed."""
    ended = sweep_outcomes.outcomes()
    folder = sweep_outcomes.SWEEP["dir"]
    failures = failed_jobs(ended)
    unmet = sweep_outcomes.SWEEP.get("unmet")  # lam_search: combinations it could not bring to the target
    if failures:
        for folder_of_job, line in untold(ended):
            print(f"adrop train: error: {Path(folder_of_job).name}: {line}", file=sys.stderr)
        refused = failures.count("refused")
        why = ("each failed job's summary.json says why" if not refused else
               "refused, as said above, with nothing written" if refused == len(failures) else
               f"{refused} of them refused, as said above, with nothing written; the others' summary.json "
               "says why")
        print(f"adrop train: error: {len(failures)} of {len(ended)} jobs failed: see {folder} ({why})",
              file=sys.stderr)
    if unmet:
        print(f"adrop train: error: {unmet}", file=sys.stderr)
    if failures or unmet:
        return 1
    print(f"adrop train: {len(ended)} jobs done; files in {folder}")
    return 0
