"""Hydra's basic sweeper with one promise kept, the default sweeper of `adrop train -m`: a sweep folder's
multirun.yaml is never rewritten: a later command into the same folder (to resume it or add jobs) records its
configuration as multirun.2.yaml, multirun.3.yaml, ... (How the jobs ended is counted for any sweeper:
adrop.train.sweep_outcomes.)

The loop is Hydra's BasicSweeper.sweep (hydra-core 1.3) with only the saving changed.
"""
from __future__ import annotations

import logging
from pathlib import Path

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

log = logging.getLogger(__name__)


def save_new(config, folder: Path) -> Path:
    """multirun.yaml, or the first multirun.N.yaml not taken: an earlier command's record stays as it was."""
    path, n = folder / "multirun.yaml", 2
    while path.exists():
        path, n = folder / f"multirun.{n}.yaml", n + 1
    OmegaConf.save(config, path)
    return path


class AdropSweeper(BasicSweeper):
    def sweep(self, arguments):
        params_conf = self._parse_config()
        params_conf.extend(arguments)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        self.overrides = self.split_arguments(parser.parse_overrides(params_conf), self.max_batch_size)
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        save_new(self.config, sweep_dir)
        returns, initial_job_idx = [], 0
        while not self.is_done():
            batch = self.get_job_batch()
            self.validate_batch_is_legal(batch)
            results = self.launcher.launch(batch, initial_job_idx=initial_job_idx)
            initial_job_idx += len(batch)
            returns.append(results)
        return returns
