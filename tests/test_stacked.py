"""Stacks of K > 1 configurations (adrop.train.loop.engine) against their K single runs (stacks of one, the reference),
the reference's bitwise repeatability, and the stacked launcher's folder contract.

A stack of several need not be bitwise equal to its single runs (batched products and the per-row Adam step round
differently). It is checked by a tolerance derived from float32 rounding over the first steps (assert_follows), with
the noise of the noisy methods held fixed (injected zeros), and by statistics over a short training with real noise.
"""

import json
import math

import numpy as np
import pytest
import torch

from adrop import methods

from helpers.engines import one, stack, train
from helpers.stacks import assert_follows, assert_same_weights, relative_gap, three, with_compile

NOISY = {"vardrop_lr_ar", "vardrop_lr", "vardrop", "hard_concrete"}


@pytest.mark.parametrize("method", methods.names())
def test_a_stack_of_three_follows_each_single_run(method, synthetic, held_noise, pruned, tmp_path):
    """Three configurations (seeds 0-2, lam x1-x3, three lrs) trained as one stack end where their single runs (stacks
    of one) end, as far as float32 rounding allows (assert_follows), after an epoch of 7 steps; the noisy methods with
    their noise held fixed."""
    extra = {
        "magnitude_pruning": ["method.params.final_sparsity=0.5", "method.params.frequency=2"],
        "fixed_mask": [f"init_from={pruned}"],
        # held Bernoulli draws are a threshold (0.5 < alpha): the last bit flips a mask; Gaussian ones are smooth
        "adaptive_dropout": ["method.params.mask=gaussian"],
    }.get(method, [])
    cfgs = three(synthetic, method, [*extra, "evaluate_unmasked=true"])
    singles = [train(c, tmp_path / f"single{i}") for i, c in enumerate(cfgs)]
    stacked = stack(cfgs, [tmp_path / f"stack{i}" for i in range(3)]).fit()
    for i, cfg in enumerate(cfgs):
        a, b = np.load(tmp_path / f"single{i}" / "weights.npz"), np.load(tmp_path / f"stack{i}" / "weights.npz")
        steps = math.ceil((cfg.dataset.n_train - cfg.dataset.val_size) / cfg.batch_size)  # the longest sum: a batch
        assert_follows(a, b, steps, longest_product=max(cfg.batch_size, *cfg.model.hidden), lr_sum=steps * cfg.lr)
        assert stacked[i]["status"] == "completed" and stacked[i]["stacked"] == 3
        assert abs(stacked[i]["test_error"] - singles[i]["test_error"]) <= 2 / 500  # at most a test example or two
        assert abs(stacked[i]["test_error_unmasked"] - singles[i]["test_error_unmasked"]) <= 2 / 500


