"""Which overrides make two runs differ, declared once for the run's identity and stack key (settings), the lam
search's reuse of earlier runs and the report's settings. Torch-free: the report reads it.

- NOT_A_RESULT: changes no result (where the data is, how progress shows, the logger, what a sweep's job returns to
  it): never part of a folder's name (Hydra's `override_dirname.exclude_keys` in conf/config.yaml, read from there),
  a run's identity or stack key, and a search may reuse a run that differs only in these;
- REPEAT_OR_COLUMN: what tells repetitions of one setting apart (the seed, the device) or is a report column of its
  own (method, lam, lr, epochs, model);
- NOT_A_SETTING: the two together; any other override (experiment=..., method.params.end=0.25) is a setting of its
  own in a report.
"""

from __future__ import annotations

from importlib import resources

from omegaconf import OmegaConf

NOT_A_RESULT = tuple(
    OmegaConf.load(resources.files("adrop.conf") / "config.yaml").hydra.job.config.override_dirname.exclude_keys
)
REPEAT_OR_COLUMN = ("method", "lam", "lr", "seed", "epochs", "model", "device")
NOT_A_SETTING = frozenset(NOT_A_RESULT + REPEAT_OR_COLUMN)
