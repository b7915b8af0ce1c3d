"""docs/reference.md, generated from the code so that it cannot drift: every key of `adrop train` (the schema,
adrop.train.config.schema, with its comment), the options of each config group (conf/, each file's first comment), and
every method's parameters (its Params dataclass, with its comments). A test checks the committed file is current.

    python -m adrop.reference > docs/reference.md
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from importlib import resources

FIELD = re.compile(r"^(\s+)(\w+)\s*:\s*[^=#]+(?:=\s*(?P<value>.*?))?\s*(?:#\s?(?P<comment>.*))?$")
COMMENT = re.compile(r"^(\s*)#(.*)$")


def field_comments(cls) -> dict[str, str]:
    """{field: its comment} of a dataclass as its source has it (a field it inherits, as its base has it): the
    comment after the field, the comment lines above it, and comment lines after it that continue it (`#   ...`)."""
    out: dict[str, str] = {}
    for base in reversed(cls.__mro__[1:]):
        if dataclasses.is_dataclass(base):
            out.update(field_comments(base))
    lines = inspect.getsource(cls).splitlines()
    above: list[str] = []
    last, last_col = None, 0
    for line in lines[1:]:
        comment = COMMENT.match(line)
        if comment:
            text = comment.group(2).strip()
            # a continuation: indented past the field, or aligned under its comment (`#      ...`)
            if last is not None and (len(comment.group(1)) > last_col or comment.group(2).startswith("    ")):
                out[last] = f"{out[last]} {text}".strip()
            else:
                above.append(text)
            continue
        field = FIELD.match(line)
        if field and field.group(2) in vars(cls).get("__annotations__", {}):
            own = (field.group("comment") or "").strip()
            out[field.group(2)] = " ".join(above + ([own] if own else []))
            above, last = [], field.group(2)
            last_col = line.index("#") if own else len(field.group(1))
        else:
            above, last = [], None
    return out


def type_name(hint) -> str:
    text = getattr(hint, "__name__", None) if not typing.get_args(hint) else None
    text = text or str(hint).replace("typing.", "")
    return text.replace("NoneType", "None")


def default_of(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return ""
    if dataclasses.is_dataclass(value):
        return ""
    if str(value) == "???":
        return "(required)"
    return "null" if value is None else repr(value) if isinstance(value, str) else str(value)


def cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def composed_default(composed: dict, key: str):
    """A key's value in `adrop train`'s configuration as composed with no override (conf/config.yaml's choices,
    interpolations as written), or None where it has none."""
    node = composed
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def shown(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "(required)" if value == "???" else repr(value)
    return str(value)


KEYS_HEADER = ["| key | type | default | meaning |", "|---|---|---|---|"]  # above keys_table's rows


def keys_table(cls, prefix: str = "", composed: dict | None = None, skip: tuple = ()) -> list[str]:
    """Rows `| key | type | default | meaning |` of a schema dataclass (but the fields named in `skip`), nested ones
    after their parent; the default as `adrop train` composes it with no override (`composed`), else the schema's."""
    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    rows, nested = [], []
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        if dataclasses.is_dataclass(hints[f.name]):
            nested.append((f.name, hints[f.name]))
            continue
        value = composed_default(composed or {}, prefix + f.name)
        default = default_of(f) if value is None else shown(value)
        if f.name in ("model", "dataset") and not prefix:
            default = f"(the chosen {'network' if f.name == 'model' else 'data set'}'s)"
        rows.append(
            f"| `{prefix}{f.name}` | {cell(type_name(hints[f.name]))} | {cell(default)} | "
            f"{cell(comments.get(f.name, ''))} |"
        )
    for name, sub in nested:
        rows += keys_table(sub, f"{prefix}{name}.", composed)
    return rows


def first_comment(text: str) -> str:
    """A config file's description: its leading comment lines (Hydra's `# @package` aside), joined."""
    out = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if not line.startswith("# @package"):
            out.append(line.lstrip("#").strip())
    return " ".join(out)


def groups() -> list[str]:
    """Each config group's options: conf/'s folders (each file's first comment), then the Hydra launchers and sweepers
    adrop's plugins store (each config's docstring)."""
    root = resources.files("adrop.conf")
    out = []
    for group in sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in ("__pycache__",)):
        out += [f"### `{group}`", "", "| option | what it is |", "|---|---|"]
        for f in sorted((root / group).iterdir(), key=lambda p: p.name):
            if f.name.endswith(".yaml"):
                out.append(f"| `{group}={f.name[:-5]}` | {cell(first_comment(f.read_text()))} |")
        out.append("")
    return out + plugin_groups()


