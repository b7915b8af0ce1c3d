"""What a newcomer meets on small problems first: a validation split that fits small data, classes said and stray
labels named or refused, a network beside the command importable and a bad `_target_` refused in one line, every
parameter counted (what the method trains and what trains densely), the data term shown apart from the penalty."""

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from adrop.train.data.tensors import DataError, validation_count
from adrop.train.errors import TrainError

from helpers.engines import one

ROOT = Path(__file__).resolve().parents[1]
GRU = ("dataset=digits", "model=custom", "model._target_=user_nets.GRUClassifier", "device=cpu", "epochs=1")


def npz(tmp_path, n_train=1400, y_train=None, y_test=None):
    """A user's small .npz (flat 64-feature vectors, 4 classes): n_train training examples, 100 test ones."""
    rng = np.random.default_rng(0)
    y_train = np.arange(n_train) % 4 if y_train is None else y_train
    y_test = np.arange(100) % 4 if y_test is None else y_test
    path = tmp_path / "small.npz"
    np.savez(
        path,
        x_train=rng.normal(size=(len(y_train), 64)).astype(np.float32),
        y_train=y_train,
        x_test=rng.normal(size=(len(y_test), 64)).astype(np.float32),
        y_test=y_test,
    )
    return path


def test_the_validation_split_is_a_fraction_of_a_users_data_by_default(config, tmp_path):
    engine = one(config("dataset=npz", f"dataset.path={npz(tmp_path)}", "model=mlp", "device=cpu"), tmp_path / "run")
    assert (len(engine.data.val), len(engine.data.train)) == (140, 1260)  # 0.1 of 1,400
    assert config("dataset=mnist").dataset.val_size == 12000  # the paper's split stays
    assert config("dataset=digits").dataset.val_size == 0.2 and validation_count(0.2, 1437) == 287


@pytest.mark.parametrize("val_size", [5000, 1400, 1.5, 0])
def test_a_validation_split_that_does_not_fit_names_the_datas_size(val_size, config, tmp_path):
    cfg = config(
        "dataset=npz", f"dataset.path={npz(tmp_path)}", f"dataset.val_size={val_size}", "model=mlp", "device=cpu"
    )
    with pytest.raises(
        TrainError,
        match=re.escape(
            f"dataset.val_size={val_size:g} does not fit the data's 1400 training examples: give a fraction in (0, 1)"
        ),
    ):
        one(cfg, tmp_path / "run")
    with pytest.raises(DataError):
        validation_count(val_size, 1400)


def test_classes_come_from_the_training_labels_and_a_stray_one_is_named(config, tmp_path):
    y = np.arange(1400) % 4
    y[7] = 10  # one stray label: an 11-class network, said at the start with the classes it leaves nearly empty
    engine = one(
        config("dataset=npz", f"dataset.path={npz(tmp_path, y_train=y)}", "model=mlp", "device=cpu"), tmp_path / "run"
    )
    first, *notes = engine.describe()
    assert "11 classes (from y_train's labels)" in first
    assert len(notes) == 1 and notes[0].startswith(
        "7 of the 11 classes have fewer than 5 training examples (class 4: 0, class 5: 0"
    )
    assert "a stray label?" in notes[0]


def test_a_test_label_the_training_labels_do_not_have_is_refused_in_one_line(config, tmp_path):
    y_test = np.arange(100) % 4
    y_test[3] = 12
    cfg = config("dataset=npz", f"dataset.path={npz(tmp_path, y_test=y_test)}", "model=mlp", "device=cpu")
    with pytest.raises(
        TrainError,
        match=re.escape(
            "y_test holds label 12, outside [0, 4); y_train's labels are 0..3: "
            "if the data has 13 classes, set dataset.classes=13"
        ),
    ):
        one(cfg, tmp_path / "run")
    one(config(*cfg_overrides(cfg), "dataset.classes=13"), tmp_path / "run2")  # said so, it trains


def cfg_overrides(cfg):
    return ["dataset=npz", f"dataset.path={cfg.dataset.path}", "model=mlp", "device=cpu"]


