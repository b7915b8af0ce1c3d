"""Every error a user can cause, as one line: Hydra's multi-line messages shortened to what to fix.

`adrop train` asks Hydra to raise instead of printing (HYDRA_FULL_ERROR=1 inside the process) and reports here;
a user who sets HYDRA_FULL_ERROR=1 (Hydra's own switch) gets the full traceback instead.

The exit statuses (the table in docs/guide.md, "Errors, faults and exit codes", and adrop/commands/train.py): 0 done,
REFUSED (2) the command or its data is wrong and nothing trained, FAILED (1) a run failed, 130 and 143 interrupted.
"""

from __future__ import annotations

import logging
import os
import traceback


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
