"""Any Hydra sweeper: a sweep's job returns its objective (Optuna's sweeper optimises it, single- and
multi-objective, with the basic and the stacked launcher, with a database storage), and how the jobs ended is
counted from the jobs themselves, so the exit code and the last line hold under every sweeper."""

import json
import time

import pytest
import yaml

from adrop.train.run_folder import sweep_outcomes

SMALL = ("dataset=synthetic", "model=mlp", "epochs=1", "device=cpu", "method=logsum")
LAM = "lam=tag(log, interval(1e-6, 1e-2))"
# Optuna's trials in batches of 2, each batch one stack of 2
STACKED = (
    "hydra/launcher=stacked",
    "hydra.sweeper.n_trials=4",
    "hydra.sweeper.n_jobs=2",
    "hydra.launcher.max_stack=2",
    "hydra.launcher.n_jobs=1",
)
NSGAII = (
    "hydra/sweeper/sampler=nsgaii",
    "objective=[val_error,nonzero_fraction]",
    "hydra.sweeper.direction=[minimize,minimize]",
)


def optuna_installed():
    from hydra.core.plugins import Plugins

    return "OptunaSweeper" in str(Plugins.instance().discover())


needs_optuna = pytest.mark.skipif(not optuna_installed(), reason="hydra-optuna-sweeper is not installed")


def summaries(folder):
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*/summary.json"))]