@pytest.mark.slow
@pytest.mark.parametrize("method", ["adaprox", "magnitude_pruning"])
def test_a_compiled_stack_follows_each_single_run(method, synthetic, tmp_path):
    """compile=true traces a stack's loss, and Adam's update fused with the method's after_step (AdaProx's prox;
    magnitude pruning's gradient mask and fold, its mask updates eager): not bitwise, but within 1e-4 relative of
    the single runs after the first 7 steps, without graph breaks (graphs: the update, the loss, the loss of the
    last, smaller batch; magnitude pruning also the update without its fold, at the steps that update masks)."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    extra = ["method.params.final_sparsity=0.5", "method.params.frequency=2"] if method == "magnitude_pruning" else []
    cfgs = three(synthetic, method, extra)
    singles, stacks = [tmp_path / f"single{i}" for i in range(3)], [tmp_path / f"stack{i}" for i in range(3)]
    for c, folder in zip(cfgs, singles):
        train(c, folder)
    stack(with_compile(cfgs), stacks).fit()
    graphs = 4 if method == "magnitude_pruning" else 3
    assert counters["stats"]["unique_graphs"] <= graphs and not counters["graph_break"], dict(counters["graph_break"])
    assert_same_weights(singles, stacks, 1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["vardrop_lr_ar", "hard_concrete"])
def test_a_compiled_stack_of_a_noisy_method_draws_the_eager_stacks_noise(method, synthetic, tmp_path):
    """With real noise: compile=true on a CPU draws its random numbers from eager torch (inductor's fallback_random),
    so a compiled stack follows the eager stack's trajectory, noise included, to rounding."""
    cfgs = three(synthetic, method)
    eager, compiled = [tmp_path / f"eager{i}" for i in range(3)], [tmp_path / f"compiled{i}" for i in range(3)]
    stack(cfgs, eager).fit()
    stack(with_compile(cfgs), compiled).fit()
    assert_same_weights(eager, compiled, 1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["vardrop_lr_ar", "hard_concrete"])
def test_noisy_methods_stacked_agree_with_single_runs_within_the_seed_spread(method, mnist, tmp_path):
    """With real noise a stack draws its own noise, so runs differ; over 2 epochs on 2,048 MNIST examples the stack's
    and the single runs' mean validation errors differ by less than 3 standard errors of their difference (a z-test at
    about 0.3%: it fails for a systematic gap of that size, not for seed noise)."""
    runs = [(f"method={method}", f"seed={s}", "epochs=2", "data.train_limit=2048", "lr=1e-3") for s in range(4)]
    single = np.array([train(mnist(*r), tmp_path / f"s{i}")["val_error"] for i, r in enumerate(runs)])
    stacked = np.array(
        [s["val_error"] for s in stack([mnist(*r) for r in runs], [tmp_path / f"k{i}" for i in range(4)]).fit()]
    )
    standard_error = np.sqrt(single.var(ddof=1) / len(single) + stacked.var(ddof=1) / len(stacked))
    assert abs(single.mean() - stacked.mean()) <= 3 * standard_error, (single, stacked)


def test_a_diverging_configuration_fails_alone(synthetic, tmp_path):
    cfgs = [synthetic("method=logsum", "epochs=2", f"lr={lr}", f"seed={i}") for i, lr in enumerate((1e-2, 1e38, 1e-2))]
    summaries = stack(cfgs, [tmp_path / f"k{i}" for i in range(3)]).fit()
    assert [s["status"] for s in summaries] == ["completed", "failed", "completed"]
    assert "the loss became" in summaries[1]["error"]
    assert json.loads((tmp_path / "k1" / "summary.json").read_text())["status"] == "failed"
    assert np.isfinite(summaries[0]["test_error"]) and np.isfinite(summaries[2]["test_error"])


def test_a_killed_stack_resumes_exactly_and_its_checkpoints_are_single_runs(synthetic, tmp_path):
    cfgs = [synthetic("method=vardrop_lr", "epochs=3", f"seed={i}", f"lr={lr}") for i, lr in enumerate((1e-2, 3e-3))]
    straight = stack(cfgs, [tmp_path / f"a{i}" for i in range(2)]).fit()
    stack(cfgs, [tmp_path / f"b{i}" for i in range(2)]).fit(stop_after=1)  # killed after epoch 1
    resumed = stack(cfgs, [tmp_path / f"b{i}" for i in range(2)]).fit()
    for i in range(2):
        a, b = np.load(tmp_path / f"a{i}" / "weights.npz"), np.load(tmp_path / f"b{i}" / "weights.npz")
        assert all(np.array_equal(a[k], b[k]) for k in a.files)
        assert resumed[i]["test_error"] == straight[i]["test_error"]
    stack(cfgs, [tmp_path / f"c{i}" for i in range(2)]).fit(stop_after=2)
    alone = one(cfgs[1], tmp_path / "c1")  # a stacked checkpoint resumes as a single run
    assert alone.epoch == 2 and alone.fit()[0]["status"] == "completed"


@pytest.mark.slow
def test_the_stacked_launcher_keeps_the_folder_contract(adrop, tmp_path):
    small = ("dataset=synthetic", "model=mlp", "epochs=2", "device=cpu")
    basic = adrop("train", "-m", *small, "method=logsum", "seed=0,1", "lam=0.001,-1", "hydra.sweep.dir=basic")
    out = adrop(
        "train",
        "-m",
        "hydra/launcher=stacked",
        "hydra.launcher.max_stack=4",
        "hydra.launcher.n_jobs=1",
        *small,
        "method=logsum",
        "seed=0,1",
        "lam=0.001,-1",
        "hydra.sweep.dir=stacked",
    )
    assert basic.returncode == out.returncode == 2 and "2 of 4 jobs refused" in out.stderr.splitlines()[-1]
    assert "stacked launcher: 2 jobs in 1 stack, of sizes 2" in out.stdout
    names = lambda sweep: sorted(p.name for p in (tmp_path / sweep).iterdir() if p.is_dir())  # noqa: E731
    assert names("basic") == names("stacked")
    for job in names("stacked"):
        a, b = tmp_path / "basic" / job, tmp_path / "stacked" / job
        assert {p.name for p in b.iterdir()} <= {p.name for p in a.iterdir()}  # the job log is the basic one's only
        sa, sb = (json.loads((f / "summary.json").read_text()) for f in (a, b))
        assert sa["status"] == sb["status"] and sa.get("identity") == sb.get("identity")
        if sb["status"] == "completed":
            assert sb["stacked"] == 2 and {p.name for p in b.iterdir()} >= {
                "metrics.csv",
                "layers.csv",
                "summary.json",
                "weights.npz",
                "checkpoint.pt",
                ".hydra",
            }
    again = adrop(
        "train",
        "-m",
        "hydra/launcher=stacked",
        *small,
        "method=logsum",
        "seed=0,1",
        "lam=0.001",
        "hydra.sweep.dir=stacked",
    )
    assert again.returncode == 0 and again.stdout.count("nothing to do") == 2


@pytest.mark.parametrize("method", methods.names())
def test_the_reference_is_bit_for_bit_repeatable(method, synthetic, pruned, tmp_path):
    """A single run (the engine at K = 1) is the reproducible reference: the same configuration, seed and thread count
    give the same weights.npz and metrics.csv (but its seconds), bit for bit, real noise included."""
    extra = {
        "magnitude_pruning": ["method.params.final_sparsity=0.5", "method.params.frequency=2"],
        "fixed_mask": [f"init_from={pruned}"],
    }.get(method, [])
    cfg = synthetic(f"method={method}", "epochs=2", "batch_size=256", *extra)
    for folder in ("a", "b"):
        train(cfg, tmp_path / folder)
    assert_same_files(tmp_path / "a", tmp_path / "b")


def assert_same_files(a, b):
    """Two runs' weights.npz and metrics.csv (all but seconds) bit for bit."""
    import pandas as pd

    wa, wb = np.load(a / "weights.npz"), np.load(b / "weights.npz")
    assert wa.files == wb.files and all(np.array_equal(wa[k], wb[k]) for k in wa.files)
    pd.testing.assert_frame_equal(
        pd.read_csv(a / "metrics.csv").drop(columns="seconds"),
        pd.read_csv(b / "metrics.csv").drop(columns="seconds"),
        check_exact=True,
    )


@pytest.mark.slow
def test_the_basic_and_the_stacked_launcher_train_a_run_bit_for_bit_alike(adrop, tmp_path):
    """One engine: every method's configuration trained alone by the basic launcher and as a stack of one by the
    stacked launcher (in the launcher's process, the same threads) leaves the same files (fixed_mask, which needs
    another run to start from, in test_the_reference_is_bit_for_bit_repeatable)."""
    every = ",".join(m for m in methods.names() if m != "fixed_mask")
    small = ("dataset=synthetic", "model=mlp", "epochs=2", "device=cpu", "seed=0", f"method={every}")
    stacked = adrop(
        "train",
        "-m",
        "hydra/launcher=stacked",
        "hydra.launcher.max_stack=1",
        "hydra.launcher.n_jobs=1",
        *small,
        "hydra.sweep.dir=stacked",
    )
    basic = adrop("train", "-m", *small, "hydra.sweep.dir=basic")
    assert stacked.returncode == basic.returncode == 0, stacked.stderr + basic.stderr
    jobs = sorted(p.name for p in (tmp_path / "basic").iterdir() if p.is_dir())
    assert len(jobs) == len(methods.names()) - 1
    assert jobs == sorted(p.name for p in (tmp_path / "stacked").iterdir() if p.is_dir())
    for job in jobs:
        assert_same_files(tmp_path / "basic" / job, tmp_path / "stacked" / job)
        summaries = [
            json.loads((tmp_path / sweep / job / "summary.json").read_text()) for sweep in ("basic", "stacked")
        ]
        assert [s["stacked"] for s in summaries] == [1, 1]


@pytest.mark.parametrize(
    "jobs, size, workers, sizes",
    [
        (9, 4, 2, [3, 3, 3]),
        (8, 4, 2, [4, 4]),
        (4, 4, 2, [2, 2]),
        (3, 4, 2, [2, 1]),
        (1, 4, 2, [1]),
        (5, 1, 2, [1] * 5),
        (5, 64, 1, [5]),
        (130, 64, 1, [44, 43, 43]),
    ],
)
def test_a_sweep_splits_into_even_stacks_that_keep_every_worker_busy(jobs, size, workers, sizes):
    from adrop.train.sweep.stacked_jobs import split

    stacks = split(list(range(jobs)), size, workers)
    assert [len(s) for s in stacks] == sizes and sum(stacks, []) == list(range(jobs))


@pytest.mark.slow
@pytest.mark.parametrize("setting", ["max_stack=0", "max_stack=-1", "n_jobs=0"])
def test_the_stacked_launcher_refuses_sizes_below_one_in_one_line(adrop, tmp_path, setting):
    """max_stack=-1 used to train nothing and exit 0; 0 meant the default. Both are refused, before any folder."""
    out = adrop(
        "train",
        "-m",
        "dataset=synthetic",
        "model=mlp",
        "seed=0,1",
        "hydra/launcher=stacked",
        f"hydra.launcher.{setting}",
        "hydra.sweep.dir=sweep",
    )
    key, value = setting.split("=")
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        f"adrop train: error: hydra.launcher.{key} must be a positive integer or null (the default), got {value}"
    ]
    assert not (tmp_path / "sweep").exists()


