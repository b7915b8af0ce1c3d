"""`adrop train`: every method trains, files agree with each other, resume is exact, bad input fails clearly.

Most tests compose the config with Hydra's compose API (the fixtures in conftest.py) and drive the engine with a stack
of one (tests/helpers/engines.py); the command line itself is tested in test_promises.py."""

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from adrop import methods
from adrop.train.config.settings import resolve
from adrop.train.errors import TrainError

from helpers.engines import one, stack, train


def objective(run):
    """data term + lam * penalty on the training slice, in training mode (noise and all), averaged (a stack of one)."""
    run.model.train()
    torch.manual_seed(123)
    with torch.no_grad():
        x, y = run.data.train.x, run.data.train.y
        run.method.before_step(0, run.lam)
        penalty = run.method.penalty(run.model.layers, run.lam)[0]
        return float(F.cross_entropy(run.model(x[None])[0], y) + run.runs[0].lam * penalty)


@pytest.mark.slow
@pytest.mark.parametrize("method", [m for m in methods.names() if m != "fixed_mask"])  # its own: test_fixed_mask.py
def test_each_method_trains_one_epoch_and_its_files_agree(mnist, method, tmp_path):
    # pruning to the default 98% within 16 steps leaves nothing to learn with: half of the weights here
    extra = ["method.params.final_sparsity=0.5"] if method == "magnitude_pruning" else []
    cfg = mnist(f"method={method}", "epochs=1", "batch_size=64", "lr=1e-3", *extra)
    run = one(cfg, tmp_path)
    before = objective(run)
    summary = run.fit()[0]
    assert objective(run) < before
    assert summary["status"] == "completed" and 0 <= summary["test_error"] <= 1
    assert 0 <= summary["nonzero_fraction"] <= 1
    # weights.npz holds the arrays evaluation used: their nonzeros are the reported ones, and NumPy recomputes the
    # test error exactly
    arrays = np.load(tmp_path / "weights.npz")
    assert list(arrays.keys()) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"]
    assert arrays["fc1.weight"].shape == (300, 784)
    for name, layer in summary["layers"].items():
        assert np.count_nonzero(arrays[f"{name}.weight"]) == layer["nonzero"]
        assert 0 <= layer["fraction"] <= 1
    x, y = run.data.test.x.numpy(), run.data.test.y.numpy()
    for i in (1, 2, 3):
        x = x @ arrays[f"fc{i}.weight"].T + arrays[f"fc{i}.bias"]
        if i < 3:
            x = np.maximum(x, 0)
    assert math.isclose(np.mean(x.argmax(1) != y), summary["test_error"], abs_tol=1e-12)
    metrics, layers = pd.read_csv(tmp_path / "metrics.csv"), pd.read_csv(tmp_path / "layers.csv")
    assert list(metrics.columns) == [
        "epoch",
        "train_loss",
        "data_term",
        "penalty_term",
        "val_error",
        "nonzero_fraction",
        "lr",
        "seconds",
    ]
    assert len(metrics) == 1 and len(layers) == 3 and set(layers.layer) == {"fc1", "fc2", "fc3"}
    assert json.loads((tmp_path / "summary.json").read_text())["test_error"] == summary["test_error"]


def test_sparsifying_methods_make_zeros_on_synthetic_data(config, tmp_path):
    """With a strong lam, the eta-hat methods and pruning reach real sparsity (and count it)."""
    for method, extra in [
        ("logsum", ["lam=0.05", "lr=1e-2"]),
        ("adaprox", ["lam=0.05", "lr=1e-2"]),
        ("magnitude_pruning", ["method.params.final_sparsity=0.9"]),
    ]:
        cfg = config(
            "dataset=synthetic", "model=mlp", f"method={method}", "epochs=4", "device=cpu", "progress=never", *extra
        )
        summary = train(cfg, tmp_path / method)
        assert summary["nonzero_fraction"] < 0.5, method