def plugin_groups() -> list[str]:
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    out, keys = [], []
    for group in ("launcher", "sweeper"):
        options = ConfigStore.instance().repo["hydra"][group]
        out += [f"### `hydra/{group}` (adrop's)", "", "| option | what it is |", "|---|---|"]
        for name in sorted(options):
            if getattr(options[name], "provider", None) == "adrop":  # (a dict: a nested group)
                option, cls = name.removesuffix(".yaml"), OmegaConf.get_type(options[name].node)
                out.append(f"| `hydra/{group}={option}` | {cell(' '.join((inspect.getdoc(cls) or '').split()))} |")
                keys += [f"#### `hydra/{group}={option}`", "", *KEYS_HEADER]
                keys += [*keys_table(cls, f"hydra.{group}.", skip=("_target_",)), ""]
        out.append("")
    return out + keys


def method_parameters() -> list[str]:
    from adrop import methods

    out = []
    for name in methods.names():
        cls = methods.get(name)
        params = cls.Params
        fields = dataclasses.fields(params)
        out += [f"### `method={name}`", ""]
        if not fields:
            out += ["No parameters.", ""]
            continue
        hints = typing.get_type_hints(params)
        comments = field_comments(params)
        out += ["| `method.params.` | type | default | meaning |", "|---|---|---|---|"]
        out += [
            f"| `{f.name}` | {cell(type_name(hints[f.name]))} | {cell(default_of(f))} | "
            f"{cell(comments.get(f.name, ''))} |"
            for f in fields
        ]
        out.append("")
    return out


def dataset_keys() -> list[str]:
    """The keys every data set has, then a table of its own keys per data set schema (adrop.train.data.schemas),
    each naming the data sets that have it."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from adrop.train.data import schemas

    users: dict[type, list[str]] = {}
    options = sorted(p.name[:-5] for p in (resources.files("adrop.conf") / "dataset").iterdir() if p.suffix == ".yaml")
    with initialize_config_module(version_base="1.3", config_module="adrop.conf"):
        for option in options:
            users.setdefault(OmegaConf.get_type(compose("config", [f"dataset={option}"]).dataset), []).append(option)
    common = tuple(f.name for f in dataclasses.fields(schemas.DatasetConfig))
    out = ["### Every data set's", "", *KEYS_HEADER, *keys_table(schemas.DatasetConfig, "dataset."), ""]
    for cls in schemas.SCHEMAS.values():
        named = ", ".join(f"`dataset={o}`" for o in users.get(cls, [])) or "a user's class"
        out += [f"### {cls.__name__}: {named}", "", cell(inspect.getdoc(cls) or ""), "", "And:", ""]
        out += [*KEYS_HEADER, *keys_table(cls, "dataset.", skip=common), ""]
    return out


def composed_config() -> dict:
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    with initialize_config_module(version_base="1.3", config_module="adrop.conf"):
        cfg = compose("config")
    return OmegaConf.to_container(cfg, resolve=False)


def markdown() -> str:
    from adrop.train.command import registry
    from adrop.train.config.schema import Config

    registry.register()  # adrop's plugins and schema: what the compositions and tables below read
    lines = [
        "# Reference",
        "",
        "Generated from the code by `python -m adrop.reference > docs/reference.md` (a test checks it is",
        "current): the keys of `adrop train` from its schema (adrop/train/config/schema.py), the options of each",
        "config group from conf/, and each method's parameters from its Params dataclass (adrop/methods/).",
        "How to use them: [the guide](guide.md).",
        "",
        "## `adrop train` keys",
        "",
        *KEYS_HEADER,
        *keys_table(Config, composed=composed_config()),
        "",
        "`model` is open: `_target_`, `name` and the constructor's arguments of the chosen network. `method` and",
        "`dataset` are config groups (below): their defaults are the chosen option's.",
        "",
        "## Data set keys",
        "",
        "Each data set has its own keys: its class's schema (adrop/train/data/schemas.py), with the defaults shown",
        "here unless its file in conf/dataset/ sets others (`adrop train dataset=<name> --help` shows them).",
        "",
        *dataset_keys(),
        "## Config groups",
        "",
        *groups(),
        "## Method parameters",
        "",
        "`method.params.<name>=<value>` (`adrop train`), or keywords of `adrop.sparsify`.",
        "",
        *method_parameters(),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
