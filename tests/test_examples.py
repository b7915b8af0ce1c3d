"""The examples in examples/ run as a user runs them (a subprocess, small arguments), and what they save loads into a
fresh plain model with the sparsity they print. The Lightning and transformers ones skip where those are missing."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(name, *args, cwd):
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def nonzero_printed(stdout):
    """The nonzero column of the stats table the example prints: {layer: count}."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^\s*(\S+)\s+\d+x\d+\s+(\d+)\s+\d+", stdout, re.M)}


@pytest.mark.slow
def test_plain_loop_trains_prints_the_sparsity_and_saves_a_plain_model(tmp_path):
    done = run("plain_loop.py", "--steps", "150", "--out", "mlp.pt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    accuracy = float(re.search(r"test accuracy ([\d.]+)", done.stdout)[1])
    assert accuracy > 0.5
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    net.load_state_dict(torch.load(tmp_path / "mlp.pt", weights_only=True))
    printed = nonzero_printed(done.stdout)
    assert printed == {"0": int((net[0].weight != 0).sum()), "2": int((net[2].weight != 0).sum())}
    assert printed["0"] < 128 * 64  # it prunes


@pytest.mark.slow
def test_resume_stopped_and_resumed_in_new_processes_ends_bitwise_as_the_straight_run(tmp_path):
    """The your-loop page's checkpoint recipe: adaptive dropout (noise, alphas, a step size) with a StepLR schedule."""
    steps = ("--steps", "120")
    stopped = run("resume.py", *steps, "--stop", "50", "--checkpoint", "ckpt.pt", cwd=tmp_path)
    assert stopped.returncode == 0, stopped.stderr
    resumed = run("resume.py", *steps, "--checkpoint", "ckpt.pt", "--out", "resumed.pt", cwd=tmp_path)
    assert resumed.returncode == 0 and "resumed at step 50" in resumed.stdout, resumed.stderr
    straight = run("resume.py", *steps, "--out", "straight.pt", cwd=tmp_path)
    assert straight.returncode == 0, straight.stderr
    a, b = (torch.load(tmp_path / name, weights_only=True) for name in ("resumed.pt", "straight.pt"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert nonzero_printed(resumed.stdout) == nonzero_printed(straight.stdout) != {}


@pytest.mark.slow
def test_plain_loop_refuses_an_unknown_method_in_one_line(tmp_path):
    done = run("plain_loop.py", "--method", "logsun", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("plain_loop.py: unknown method 'logsun'; valid methods:")


@pytest.mark.slow
def test_lightning_example_logs_the_sparsity_and_saves_the_plain_net(tmp_path):
    pytest.importorskip("lightning")
    done = run("lightning_digits.py", "--epochs", "2", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.search(r"nonzero fraction 0\.\d+ \(logged in .*metrics\.csv", done.stdout)
    logged = (next((tmp_path / "out" / "logs").glob("version_*")) / "metrics.csv").read_text()
    assert "sparsity/nonzero_fraction" in logged.splitlines()[0]
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    net.load_state_dict(torch.load(tmp_path / "out" / "net.pt", weights_only=True))
    assert nonzero_printed(done.stdout) == {
        "net.0": int((net[0].weight != 0).sum()),
        "net.2": int((net[2].weight != 0).sum()),
    }


@pytest.mark.slow
def test_transformers_example_saves_a_model_from_pretrained_reads_back(tmp_path):
    pytest.importorskip("accelerate")
    transformers = pytest.importorskip("transformers")
    done = run("transformers_tiny.py", "--steps", "8", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "'sparsity/nonzero_fraction'" in done.stdout
    assert done.stdout.rstrip().endswith("from_pretrained gives the same outputs: True")
    loaded = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "out" / "model")
    assert nonzero_printed(done.stdout)["classifier"] == int((loaded.classifier.weight != 0).sum())


@pytest.mark.slow
def test_gpt2_example_sparsifies_its_conv1d_layers_and_saves_them_plain(tmp_path):
    pytest.importorskip("accelerate")
    transformers = pytest.importorskip("transformers")
    done = run("gpt2_language_model.py", "--steps", "8", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "held-out perplexity " in done.stdout
    assert done.stdout.rstrip().endswith("from_pretrained gives the same outputs: True")
    loaded = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "out" / "model")
    printed = nonzero_printed(done.stdout)
    fc = loaded.transformer.h[0].mlp.c_fc.weight
    assert printed["transformer.h.0.mlp.c_fc"] == int((fc != 0).sum()) < fc.numel()  # a Conv1D, sparsified


@pytest.mark.slow
def test_the_loop_adrop_train_runs_written_with_the_library_follows_it(tmp_path):
    done = run(
        "same_as_adrop_train.py", "method=logsum", "dataset=digits", "model=mlp", "epochs=3", "lr=0.01", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    engine, loop = (
        re.search(rf"^{who}:\s+test error (\S+), nonzero (\S+)$", done.stdout, re.M).groups()
        for who in ("adrop train", "plain loop")
    )
    assert abs(float(engine[0]) - float(loop[0])) <= 0.006 and abs(float(engine[1]) - float(loop[1])) <= 0.01
    assert float(re.search(r"largest weight difference: (\S+)", done.stdout)[1]) < 1e-3