@needs_optuna
@pytest.mark.slow
def test_optuna_searches_lam_on_the_validation_error(adrop, tmp_path):
    out = adrop(
        "train",
        "-m",
        "hydra/sweeper=optuna",
        "hydra.sweeper.n_trials=3",
        "hydra.sweeper.sampler.seed=0",
        LAM,
        *SMALL,
        "hydra.sweep.dir=sweep",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == f"adrop train: 3 jobs done; files in {tmp_path / 'sweep'}"
    result = yaml.safe_load((tmp_path / "sweep" / "optimization_results.yaml").read_text())
    runs = summaries(tmp_path / "sweep")
    assert len(runs) == 3 and result["best_value"] == min(r["val_error"] for r in runs)


@needs_optuna
@pytest.mark.slow
def test_optuna_with_the_stacked_launcher_trains_a_batch_of_trials_as_a_stack(adrop, tmp_path):
    out = adrop(
        "train",
        "-m",
        "hydra/sweeper=optuna",
        *STACKED,
        "hydra.sweeper.sampler.seed=0",
        LAM,
        *SMALL,
        "hydra.sweep.dir=sweep",
    )
    assert out.returncode == 0, out.stderr
    runs = summaries(tmp_path / "sweep")
    assert len(runs) == 4 and [r["stacked"] for r in runs] == [2, 2, 2, 2]
    result = yaml.safe_load((tmp_path / "sweep" / "optimization_results.yaml").read_text())
    assert result["best_value"] == min(r["val_error"] for r in runs)


@needs_optuna
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Deprecated API features detected")  # optuna 2.10's own models, read here
def test_optuna_multi_objective_with_a_database_that_a_second_command_resumes(adrop, tmp_path):
    args = (
        "train",
        "-m",
        "hydra/sweeper=optuna",
        *NSGAII,
        "hydra.sweeper.n_trials=2",
        "hydra.sweeper.sampler.seed=0",
        "hydra.sweeper.storage=sqlite:///study.db",
        "hydra.sweeper.study_name=lam",
        LAM,
        *SMALL,
    )
    first = adrop(*args, "hydra.sweep.dir=first")
    second = adrop(*args, "hydra.sweep.dir=second")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    import optuna

    study = optuna.load_study(study_name="lam", storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert len(study.trials) == 4 and all(len(t.values) == 2 for t in study.trials)
    assert "solutions" in yaml.safe_load((tmp_path / "second" / "optimization_results.yaml").read_text())


@needs_optuna
@pytest.mark.slow
def test_optuna_multi_objective_with_the_stacked_launcher_returns_each_runs_pair(adrop, tmp_path):
    """NSGA-II's batch of trials trains as a stack, and each point of its Pareto front is the (val_error,
    nonzero_fraction) of the run at that point's lam."""
    out = adrop(
        "train",
        "-m",
        "hydra/sweeper=optuna",
        *NSGAII,
        *STACKED,
        "hydra.sweeper.sampler.seed=0",
        LAM,
        *SMALL,
        "hydra.sweep.dir=sweep",
    )
    assert out.returncode == 0, out.stderr
    runs = summaries(tmp_path / "sweep")
    assert len(runs) == 4 and [r["stacked"] for r in runs] == [2, 2, 2, 2]
    pair_of = {r["lam"]: [r["val_error"], r["nonzero_fraction"]] for r in runs}
    front = yaml.safe_load((tmp_path / "sweep" / "optimization_results.yaml").read_text())["solutions"]
    assert front and all(s["values"] == pair_of[float(s["params"]["lam"])] for s in front)


@needs_optuna
@pytest.mark.slow
def test_failed_jobs_are_counted_under_optuna(adrop, tmp_path):
    """Every trial diverges (lr 1e9): each is a failed trial for Optuna and a failed job for adrop; Optuna then has no
    best trial and says so, and the command says which jobs failed."""
    out = adrop(
        "train",
        "-m",
        "hydra/sweeper=optuna",
        "hydra.sweeper.n_trials=2",
        "hydra.sweeper.max_failure_rate=1",
        "lr=1e9",
        LAM,
        *SMALL,
        "hydra.sweep.dir=sweep",
    )
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        f"adrop train: error: 2 of 2 jobs failed: see {tmp_path / 'sweep'} (each failed job's summary.json says why)"
    )
    assert [r["status"] for r in summaries(tmp_path / "sweep")] == ["failed", "failed"]


def test_a_jobs_return_value_is_its_objective():
    summary = {"status": "completed", "val_error": 0.25, "nonzero_fraction": 0.5, "cost": {"sparse_macs": 10}}
    assert sweep_outcomes.value(summary, "val_error") == 0.25
    assert sweep_outcomes.value(summary, ["val_error", "sparse_macs"]) == (0.25, 10.0)
    assert sweep_outcomes.value(summary, ["val_error"]) == 0.25  # one objective: a number, whatever its form
    failed = sweep_outcomes.value({"status": "failed", "error": "the loss became nan"}, "val_error")
    assert failed == "failed: the loss became nan"  # not a number: Optuna records a failed trial
    with pytest.raises(ValueError):
        float(failed)
    assert sweep_outcomes.returned(summary, "test_error").startswith("failed: objective=test_error")


@pytest.mark.parametrize(
    "objective, message",
    [
        ("test_error", "objective=test_error: a search that looks at the test set reports a biased test error"),
        ("accuracy", "objective=accuracy is not a run's result; valid: val_error, nonzero_fraction"),
    ],
)
def test_an_objective_that_is_no_result_is_refused_in_one_line(objective, message):
    with pytest.raises(ValueError, match=message):
        sweep_outcomes.objectives(objective)


@pytest.mark.slow
def test_a_sweep_with_a_test_error_objective_is_a_wrong_command(adrop):
    out = adrop("train", "-m", "objective=test_error", *SMALL, "seed=0,1")
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "adrop train: error: objective=test_error: a search that looks at the test set reports a biased test error; "
        "use val_error (the test error stays in every summary.json)"
    ]


def test_jobs_run_elsewhere_are_counted_from_their_summaries(tmp_path):
    """A launcher whose jobs run in other processes (joblib, a cluster): their summary.json files written since the
    sweep began say how they ended; an earlier sweep's files in the same folder do not count."""
    old = tmp_path / "sweep" / "old"
    old.mkdir(parents=True)
    (old / "summary.json").write_text(json.dumps({"status": "failed"}))
    past = time.time() - 3600
    import os

    os.utime(old / "summary.json", (past, past))
    sweep_outcomes.begin(tmp_path / "sweep")
    for name, status in (("a", "completed"), ("b", "failed")):
        (tmp_path / "sweep" / name).mkdir()
        (tmp_path / "sweep" / name / "summary.json").write_text(json.dumps({"status": status}))
    sweep_outcomes.record(tmp_path / "sweep" / "c", "refused")
    sweep_outcomes.record(tmp_path / "sweep" / ".." / "sweep" / "a", "completed")  # recorded here and on disk: once
    ended = sweep_outcomes.outcomes()
    assert {k.rsplit("/", 1)[1]: v for k, v in ended.items()} == {"a": "completed", "b": "failed", "c": "refused"}
    sweep_outcomes.SWEEP.clear()
    sweep_outcomes.OUTCOMES.clear()