@pytest.mark.slow
def test_resume_matches_an_uninterrupted_run(mnist, tmp_path):
    overrides = ("method=vardrop_lr", "epochs=2", "batch_size=128")
    straight = train(mnist(*overrides), tmp_path / "a")
    train(mnist(*overrides), tmp_path / "b", stop_after=1)  # stopped after one epoch, as if killed there ...
    resumed = one(mnist(*overrides), tmp_path / "b")  # ... then rerun the same command in the same folder
    assert resumed.epoch == 1
    summary = resumed.fit()[0]
    assert summary["test_error"] == straight["test_error"] and summary["nonzero"] == straight["nonzero"]
    a, b = np.load(tmp_path / "a" / "weights.npz"), np.load(tmp_path / "b" / "weights.npz")
    assert all(np.array_equal(a[k], b[k]) for k in a.keys())
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "a" / "metrics.csv").drop(columns="seconds"),
        pd.read_csv(tmp_path / "b" / "metrics.csv").drop(columns="seconds"),
    )


def test_a_folder_with_another_run_is_never_overwritten(config, tmp_path):
    train(config("dataset=synthetic", "model=mlp", "epochs=1", "device=cpu"), tmp_path)
    with pytest.raises(TrainError, match="holds a different run"):
        one(config("dataset=synthetic", "model=mlp", "epochs=1", "device=cpu", "seed=5"), tmp_path)


def test_nan_stops_the_run_and_keeps_the_last_good_checkpoint(config, tmp_path):
    good = config("dataset=synthetic", "model=mlp", "epochs=3", "device=cpu")
    run = one(good, tmp_path)
    run.fit(stop_after=1)
    run.runs[0] = dataclasses.replace(run.runs[0], lr=1e38)  # the second epoch overflows
    summary = run.fit()[0]
    assert summary["status"] == "failed" and "the loss became nan in epoch 2" in summary["error"]
    assert json.loads((tmp_path / "summary.json").read_text())["error"] == summary["error"]
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert state["epoch"] == 1 and all(torch.isfinite(v).all() for v in state["model"].values())


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["lam=-1"], "lam must be >= 0"),
        (["epochs=0"], "epochs must be >= 1"),
        (["device=tpu"], "unknown device 'tpu'"),
        (["method=logsum", "+method.params.epsilon=1"], "method.params for logsum"),  # forced past Hydra
        (["method=magnitude_pruning", "method.params.scope=row"], "scope must be"),
        (["decay_start=1"], "decay_start must be in"),
        (["penalty_warmup=[5,2]"], "penalty_warmup must be"),
        (["data.root=/nonexistent", "data.download=false", "dataset=mnist"], "4 data file(s) missing in /nonexistent"),
    ],
)
def test_bad_settings_fail_with_a_message(config, overrides, message, tmp_path):
    with pytest.raises((TrainError, ValueError), match=message.replace("(", r"\(").replace(")", r"\)")):
        train(config("dataset=synthetic", "model=mlp", "device=cpu", *overrides), tmp_path)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_a_clear_error(config, tmp_path):
    with pytest.raises(TrainError, match="CUDA is not available"):
        one(config("dataset=synthetic", "model=mlp", "device=cuda"), tmp_path)


@pytest.mark.parametrize(
    "name", sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "conf" / "experiment").glob("*.yaml"))
)
def test_every_experiment_config_passes_the_start_checks(config, name, tmp_path):
    """Every experiment file composes into a configuration that `adrop train` would start (its keys, method, method
    parameters, model and values all valid, its network run on a batch of zeros), on the data its recipe names:
    MNIST unless it overrides the dataset."""
    from omegaconf import OmegaConf

    conf = Path(__file__).resolve().parents[1] / "conf"
    defaults = OmegaConf.to_container(OmegaConf.load(conf / "experiment" / f"{name}.yaml")).get("defaults", [])
    chosen = [d["override /dataset"] for d in defaults if isinstance(d, dict) and "override /dataset" in d]
    expected = OmegaConf.load(conf / "dataset" / f"{chosen[0]}.yaml").name if chosen else "mnist"
    text = tmp_path / "corpus.txt"  # what a text experiment is given (dataset.path)
    text.write_text("a short text of a few words, repeated. " * 200)
    cfg = config(f"experiment={name}", *([f"dataset.path={text}"] if expected == "text" else []))
    run = resolve(cfg)
    assert run.cfg.dataset.name == expected and run.method is methods.get(cfg.method.name)


