"""Tasks beyond classification: regression (scikit-learn's diabetes set, a user's data) and language models (a text
file, the built-in gpt_tiny), trained by every method, their metrics in metrics.csv, summary.json, the command's line,
the report, lam_search's table and the export's check, each recomputed here from the run's weights.npz; a user's
dataset by _target_; data that do not fit the task refused in one line before any folder."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from adrop import methods
from adrop.train.nets.builtin import MLP
from adrop.train.nets.tiny_transformers import GPTTiny

import user_nets
from helpers.engines import one, train

REGRESSION = ("task=regression", "dataset=diabetes", "model=mlp", "model.hidden=[16]", "device=cpu", "progress=never")
GPT = (
    "task=language_model",
    "dataset=text",
    "dataset.context=16",
    "model=gpt_tiny",
    "model.dim=16",
    "model.heads=2",
    "model.layers=1",
    "device=cpu",
    "progress=never",
)
ENV = {"PYTHONPATH": str(Path(user_nets.__file__).parent)}
SENTENCE = "the quick brown fox jumps over the lazy dog; "


@pytest.fixture(scope="module")
def text(tmp_path_factory) -> Path:
    """A text file: one sentence, repeated (about 9k characters; its vocabulary the sentence's 28 symbols)."""
    path = tmp_path_factory.mktemp("text") / "corpus.txt"
    path.write_text(SENTENCE * 200)
    return path


def finetune(method: str, folder: Path, config, base) -> list[str]:
    """The extra overrides a method needs: magnitude pruning a sparsity, fixed_mask a pruned run to start from."""
    if method == "magnitude_pruning":
        return ["method.params.final_sparsity=0.5"]
    if method == "fixed_mask":
        train(config(*base, "method=magnitude_pruning", "method.params.final_sparsity=0.5"), folder)
        return [f"init_from={folder}"]
    return []


@pytest.mark.parametrize("method", methods.names())
def test_every_method_trains_a_regression(method, config, tmp_path):
    base = (*REGRESSION, "epochs=2")
    engine = one(
        config(*base, f"method={method}", *finetune(method, tmp_path / "pruned", config, base)), tmp_path / "run"
    )
    summary = engine.fit()[0]
    assert summary["status"] == "completed", summary
    assert summary["task"] == "regression" and "test_error" not in summary
    assert {"test_rmse", "test_r2", "val_rmse", "val_r2"} <= set(summary)
    metrics = pd.read_csv(tmp_path / "run" / "metrics.csv")
    assert list(metrics.columns) == [
        "epoch",
        "train_loss",
        "data_term",
        "penalty_term",
        "val_rmse",
        "val_r2",
        "nonzero_fraction",
        "lr",
        "seconds",
    ]
    assert metrics.val_rmse.iloc[-1] == summary["val_rmse"]


def test_the_regression_metrics_are_the_reloaded_networks_in_the_targets_units(config, tmp_path):
    """RMSE and R^2 recomputed with scikit-learn from a fresh MLP given weights.npz, on the raw targets: the network
    predicts standardised targets, summary.json says with which mean and std."""
    from sklearn.metrics import mean_squared_error, r2_score

    engine = one(config(*REGRESSION, "method=logsum", "epochs=30", "lr=0.01"), tmp_path)
    summary = engine.fit()[0]
    saved = np.load(tmp_path / "weights.npz")
    net = MLP(input_shape=[10], classes=1, hidden=[16])
    net.load_state_dict({k: torch.from_numpy(saved[k]) for k in saved.files})
    mean, std = (summary["target_normalisation"][k][0] for k in ("mean", "std"))
    with torch.no_grad():
        predicted = net(engine.data.test.x).squeeze(1).numpy() * std + mean
    truth = engine.data.test.y.squeeze(1).numpy() * std + mean
    assert summary["test_rmse"] == pytest.approx(math.sqrt(mean_squared_error(truth, predicted)), rel=1e-5)
    assert summary["test_r2"] == pytest.approx(r2_score(truth, predicted), abs=1e-5)
    assert summary["test_r2"] > 0.3  # learnt: a constant guess has R^2 <= 0
    assert 30 < summary["test_rmse"] < 70  # in the target's units (its std: about 77)


@pytest.mark.parametrize("method", methods.names())
def test_every_method_trains_gpt_tiny_as_a_language_model(method, config, text, tmp_path):
    base = (*GPT, f"dataset.path={text}", "epochs=1")
    engine = one(
        config(*base, f"method={method}", *finetune(method, tmp_path / "pruned", config, base)), tmp_path / "run"
    )
    summary = engine.fit()[0]
    assert summary["status"] == "completed", summary
    assert summary["task"] == "language_model"
    assert summary["vocabulary"] == sorted(set(SENTENCE))
    assert summary["test_perplexity"] == pytest.approx(math.exp(summary["test_loss"]))
    assert {"tok", "encoder.layers.0.self_attn.in_proj_weight", "head"} <= set(summary["layers"])
    assert engine.data.train.x.dtype == torch.int64 and engine.data.train.x.shape[1] == 16


def test_a_language_models_perplexity_is_the_reloaded_networks(config, text, tmp_path):
    """The test loss recomputed from a fresh GPTTiny given weights.npz: next-token cross entropy over the test
    windows of the file's last 5%; and the model learnt the sentence (a uniform guess: 28)."""
    engine = one(
        config(*GPT, f"dataset.path={text}", "method=logsum", "epochs=8", "lr=0.01", "batch_size=32"), tmp_path
    )
    summary = engine.fit()[0]
    saved = np.load(tmp_path / "weights.npz")
    net = GPTTiny(input_shape=[16], classes=28, dim=16, heads=2, layers=1)
    net.load_state_dict({k: torch.from_numpy(saved[k]) for k in saved.files})
    x, y = engine.data.test.x, engine.data.test.y
    assert torch.equal(x[:, 1:], y[:, :-1])  # y is x shifted by one
    with torch.no_grad():
        loss = F.cross_entropy(net.eval()(x).reshape(-1, 28), y.reshape(-1)).item()
    assert summary["test_loss"] == pytest.approx(loss, rel=1e-4)
    assert summary["test_perplexity"] < 2


def test_a_users_dataset_by_target_trains(config, tmp_path):
    summary = train(
        config(
            "dataset=custom",
            "dataset._target_=user_nets.Blobs",
            "+dataset.options.n=600",
            "model=mlp",
            "device=cpu",
            "progress=never",
            "method=logsum",
            "epochs=10",
            "lr=0.01",
        ),
        tmp_path / "a",
    )
    assert summary["status"] == "completed" and summary["test_error"] < 0.2
    line = train(
        config(
            "dataset=custom",
            "dataset._target_=user_nets.Line",
            "task=regression",
            "model=mlp",
            "device=cpu",
            "progress=never",
            "method=adaprox",
            "epochs=20",
            "lr=0.01",
        ),
        tmp_path / "b",
    )
    assert line["status"] == "completed" and line["test_r2"] > 0.5


@pytest.mark.slow
def test_the_command_line_report_and_export_speak_the_tasks_metrics(adrop, text, tmp_path, capsys, monkeypatch):
    """`adrop train` in a subprocess (its line is the command's); `adrop report` and `adrop export` by their main()
    in this process (the command line, less a process start each), in the same folder."""
    from adrop.commands import export as export_command
    from adrop.commands import report as report_command

    def command(main, *args):
        capsys.readouterr()
        code = main(list(args))
        said = capsys.readouterr()
        assert code == 0, said.err
        return said.out

    out = adrop("train", *REGRESSION[:5], "method=logsum", "epochs=3", "hydra.run.dir=reg")
    assert out.returncode == 0, out.stderr
    assert "logsum: test RMSE " in out.stdout and "test R^2 " in out.stdout and "val RMSE " in out.stdout
    out = adrop("train", *GPT[:8], f"dataset.path={text}", "method=logsum", "epochs=1", "hydra.run.dir=lm")
    assert out.returncode == 0, out.stderr
    assert "test perplexity " in out.stdout
    monkeypatch.chdir(tmp_path)
    command(report_command.main, "reg", "lm", "--out", "report")
    results = pd.read_csv(tmp_path / "report" / "results.csv").set_index("run")
    summary = json.loads((tmp_path / "reg" / "summary.json").read_text())
    assert results.loc["reg", "test_rmse"] == pytest.approx(summary["test_rmse"])
    assert set(results.task) == {"regression", "language_model"}
    page = next((tmp_path / "report").glob("*.md")).read_text()
    assert "test RMSE" in page and "test perplexity" in page
    for run in ("reg", "lm"):
        said = command(export_command.main, run, "--format", "onnx")
        assert ("test RMSE" if run == "reg" else "test perplexity") in said and "as the run's" in said
    # what the outputs mean travels with them: a regression's target units, a language model's vocabulary
    import onnx

    lm = json.loads((tmp_path / "lm" / "summary.json").read_text())
    for run, key, value in (
        ("reg", "target_mean", summary["target_normalisation"]["mean"]),
        ("lm", "vocabulary", lm["vocabulary"]),
    ):
        model = onnx.load(tmp_path / run / "export" / "network.onnx")
        meta = {p.key: json.loads(p.value) for p in model.metadata_props}
        assert meta[key] == value
    for form in ("csr", "compact"):
        command(export_command.main, "reg", "--format", form)
        arrays = np.load(tmp_path / "reg" / "export" / f"network.{form}.npz")
        assert arrays["target_std"].tolist() == pytest.approx(summary["target_normalisation"]["std"])
        assert arrays["input_mean"].tolist() == pytest.approx(summary["input_normalisation"]["mean"])


@pytest.mark.slow
def test_lam_search_records_a_regressions_rmse(adrop, tmp_path):
    out = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_nonzero=0.5",
        "hydra.sweeper.max_runs=4",
        "hydra.sweeper.short_epochs=1",
        *REGRESSION[:5],
        "method=logsum",
        "epochs=10",
        "lr=0.01",
        "hydra.sweep.dir=search",
    )
    table = pd.read_csv(tmp_path / "search" / "search.csv")
    assert "val_rmse" in table and "test_rmse" in table and "val_error" not in table
    assert table.val_rmse.notna().any(), out.stdout + out.stderr
    assert "val rmse" in out.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides, message",
    [
        (("dataset=diabetes",), "dataset=diabetes holds real-valued targets (a regression set): use task=regression"),
        (("task=regression", "dataset=digits"), "dataset=digits holds class labels: use task=classification"),
        (("task=sorting",), "task=sorting is not a task; valid: classification, regression, language_model"),
        (("task=regression", "dataset=diabetes", "objective=[val_error,test_rmse]"), "a search that looks at the test"),
        (("objective=val_rmse",), "objective=val_rmse is not a run's result"),
        ((*GPT[:3], "model=mlp", "dataset.path={text}"), "16-64-28 fails on them with no embedding"),
        ((*GPT[:4], "dataset.path={text}", "+model.classes=20"), "fails on token id 27"),
        ((*GPT[:4], "dataset.path={empty}"), "is empty"),
        ((*GPT[:4], "dataset.path={binary}"), "is not text (it holds NUL bytes at byte 2)"),
        ((*GPT[:4], "dataset.path={latin}"), "is not UTF-8 text (byte 0); dataset.level=byte reads it as bytes"),
        ((*GPT[:4], "dataset.path={text}", "dataset.context=100000"), "fewer than dataset.context + 1 = 100001"),
    ],
)
def test_data_that_do_not_fit_the_task_are_refused_in_one_line(overrides, message, adrop, text, tmp_path):
    files = {
        "text": text,
        "empty": tmp_path / "empty.txt",
        "binary": tmp_path / "binary.txt",
        "latin": tmp_path / "latin.txt",
    }
    files["empty"].write_bytes(b"")
    files["binary"].write_bytes(b"ab\0cd")
    files["latin"].write_bytes(b"\xff\xfeab")
    out = adrop("train", *(o.format(**files) for o in overrides), "epochs=1", "device=cpu", "hydra.run.dir=run")
    assert out.returncode != 0
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not (tmp_path / "run").exists()


