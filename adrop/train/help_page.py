"""`adrop train --help` without torch: the help Hydra would print, composed in a process that imports no torch.

Two things made the help slow: the methods' Params dataclasses (the schema of method.params) live in the methods'
modules, which import torch; and Hydra's help lists every config group of every plugin (Hydra's own included) before
it looks at the template, which adrop's does not use. Here the Params are read from a cache of their defaults, kept
per version of adrop's sources (a digest of its .py files: any edit makes a new one), and the template is filled in
directly. What is printed is Hydra's help, line for line (tests/test_promises.py compares the two).
"""
from __future__ import annotations

import hashlib
import json
import os
import string
import sys
from pathlib import Path

HELP_FLAGS = ("--help", "-h")
TEMPLATE_FIELDS = {"CONFIG"}  # Hydra's template fields this help fills in; the others are left to Hydra


def requested(argv: list[str]) -> bool:
    """`adrop train [overrides] --help`: the help, and nothing of Hydra's other flags (those go to Hydra)."""
    flags = [a for a in argv if a.startswith("-")]
    return bool(flags) and all(f in HELP_FLAGS for f in flags)


def sources_digest(package: Path) -> str:
    """A digest of every .py file of the package (names and bytes): the cache's key."""
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        h.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:20]


def cache_folder() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "adrop"


def method_params() -> dict:
    """{method: its Params' defaults as plain containers}, from the cache, or from the methods (importing torch) when
    the sources changed since the cache was written; an unwritable cache folder only costs the next help its speed."""
    import adrop

    try:
        path = cache_folder() / f"method_params-{sources_digest(Path(adrop.__file__).parent)}.json"
        return json.loads(path.read_text())
    except (OSError, ValueError, RuntimeError):  # RuntimeError: no home folder to be found
        pass
    from omegaconf import OmegaConf

    from adrop import methods

    params = {name: OmegaConf.to_container(OmegaConf.structured(cls.Params)) for name, cls in methods.METHODS.items()}
    try:
        path = cache_folder() / f"method_params-{sources_digest(Path(adrop.__file__).parent)}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # two helps at once: one file each
        try:
            temporary.write_text(json.dumps(params))
            os.replace(temporary, path)  # whole or not at all
        finally:
            temporary.unlink(missing_ok=True)
    except (OSError, RuntimeError):
        pass
    return params


def show(argv: list[str]) -> int:
    """Print the help for these overrides (the method's params included), as Hydra's `--help` does."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf, open_dict

    from . import schema

    overrides = [a for a in argv if a not in HELP_FLAGS]
    schema.register(method_params())
    with initialize_config_module(config_module="adrop.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    template = string.Template(cfg.hydra.help.template)
    fields = {m.group("named") or m.group("braced") for m in template.pattern.finditer(template.template)} - {None}
    if not fields <= TEMPLATE_FIELDS:  # a template of the user's own with Hydra's other fields: Hydra's help
        return -1
    with open_dict(cfg):
        del cfg["hydra"]
    sys.stdout.write(template.substitute(CONFIG=OmegaConf.to_yaml(cfg)) + "\n")
    return 0