def test_what_trains_densely_is_said_and_counted_in_the_whole_networks_totals(config, tmp_path):
    engine = one(config(*GRU, "method=logsum", "progress=never"), tmp_path)
    first = engine.describe()[0]
    gru = sum(p.numel() for p in engine.single.net.gru.parameters())
    norm = sum(p.numel() for p in engine.single.net.norm.parameters())
    assert first.startswith(
        f"logsum trains 160 weights of 1 layer (head); {gru + norm + 10:,} parameters train "
        f"densely (gru {gru:,}, norm {norm}, the layers' biases 10); 10 classes (from the dataset)"
    )
    summary = engine.fit()[0]
    params = summary["parameters"]
    assert params["sparsified"] == summary["total"] == 160 and params["dense"] == gru + norm + 10
    assert params["dense_modules"] == {"gru": gru, "norm": norm}
    assert params["total"] == 160 + gru + norm + 10  # every parameter of the user's network
    assert params["nonzero"] == summary["nonzero"] + params["dense_nonzero"]
    rows = [r for r in csv.DictReader((tmp_path / "layers.csv").open())]
    assert [(r["layer"], r["trained"], int(r["total"])) for r in rows] == [
        ("head", "method", 160),
        ("gru", "dense", gru),
        ("norm", "dense", norm),
    ]


def test_the_epoch_line_shows_the_data_term_with_the_penalty_beside_it(config, tmp_path, capsys):
    engine = one(config(*GRU, "method=logsum", "progress=auto"), tmp_path)  # not a terminal: a line an epoch
    engine.fit()
    line = capsys.readouterr().err.strip().splitlines()[-1]
    row = next(csv.DictReader((tmp_path / "metrics.csv").open()))
    data_term, penalty = float(row["data_term"]), float(row["train_loss"]) - float(row["data_term"])
    assert line.startswith(f"adrop train: epoch 1/1: loss {data_term:.4f} (+ penalty {penalty:.4g}), val error")


def console(*args, cwd, env=None):
    """The `adrop` console script (not `python -m adrop`, which puts the current folder on the path by itself)."""
    script = Path(sys.executable).with_name("adrop")
    if not script.exists():
        pytest.skip("the adrop console script is not installed beside this Python")
    env = {**{k: v for k, v in os.environ.items() if k not in ("HYDRA_FULL_ERROR", "PYTHONPATH")}, **(env or {})}
    return subprocess.run([str(script), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


@pytest.mark.slow
def test_a_network_beside_the_command_imports_and_a_missing_one_is_one_line(tmp_path):
    (tmp_path / "mynet.py").write_text((ROOT / "tests" / "user_nets.py").read_text())
    small = ("dataset=digits", "epochs=1", "device=cpu", "progress=never", "model=custom")
    ok = console("train", *small, "model._target_=mynet.TinyResNet", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    bad = console("train", *small, "model._target_=mynets.NoSuchNet", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [
        "adrop train: error: model._target_=mynets.NoSuchNet does not import (ModuleNotFoundError: No module named "
        f"'mynets'; mynets.py is not in the current folder ({tmp_path}) nor an installed package)"
    ]


@pytest.mark.parametrize("written, mode", [("false", "never"), ("true", "always"), ("never", "never")])
def test_progress_true_and_false_mean_always_and_never(written, mode, config, tmp_path):
    from adrop.train.config.settings import progress_mode

    cfg = config("dataset=synthetic", "model=mlp", "device=cpu", f"progress={written}")
    assert progress_mode(cfg.progress) == mode
    one(cfg, tmp_path)  # accepted at start


def test_the_report_counts_what_trains_densely_in_the_whole_networks_column(config, tmp_path):
    from adrop.report import collect, tables

    summary = one(config(*GRU, "method=logsum", "progress=never"), tmp_path / "run").fit()[0]
    table = collect.results([tmp_path])
    row = table.iloc[0]
    params = summary["parameters"]
    assert row.network_parameters == params["total"] and row.dense_parameters == params["dense"]
    assert row.network_nonzero_fraction == pytest.approx(params["nonzero"] / params["total"])
    assert not any(c in table for c in ("nonzero_gru", "nonzero_norm"))  # dense modules are no layers
    md = tables.markdown_table(table)
    assert "nonzero, whole network" in md and f"{params['nonzero'] / params['total']:.3f}" in md
