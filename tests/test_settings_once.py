"""A job's settings are resolved and checked once: a single run's before its folder exists (the start checks), then
handed to the job; a sweep's job's when the job starts (the sweep's start checks only its keys)."""

import sys

import pytest

from adrop.train.command import app
from adrop.train.config import settings

SMALL = ("dataset=synthetic", "model=mlp", "device=cpu", "progress=never", "epochs=1")


@pytest.fixture
def resolutions(tmp_path, monkeypatch):
    """The number of times settings are resolved while `adrop train <args>` runs in this process."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    count = []
    made = settings.Settings.of

    def counted(*args, **kwargs):
        count.append(1)
        return made(*args, **kwargs)

    monkeypatch.setattr(settings.Settings, "of", counted)  # resolve() makes one Settings, at its end

    def run(*args):
        count.clear()
        assert app.main(list(args)) == 0
        return len(count)

    return run


def test_a_single_run_is_resolved_once(resolutions):
    assert resolutions(*SMALL, "hydra.run.dir=run") == 1


def test_each_of_a_sweeps_jobs_is_resolved_once(resolutions):
    assert resolutions("-m", *SMALL, "seed=0,1", "hydra.sweep.dir=sweep") == 2


def test_a_refused_value_is_refused_before_the_run_folder_exists(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert app.main([*SMALL, "lam=-1", "hydra.run.dir=run"]) != 0
    assert not (tmp_path / "run").exists()
    assert "lam" in capsys.readouterr().err


def test_the_engine_reads_the_resolved_settings_not_the_composed_config():
    import re
    from pathlib import Path

    from adrop.train.loop import engine

    assert not re.search(r"\bcfg\b", Path(engine.__file__).read_text())


def test_a_single_runs_network_is_made_by_the_start_check_once_and_by_the_engine_once_plus_its_stack(
    tmp_path, monkeypatch
):
    from adrop.train.nets import network

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    made = []
    instantiate = network.instantiate

    def counted(*args, **kwargs):
        made.append(1)
        return instantiate(*args, **kwargs)

    monkeypatch.setattr(network, "instantiate", counted)
    assert app.main([*SMALL, "hydra.run.dir=run"]) == 0
    assert len(made) == 3  # the start check's (no data yet), the configuration's (which evaluates), the stack's
