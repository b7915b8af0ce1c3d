"""What `adrop train` checks before Hydra makes a folder (Hydra callbacks, set in conf/config.yaml).

A configuration with an unknown key (also one added with `+key=value`: the schema is closed), bad method parameters
or bad values fails here, in one line, before any run folder exists. A sweep checks its keys here and each job's
values again when the job starts (they differ per job).
"""
from __future__ import annotations

from pathlib import Path

from hydra.experimental.callback import Callback

from . import model as model_mod, schema, tracking
from .loop import TrainError, run_identity

CREATED: dict[Path, Path] = {}  # run folder -> its highest ancestor that did not exist when this command started


class StartRefused(BaseException):
    """A configuration refused before any folder exists. A BaseException on purpose: Hydra's callback runner turns
    every Exception into a warning and goes on (hydra/_internal/callbacks.py), which would start the run anyway."""  # run folders that did not exist when this command started: removed if the start fails


def check_keys(cfg) -> None:
    unknown = schema.unknown_keys(cfg)
    if unknown:
        raise TrainError(schema.unknown_key_message(*unknown[0]))


def start_checks(cfg, chosen: str | None = None) -> dict:
    """Every check that needs no data and no folder; returns the run's identity. `chosen` is the method option
    Hydra composed (conf/method/<chosen>.yaml): its `name:` must be that, or another method would run silently."""
    check_keys(cfg)
    if chosen is not None and cfg.method.name != chosen:
        raise TrainError(f"conf/method/{chosen}.yaml says name: {cfg.method.name}; a method's file and name must be "
                         "the same (a registered method, adrop/methods/)")
    try:
        tracking.check(cfg.logger)
        model_mod.check_fits(cfg.model, cfg.dataset)
        return run_identity(cfg)
    except ValueError as err:
        raise TrainError(str(err)) from None


class StartChecks(Callback):
    def on_run_start(self, config, **kwargs) -> None:
        try:
            start_checks(config, config.hydra.runtime.choices.get("method"))
        except TrainError as err:
            raise StartRefused(str(err)) from None
        folder = Path(config.hydra.run.dir).absolute()
        new = [p for p in (folder, *folder.parents) if not p.exists()]
        if new:
            CREATED[folder] = new[-1]

    def on_multirun_start(self, config, **kwargs) -> None:
        try:
            check_keys(config)
        except TrainError as err:
            raise StartRefused(str(err)) from None
