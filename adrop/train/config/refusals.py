"""A configuration Hydra refused, in one line: the typo's nearest valid key (by the schema, a method's Params, a data
set's schema), the plugin that is missing, or Hydra's own first words."""

from __future__ import annotations

import dataclasses
import difflib
import re

from hydra.errors import InstantiationException, MissingConfigException

from adrop.train.config import schema


def closest_key(path: str) -> str | None:
    """The valid key nearest a mistyped dotted key ("data.rot" -> "data.root"), by the schema."""
    node, parts = schema.schema_keys(schema.Config), path.split(".")
    for i, part in enumerate(parts):
        if node is None:
            return None
        if part not in node:
            close = difflib.get_close_matches(part, list(node), n=1, cutoff=0.6)
            return ".".join(parts[:i] + close) if close else None
        node = node[part]
    return None


def closest_param(path: str, cause: str) -> str | None:
    """For a mistyped method.params.<key>: the nearest parameter of the method whose Params class refused it."""
    from adrop import methods  # torch: only where a method's parameter was refused

    return _closest_field(path, "method.params.", cause, [cls.Params for cls in methods.METHODS.values()])


def closest_dataset_key(path: str, cause: str) -> str | None:
    """For a mistyped dataset.<key>: the nearest key of the data set's schema that refused it
    (adrop.train.data.schemas)."""
    from adrop.train.data import schemas

    if path.count(".") != 1:
        return None
    return _closest_field(path, "dataset.", cause, [schemas.DatasetConfig, *schemas.SCHEMAS.values()])


def _closest_field(path: str, prefix: str, cause: str, classes) -> str | None:
    """The field nearest `path`'s last key of the dataclass among `classes` that Hydra's `cause` names as refusing it
    ("Key 'x' not in 'LogSumParams'"), as `prefix`<field>."""
    refused = re.search(r"not in '(\w+)'", cause)
    if not path.startswith(prefix) or not refused:
        return None
    for cls in classes:
        if cls.__name__ == refused.group(1):
            fields = [f.name for f in dataclasses.fields(cls)]
            close = difflib.get_close_matches(path.rsplit(".", 1)[1], fields, n=1, cutoff=0.6)
            return f"{prefix}{close[0]}" if close else None
    return None


def _meaningful(text: str) -> list[str]:
    """The lines of a Hydra/OmegaConf message that say something (not its indented key dumps or links)."""
    return [
        line.strip().rstrip(".")
        for line in text.splitlines()
        if line.strip()
        and not line.startswith((" ", "\t"))
        and not line.startswith(("See http", "Config search"))
        and not line.startswith("To append to your config")
    ]  # Hydra's `+key` hint: the schema is closed


def one_line(err: BaseException) -> str:
    text = str(err)
    if isinstance(err, InstantiationException) and isinstance(err.__cause__, ValueError):
        return str(err.__cause__)  # a plugin (the stacked launcher) refused its settings: its own words, not Hydra's
    if isinstance(err, MissingConfigException) and err.options is not None:
        found = re.search(r"Could not find '([^']+)/([^'/]+)'", text)
        if found:
            group, name = found.groups()
            extra = (
                " (joblib, submitit_local, submitit_slurm, slurm, stacked_submitit_local and stacked_slurm come "
                "with pip install -e '.[launchers]')"
                if group == "hydra/launcher"
                else ""
            )
            return f"unknown {group} {name!r}; valid {group} options: {', '.join(err.options)}{extra}"
    found = re.match(r"Could not override '([^']+)'", text)
    if found and "not in" in str(err.__cause__ or ""):
        key = found.group(1)
        if key == "lam_scale" or key.startswith("lam_scale."):  # empty by default: a layer's multiplier is added
            return (
                "lam_scale is empty by default: add a layer's multiplier with +lam_scale.<layer>=<value> "
                "(or '++lam_scale={<layer>: <value>, ...}')"
            )
        if key.startswith("method.params.penalty_params."):  # an open dict, empty by default: a key is added
            return f"{key} is not set by default (the penalty's own defaults apply): add it with +{key}=<value>"
        cause = str(err.__cause__)
        close = closest_param(key, cause) or closest_dataset_key(key, cause) or closest_key(key)
        return schema.unknown_key_message(key, close)
    if "Could not load 'hydra/launcher/submitit" in text:  # a config that extends submitit's, without the plugin
        return f"{_meaningful(text)[0]}: the SLURM launcher needs pip install -e '.[launchers]'"
    lines = _meaningful(text) + _meaningful(str(err.__cause__ or ""))
    return ": ".join(lines[:2]) if lines else type(err).__name__
