"""`adrop export`: CSR and compact exports of a finished run, each reproducing the run's test error."""

import numpy as np
import pytest
import scipy.sparse as sp

from adrop import export
from adrop.commands import export as export_command
from adrop.train.run_folder import run_files

from helpers.engines import train


@pytest.fixture(scope="module")
def pruned_90(tmp_path_factory, synthetic):
    """A finished, 90%-pruned_90 MLP on synthetic data, with its .hydra/config.yaml as the command writes it."""
    folder = tmp_path_factory.mktemp("run")
    cfg = synthetic("method=magnitude_pruning", "method.params.final_sparsity=0.9", "model.hidden=[32,16]", "epochs=3")
    train(cfg, folder)
    run_files.write_config(folder, cfg, {}, [])
    return folder


def test_csr_export_holds_exactly_the_run_weights(pruned_90, tmp_path, capsys):
    out = tmp_path / "net.npz"
    assert export_command.main([str(pruned_90), "--out", str(out)]) == 0
    assert "test error" in capsys.readouterr().out
    arrays, weights = np.load(out), np.load(pruned_90 / "weights.npz")
    assert list(arrays["layers"]) == ["fc1", "fc2", "fc3"]
    for name in arrays["layers"]:
        shape = tuple(arrays[f"{name}.shape"])
        m = sp.csr_matrix((arrays[f"{name}.data"], arrays[f"{name}.indices"], arrays[f"{name}.indptr"]), shape=shape)
        assert np.array_equal(m.toarray(), weights[f"{name}.weight"])
        assert np.array_equal(arrays[f"{name}.bias"], weights[f"{name}.bias"])