def test_sparser_recipe_is_the_recipe_with_lam_times_1_5(config):
    """The stage-1 runs in docs/results/beyond_the_paper.md ran as experiment=sparse_vd_recipe lam=2.5e-05: the same
    configuration."""
    assert config("experiment=sparse_vd_recipe_sparser") == config("experiment=sparse_vd_recipe", "lam=2.5e-05")


def test_flat_then_linear_lr_and_penalty_warmup(config, tmp_path):
    """Molchanov et al.'s recipe: lr flat for the first half, then linear to 0; the penalty weight 0, then a ramp."""
    run = one(
        config(
            "dataset=synthetic",
            "model=mlp",
            "epochs=4",
            "device=cpu",
            "method=vardrop_lr_ar",
            "decay_start=0.5",
            "penalty_warmup=[1,3]",
        ),
        tmp_path,
    )
    n, lr, lam = run.steps_per_epoch, run.runs[0].lr, run.runs[0].lam
    assert [run.lrs(s)[0] for s in (0, 2 * n)] == [lr, lr] and run.lrs(3 * n)[0] == pytest.approx(lr / 2)
    assert run.lrs(4 * n)[0] == 0
    assert [run.penalty_weights(s)[0] for s in (0, n - 1, 2 * n, 3 * n, 4 * n)] == [0, 0, lam / 2, lam, lam]
    run.fit()
    metrics = pd.DataFrame(run.metrics[0])
    assert metrics.train_loss[0] == metrics.data_term[0]  # no penalty in the first epoch
    assert metrics.train_loss[3] == pytest.approx(metrics.data_term[3] + lam * metrics.penalty_term[3], rel=1e-5)
    # the defaults leave the paper's schedule as it was: linear from the start, the full penalty throughout
    plain = one(config("dataset=synthetic", "model=mlp", "epochs=4", "device=cpu"), tmp_path / "plain")
    assert plain.lrs(2 * plain.steps_per_epoch)[0] == plain.runs[0].lr / 2
    assert plain.penalty_weights(0)[0] == plain.runs[0].lam


def test_training_leaves_the_processor_flags_as_it_found_them(config, tmp_path):
    """Subnormals are flushed while training on the CPU only: the flag is the process's, NumPy shares it."""
    tiny = np.float32(1e-40)  # a subnormal float32
    assert tiny * np.float32(1.0) != 0
    train(config("dataset=synthetic", "model=mlp", "epochs=1", "device=cpu", "progress=never"), tmp_path)
    assert tiny * np.float32(1.0) != 0


