"""Faults a user or the environment produces: each ends in one line on stderr with a stable exit code, the run's
status says what happened, nothing is left half-written, and the same command resumes.

The exit statuses, one table (docs/guide.md, "Errors, faults and exit codes"; adrop/commands/train.py), each row
tested here (the tests named test_exit_<status>_...; in this process where it can be, through
adrop.train.command.app.main):

    0    done; a sweep's job that another command held counts as done once completed there, and as done if it still
         trains there (named: "held by another command (still training)")
    1    a run failed: divergence ("the training diverged ...", a sweep counts it), a file or folder that cannot be
         written ("cannot write <path>: permission denied", "... file too large (the file-size limit)"), a held
         job that failed in the command that held it
    2    refused, nothing trained: a wrong value or --flag, data missing that cannot be downloaded ("MNIST is not in
         ... (no internet?)", said once in a sweep), a folder that holds another run or is in use; a sweep whose jobs
         were refused and none failed
    130  SIGINT (Ctrl-C) at any moment: while the command imports torch (one line), or training (status interrupted,
         the command that resumes it)
    143  SIGTERM, likewise
"""

import errno
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from adrop import cli, interrupts
from adrop.train.command import app
from adrop.train.config.settings import resolve
from adrop.train.errors import TrainError
from adrop.train.run_folder import run_files

from conftest import DATA, needs_mnist
from helpers.engines import one

SMALL = ("dataset=synthetic", "model=mlp", "device=cpu")


def stderr_lines(process):
    return process.stderr.strip().splitlines()


@pytest.mark.slow
def test_exit_1_divergence_is_a_failure_in_one_line(adrop, tmp_path):
    out = adrop("train", *SMALL, "epochs=2", "method=dense", "lr=1e9", "hydra.run.dir=run")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert stderr_lines(out)[-1].startswith("adrop train: error: the training diverged: its cross-entropy reached")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "failed" and "in epoch 1" in summary["error"]
    sweep = adrop("train", "-m", *SMALL, "epochs=2", "method=logsum", "lr=1e-2,1e9", "hydra.sweep.dir=sweep")
    assert sweep.returncode == 1 and "1 of 2 jobs failed" in stderr_lines(sweep)[-1]


def test_the_divergence_bound_is_a_thousand_uniform_guesses(synthetic, tmp_path):
    """The bound is stated, not tuned: 1000 x ln(classes), the cross-entropy of a uniform guess (4 classes here); a
    regression's, 1000 times the variance of its standardised targets."""
    import math

    engine = one(synthetic(), tmp_path)
    engine.epoch = 1
    assert engine.divergence(0, [1.0, 1000 * math.log(4) * 0.99, 0.0]) is None
    assert "diverged" in engine.divergence(0, [2000.0, 1000 * math.log(4) * 1.01, 0.0])
    assert "the loss became nan" in engine.divergence(0, [float("nan"), 1.0, 0.0])
    from adrop.train.tasks import Regression

    assert Regression().divergence(999.0, 1) is None and "above 1000 times" in Regression().divergence(1001.0, 1)


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
        process = subprocess.Popen(
            command,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=default_sigint,
        )
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
def test_exit_130_and_143_an_interrupted_run_says_so_in_one_line_and_resumes(
    start_and_wait_for, tmp_path, signum, code
):
    process = start_and_wait_for("epoch 2/", "stderr", "method=logsum", "hydra.run.dir=run")  # no terminal:
    #                                                                                         a line per epoch
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    assert process.returncode == code, err
    last = err.strip().splitlines()[-1]
    assert "Traceback" not in err and last.startswith(
        f"adrop train: interrupted ({signal.Signals(signum).name}); resume with: adrop train "
    )
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
    process = start_and_wait_for(
        "worker processes",
        "stdout",
        "-m",
        "method=logsum",
        "seed=0,1,2,3",
        "hydra/launcher=stacked",
        "hydra.launcher.n_jobs=2",
        "hydra.sweep.dir=sweep",
        "hydra.sweep.subdir=seed_${seed}",
    )
    time.sleep(5)  # two stacks train, the third waits
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert "Traceback" not in err and "hydra.sweep.dir=" in err.strip().splitlines()[-1]
    statuses = [json.loads((tmp_path / "sweep" / f"seed_{s}" / "summary.json").read_text())["status"] for s in range(3)]
    assert statuses == ["interrupted"] * 3
    assert json.loads((foreign / "summary.json").read_text())["status"] == "running"  # not this sweep's to mark


