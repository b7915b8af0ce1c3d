"""What must be known before Hydra composes `adrop train`'s configuration: adrop's Hydra plugins (their configs, in
the ConfigStore, and their classes: hydra_plugins.adrop_plugins.register) and the schema with each method's and data
set's (adrop.train.config.schema.register). The app, its help, the reference and any script that composes adrop's
configs call `register` first."""

from __future__ import annotations

from adrop.train.config import schema
from hydra_plugins import adrop_plugins


def register(method_params: dict | None = None) -> None:
    adrop_plugins.register()
    schema.register(method_params)