@pytest.mark.slow
def test_the_stacked_launcher_trains_stacks_in_worker_processes(adrop, tmp_path):
    """hydra.launcher.n_jobs=2: two stacks at once, each in its own process (one torch thread each), the same
    files and, to rounding, the same weights as one stack after another in the launcher's process."""
    small = (
        "dataset=synthetic",
        "model=mlp",
        "epochs=2",
        "device=cpu",
        "method=logsum",
        "seed=0,1,2,3",
        "hydra/launcher=stacked",
        "hydra.launcher.max_stack=2",
        "hydra.sweep.subdir=seed_${seed}",
    )
    one = adrop("train", "-m", *small, "hydra.launcher.n_jobs=1", "hydra.sweep.dir=one")
    two = adrop("train", "-m", *small, "hydra.launcher.n_jobs=2", "hydra.sweep.dir=two")
    assert one.returncode == two.returncode == 0, two.stderr
    assert "2 worker processes" in two.stdout and "worker processes" not in one.stdout
    assert two.stdout.count("test error") == 4
    for seed in range(4):
        a, b = (np.load(tmp_path / sweep / f"seed_{seed}" / "weights.npz") for sweep in ("one", "two"))
        assert relative_gap(a, b) < 1e-5
        assert json.loads((tmp_path / "two" / f"seed_{seed}" / "summary.json").read_text())["stacked"] == 2


