"""What `adrop train` checks before Hydra makes a folder (Hydra callbacks, set in conf/config.yaml).

A configuration with an unknown key (also one added with `+key=value`: the schema is closed), bad method parameters
or bad values fails here, in one line, before any run folder exists (adrop.train.config.settings.resolve). A sweep
checks its keys here and each job's values when the job starts (they differ per job).
"""

from __future__ import annotations

import os
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from adrop.train import errors
from adrop.train.config.settings import Settings, check_keys, resolve
from adrop.train.errors import TrainError
from adrop.train.run_folder import sweep_outcomes

CREATED: dict[Path, Path] = {}  # run folder -> its highest ancestor that did not exist when this command started
RESOLVED: dict[str, Settings] = {}  # a single run's settings, resolved here, by its configuration: the job takes them


class StartRefused(BaseException):
    """A configuration refused before any folder exists. A BaseException on purpose: Hydra's callback runner turns
    every Exception into a warning and goes on (hydra/_internal/callbacks.py), which would start the run anyway."""


class StartChecks(Callback):
    def on_run_start(self, config, **kwargs) -> None:
        grid = config.hydra.runtime.choices.get("grid")
        if grid:  # its values are hydra.sweeper.params: a single run would train at the defaults, silently
            raise StartRefused(f"grid={grid} is a sweep's grid: add -m (adrop train -m grid={grid} ...)")
        job = without_hydra(config)
        try:
            run = resolve(job, config.hydra.runtime.choices.get("method"))
        except TrainError as err:
            raise StartRefused(str(err)) from None
        except Exception as err:  # Hydra would turn it into a warning and start the run: said here, in one line
            raise StartRefused(errors.bug(err)) from None
        if not config.hydra.job.chdir and not config.hydra.job.env_set:  # the job's own cwd and environment: the
            RESOLVED[OmegaConf.to_yaml(job)] = run  # same as here (else the job resolves its paths again, there)
        folder = Path(os.path.abspath(config.hydra.run.dir))  # as Hydra makes it: a/x/../y is a/y
        new = [p for p in (folder, *folder.parents) if not p.exists()]
        if new:  # removed again if the start fails
            CREATED[folder] = new[-1]

    def on_multirun_start(self, config, **kwargs) -> None:
        try:
            check_keys(config)
            sweep_outcomes.objectives(config.objective, config.get("task") or "classification")
        except (TrainError, ValueError) as err:
            raise StartRefused(str(err)) from None
        sweep_outcomes.begin(config.hydra.sweep.dir)  # whichever sweeper runs it: how its jobs end is counted
        print(f"adrop train: sweep into {sweep_outcomes.SWEEP['dir']}", flush=True)


def without_hydra(config) -> DictConfig:
    """The configuration as the job receives it: without Hydra's own node."""
    return OmegaConf.masked_copy(config, [k for k in config if k != "hydra"])


def settings_of(cfg, chosen: str | None) -> Settings:
    """A job's settings: those resolved before its folder existed, where that is this very configuration (a single
    run), else resolved now (a sweep's job, whose values the sweep's start did not see)."""
    return RESOLVED.pop(OmegaConf.to_yaml(cfg), None) or resolve(cfg, chosen)
