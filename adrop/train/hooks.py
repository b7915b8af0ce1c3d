"""What `adrop train` checks before Hydra makes a folder (Hydra callbacks, set in conf/config.yaml).

A configuration with an unknown key (also one added with `+key=value`: the schema is closed), bad method parameters
or bad values fails here, in one line, before any run folder exists (adrop.train.settings.resolve). A sweep checks its
keys here and each job's values when the job starts (they differ per job).
"""

from __future__ import annotations

from pathlib import Path

from hydra.experimental.callback import Callback

from . import sweep_outcomes
from .settings import TrainError, check_keys, resolve

CREATED: dict[Path, Path] = {}  # run folder -> its highest ancestor that did not exist when this command started


class StartRefused(BaseException):
    """A configuration refused before any folder exists. A BaseException on purpose: Hydra's callback runner turns
    every Exception into a warning and goes on (hydra/_internal/callbacks.py), which would start the run anyway."""


class StartChecks(Callback):
    def on_run_start(self, config, **kwargs) -> None:
        try:
            resolve(config, config.hydra.runtime.choices.get("method"))
        except TrainError as err:
            raise StartRefused(str(err)) from None
        folder = Path(config.hydra.run.dir).absolute()
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
