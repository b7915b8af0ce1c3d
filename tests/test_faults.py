"""Faults a user or the environment produces: each ends in one line on stderr with a stable exit code, the run's
status says what happened, nothing is left half-written, and the same command resumes.

    divergence                  exit 1, status failed, "the training diverged ..." (a sweep counts it)
    SIGINT (Ctrl-C), SIGTERM    exit 130, 143, status interrupted, the command that resumes it
    a truncated data file       exit 1, the file named
    a checkpoint that cannot be written (file-size limit)   exit 1, the file named, no temporary file left
"""
import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest

from adrop.train import run_files
from adrop.train.settings import TrainError, resolve

from conftest import DATA
from engines import one

SMALL = ("dataset=synthetic", "model=mlp", "device=cpu")


def stderr_lines(process):
    return process.stderr.strip().splitlines()


@pytest.mark.slow
def test_divergence_is_a_failure_in_one_line(adrop, tmp_path):
    out = adrop("train", *SMALL, "epochs=2", "method=dense", "lr=1e9", "hydra.run.dir=run")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert stderr_lines(out)[-1].startswith("adrop train: error: the training diverged: its cross-entropy reached")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "failed" and "in epoch 1" in summary["error"]
    sweep = adrop("train", "-m", *SMALL, "epochs=2", "method=logsum", "lr=1e-2,1e9", "hydra.sweep.dir=sweep")
    assert sweep.returncode == 1 and "1 of 2 jobs failed" in stderr_lines(sweep)[-1]


def test_the_divergence_bound_is_a_thousand_uniform_guesses(synthetic, tmp_path):
    """The bound is stated, not tuned: 1000 x ln(classes), the cross-entropy of a uniform guess (4 classes here)."""
    import math

    engine = one(synthetic(), tmp_path)
    assert engine.diverged_at == pytest.approx(1000 * math.log(4))
    engine.epoch = 1
    assert engine.divergence(0, [1.0, 1.0, 0.0]) is None
    assert "diverged" in engine.divergence(0, [2000.0, 1000 * math.log(4) * 1.01, 0.0])
    assert "the loss became nan" in engine.divergence(0, [float("nan"), 1.0, 0.0])


