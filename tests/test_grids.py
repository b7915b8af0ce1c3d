"""Lam grids are Hydra configs (conf/grid/): `grid=<name>` sweeps its values (hydra.sweeper.params), a value given
on the command line replaces the grid's, and the grid's name is in no folder name or report setting."""

import sys

import pytest

from adrop.train.command import app
from adrop.train.config.differences import NOT_A_SETTING

SMALL = ("dataset=synthetic", "model=mlp", "device=cpu", "progress=never", "epochs=1", "method=logsum")


@pytest.fixture
def sweep(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))

    def run(*args):
        assert app.main(["-m", *SMALL, "hydra.sweep.dir=sweep", *args]) == 0, capsys.readouterr().err
        return sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir())

    return run


def test_a_grid_sweeps_its_lams(sweep):
    assert sweep("grid=structured_choose_eta_hat") == [
        f"dataset=synthetic,device=cpu,epochs=1,lam={lam},method=logsum,model=mlp"
        for lam in ("0.0003", "0.001", "0.003", "0.01")
    ]
    assert "grid" in NOT_A_SETTING


def test_lams_on_the_command_line_replace_the_grids(sweep):
    assert [n.split("lam=")[1].split(",")[0] for n in sweep("grid=structured_choose_eta_hat", "lam=1e-3,2e-3")] == [
        "0.001",
        "0.002",
    ]


def test_a_grid_without_a_sweep_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert app.main([*SMALL, "grid=structured_choose_eta_hat", "hydra.run.dir=run"]) == 2
    assert "add -m" in capsys.readouterr().err and not (tmp_path / "run").exists()
