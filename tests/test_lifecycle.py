"""Every launcher runs its jobs through one lifecycle (adrop.train.loop.lifecycle): each job started (resolved,
held, claimed, begun) once, then trained in a stack: of one for a single run and each job of the basic launcher,
the sweep's stacks for the stacked launcher."""

import sys

import pytest

from adrop.train.command import app
from adrop.train.loop import lifecycle

SMALL = ("dataset=synthetic", "model=mlp", "device=cpu", "progress=never", "epochs=1")


@pytest.fixture
def calls(tmp_path, monkeypatch):
    """`adrop train <args>` in this process: (jobs started, sizes of the stacks trained)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    started, stacks = [], []
    start, train = lifecycle.start, lifecycle.train

    def counted_start(job, *args, **kwargs):
        started.append(job.folder.name)
        return start(job, *args, **kwargs)

    def counted_train(jobs, *args, **kwargs):
        stacks.append(len(jobs))
        return train(jobs, *args, **kwargs)

    monkeypatch.setattr(lifecycle, "start", counted_start)
    monkeypatch.setattr(lifecycle, "train", counted_train)

    def run(*args):
        started.clear(), stacks.clear()
        assert app.main(list(args)) == 0
        return len(started), stacks

    return run


def test_a_single_run(calls):
    assert calls(*SMALL, "hydra.run.dir=run") == (1, [1])


def test_the_basic_launchers_jobs(calls):
    assert calls("-m", *SMALL, "seed=0,1", "hydra.sweep.dir=sweep") == (2, [1, 1])


def test_the_stacked_launchers_jobs(calls):
    launcher = ("hydra/launcher=stacked", "hydra.launcher.n_jobs=1", "hydra.launcher.max_stack=2")
    assert calls("-m", *SMALL, "seed=0,1", "hydra.sweep.dir=sweep", *launcher) == (2, [2])