def default_sigint():
    """Ctrl-C as a terminal delivers it, even where the suite itself runs with SIGINT ignored (a background job of a
    non-interactive shell): a process that starts with SIGINT ignored keeps it ignored, as nohup intends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def start_and_wait_for(tmp_path):
    """start(text, stream, *args): a long training in a subprocess (its own process group), returned once `text`
    appeared on its stdout or stderr; whatever is left of it is killed when the test ends, passed or not."""
    started = []

    def start(text, stream, *args):
        command = [sys.executable, "-m", "adrop", "train", *args, *SMALL, "epochs=100000"]
        process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True, preexec_fn=default_sigint)
        started.append(process)
        deadline = time.time() + 120
        line = ""
        while time.time() < deadline and text not in line:
            line = getattr(process, stream).readline()
            assert line or process.poll() is None, process.communicate()
        return process

    yield start
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_says_so_in_one_line_and_resumes(start_and_wait_for, tmp_path, signum, code):
    process = start_and_wait_for("epoch 2/", "stderr", "method=logsum", "hydra.run.dir=run")  # no terminal:
    #                                                                                         a line per epoch
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    assert process.returncode == code, err
    last = err.strip().splitlines()[-1]
    assert "Traceback" not in err and last.startswith(f"adrop train: interrupted ({signal.Signals(signum).name}); "
                                                      "resume with: adrop train ")
    assert f"hydra.run.dir={tmp_path / 'run'}" in last
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["epochs"] >= 2
    assert not list((tmp_path / "run").glob("*.tmp"))
    args = shlex.split(last.split("resume with: ", 1)[1])[2:]  # the command it printed resumes the run
    assert run_files.claim(tmp_path / "run", resolve(compose(args)).identity) == "resume"


def compose(args):
    from conftest import compose_config

    return compose_config(*[a for a in args if not a.startswith("hydra.")])


@pytest.mark.slow
def test_an_interrupted_stacked_sweep_marks_its_unfinished_jobs_and_no_other_folder(start_and_wait_for, tmp_path):
    foreign = tmp_path / "sweep" / "seed_3"  # another run's folder where the sweep's fourth job would go: refused
    foreign.mkdir(parents=True)
    (foreign / "summary.json").write_text('{"status": "running", "identity": {"method": "dense", "seed": 99}}')
    process = start_and_wait_for("worker processes", "stdout", "-m", "method=logsum", "seed=0,1,2,3",
                                 "hydra/launcher=stacked", "hydra.launcher.n_jobs=2", "hydra.sweep.dir=sweep",
                                 "hydra.sweep.subdir=seed_${seed}")
    time.sleep(5)  # two stacks train, the third waits
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert "Traceback" not in err and "hydra.sweep.dir=" in err.strip().splitlines()[-1]
    statuses = [json.loads((tmp_path / "sweep" / f"seed_{s}" / "summary.json").read_text())["status"]
                for s in range(3)]
    assert statuses == ["interrupted"] * 3
    assert json.loads((foreign / "summary.json").read_text())["status"] == "running"  # not this sweep's to mark


def test_a_truncated_data_file_is_named(config, tmp_path):
    if not (DATA / "MNIST" / "raw").exists():
        pytest.skip("MNIST not found at ../shared/data")
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for path in (DATA / "MNIST" / "raw").iterdir():
        if not path.name.endswith(".gz"):
            (raw / path.name).symlink_to(path)
    (raw / "t10k-labels-idx1-ubyte").unlink()
    (raw / "t10k-labels-idx1-ubyte").write_bytes((DATA / "MNIST" / "raw" / "t10k-labels-idx1-ubyte").read_bytes()[:999])
    cfg = config(f"data.root={tmp_path}", "data.download=false", "device=cpu")
    with pytest.raises(TrainError, match=r"t10k-labels-idx1-ubyte is truncated or corrupt \(999 bytes, its header "
                                         r"promises 10008\)"):
        one(cfg, tmp_path / "run")


@pytest.mark.slow
def test_a_checkpoint_that_cannot_be_written_is_one_line_and_leaves_no_temporary_file(tmp_path):
    """A file-size limit (ulimit -f) below the checkpoint's size: the write fails, its temporary file goes."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))  # the CSVs and YAMLs fit, the checkpoint not

    out = subprocess.run([sys.executable, "-m", "adrop", "train", *SMALL, "epochs=2", "model.hidden=[64,64]",
                          "hydra.run.dir=run"], cwd=tmp_path, capture_output=True, text=True, preexec_fn=limit,
                         timeout=300)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert stderr_lines(out)[-1].startswith(f"adrop train: error: cannot write {tmp_path / 'run' / 'checkpoint.pt'}")
    assert not list((tmp_path / "run").glob("*.tmp"))
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "failed"


def test_a_failed_write_keeps_the_file_as_it_was(tmp_path, monkeypatch):
    run_files.write_summary(tmp_path, {"status": "running"})

    def broken(tmp):
        tmp.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(run_files.WriteFailed, match="cannot write .*summary.json: .*No space left on device"):
        run_files._atomic(tmp_path / "summary.json", broken)
    assert run_files.read_summary(tmp_path) == {"status": "running"} and not list(tmp_path.glob("*.tmp"))


def test_seed_train_limit_and_device_are_wrong_commands(adrop, tmp_path):
    """Refused at start, before any folder exists: exit 2, as every wrong command."""
    import torch

    cases = [("seed=-1", "seed must be >= 0"), ("data.train_limit=0", "data.train_limit must be >= 1")]
    if not torch.cuda.is_available():
        cases.append(("device=cuda", "CUDA is not available"))
    for override, message in cases:
        out = adrop("train", *SMALL, override, "hydra.run.dir=run")
        assert out.returncode == 2 and message in out.stderr and len(stderr_lines(out)) == 1, out.stderr
        assert not (tmp_path / "run").exists()


