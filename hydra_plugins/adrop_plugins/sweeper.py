"""Hydra's basic sweeper with one promise kept, the default sweeper of `adrop train -m`: a sweep folder's
multirun.yaml is never rewritten: a later command into the same folder (to resume it or add jobs) records its
configuration as multirun.2.yaml, multirun.3.yaml, ... (How the jobs ended is counted for any sweeper:
adrop.train.run_folder.sweep_outcomes.)

The loop is Hydra's BasicSweeper.sweep (hydra-core 1.3) with only the saving changed.
"""

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from adrop.outputs import create_new
from adrop.train.run_folder import sweep_outcomes

log = logging.getLogger(__name__)


@dataclass
class AdropSweeperConf:
    """Hydra's basic sweeper that never rewrites a sweep folder's multirun.yaml (a later command into the same folder
    records its own as multirun.2.yaml, ...); adrop train's default sweeper."""

    _target_: str = "hydra_plugins.adrop_plugins.sweeper.AdropSweeper"
    max_batch_size: Optional[int] = None  # jobs per launch (null: all)
    params: Optional[Dict[str, str]] = None  # the sweep's parameters, as Hydra's basic sweeper takes them


ConfigStore.instance().store(group="hydra/sweeper", name="adrop", node=AdropSweeperConf, provider="adrop")


def save_new(config, folder: Path) -> Path:
    """multirun.yaml, or the first multirun.N.yaml not taken, created exclusively: an earlier command's record, or
    that of a command starting into the same folder at the same moment, stays as it was."""
    path, fh = create_new(folder, "multirun.yaml")
    with fh:
        fh.write(OmegaConf.to_yaml(config))
    return path


class Record:
    """This command's record in its sweep folder (save_new), made before the first launch. Withdrawn, with the folders
    this command made for it, when that launch fails before any job wrote anything (a launcher that cannot start,
    `hydra/launcher=slurm` without srun): a sweep that never started leaves nothing behind."""

    def __init__(self, config, folder: Path) -> None:
        self.folder = Path(folder)
        self.made = [p for p in (self.folder, *self.folder.parents) if not p.exists()]
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = save_new(config, self.folder)

    def withdraw(self) -> None:
        submitit = self.folder / ".submitit"  # a submitit launcher's folder, before its first job
        empty = [p for p in sorted(submitit.rglob("*"), reverse=True) if p.is_dir()] + [submitit]
        for p in empty:
            try:
                p.rmdir()
            except OSError:
                pass
        if any(p != self.path for p in self.folder.iterdir()):  # jobs wrote there, or other commands: keep it
            return
        self.path.unlink(missing_ok=True)
        for p in self.made:
            try:
                p.rmdir()
            except OSError:
                return


def launched(sweeper, batch, initial_job_idx: int, record: Record):
    """sweeper.launcher.launch(batch), its jobs counted as this command's (sweep_outcomes.launched); a first
    launch (initial_job_idx 0) that fails withdraws the record."""
    try:
        returns = sweeper.launcher.launch(batch, initial_job_idx=initial_job_idx)
        sweep_outcomes.launched(returns)
        return returns
    except BaseException:
        if initial_job_idx == 0:
            record.withdraw()
        raise


class AdropSweeper(BasicSweeper):
    def sweep(self, arguments):
        params_conf = self._parse_config()
        params_conf.extend(arguments)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        self.overrides = self.split_arguments(parser.parse_overrides(params_conf), self.max_batch_size)
        record = Record(self.config, Path(self.config.hydra.sweep.dir))
        returns, initial_job_idx = [], 0
        while not self.is_done():
            batch = self.get_job_batch()
            self.validate_batch_is_legal(batch)
            results = launched(self, batch, initial_job_idx, record)
            initial_job_idx += len(batch)
            returns.append(results)
        return returns