@pytest.mark.slow
def test_workers_exit_when_the_launcher_is_killed(tmp_path):
    """SIGKILL to the launcher (no Ctrl-C to the process group): its worker processes stop too, within seconds,
    and leave no process writing into the sweep's folders."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    command = [
        sys.executable,
        "-m",
        "adrop",
        "train",
        "-m",
        "dataset=synthetic",
        "model=mlp",
        "device=cpu",
        "epochs=100000",
        "method=logsum",
        "seed=0,1",
        "hydra/launcher=stacked",
        "hydra.launcher.n_jobs=2",
        "hydra.sweep.dir=sweep",
    ]
    launcher = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        lines = [launcher.stdout.readline() for _ in range(3)]
        assert any("2 worker processes" in line for line in lines), lines
        time.sleep(3)  # the workers start
        children = subprocess.run(["pgrep", "-P", str(launcher.pid)], capture_output=True, text=True).stdout.split()
        workers = [int(pid) for pid in children if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
        assert len(workers) == 2, children
    finally:
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
    deadline = time.time() + 20
    while time.time() < deadline and any(
        Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2] for pid in workers
    ):
        time.sleep(0.2)
    alive = [
        pid
        for pid in workers
        if Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    ]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive


def test_initialisation_parameters_may_differ_inside_a_stack(synthetic, tmp_path):
    """method.params.init_* act only when a configuration's network is made: such jobs share a stack, each made with
    its own; any other method parameter splits the stack."""
    from adrop.train.config.settings import stack_key

    a, b = (
        synthetic("method=vardrop_lr", f"method.params.init_log_alpha={v}", f"seed={i}")
        for i, v in enumerate((-5.0, -3.0))
    )
    assert stack_key(a) == stack_key(b)
    assert stack_key(a) != stack_key(synthetic("method=vardrop_lr", "method.params.log_alpha_max=8"))
    run = stack([a, b], [tmp_path / "a", tmp_path / "b"])
    log_alpha = run.model.layers[0].log_alpha_param
    assert torch.all(log_alpha[0] == -5.0) and torch.all(log_alpha[1] == -3.0)