def test_every_command_says_where_its_files_are(adrop, tmp_path):
    out = adrop("train", *SMALL, "epochs=1", "hydra.run.dir=run")
    folder = tmp_path / "run"
    assert out.returncode == 0 and out.stdout.splitlines()[0] == f"adrop train: dense into {folder}"
    assert out.stdout.strip().splitlines()[-1].endswith(f"files in {folder}")
    assert "adrop train: epoch 1/1: loss" in out.stderr  # not a terminal: a line per epoch
    sweep = adrop("train", "-m", *SMALL, "epochs=1", "seed=0,1", "hydra.sweep.dir=sweep")
    assert sweep.returncode == 0 and f"adrop train: sweep into {tmp_path / 'sweep'}" in sweep.stdout
    assert sweep.stdout.strip().splitlines()[-1] == f"adrop train: 2 jobs done; files in {tmp_path / 'sweep'}"
    shutil.rmtree(tmp_path / "sweep")


def finished_runs(synthetic, root, n=2, *extra):
    """n finished runs on synthetic data under root (as a sweep leaves them), with their recorded configuration."""
    from engines import train

    for seed in range(n):
        cfg = synthetic("epochs=1", f"seed={seed}", *extra)
        train(cfg, root / f"seed={seed}")
        run_files.write_config(root / f"seed={seed}", cfg, {}, [f"seed={seed}", *extra])
    return [root / f"seed={seed}" for seed in range(n)]


@pytest.mark.parametrize("content", ['{"status": "compl', "[]"])
def test_report_skips_and_names_a_run_it_cannot_read(synthetic, tmp_path, capsys, content):
    import pandas as pd

    from adrop.commands import report as report_command

    good, bad = finished_runs(synthetic, tmp_path / "sweep")
    (bad / "summary.json").write_text(content)
    assert report_command.main([str(tmp_path / "sweep"), "--out", str(tmp_path / "report")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"adrop report: skipped {bad}: ")
    assert list(pd.read_csv(tmp_path / "report" / "results.csv").run) == [good.name]


def test_reports_say_when_runs_trained_on_part_of_the_data(synthetic, tmp_path):
    from adrop.report import collect, tables

    finished_runs(synthetic, tmp_path / "sweep", 2, "data.train_limit=512")
    header = tables.markdown_table(collect.results(tmp_path / "sweep")).splitlines()[0]
    cells = [c.strip() for c in header.split("|")]
    assert "train examples" in cells
    assert "| 512 |" in tables.markdown_table(collect.results(tmp_path / "sweep"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_out_that_cannot_be_written_is_one_line(synthetic, tmp_path, capsys):
    from adrop.commands import export as export_command, penalty as penalty_command, report as report_command

    (run,) = finished_runs(synthetic, tmp_path / "sweep", 1)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert export_command.main([str(run), "--out", str(locked / "net.npz")]) == 2
    assert report_command.main([str(tmp_path / "sweep"), "--out", str(locked / "r")]) == 2
    assert penalty_command.main(["--plot", "--out", str(locked / "p")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all("Permission denied" in line for line in err), err


def test_an_out_under_a_file_is_one_line(synthetic, tmp_path, capsys):
    """What root meets too: --out inside a path that is a file, not a folder."""
    from adrop.commands import export as export_command, penalty as penalty_command, report as report_command

    (run,) = finished_runs(synthetic, tmp_path / "sweep", 1)
    afile = tmp_path / "a_file"
    afile.write_text("")
    assert export_command.main([str(run), "--out", str(afile / "net.npz")]) == 2
    assert report_command.main([str(tmp_path / "sweep"), "--out", str(afile / "r")]) == 2
    assert penalty_command.main(["--plot", "--out", str(afile / "p")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert [line.split(":")[0] for line in err] == ["adrop export", "adrop report", "adrop penalty"], err


def test_a_truncated_weights_file_is_one_line(synthetic, tmp_path, capsys):
    from adrop.commands import export as export_command

    (run,) = finished_runs(synthetic, tmp_path / "sweep", 1)
    data = (run / "weights.npz").read_bytes()
    (run / "weights.npz").write_bytes(data[: len(data) // 2])
    assert export_command.main([str(run), "--out", str(tmp_path / "net.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{run / 'weights.npz'} cannot be read" in err[0]
