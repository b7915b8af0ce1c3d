"""`adrop train`: train a network with one sparsification method (a Hydra 1.3 app).

    adrop train                                    dense LeNet-300-100 on MNIST, 10 epochs
    adrop train method=vardrop_lr_ar epochs=5      any method: adrop train --help lists them
    adrop train -m method=logsum,adaprox lam=1e-4,1e-3     a sweep (multirun), one folder per job
    adrop train experiment=paper_lenet300 method=eta_trick  the paper's settings (200 epochs)
    adrop train data.root=../shared/data data.train_limit=2000 device=cpu

Outputs go to outputs/runs/<time>/ (or outputs/multirun/<time>/<overrides>/): metrics.csv, layers.csv,
summary.json, weights.npz, checkpoint.pt. Rerunning the same command with hydra.run.dir=<that folder> resumes it.
"""
from __future__ import annotations

import logging
import sys
import traceback
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from . import run_files, schema
from .loop import Run, TrainError

log = logging.getLogger("adrop.train")
schema.register()


def one_line(summary: dict) -> str:
    return (f"{summary['method']}: test error {summary['test_error']:.4f}, val error {summary['val_error']:.4f}, "
            f"nonzero {summary['nonzero_fraction']:.4f} ({summary['nonzero']}/{summary['total']}), "
            f"{summary['epochs']} epochs in {summary['wall_time_s']:.1f} s on {summary['device']}")


def task(cfg: DictConfig) -> dict | None:
    hc = HydraConfig.get()
    folder = Path(hc.runtime.output_dir)
    multirun = hc.mode == RunMode.MULTIRUN
    previous = run_files.read_summary(folder)
    if previous and previous.get("status") == "completed":
        print(f"{folder} already holds a completed run; nothing to do ({one_line(previous)})")
        return previous
    try:
        run = Run(cfg, folder, multirun=multirun)
        summary = run.fit()
    except (TrainError, ValueError) as err:
        return failed(folder, cfg, str(err), multirun)
    except Exception as err:  # a bug: keep the traceback in the job log, one line for the user
        log.error("%s", traceback.format_exc())
        return failed(folder, cfg, f"{type(err).__name__}: {err}", multirun)
    print(one_line(summary))
    log.info(one_line(summary))
    return summary


def failed(folder: Path, cfg, message: str, multirun: bool):
    """Record the failure in summary.json; a single run exits non-zero, a sweep goes on with its other jobs."""
    summary = dict(run_files.read_summary(folder) or {})
    summary.update({"status": "failed", "error": message, "method": cfg.method.name})
    run_files.write_summary(folder, summary)
    log.info("failed: %s", message)  # the job's log file; the user gets the one line below
    print(f"adrop train: error: {message}", file=sys.stderr)
    if not multirun:
        sys.exit(1)
    return summary


@hydra.main(version_base="1.3", config_path="pkg://adrop.conf", config_name="config")
def hydra_main(cfg: DictConfig):
    return task(cfg)


def main(argv: list[str] | None = None) -> int:
    """Entry point for the dispatcher: Hydra reads sys.argv, so hand it ours."""
    sys.argv = ["adrop train", *(sys.argv[1:] if argv is None else argv)]
    hydra_main()
    return 0
