"""`adrop train --help` without torch: the help Hydra would print, composed in a process that imports no torch.

Two things made the help slow: the methods' Params dataclasses (the schema of method.params) live in the methods'
modules, which import torch; and Hydra's help lists every config group of every plugin (Hydra's own included) before
it looks at the template, which adrop's does not use. Here each method's Params class is read from its module's
source (adrop/methods/*.py, with the `ast` module: its fields, their types and their defaults, through the classes it
inherits from) and made again as a dataclass, so method.params is as closed and typed as in a run, with nothing kept
between commands; and the template is filled in directly. What is printed is Hydra's help, line for line
(tests/test_help_page.py compares the two, and the Params read here with the methods' own). A Params the reader
cannot follow (a type or a default it does not know) makes the help import the methods instead. Overrides of Hydra's
own settings (`hydra.*`, `hydra/launcher=...`) and templates with Hydra's other fields go to Hydra's help.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import string
import sys
from pathlib import Path

HELP_FLAGS = ("--help", "-h")
TEMPLATE_FIELDS = {"CONFIG"}  # Hydra's template fields this help fills in; the others are left to Hydra
TYPES = {t.__name__: t for t in (bool, int, float, str, dict)}  # the field types a Params read here may have
DEFAULTS = {"math": math, "field": dataclasses.field, "dict": dict, "list": list}  # what a default may name


class Unreadable(Exception):
    """A Params the source reader does not follow: the help imports the methods instead."""


def requested(argv: list[str]) -> bool:
    """`adrop train [overrides] --help`: the help, with nothing of Hydra's other flags or settings (those go to
    Hydra)."""
    flags = [a for a in argv if a.startswith("-")]
    hydras = [a for a in argv if not a.startswith("-") and a.lstrip("+~").startswith("hydra")]
    return bool(flags) and all(f in HELP_FLAGS for f in flags) and not hydras


def _classes(folder: Path) -> dict[str, ast.ClassDef]:
    """Every class of the methods' modules, by name (the modules import one another's by name)."""
    found = {}
    for path in sorted(folder.glob("*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef):
                if node.name in found:
                    raise Unreadable(f"two classes named {node.name}")
                found[node.name] = node
    return found


def _attribute(classes: dict, name: str, attribute: str):
    """A class attribute's expression (`name = "logsum"`, `Params = X`), looked up through the class's bases."""
    node = classes.get(name)
    if node is None:
        return None
    for statement in node.body:
        if isinstance(statement, ast.Assign) and any(getattr(t, "id", None) == attribute for t in statement.targets):
            return statement.value
        if isinstance(statement, ast.AnnAssign) and getattr(statement.target, "id", None) == attribute:
            return statement.value
    for base in node.bases:
        if isinstance(base, ast.Name):
            found = _attribute(classes, base.id, attribute)
            if found is not None:
                return found
    return None


def _is_dataclass(node: ast.ClassDef) -> bool:
    """Decorated by a plain @dataclass (or @dataclasses.dataclass), without arguments."""
    return any(ast.unparse(d) in ("dataclass", "dataclasses.dataclass") for d in node.decorator_list)


def _fields(classes: dict, name: str) -> list[tuple]:
    """A dataclass's fields as (name, type, dataclasses.field), its base's first, as dataclasses orders them. Only
    what this reader follows for certain: a plain dataclass of at most one base (itself one), fields of the known
    types with defaults that are literals, math or dict/list factories."""
    node = classes.get(name)
    if node is None or not _is_dataclass(node) or len(node.bases) > 1:
        raise Unreadable(f"{name}: not a plain dataclass of at most one base")
    fields: dict[str, tuple] = {}
    for base in node.bases:
        if not isinstance(base, ast.Name):
            raise Unreadable(f"{name}'s base {ast.unparse(base)}")
        fields.update({f[0]: f for f in _fields(classes, base.id)})
    for statement in node.body:
        if not isinstance(statement, ast.AnnAssign):
            continue
        field_name, kind = statement.target.id, ast.unparse(statement.annotation)
        if kind not in TYPES or statement.value is None:
            raise Unreadable(f"{name}.{field_name}: {kind}")
        if any(isinstance(n, (ast.Lambda, ast.Call)) and not _allowed_call(n) for n in ast.walk(statement.value)):
            raise Unreadable(f"{name}.{field_name}'s default {ast.unparse(statement.value)}")
        default = eval(compile(ast.Expression(statement.value), "<default>", "eval"), {"__builtins__": {}}, DEFAULTS)
        if not isinstance(default, dataclasses.Field):
            default = dataclasses.field(default=default)
        fields[field_name] = (field_name, TYPES[kind], default)
    return list(fields.values())


def _allowed_call(node) -> bool:
    """math.<function>(literals), or field(default_factory=dict | list)."""
    if not isinstance(node, ast.Call):
        return False
    name = ast.unparse(node.func)
    if name.startswith("math."):
        return True
    return name == "field" and all(
        k.arg == "default_factory" and ast.unparse(k.value) in ("dict", "list") for k in node.keywords
    )


def params_from_source(folder: Path | None = None) -> dict:
    """{method: its Params class}, read from the methods' sources (registered classes: `@register`, a `name`)."""
    import adrop

    classes = _classes(folder or Path(adrop.__file__).parent / "methods")
    out = {}
    for cls_name, node in classes.items():
        if not any(ast.unparse(d).split(".")[-1] == "register" for d in node.decorator_list):
            continue
        name = _attribute(classes, cls_name, "name")
        params = _attribute(classes, cls_name, "Params")
        if not isinstance(name, ast.Constant) or not isinstance(params, ast.Name):
            raise Unreadable(f"{cls_name}'s name or Params")
        params_name = params.id
        out[name.value] = dataclasses.make_dataclass(params_name, _fields(classes, params_name))
    return out


def method_params() -> dict:
    """{method: its Params class}: read from the sources, or the methods' own (importing torch) where the reader
    cannot follow one."""
    try:
        return params_from_source()
    except (Unreadable, SyntaxError, NameError, TypeError, AttributeError, ValueError):
        from adrop import methods

        return {name: cls.Params for name, cls in methods.METHODS.items()}


def show(argv: list[str]) -> int:
    """Print the help for these overrides (the method's params included), as Hydra's `--help` does; -1 where the
    template asks for Hydra's other fields (then Hydra's own help should print it)."""
    from hydra import compose, initialize_config_module
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf, open_dict

    from adrop.train.command import registry

    overrides = [a for a in argv if a not in HELP_FLAGS]
    registry.register(method_params())
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
