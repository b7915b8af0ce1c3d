"""The stacked launcher: `adrop train -m ... hydra/launcher=stacked` trains a sweep's jobs as stacks.

Jobs that differ only in per-configuration numbers (seed, lam, lr, decay_start, penalty_warmup) train together as
one vectorised training (adrop.train.loop.engine); the others form separate stacks, run one after another. Each job
keeps its own folder with a single run's files. `hydra.launcher.max_stack` caps a stack's size (null: the
measured default for the device and method, adrop.train.sweep.stacked_jobs.default_max_stack); `hydra.launcher.n_jobs`
is how many stacks train at once, each in its own worker process (null: one per core on a CPU, one thread each; one on a
GPU).

This module only does Hydra's part (composing each job's configuration and folder, as Hydra's basic launcher does);
adrop.train.sweep.stacked_jobs does the rest.
"""

import copy
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from hydra._internal.core_plugins.basic_launcher import BasicLauncher
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobReturn, JobStatus, configure_log
from hydra.plugins.launcher import Launcher
from omegaconf import OmegaConf, open_dict, read_write

from adrop.train.run_folder import sweep_outcomes

log = logging.getLogger(__name__)
ADROP_APP = "adrop.train.command.app"  # whose task function the launcher trains as stacks; any other app's jobs run
#                                      one after another, as Hydra's basic launcher runs them


@dataclass
class StackedLauncherConf:
    """The stacked launcher: a sweep's jobs trained as stacks of configurations (adrop.train.sweep.stacked_jobs),
    adrop train -m hydra/launcher=stacked method=logsum lam=1e-4,1e-3 seed=0,1,2."""

    _target_: str = "hydra_plugins.adrop_plugins.stacked_launcher.StackedLauncher"
    max_stack: Optional[int] = None  # the most configurations in one stack (null: the measured default for the
    #                                  device and method)
    # how many stacks train at once, each in its own worker process (null: one per core on a CPU, each with one torch
    # thread, as the joblib launcher runs jobs; one on a GPU)
    n_jobs: Optional[int] = None


ConfigStore.instance().store(group="hydra/launcher", name="stacked", node=StackedLauncherConf, provider="adrop")


class StackedLauncher(Launcher):
    def __init__(self, max_stack: Optional[int] = None, n_jobs: Optional[int] = None) -> None:
        for key, value in (("max_stack", max_stack), ("n_jobs", n_jobs)):
            if value is not None and value < 1:  # 0 or -1 would otherwise mean "the default" or train nothing
                raise ValueError(f"hydra.launcher.{key} must be a positive integer or null (the default), got {value}")
        self.max_stack, self.n_jobs = max_stack, n_jobs
        self.config = self.hydra_context = self.task_function = None

    def setup(self, *, hydra_context, task_function, config) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        if getattr(self.task_function, "__module__", None) != ADROP_APP:  # another app's jobs: Hydra's basic launcher
            basic = BasicLauncher()
            basic.setup(hydra_context=self.hydra_context, task_function=self.task_function, config=self.config)
            return basic.launch(job_overrides, initial_job_idx)
        from adrop.train.sweep import (
            stacked_jobs,  # torch: only when a sweep launches (Hydra's scan imports this module)
        )

        jobs = compose(self.config, self.hydra_context, job_overrides, initial_job_idx)
        return job_returns(jobs, stacked_jobs.run(jobs, self.max_stack, self.n_jobs))


def compose(config, hydra_context, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list:
    """Each job's configuration and folder, composed as Hydra's basic launcher composes them."""
    from adrop.train.loop import lifecycle  # torch: only when a sweep launches

    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    Path(str(config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
    jobs, before = [], HydraConfig.instance().cfg
    try:
        for i, overrides in enumerate(job_overrides):
            idx = initial_job_idx + i
            sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
            with open_dict(sweep_config):
                sweep_config.hydra.job.id = f"job_id_for_{idx}"
                sweep_config.hydra.job.num = idx
            HydraConfig.instance().set_config(sweep_config)
            folder = Path(str(sweep_config.hydra.sweep.dir)) / str(OmegaConf.select(sweep_config, "hydra.sweep.subdir"))
            task_cfg = copy.deepcopy(sweep_config)
            with read_write(task_cfg), open_dict(task_cfg):
                del task_cfg["hydra"]
            jobs.append(
                lifecycle.Job(
                    cfg=task_cfg,
                    folder=folder.absolute(),
                    hydra_cfg=copy.deepcopy(HydraConfig.instance().cfg),
                    overrides=list(overrides),
                    method_choice=sweep_config.hydra.runtime.choices.get("method"),
                )
            )
    finally:
        HydraConfig.instance().cfg = before
    return jobs


def job_returns(jobs: list, summaries: list[dict]) -> list[JobReturn]:
    """What the sweeper gets back: per job its objective (or why it did not complete); how it ended is recorded."""
    returns = []
    for job, summary in zip(jobs, summaries):
        ret = JobReturn(
            overrides=job.overrides,
            cfg=job.cfg,
            hydra_cfg=job.hydra_cfg,
            working_dir=str(job.folder),
            task_name=str(job.hydra_cfg.hydra.job.name),
            status=JobStatus.COMPLETED,
        )
        sweep_outcomes.record(job.folder, summary.get("status"))
        ret.return_value = sweep_outcomes.returned(summary, job.cfg.objective)  # what the sweeper takes
        returns.append(ret)
    return returns
