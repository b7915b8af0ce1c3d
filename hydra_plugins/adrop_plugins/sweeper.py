"""Hydra's basic sweeper with two promises kept, the default sweeper of `adrop train -m`:

- the failed jobs are counted (`RESULT`), so that `adrop train -m` exits non-zero when any job failed;
- a sweep folder's multirun.yaml is never rewritten: a later command into the same folder (to resume it or add
  jobs) records its configuration as multirun.2.yaml, multirun.3.yaml, ...

The loop is Hydra's BasicSweeper.sweep (hydra-core 1.3) with only the saving and the counting changed.
"""
from __future__ import annotations

import logging
from pathlib import Path

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobStatus
from omegaconf import OmegaConf

log = logging.getLogger(__name__)
RESULT: dict = {}  # the last sweep of this process: {"jobs": n, "failed": [(job overrides, "failed" or "refused")],
#                   "dir": sweep folder}


def save_new(config, folder: Path) -> Path:
    """multirun.yaml, or the first multirun.N.yaml not taken: an earlier command's record stays as it was."""
    path, n = folder / "multirun.yaml", 2
    while path.exists():
        path, n = folder / f"multirun.{n}.yaml", n + 1
    OmegaConf.save(config, path)
    return path


def job_status(result) -> str | None:
    """"failed" or "refused" (nothing written: another run's folder, or one in use), else None."""
    if result.status == JobStatus.FAILED:
        return "failed"
    value = result._return_value  # the task's summary dict; never raises, unlike .return_value
    status = value.get("status") if isinstance(value, dict) else None
    return status if status in ("failed", "refused") else None


class AdropSweeper(BasicSweeper):
    def sweep(self, arguments):
        params_conf = self._parse_config()
        params_conf.extend(arguments)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        self.overrides = self.split_arguments(parser.parse_overrides(params_conf), self.max_batch_size)
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        save_new(self.config, sweep_dir)
        print(f"adrop train: sweep into {sweep_dir.absolute()}", flush=True)
        RESULT.clear()
        RESULT.update(jobs=0, failed=[], dir=str(sweep_dir))
        returns, initial_job_idx = [], 0
        while not self.is_done():
            batch = self.get_job_batch()
            self.validate_batch_is_legal(batch)
            results = self.launcher.launch(batch, initial_job_idx=initial_job_idx)
            RESULT["jobs"] += len(results)
            RESULT["failed"] += [(" ".join(r.overrides or []), job_status(r)) for r in results if job_status(r)]
            initial_job_idx += len(batch)
            returns.append(results)
        return returns