def test_tensorboard_logger_writes_each_epoch_live(config, tmp_path):
    """logger=tensorboard: each epoch's metrics, per-layer nonzero fractions and units kept and the keep statistic's
    histograms, readable by TensorBoard; a stack logs each configuration into its own folder."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg = config(
        "dataset=synthetic", "model=mlp", "device=cpu", "method=vardrop_lr_ar", "epochs=2", "logger=tensorboard"
    )
    train(cfg, tmp_path / "single")
    other = config(
        "dataset=synthetic",
        "model=mlp",
        "device=cpu",
        "method=vardrop_lr_ar",
        "epochs=2",
        "logger=tensorboard",
        "seed=1",
    )
    stack([cfg, other], [tmp_path / "a", tmp_path / "b"]).fit()
    for folder in ("single", "a", "b"):
        events = EventAccumulator(str(tmp_path / folder / "tensorboard")).Reload()
        assert [e.value for e in events.Scalars("train/val_error")] == pytest.approx(
            list(pd.read_csv(tmp_path / folder / "metrics.csv").val_error)
        )
        assert len(events.Scalars("nonzero/fc1")) == 2 and {"log_alpha/fc1", "log_alpha/fc2"} <= set(
            events.Tags()["histograms"]
        )
        layers = pd.read_csv(tmp_path / folder / "layers.csv")
        for name in ("fc1", "fc2"):  # the units (filters) each layer keeps, per epoch
            kept = list(layers[layers.layer == name].units_out_kept)
            assert [e.value for e in events.Scalars(f"units/{name}")] == kept


def test_an_unknown_or_missing_logger_fails_at_start(config):
    with pytest.raises(TrainError, match="unknown logger .wandb.; valid loggers: none, tensorboard, mlflow"):
        resolve(config("logger=wandb"))


def test_mlflow_logger_writes_a_file_store_each_epoch(config, tmp_path):
    """logger=mlflow: a file store in <run>/mlruns/ with each epoch's metrics and the keep statistic's histograms."""
    pytest.importorskip("mlflow")
    import json

    from mlflow.tracking import MlflowClient

    cfg = config("dataset=synthetic", "model=mlp", "device=cpu", "method=hard_concrete", "epochs=2", "logger=mlflow")
    train(cfg, tmp_path)
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    (run,) = client.search_runs([client.get_experiment_by_name("adrop").experiment_id])
    assert run.info.status == "FINISHED"
    history = [m.value for m in client.get_metric_history(run.info.run_id, "val_error")]
    assert history == pytest.approx(list(pd.read_csv(tmp_path / "metrics.csv").val_error))
    assert len(client.get_metric_history(run.info.run_id, "nonzero_fc1")) == 2
    local = client.download_artifacts(run.info.run_id, "histograms/epoch_0002.json", str(tmp_path))
    hist = json.loads(open(local).read())
    assert {"gate/fc1", "gate/fc2"} <= set(hist) and sum(hist["gate/fc1"]["counts"]) == 64 * 20


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dense", "hard_concrete"])
def test_compile_follows_the_eager_run(method, synthetic, tmp_path):
    """compile=true (torch.compile of the loss) is not bitwise, but on a CPU it draws its eager run's noise (inductor's
    fallback_random) and ends within 1e-4 relative of the eager run's weights after an epoch."""
    from helpers.stacks import assert_same_weights, with_compile

    eager = synthetic(f"method={method}", "epochs=1", "batch_size=256")
    train(eager, tmp_path / "eager")
    train(with_compile([eager])[0], tmp_path / "compiled")
    assert_same_weights([tmp_path / "eager"], [tmp_path / "compiled"], 1e-4)


def test_decoded_data_is_shared_between_runs_of_a_process_but_never_their_tensors(config):
    """A sweep's jobs in one process decode MNIST once (adrop.train.data.tensors's cache); what a run changes in its own
    tensors does not reach the next run's."""
    from adrop.train.data import sources as data

    from conftest import DATA, needs_mnist

    needs_mnist()
    cfg = config(f"data.root={DATA}", "data.download=false")
    first = data.load(cfg.dataset, cfg.data, torch.device("cpu"))
    tensors = lambda d: (d.train.x, d.val.x, d.test.x, d.train.y, d.val.y, d.test.y)  # noqa: E731
    reference = [t.clone() for t in tensors(first)]
    for t in tensors(first):
        t.mul_(0)
    second = data.load(cfg.dataset, cfg.data, torch.device("cpu"))
    assert all(torch.equal(a, b) for a, b in zip(reference, tensors(second)))
    from adrop.train.data import tensors as on_device

    assert len(on_device._DECODED) == 1


def test_the_idx_reader_reads_what_torchvision_reads():
    """adrop.train.data.tensors reads MNIST's idx files itself (torchvision only downloads): the same images and
    labels."""
    import torchvision

    from adrop.train.data import tensors as data

    from conftest import DATA, needs_mnist

    needs_mnist()
    theirs = torchvision.datasets.MNIST(str(DATA), train=False, download=False)
    raw = DATA / "MNIST" / "raw"
    assert torch.equal(data.read_idx(raw / "t10k-images-idx3-ubyte"), theirs.data)
    assert torch.equal(data.read_idx(raw / "t10k-labels-idx1-ubyte").long(), theirs.targets)