def test_a_regressions_targets_are_standardised_on_the_training_split_alone(config, tmp_path):
    engine = one(config(*REGRESSION, "method=dense", "epochs=1"), tmp_path)
    mean, std = engine.data.targets["mean"][0], engine.data.targets["std"][0]
    train = engine.data.train.y.double() * std + mean  # back in the targets' units
    assert train.mean().item() == pytest.approx(mean, abs=1e-3) and train.std().item() == pytest.approx(std, rel=1e-4)
    assert len(engine.data.train) == 283  # the 354 left after the test set, less a fifth for validation


def test_a_language_models_inputs_outside_the_vocabulary_are_refused(config, tmp_path):
    from adrop.train.errors import TrainError

    x = np.arange(40).reshape(5, 8) % 10
    path = tmp_path / "tokens.npz"
    x_test = x.copy()
    x_test[0, 0] = 10  # an id no target holds
    np.savez(path, x_train=x, y_train=(x + 1) % 10, x_test=x_test, y_test=(x + 1) % 10)
    with pytest.raises(TrainError, match=r"x_test holds a token id outside the vocabulary \[0, 10\)"):
        one(
            config(
                "task=language_model",
                "dataset=npz",
                f"dataset.path={path}",
                "dataset.val_size=1",
                "model=gpt_tiny",
                "model.dim=16",
                "model.heads=2",
                "model.layers=1",
                "device=cpu",
            ),
            tmp_path / "r",
        )
