"""adrop's Hydra plugins: its sweepers (adrop's default, lam_search) and launchers (stacked, and stacks as submitit
jobs). Each module stores its own configs in Hydra's ConfigStore as it is imported (one way: no YAML), and `register`
finds every plugin class of this package by walking it, so a new launcher or sweeper is its module alone.

Hydra finds plugins by scanning the hydra_plugins namespace package; an editable install hides this folder from that
scan, so adrop.train.command.app (and whatever composes adrop's configs) calls `register` (Plugins.register, Hydra's
documented way), after Hydra's own scan: that scan re-executes the plugin modules it finds (BasicSweeper among them),
and ours must subclass the classes Hydra then uses.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil


def register() -> list[type]:
    """Import every module of this package (their configs stored) and register its Launcher and Sweeper classes with
    Hydra; the classes registered."""
    from hydra.core.plugins import Plugins
    from hydra.plugins.launcher import Launcher
    from hydra.plugins.sweeper import Sweeper

    plugins = Plugins.instance()  # Hydra's scan first (see above)
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, (Launcher, Sweeper))
                and obj.__module__ == module.__name__
                and not inspect.isabstract(obj)
            ):
                plugins.register(obj)
                found.append(obj)
    return found
