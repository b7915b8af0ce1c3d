"""`adrop train`: the runner around the library (adrop.sparsify, adrop.methods), in rooms by concern. Its command
line: adrop/commands/train.py. Each room imports only those after it: command -> hydra_plugins -> sweep -> loop ->
config -> nets, data, run_folder -> tasks -> runtime -> errors, and any of them the library (tests/test_imports.py
holds them to it).

    command/     the Hydra app (a job and how it ends), the checks before any folder exists, the help without torch
    config/      the schema, a configuration resolved once into Settings, which settings make two runs differ
    data/        data sets as raw arrays, as tensors on the device, text as tokens
    nets/        any nn.Module made the method's sparse network, the built-in networks, K copies of modules
    loop/        the one training engine, its Adam, the schedules, masked evaluation, the collapse check
    run_folder/  what a run leaves and its checkpoint, live logging (TensorBoard, MLflow)
    sweep/       a sweep's jobs as stacks, stacks as cluster jobs, what a sweep's jobs ended as
    tasks/       classification, regression, language modelling: a task's loss and metrics
    errors.py    every fault as one line              runtime.py  device, seeds, compile, signals

Runs made before the rooms name their built-in networks (and start checks) by the modules' old paths, in the
`_target_`s of their saved configs and in their identities (checkpoint, summary.json); OLD_PATHS keeps those paths
importable and `current_paths` reads an identity with the new ones, so such a run still resumes and exports.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

OLD_PATHS = {
    "adrop.train.networks": "adrop.train.nets.builtin",
    "adrop.train.cifar_networks": "adrop.train.nets.cifar",
    "adrop.train.tiny_transformers": "adrop.train.nets.tiny_transformers",
    "adrop.train.hooks": "adrop.train.command.start_checks",
}


def current_paths(value):
    """An identity (a dict, or a string in it) with every old module path replaced by the module's current one."""
    if isinstance(value, dict):
        return {k: current_paths(v) for k, v in value.items()}
    if isinstance(value, str):
        for old, new in OLD_PATHS.items():
            value = value.replace(old + ".", new + ".")
    return value


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path as the module now at its new one (the same module object, not a copy, its own spec kept:
    importlib sets the old path's spec on the module it is given, and exec_module puts the module's back)."""

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in OLD_PATHS else None

    def create_module(self, spec):
        module = importlib.import_module(OLD_PATHS[spec.name])
        self._specs = {**getattr(self, "_specs", {}), spec.name: module.__spec__}
        return module

    def exec_module(self, module):
        own = self._specs.get(getattr(module.__spec__, "name", None))
        if own is not None:
            module.__spec__ = own
            module.__loader__ = own.loader


if not any(type(f).__name__ == "_OldPaths" for f in sys.meta_path):  # once, also when this package is reloaded
    sys.meta_path.append(_OldPaths())