def test_a_truncated_data_file_is_named(config, tmp_path):
    needs_mnist()
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for path in (DATA / "MNIST" / "raw").iterdir():
        if not path.name.endswith(".gz"):
            (raw / path.name).symlink_to(path)
    (raw / "t10k-labels-idx1-ubyte").unlink()
    (raw / "t10k-labels-idx1-ubyte").write_bytes((DATA / "MNIST" / "raw" / "t10k-labels-idx1-ubyte").read_bytes()[:999])
    cfg = config(f"data.root={tmp_path}", "data.download=false", "device=cpu")
    with pytest.raises(
        TrainError,
        match=r"t10k-labels-idx1-ubyte is truncated or corrupt \(999 bytes, its header "
        r"promises 10008\)",
    ):
        one(cfg, tmp_path / "run")


@pytest.mark.slow
def test_exit_1_a_checkpoint_that_cannot_be_written_is_one_line_and_leaves_no_temporary_file(tmp_path):
    """A file-size limit (ulimit -f) below the checkpoint's size: the write fails, its temporary file goes."""

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))  # the CSVs and YAMLs fit, the checkpoint not

    out = subprocess.run(
        [sys.executable, "-m", "adrop", "train", *SMALL, "epochs=2", "model.hidden=[64,64]", "hydra.run.dir=run"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=300,
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert stderr_lines(out)[-1] == (
        f"adrop train: error: cannot write {tmp_path / 'run' / 'checkpoint.pt'}: file too large (the file-size limit)"
    )
    assert not list((tmp_path / "run").glob("*.tmp"))
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "failed"


def test_a_failed_write_keeps_the_file_as_it_was(tmp_path, monkeypatch):
    run_files.write_summary(tmp_path, {"status": "running"})

    def broken(tmp):
        tmp.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(run_files.WriteFailed, match="cannot write .*summary.json: no space left on device$"):
        run_files._atomic(tmp_path / "summary.json", broken)
    assert run_files.read_summary(tmp_path) == {"status": "running"} and not list(tmp_path.glob("*.tmp"))


@pytest.mark.slow
def test_exit_2_seed_train_limit_and_device_are_wrong_commands(adrop, tmp_path):
    """Refused at start, before any folder exists: exit 2, as every wrong command."""
    import torch

    cases = [("seed=-1", "seed must be >= 0"), ("data.train_limit=0", "data.train_limit must be >= 1")]
    if not torch.cuda.is_available():
        cases.append(("device=cuda", "CUDA is not available"))
    for override, message in cases:
        out = adrop("train", *SMALL, override, "hydra.run.dir=run")
        assert out.returncode == 2 and message in out.stderr and len(stderr_lines(out)) == 1, out.stderr
        assert not (tmp_path / "run").exists()


@pytest.mark.slow
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
    from helpers.engines import train

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
    from adrop.commands import export as export_command
    from adrop.commands import penalty as penalty_command
    from adrop.commands import report as report_command

    (run,) = finished_runs(synthetic, tmp_path / "sweep", 1)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert export_command.main([str(run), "--out", str(locked / "net.npz")]) == 2
    assert report_command.main([str(tmp_path / "sweep"), "--out", str(locked / "r")]) == 2
    assert penalty_command.main(["--plot", "--out", str(locked / "p")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.endswith(": permission denied") for line in err), err


def test_an_out_under_a_file_is_one_line(synthetic, tmp_path, capsys):
    """What root meets too: --out inside a path that is a file, not a folder."""
    from adrop.commands import export as export_command
    from adrop.commands import penalty as penalty_command
    from adrop.commands import report as report_command

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


# -- the exit statuses, row by row, in this process where it can be -------------------------------------------------


@pytest.fixture
def train_here(tmp_path, monkeypatch, capsys):
    """`adrop train <args>` in this process (adrop.train.command.app.main) in tmp_path: (exit status, stdout's lines,
    stderr's lines)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # the app hands Hydra its arguments through sys.argv

    def run(*args):
        code = app.main(list(args))
        out, err = capsys.readouterr()
        return code, out.strip().splitlines(), err.strip().splitlines()

    return run


HELD_SWEEP = ("-m", *SMALL, "epochs=1", "hydra.sweep.dir=sweep", "hydra.sweep.subdir=seed_${seed}")


def the_other_command_ends_with(monkeypatch, hold, summary):
    """While the sweep goes on past the job it found held, the other command (here: `hold`, this test's Held on the
    folder) ends that run with `summary` and lets the folder go."""
    told = app.held_elsewhere

    def then_the_other_ends(folder, cfg, message):
        said = told(folder, cfg, message)
        run_files.write_summary(folder, summary)
        hold.close()
        return said

    monkeypatch.setattr(app, "held_elsewhere", then_the_other_ends)


def test_exit_0_a_job_held_by_another_command_that_completed_it_there(train_here, tmp_path, monkeypatch):
    folder = tmp_path / "sweep" / "seed_0"
    the_other_command_ends_with(monkeypatch, run_files.Held(folder), {"status": "completed", "epochs": 1})
    code, out, err = train_here(*HELD_SWEEP, "seed=0")
    assert code == 0 and err == [], err
    assert (
        "adrop train: seed_0: held by another command, which is training it; this sweep counts how it ends there" in out
    )
    assert (
        out[-1] == f"adrop train: 1 jobs done (1 of them by another command that held them); files in "
        f"{tmp_path / 'sweep'}"
    )


LAUNCHERS = [(), ("hydra/launcher=stacked", "hydra.launcher.n_jobs=1")]  # the basic launcher's way, the stacked's


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_exit_0_a_job_another_command_still_trains_is_named(train_here, tmp_path, launcher):
    with run_files.Held(tmp_path / "sweep" / "seed_0"):  # the other command, training all along
        code, out, err = train_here(*HELD_SWEEP, "seed=0,1", *launcher)
    assert code == 0 and err == [], err
    assert "adrop train: seed_0: held by another command (still training)" in out
    assert out[-1] == (
        f"adrop train: 1 jobs done, 1 held by another command (still training: that command reports "
        f"it); files in {tmp_path / 'sweep'}"
    )
    assert json.loads((tmp_path / "sweep" / "seed_1" / "summary.json").read_text())["status"] == "completed"
    assert not (tmp_path / "sweep" / "seed_0" / "summary.json").exists()  # nothing written into the held folder


def test_exit_1_a_job_held_by_another_command_that_failed_it_there(train_here, tmp_path, monkeypatch):
    folder = tmp_path / "sweep" / "seed_0"
    the_other_command_ends_with(
        monkeypatch, run_files.Held(folder), {"status": "failed", "error": "the loss became nan"}
    )
    code, out, err = train_here(*HELD_SWEEP, "seed=0")
    assert code == 1
    assert err == [
        "adrop train: error: seed_0: held by another command, where it ended failed: the loss became nan",
        f"adrop train: error: 1 of 1 jobs failed: see {tmp_path / 'sweep'} (each failed job's summary.json says why)",
    ]


def test_exit_1_an_output_folder_that_cannot_be_made_is_one_plain_line(train_here, tmp_path, monkeypatch):
    """A folder the user may not write into (as root every folder is writable: the refusal is the system's word,
    made here), and a file standing where a folder must be."""
    made = Path.mkdir

    def refused(self, *args, **kwargs):
        if "locked" in self.parts:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return made(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refused)
    code, out, err = train_here(*SMALL, "epochs=1", "hydra.run.dir=locked/run")
    assert code == 1 and err == [f"adrop train: error: cannot write {tmp_path / 'locked' / 'run'}: permission denied"]
    (tmp_path / "a_file").write_text("")
    code, out, err = train_here(*SMALL, "epochs=1", "hydra.run.dir=a_file/run")
    assert code == 1 and err == [
        f"adrop train: error: cannot write {tmp_path / 'a_file' / 'run'}: {tmp_path / 'a_file'} is a file, not a folder"
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_exit_1_a_read_only_output_folder_is_one_plain_line(train_here, tmp_path):
    (tmp_path / "locked").mkdir(mode=0o500)
    code, out, err = train_here(*SMALL, "epochs=1", "hydra.run.dir=locked/run")
    assert code == 1 and err == [f"adrop train: error: cannot write {tmp_path / 'locked' / 'run'}: permission denied"]


@pytest.mark.parametrize(
    "number, reason",
    [
        (errno.EACCES, "permission denied"),
        (errno.ENOSPC, "no space left on device"),
        (errno.EROFS, "read-only file system"),
    ],
)
def test_exit_1_a_write_the_system_refuses_names_the_file_in_plain_words(tmp_path, number, reason):
    def write(tmp):
        tmp.write_text("half")
        raise OSError(number, os.strerror(number), str(tmp))  # as open() raises it: naming the temporary file

    with pytest.raises(run_files.WriteFailed) as failed:
        run_files._atomic(tmp_path / "metrics.csv", write)
    assert str(failed.value) == f"cannot write {tmp_path / 'metrics.csv'}: {reason}"


def test_exit_1_a_checkpoint_past_the_file_size_limit_says_so(tmp_path):
    """torch.save past `ulimit -f` (SIGXFSZ, which Python ignores, then EFBIG): its own error is a C++ line; the
    checkpoint's says what happened."""
    import torch

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, hard))
    try:
        with pytest.raises(run_files.WriteFailed) as failed:
            run_files.save_checkpoint(tmp_path, {"weights": torch.zeros(10_000)})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert str(failed.value) == f"cannot write {tmp_path / 'checkpoint.pt'}: file too large (the file-size limit)"
    assert list(tmp_path.iterdir()) == []


def offline(monkeypatch):
    """No internet: every download torchvision tries fails as it does without a network."""

    def unreachable(*args, **kwargs):
        raise urllib.error.URLError(OSError(-2, "Name or service not known"))

    monkeypatch.setattr(urllib.request, "urlopen", unreachable)


def test_exit_2_mnist_that_cannot_be_downloaded_is_one_line(train_here, tmp_path, monkeypatch):
    offline(monkeypatch)
    empty = tmp_path / "empty"
    empty.mkdir()
    line = (
        f"adrop train: error: MNIST is not in {empty} and cannot be downloaded (no internet?): pass "
        "data.root=<a folder holding MNIST/raw/> or set ADROP_DATA"
    )
    code, out, err = train_here("device=cpu", f"data.root={empty}", "hydra.run.dir=run")
    assert code == 2 and err == [line] and not (tmp_path / "run").exists()
    monkeypatch.setenv("ADROP_DATA", str(empty))  # data.root's default
    code, out, err = train_here("device=cpu", "hydra.run.dir=run")
    assert code == 2 and err == [line]


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_exit_2_a_sweep_offline_says_it_once(train_here, tmp_path, monkeypatch, launcher):
    offline(monkeypatch)
    monkeypatch.setenv("ADROP_DATA", str(tmp_path))
    code, out, err = train_here(
        "-m", "device=cpu", "seed=0,1,2", "hydra.sweep.dir=sweep", "hydra.sweep.subdir=seed_${seed}", *launcher
    )
    assert code == 2, err
    assert err == [
        f"adrop train: error: seed_0: MNIST is not in {tmp_path} and cannot be downloaded (no internet?): "
        "pass data.root=<a folder holding MNIST/raw/> or set ADROP_DATA",
        f"adrop train: error: 3 of 3 jobs refused (their settings, data or folder, as said above; nothing "
        f"trained in them): see {tmp_path / 'sweep'}",
    ]
    statuses = [json.loads((tmp_path / "sweep" / f"seed_{s}" / "summary.json").read_text())["status"] for s in range(3)]
    assert statuses == ["failed"] * 3  # each job's folder says why


def test_exit_2_a_sweep_whose_jobs_were_refused_and_none_failed(train_here, tmp_path):
    code, out, err = train_here("-m", *SMALL, "epochs=1", "lam=0.001,-1", "method=logsum", "hydra.sweep.dir=sweep")
    assert code == 2
    assert err[-1] == (
        f"adrop train: error: 1 of 2 jobs refused (their settings, data or folder, as said above; "
        f"nothing trained in them): see {tmp_path / 'sweep'}"
    )
    assert "lam must be >= 0, got -1.0" in err[0]


def test_exit_2_a_folder_that_holds_another_run_or_is_in_use(train_here, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "summary.json").write_text('{"status": "completed", "identity": {"method": "logsum", "seed": 7}}')
    code, out, err = train_here(*SMALL, "epochs=1", f"hydra.run.dir={other}")
    assert code == 2 and len(err) == 1 and err[0].startswith(f"adrop train: error: {other} holds another run (")
    with run_files.Held(tmp_path / "busy"):
        code, out, err = train_here(*SMALL, "epochs=1", "hydra.run.dir=busy")
    assert code == 2 and err == [
        f"adrop train: error: {tmp_path / 'busy'} is in use: another adrop command is "
        "training this run right now; rerun this one once that has stopped (the run resumes "
        "from its last checkpoint)"
    ]


def test_exit_2_a_flag_hydra_does_not_take_is_one_line(train_here):
    before = os.environ.get("HYDRA_FULL_ERROR")
    code, out, err = train_here("--bogus", *SMALL)
    assert (
        code == 2
        and out == []
        and err == ["adrop train: error: unrecognized arguments: --bogus (adrop train --help lists what it takes)"]
    )
    assert os.environ.get("HYDRA_FULL_ERROR") == before  # the app's own switch does not outlive it


def test_exit_130_ctrl_c_while_a_command_imports_is_one_line(monkeypatch, capsys):
    """A Ctrl-C that lands while torch imports, raised there as a KeyboardInterrupt, and one that a library's cleanup
    turns into another error (OmegaConf's, mid-composition)."""

    def ctrl_c(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.importlib, "import_module", ctrl_c)
    assert cli.main(["train", "method=logsum"]) == 130
    assert capsys.readouterr().err == "adrop train: interrupted (SIGINT); nothing was trained\n"
    assert cli.main(["report", "outputs"]) == 130
    assert capsys.readouterr().err == "adrop report: interrupted (SIGINT)\n"

    def ctrl_c_then_another_error(name):
        try:
            os.kill(os.getpid(), signal.SIGINT)  # adrop.interrupts' handler raises it here
            time.sleep(1)
        except KeyboardInterrupt:
            raise AttributeError("'NoneType' object has no attribute '_invalidate_flags_cache'") from None

    monkeypatch.setattr(cli.importlib, "import_module", ctrl_c_then_another_error)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's, as in a terminal
    try:
        assert cli.main(["train"]) == 130
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # as it was
    finally:
        signal.signal(signal.SIGINT, before)
    assert capsys.readouterr().err == "adrop train: interrupted (SIGINT); nothing was trained\n"
    assert interrupts.STOPS == []


@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_exit_130_and_143_a_stop_while_torch_imports_is_one_line(tmp_path, signum, code):
    """The real thing: the signal at several moments of the first seconds (Python's, adrop's, torch's imports)."""
    for delay in (0.3, 0.8, 1.5):
        process = subprocess.Popen(
            [sys.executable, "-m", "adrop", "train", *SMALL, "hydra.run.dir=run"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=default_sigint,
        )
        time.sleep(delay)
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
        assert process.returncode == code and len(err.strip().splitlines()) == 1, (delay, err)
        assert err.startswith(f"adrop train: interrupted ({signal.Signals(signum).name})"), (delay, err)


@pytest.mark.slow
def test_exit_0_two_identical_sweeps_into_one_folder_share_the_jobs(tmp_path):
    """Two commands at once: each trains the jobs the other does not hold, and both end done. The jobs are long
    enough (epochs=600: about 10 s each with one thread, as the suite's workers run; the second command takes a few
    seconds to start) that the second, started once the first trains seed_0, finds one of them in training; which one
    depends on how long the second takes to start."""
    args = [
        sys.executable,
        "-m",
        "adrop",
        "train",
        "-m",
        *SMALL,
        "epochs=600",
        "seed=0,1",
        "hydra.sweep.dir=sweep",
        "hydra.sweep.subdir=seed_${seed}",
    ]
    first = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (tmp_path / "sweep" / "seed_0" / "summary.json").exists() and time.time() < deadline:
        time.sleep(0.1)  # the first command trains seed_0
    second = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, (err, second.stderr)
    assert "failed" not in err + second.stderr and "refused" not in err + second.stderr
    assert re.search(r"seed_[01]: held by another command, which is training it", second.stdout), second.stdout
    summaries = [json.loads((tmp_path / "sweep" / f"seed_{s}" / "summary.json").read_text()) for s in (0, 1)]
    assert [s["status"] for s in summaries] == ["completed", "completed"]


def test_a_stop_while_torch_imports_waits_for_the_import_and_a_second_does_not():
    def stop_during_the_block(stops):
        reached_the_end = False
        with interrupts.deferred():
            for _ in range(stops):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler runs between bytecodes
            reached_the_end = True
        return reached_the_end

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's, as in a terminal
    try:
        with interrupts.recorded():
            with pytest.raises(KeyboardInterrupt):
                stop_during_the_block(1)
            assert interrupts.STOPS == [signal.SIGINT]  # raised once the block (the import) ended
        with interrupts.recorded():
            ended = []
            with pytest.raises(KeyboardInterrupt):
                ended.append(stop_during_the_block(2))
            assert ended == [] and interrupts.STOPS == [signal.SIGINT] * 2  # the second at once, inside the block
    finally:
        signal.signal(signal.SIGINT, before)
