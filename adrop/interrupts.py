"""Ctrl-C and SIGTERM at any moment of an `adrop` command: one line, and exit status 130 or 143.

Python turns SIGINT into a KeyboardInterrupt wherever it lands. While a subcommand imports torch, or while a library
cleans up after one (OmegaConf, in the middle of Hydra's composition), it surfaces as a long traceback or as another
error; SIGTERM, by default, ends the process without a word. `recorded()` wraps a subcommand: both signals raise
KeyboardInterrupt and are remembered (`STOPS`), so that whatever error they surface as, the command can end with
`said()`: `adrop <command>: interrupted (SIGINT)`. A subcommand that handles a stop itself says its own line (adrop
train: the run's status and the command that resumes it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)
STOPS: list = []  # the signals that reached this command while recorded() was in force
SAID: list = []  # not empty once said() has said a stop: the process then ends at once (exit_now)


DEFERRED: list = []  # inside deferred(): len(STOPS) as it began; a first stop is remembered, raised when it ends


def record(signum, frame) -> None:
    """The handler of SIGINT and SIGTERM: Python's own for SIGINT (KeyboardInterrupt), remembering which arrived."""
    STOPS.append(signum)
    if not DEFERRED or len(STOPS) - DEFERRED[-1] > 1:  # a second stop while deferred: at once (an import that hangs)
        raise KeyboardInterrupt


@contextlib.contextmanager
def deferred():
    """A stop inside the block is raised when the block ends, not where it lands. For torch's import: a
    KeyboardInterrupt raised inside its C++ initialisers (pybind11) aborts the process (SIGABRT) instead of
    unwinding. The stop waits for the import, a few seconds at most; a second stop does not wait."""
    before = len(STOPS)
    DEFERRED.append(before)
    try:
        yield
    finally:
        DEFERRED.pop()
    if len(STOPS) > before and not DEFERRED:
        raise KeyboardInterrupt


@contextlib.contextmanager
def recorded():
    """`record` handles SIGINT and SIGTERM inside the block, where the default handlers are set (a signal that is
    ignored, as SIGINT under nohup, stays ignored; outside the main thread nothing changes); the handlers as they
    were afterwards."""
    STOPS.clear()
    SAID.clear()
    defaults = (signal.default_int_handler, signal.SIG_DFL)
    before = {}
    if threading.current_thread() is threading.main_thread():
        before = {s: signal.getsignal(s) for s in SIGNALS if signal.getsignal(s) in defaults}
        for s in before:
            signal.signal(s, record)
    try:
        yield
    finally:
        STOPS.clear()
        for s, handler in before.items():
            if signal.getsignal(s) is record or (SAID and signal.getsignal(s) == signal.SIG_IGN):  # ours, or said()'s
                signal.signal(s, handler)


def name() -> str:
    """The signal that stopped this command: "SIGTERM" or "SIGINT" (a KeyboardInterrupt with none recorded)."""
    return signal.Signals(STOPS[-1]).name if STOPS else "SIGINT"


def said(who: str, after: str = "") -> int:
    """The stop's one line (`who`: "adrop train"), and its exit status, 128 + the signal; inside recorded(), a second
    stop while it is said is ignored."""
    signum = STOPS[-1] if STOPS else signal.SIGINT
    if threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            if signal.getsignal(s) is record:  # inside recorded(), which restores the handlers
                signal.signal(s, signal.SIG_IGN)
    print(f"{who}: interrupted ({name()}){after}", file=sys.stderr, flush=True)
    SAID.append(signum)
    return 128 + signum


def exit_now(code: int) -> None:
    """End the process with `code`, now: after a stop said by `said`, Python would instead end by SIGINT itself (no
    status of ours) where the KeyboardInterrupt was raised in code that it runs through PyRun (torch's import)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def while_exiting(signum, frame) -> None:
    """A stop after the command said its last line (while the interpreter shuts down): exit at once, where Python
    would print a traceback from whichever exit handler it interrupted."""
    os.write(2, f"adrop: interrupted ({signal.Signals(signum).name}) while exiting\n".encode())
    os._exit(128 + signum)
