"""Shared test settings and fixtures.

- hypothesis stays fast and deterministic on 2 cores;
- `config(...)`, `synthetic(...)`, `mnist(...)`: `adrop train`'s configuration composed with Hydra's compose API
  (the same files the command reads), the latter two on small data on the CPU;
- `adrop(...)`: the real command line in a subprocess, in the test's own folder;
- `@pytest.mark.slow`: tests that start subprocesses or train on MNIST; `pytest -m "not slow"` is the fast loop;
- MNIST where adrop finds it (`DATA`: $ADROP_DATA, else the checkout's data/); `needs_mnist()` skips a test without
  it, naming where it looked, or fails it with ADROP_REQUIRE_MNIST=1 (CI: no test skips silently there).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hypothesis import HealthCheck, settings

from adrop.train.command import registry

settings.register_profile(
    "adrop", max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("adrop")
registry.register()

if os.environ.get("PYTEST_XDIST_WORKER"):  # one of pytest-xdist's workers (-n): one thread each, its commands too,
    # so that the workers share the cores instead of oversubscribing them
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ADROP_DATA") or ROOT / "data").resolve()  # data.root's default, as adrop train has it
NEEDED = []  # the tests that needed MNIST and did not find it


def needs_mnist() -> Path:
    """The data root holding MNIST/raw/; a test without it is skipped (failed with ADROP_REQUIRE_MNIST=1)."""
    if not (DATA / "MNIST" / "raw").exists():
        why = f"MNIST not found under {DATA} (set ADROP_DATA to a folder holding MNIST/raw/)"
        if os.environ.get("ADROP_REQUIRE_MNIST") == "1":
            pytest.fail(why + "; ADROP_REQUIRE_MNIST=1 makes this a failure")
        NEEDED.append(why)
        pytest.skip(why)
    return DATA


def compose_config(*overrides):
    with initialize_config_module(version_base="1.3", config_module="adrop.conf"):
        return compose("config", overrides=list(overrides))


@pytest.fixture(scope="session")
def config():
    return compose_config


@pytest.fixture(scope="session")
def synthetic():
    """Synthetic data, a small MLP, the CPU, no progress bar: the cheapest configuration that trains."""
    return lambda *overrides: compose_config(
        "dataset=synthetic", "model=mlp", "device=cpu", "progress=never", *overrides
    )


@pytest.fixture(scope="session")
def mnist():
    """The first 1,024 MNIST training examples (skipped where MNIST is missing: needs_mnist)."""
    needs_mnist()
    return lambda *overrides: compose_config(
        f"data.root={DATA}", "data.train_limit=1024", "data.download=false", "device=cpu", "progress=never", *overrides
    )


def run_adrop(*args, cwd, env=None):
    env = {**{k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "adrop", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@pytest.fixture
def adrop(tmp_path):
    """Run `adrop <args>` in a subprocess in tmp_path (or cwd=...); returns the CompletedProcess."""
    return lambda *args, cwd=tmp_path, env=None: run_adrop(*args, cwd=cwd, env=env)


def pytest_terminal_summary(terminalreporter):
    """Which torch the suite ran with (CI and a fresh clone install whatever the requirements allow)."""
    import torch

    terminalreporter.write_line(f"torch {torch.__version__}, CUDA {'yes' if torch.cuda.is_available() else 'no'}")
    if NEEDED:
        terminalreporter.write_line(f"{len(NEEDED)} tests skipped: {NEEDED[0]}")
    else:
        found = (DATA / "MNIST" / "raw").exists()
        terminalreporter.write_line(f"MNIST: {DATA}" + ("" if found else " (not there; no test run needed it)"))


@pytest.fixture
def held_noise(monkeypatch):
    """Every method module's `noise` (each imports methods.base.noise by name) replaced by HeldNoise."""
    import sys

    from helpers.stacks import HeldNoise

    held = HeldNoise()
    for name, module in list(sys.modules.items()):
        if name.startswith("adrop.methods.") and hasattr(module, "noise"):
            monkeypatch.setattr(module, "noise", held)


@pytest.fixture(scope="session")
def pruned(tmp_path_factory, synthetic):
    """A finished run with half of its weights pruned (synthetic data, the small MLP), its .hydra/config.yaml as the
    command writes it: what fine-tuning (fixed_mask) starts from."""
    from adrop.train.run_folder import run_files

    from helpers.engines import train

    folder = tmp_path_factory.mktemp("pruned")
    cfg = synthetic("method=magnitude_pruning", "method.params.final_sparsity=0.5", "epochs=3")
    train(cfg, folder)
    run_files.write_config(folder, cfg, {}, [])
    return folder