def test_compact_export_is_smaller_and_predicts_the_same(pruned_90, tmp_path, capsys):
    out = tmp_path / "small.npz"
    assert export_command.main([str(pruned_90), "--format", "compact", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "20-32-16-4 -> " in printed
    run = export.read(pruned_90)
    x, y, _ = export.test_split(run, None)
    full = export.csr_predict(export.csr(run), x, None)
    small = export.compact_predict(dict(np.load(out)), x)
    assert np.allclose(full, small, atol=1e-5) and small.shape == full.shape
    assert np.load(out)["fc1.weight"].shape[0] < 32 or np.load(out)["input_index"].size < 20


def test_compact_folds_units_without_inputs_into_the_next_bias():
    """A hidden unit with no incoming weights outputs relu(b) whatever the input: removed, its effect kept. A unit no
    one reads goes, and with it the input only it read."""
    w1 = np.array([[1.0, 0.0], [0.0, 0.0], [0.5, -1.0]], dtype=np.float32)  # unit 1: no inputs, bias 2
    b1 = np.array([0.1, 2.0, -0.2], dtype=np.float32)
    w2 = np.array([[1.0, 3.0, 0.0], [-1.0, 0.5, 0.0]], dtype=np.float32)  # unit 2: no outgoing weights
    b2 = np.zeros(2, dtype=np.float32)
    from omegaconf import OmegaConf

    run = export.FinishedRun(
        None,
        {"architecture": "2-3-2"},
        OmegaConf.create({"model": {"name": "mlp"}}),
        ["fc1", "fc2"],
        {"fc1": (w1, b1), "fc2": (w2, b2)},
        {},
    )
    arrays, arch = export.compact(run)
    assert arch == "2-3-2 -> 1-1-2"
    x = np.random.default_rng(0).normal(size=(50, 2)).astype(np.float32)
    assert np.allclose(export.csr_predict(export.csr(run), x, None), export.compact_predict(arrays, x), atol=1e-6)


def test_what_cannot_be_exported_is_one_line_and_exit_2(pruned_90, synthetic, tmp_path, capsys):
    unfinished = tmp_path / "unfinished"
    train(synthetic("epochs=3"), unfinished, stop_after=1)
    for argv, message in [
        ([str(unfinished)], "has not completed (status running)"),
        ([str(tmp_path / "nothing")], "is not a run folder"),
        ([str(pruned_90), "--out", str(pruned_90 / "weights.npz")], "exists; adrop never overwrites"),
    ]:
        assert export_command.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_a_conv_net_exports_as_csr_and_reproduces_its_error(mnist, tmp_path, capsys):
    folder = tmp_path / "conv"
    cfg = mnist(
        "model=conv_small",
        "method=magnitude_pruning",
        "method.params.final_sparsity=0.8",
        "epochs=1",
        "data.train_limit=512",
    )
    summary = train(cfg, folder)
    run_files.write_config(folder, cfg, {}, [])
    assert export_command.main([str(folder), "--out", str(tmp_path / "c.npz")]) == 0
    assert f"test error {summary['test_error']:.4f}, as the run's" in capsys.readouterr().out
    assert export_command.main([str(folder), "--format", "compact", "--out", str(tmp_path / "d.npz")]) == 0
    assert f"test error {summary['test_error']:.4f}, as the run's" in capsys.readouterr().out


def test_onnx_export_runs_in_onnxruntime_and_reproduces_the_run(pruned_90, tmp_path, capsys):
    onnxruntime = pytest.importorskip("onnxruntime")
    out = tmp_path / "net.onnx"
    assert export_command.main([str(pruned_90), "--format", "onnx", "--out", str(out)]) == 0
    assert "compact network" in capsys.readouterr().out
    run = export.read(pruned_90)
    x, y, _ = export.test_split(run, None)
    session = onnxruntime.InferenceSession(out.read_bytes(), providers=["CPUExecutionProvider"])
    logits = session.run(["logits"], {"x": x})[0]
    assert np.sum(logits.argmax(1) != y) / len(y) == pytest.approx(run.summary["test_error"], abs=0.5 / len(y))


def test_onnx_without_its_packages_says_what_to_install(pruned_90, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "onnx", None)  # as if not installed
    assert export_command.main([str(pruned_90), "--format", "onnx", "--out", str(tmp_path / "x.onnx")]) == 2
    assert capsys.readouterr().err.strip() == (
        "adrop export: error: --format onnx needs onnx and onnxruntime: pip install -e '.[export]'"
    )
    assert not (tmp_path / "x.onnx").exists()


def test_bench_inference_times_every_form_against_dense(pruned_90, capsys):
    from adrop.commands import bench_inference

    assert bench_inference.main([str(pruned_90), "--batches", "1,8", "--seconds", "0.01"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    forms = {" ".join(r[:-4]) for r in rows}
    assert {"dense (torch)", "compact (torch)", "CSR (torch.sparse)", "CSR (scipy.sparse)"} <= forms
    assert {int(r[-4]) for r in rows} == {1, 8} and all(float(r[-3]) > 0 for r in rows)  # ms per call
    # the reference row by its whole name: with CUDA, "dense (torch, cuda)" rows follow, timed against it
    assert [r[-1] for r in rows if " ".join(r[:-4]) == "dense (torch)"] == ["1.00", "1.00"]


def test_bench_inference_refuses_what_is_not_a_finished_run(tmp_path, capsys):
    from adrop.commands import bench_inference

    assert bench_inference.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().startswith("adrop bench-inference: error: ")


@pytest.mark.parametrize("method", sorted(__import__("adrop.methods", fromlist=["names"]).names()))
def test_every_method_exports_in_every_format_with_its_test_error(method, pruned_90, synthetic, tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    extra = {
        "fixed_mask": [f"init_from={pruned_90}", "model.hidden=[32,16]"],  # the shapes of the pruned_90 run
        "magnitude_pruning": ["method.params.final_sparsity=0.5"],
    }
    cfg = synthetic(f"method={method}", "epochs=2", "lr=1e-2", *extra.get(method, []))
    folder = tmp_path / "run"
    summary = train(cfg, folder)
    run_files.write_config(folder, cfg, {}, [])
    for fmt in ("csr", "compact", "onnx"):
        assert export_command.main([str(folder), "--format", fmt, "--out", str(tmp_path / f"net.{fmt}")]) == 0, fmt
        assert f"test error {summary['test_error']:.4f}, as the run's" in capsys.readouterr().out


def test_check_exports_every_completed_run_under_the_folders(pruned_90, synthetic, tmp_path, capsys):
    import shutil

    sweep = tmp_path / "sweep"
    shutil.copytree(pruned_90, sweep / "good")
    train(synthetic("epochs=3"), sweep / "unfinished", stop_after=1)
    assert export_command.main(["--check", str(sweep)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith(f"{sweep / 'good'}: exported (onnx, ") and out[0].endswith("as the run's")
    assert out[-1] == (
        "1 completed runs checked (onnx), 1 not completed skipped: each export reproduces its run's test error"
    )
    shutil.copytree(pruned_90, sweep / "broken")
    data = (sweep / "broken" / "weights.npz").read_bytes()
    (sweep / "broken" / "weights.npz").write_bytes(data[: len(data) // 2])
    assert export_command.main(["--check", str(sweep), "--format", "csr"]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert any(line.startswith(f"{sweep / 'broken'}: FAILED: ") for line in out)
    assert out[-1].endswith("1 exports FAILED") and not list((sweep / "good").glob("export/*"))  # nothing written
    (tmp_path / "empty").mkdir()
    assert export_command.main(["--check", str(tmp_path / "empty")]) == 2
    assert capsys.readouterr().err.startswith("adrop export: error: no completed run under ")
    assert export_command.main([str(pruned_90), str(pruned_90)]) == 2  # one run without --check
    assert "takes one run folder, got 2" in capsys.readouterr().err


def test_check_counts_a_run_it_cannot_read_and_refuses_a_missing_folder(pruned_90, tmp_path, capsys):
    import shutil

    sweep = tmp_path / "sweep"
    shutil.copytree(pruned_90, sweep / "good")
    shutil.copytree(pruned_90, sweep / "bad_config")
    (sweep / "bad_config" / ".hydra" / "config.yaml").write_text("model: [unclosed\n")
    assert export_command.main(["--check", str(sweep), "--format", "csr"]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert any(line.startswith(f"{sweep / 'bad_config'}: FAILED: ") for line in out)
    assert any(line.startswith(f"{sweep / 'good'}: exported (csr") for line in out)  # the others checked all the same
    assert export_command.main(["--check", str(sweep), str(tmp_path / "typo")]) == 2
    assert capsys.readouterr().err.strip() == f"adrop export: error: {tmp_path / 'typo'} is not a folder"


@pytest.mark.slow
def test_a_module_whose_forward_fixes_the_batch_is_refused_in_one_line():
    pytest.importorskip("onnxscript")
    from torch import nn

    from adrop.export import ExportError, onnx_of_module

    class ReadsLen(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(12, 3)

        def forward(self, x):
            return self.fc(x.reshape(len(x), -1))

    with pytest.raises(ExportError, match=r"fixed the batch dimension of ReadsLen at 2: .*len\(x\)"):
        onnx_of_module(ReadsLen(), (3, 4))
    flat = ReadsLen()
    flat.forward = lambda x: flat.fc(x.flatten(1))
    assert onnx_of_module(flat, (3, 4)).graph.input[0].type.tensor_type.shape.dim[0].dim_param
