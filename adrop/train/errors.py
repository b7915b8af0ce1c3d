"""Every error a user can cause, as one line: Hydra's multi-line messages shortened to what to fix.

`adrop train` asks Hydra to raise instead of printing (HYDRA_FULL_ERROR=1 inside the process) and reports here;
a user who sets HYDRA_FULL_ERROR=1 (Hydra's own switch) gets the full traceback instead.

The exit statuses (the table in docs/guide.md, "Errors, faults and exit codes", and adrop/commands/train.py): 0 done,
REFUSED (2) the command or its data is wrong and nothing trained, FAILED (1) a run failed, 130 and 143 interrupted.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import os
import re
import traceback

from hydra.errors import InstantiationException, MissingConfigException


class TrainError(Exception):
    """A run that cannot start or go on; the message is for the user (one line)."""


DEBUG = "ADROP_DEBUG"  # set by the entry point: "1" when the user asked for tracebacks
FAILED = 1  # a run failed: a NaN or a diverging loss, a file that cannot be written, an error of adrop's own
REFUSED = 2  # the command or its data is wrong (a key, a value, data missing or malformed, a folder another run's)
DATA_ENV = "ADROP_DATA"  # where data.root points when the command does not say (conf/config.yaml)


def brief(err: BaseException, limit: int = 200) -> str:
    """Any exception as one short line: its type and its message's words (a library's message may span lines)."""
    text = " ".join(str(err).split())
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def debugging() -> bool:
    return os.environ.get(DEBUG) == "1"


def bug(err: Exception) -> str:
    """An error that is adrop's fault: one line for the user, the traceback in the job's log file where there is one
    (handed to the log's file handlers alone: the console shows the one line), and on stderr under
    HYDRA_FULL_ERROR=1."""
    if debugging():
        traceback.print_exc()
    record = logging.LogRecord("adrop.train", logging.ERROR, __file__, 0, "%s", (traceback.format_exc(),), None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
    return brief(err)


def closest_key(path: str) -> str | None:
    """The valid key nearest a mistyped dotted key ("data.rot" -> "data.root"), by the schema."""
    from adrop.train.config import schema  # (the schema's own messages name the errors here: imported when needed)

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
    from adrop import methods

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
        from adrop.train.config import schema

        cause = str(err.__cause__)
        close = closest_param(key, cause) or closest_dataset_key(key, cause) or closest_key(key)
        return schema.unknown_key_message(key, close)
    if "Could not load 'hydra/launcher/submitit" in text:  # a config that extends submitit's, without the plugin
        return f"{_meaningful(text)[0]}: the SLURM launcher needs pip install -e '.[launchers]'"
    lines = _meaningful(text) + _meaningful(str(err.__cause__ or ""))
    return ": ".join(lines[:2]) if lines else type(err).__name__


def unreachable(err: BaseException) -> bool:
    """Whether a download failed for want of a network (no route, no name resolution, a proxy that refuses, a
    timeout): torchvision reports those as a RuntimeError quoting urllib's "<urlopen error ...>"."""
    import socket
    from urllib.error import URLError

    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, (URLError, socket.gaierror, ConnectionError, TimeoutError)) or "urlopen error" in str(err):
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


def cannot_download(
    name: str,
    root,
    missing: list | None = None,
    total: int = 0,
    err: BaseException | None = None,
    holding: str | None = None,
) -> str:
    """The one line of a data set that is not (all) under data.root and that torchvision could not download:
    `missing` of its `total` files (None: not known), `holding` what a folder given as data.root must hold."""
    root = os.path.abspath(root)
    where = f"complete in {root} ({', '.join(missing)} missing)" if missing and len(missing) < total else f"in {root}"
    why = "no internet?" if err is None or unreachable(err) else brief(err, 120)
    return (
        f"{name} is not {where} and cannot be downloaded ({why}): pass data.root=<a folder holding "
        f"{holding or name + '/raw/'}> or set {DATA_ENV}"
    )
