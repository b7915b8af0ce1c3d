"""`adrop train --help` without torch: the help Hydra would print, composed in a process that imports no torch.

Two things made the help slow: the methods' Params dataclasses (the schema of method.params) live in the methods'
modules, which import torch; and Hydra's help lists every config group of every plugin (Hydra's own included) before
it looks at the template, which adrop's does not use. Here each Params class is rebuilt from a cache of its fields
(names, types, defaults), kept per version of adrop's sources (a digest of its .py files: any edit makes a new one),
so method.params is as closed and typed as in a run; and the template is filled in directly. What is printed is
Hydra's help, line for line (tests/test_help_page.py compares the two). Overrides of Hydra's own settings
(`hydra.*`, `hydra/launcher=...`) and templates with Hydra's other fields go to Hydra's help.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import string
import sys
import typing
from pathlib import Path

HELP_FLAGS = ("--help", "-h")
TEMPLATE_FIELDS = {"CONFIG"}  # Hydra's template fields this help fills in; the others are left to Hydra
TYPES = {t.__name__: t for t in (bool, int, float, str, dict)}  # the field types a cached Params may have


def requested(argv: list[str]) -> bool:
    """`adrop train [overrides] --help`: the help, with nothing of Hydra's other flags or settings (those go to
    Hydra)."""
    flags = [a for a in argv if a.startswith("-")]
    hydras = [a for a in argv if not a.startswith("-") and a.lstrip("+~").startswith("hydra")]
    return bool(flags) and all(f in HELP_FLAGS for f in flags) and not hydras


def sources_digest(package: Path) -> str:
    """A digest of every .py file of the package (names and bytes): the cache's key."""
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        h.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:20]


def cache_path() -> Path | None:
    """This version of adrop's cache file (None where there is no home folder to keep it in)."""
    import adrop

    try:
        folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "adrop"
    except RuntimeError:
        return None
    return folder / f"method_params-{sources_digest(Path(adrop.__file__).parent)}.json"


def describe(cls) -> dict | None:
    """A Params dataclass as JSON: its name and [field, type, default] triples; None if a field's type is not one
    the cache can hold (then the help imports the methods)."""
    hints = typing.get_type_hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        if kind not in TYPES.values():
            return None
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        fields.append([f.name, kind.__name__, default])
    return {"name": cls.__name__, "fields": fields}


def rebuild(description: dict):
    """The dataclass `describe` described: same name, fields, types and defaults."""
    fields = [
        (
            name,
            TYPES[kind],
            dataclasses.field(default_factory=lambda d=default: type(d)(d))
            if isinstance(default, (dict, list))
            else dataclasses.field(default=default),
        )
        for name, kind, default in description["fields"]
    ]
    return dataclasses.make_dataclass(description["name"], fields)


def described_params() -> dict | None:
    """{method: describe(its Params)}, from the methods themselves (this imports torch); None if one cannot be."""
    from adrop import methods

    described = {name: describe(cls.Params) for name, cls in methods.METHODS.items()}
    return None if None in described.values() else described


def method_params() -> dict:
    """{method: its Params class}: rebuilt from the cache, or the methods' own (importing torch) when the sources
    changed since the cache was written; an unwritable cache folder only costs the next help its speed."""
    path = cache_path()
    try:
        return {name: rebuild(d) for name, d in json.loads(path.read_text()).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # none yet, or not readable
        pass
    from adrop import methods

    described = described_params()
    if described is not None and path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # two helps at once: one file each
            try:
                temporary.write_text(json.dumps(described))
                os.replace(temporary, path)  # whole or not at all
            finally:
                temporary.unlink(missing_ok=True)
            for old in path.parent.glob("method_params-*.json"):  # earlier sources' caches
                if old != path:
                    old.unlink(missing_ok=True)
        except OSError:
            pass
    return {name: cls.Params for name, cls in methods.METHODS.items()}


def show(argv: list[str]) -> int:
    """Print the help for these overrides (the method's params included), as Hydra's `--help` does; -1 where the
    template asks for Hydra's other fields (then Hydra's own help should print it)."""
    from hydra import compose, initialize_config_module
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf, open_dict

    from adrop.train.config import schema

    overrides = [a for a in argv if a not in HELP_FLAGS]
    schema.register(method_params())
    with initialize_config_module(config_module="adrop.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)  # as Hydra's help does: the template may read ${hydra:...}
    template = string.Template(cfg.hydra.help.template)
    fields = {m.group("named") or m.group("braced") for m in template.pattern.finditer(template.template)} - {None}
    if not fields <= TEMPLATE_FIELDS:
        return -1
    with open_dict(cfg):
        del cfg["hydra"]
    sys.stdout.write(template.substitute(CONFIG=OmegaConf.to_yaml(cfg)) + "\n")
    return 0
