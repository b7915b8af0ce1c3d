"""Where and how a training runs: the device, the state every run starts from, compile, denormals."""

from __future__ import annotations

import contextlib
import random
import signal

import numpy as np
import torch

from adrop.train.errors import TrainError


class Interrupted(BaseException):
    """A stop asked for by a signal (SIGTERM: a scheduler's or `kill`'s; SIGINT arrives as KeyboardInterrupt). A
    BaseException, as KeyboardInterrupt is, so that no handler of errors takes it for one."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.exit_code = 128 + signum

    def __str__(self) -> str:
        return signal.Signals(self.args[0]).name


def interruption(stop: BaseException) -> str:
    """ "interrupted (SIGTERM)": how a run's files and the last line name a stop (KeyboardInterrupt: SIGINT)."""
    return f"interrupted ({str(stop) or 'SIGINT'})"


def raise_interrupted(signum, frame):
    """A signal handler: the signal stops what runs, as Interrupted."""
    raise Interrupted(signum)


SIGTERM_IS_THE_CLUSTERS: list = []  # not empty in a submitit job (adrop.train.sweep.cluster): SIGTERM left to submitit


@contextlib.contextmanager
def sigterm_stops_training():
    """While training, SIGTERM raises Interrupted in the main thread, where training runs, so that it stops as Ctrl-C
    does: its files say so and the same command resumes it. The handler before it comes back afterwards (in a worker
    process of the stacked launcher: between stacks a SIGTERM just ends it). In a submitit job SIGTERM stays
    submitit's, which ignores it: SLURM sends it before the preemption signal, which stops the training there."""
    if SIGTERM_IS_THE_CLUSTERS:
        yield
        return
    before = signal.signal(signal.SIGTERM, raise_interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise TrainError(
                f"device={name} but CUDA is not available here (torch {torch.__version__}); "
                "use device=cpu or device=auto"
            )
        return torch.device(name)
    if name == "cpu":
        return torch.device("cpu")
    raise TrainError(f"unknown device {name!r}; valid: auto, cpu, cuda, cuda:N")


def device_type(name: str) -> str:
    """ "cpu" or "cuda" for a device setting, "cpu" where the setting is not usable here (the launchers' defaults)."""
    try:
        return resolve_device(name).type
    except TrainError:
        return "cpu"


def reset_state(seed: int, device: torch.device) -> None:
    """Every job starts from the same state, whatever ran before it in the process (sweeps run jobs in one)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def compiled(fn, device: torch.device):
    """torch.compile(fn) for compile=true. On a CPU the random numbers inside the graph come from eager torch
    (inductor's fallback_random): inductor's own CPU generator measured slower than eager (HardConcrete's stacked
    epoch 0.64 s against 0.44 s with it, one thread), and with eager's generator a compiled run draws the noise its
    eager run draws, so it stays within rounding of it (tested)."""
    if device.type == "cpu":
        import torch._inductor.config as inductor_config

        inductor_config.fallback_random = True
    return torch.compile(fn)


@contextlib.contextmanager
def denormals_flushed(device: torch.device):
    """Subnormal floats read and written as zero while training on the CPU, and only then.

    Weights on their way to zero get gradients whose squares and averages fall below 1.2e-38 (subnormal floats),
    where x86 arithmetic is ~100x slower: an eta_trick epoch went from 6 s to 38 s. The flag is the processor's,
    so it is put back afterwards: set for good, it changed NumPy's arithmetic in the rest of the process (the
    penalty calculus, Hypothesis's float strategies)."""
    if device.type != "cpu":
        yield
        return
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)
