"""The promises of `adrop train` under misuse (nothing lost, nothing silent), each tried as a user would.

- a folder that holds another run is refused before anything in it is written, Hydra's own files included;
- a refused or failed start of a single run leaves no new folder behind;
- a sweep exits non-zero when any job failed or was refused, with a one-line count, and never rewrites its
  multirun.yaml;
- unknown keys are refused even with `+`, naming the closest valid key; Hydra's errors are one line;
- a model with no hidden layer only by name; summary.json records the architecture;
- a folder another command is training in is refused (a sweep's job: held by that command, not trained), and
  nothing in it is written.
The command line runs in subprocesses (marked slow); the rules behind it are also tested in-process (fast).
"""

import json

import pytest
import torch

from adrop.train.config import refusals, schema
from adrop.train.config.settings import resolve
from adrop.train.errors import TrainError
from adrop.train.run_folder import run_files

from helpers.engines import train

SMALL = ("dataset=synthetic", "model=mlp", "epochs=1", "device=cpu", "progress=never")


def files(folder):
    """Every file under folder with its bytes: what must not change."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def last_line(process):
    lines = process.stderr.strip().splitlines()
    assert lines, process.stdout
    return lines[-1]


# -- the rules, in-process ------------------------------------------------------------------------------------------


def test_claim_says_new_resume_completed_or_refuses(synthetic, tmp_path):
    cfg = synthetic("epochs=2")
    assert run_files.claim(tmp_path / "missing", resolve(cfg).identity) == "new"
    train(cfg, tmp_path / "a", stop_after=1)
    assert run_files.claim(tmp_path / "a", resolve(cfg).identity) == "resume"
    train(cfg, tmp_path / "a")
    assert run_files.claim(tmp_path / "a", resolve(cfg).identity) == "completed"
    for other in (
        "seed=1",
        "lam=0.5",
        "method=logsum",
        "model.hidden=[32]",
        "epochs=3",
        "schedule=constant",
        "schedule=linear_per_epoch",
    ):
        with pytest.raises(run_files.FolderTaken, match="holds another run"):
            run_files.claim(tmp_path / "a", resolve(synthetic("epochs=2", other)).identity)


def test_a_run_killed_before_its_first_checkpoint_is_its_own_to_retry(synthetic, tmp_path):
    """What a start leaves before the first epoch ends (.hydra/ and a pending summary.json): the same command retries
    in that folder (a sweep's rerun resumes every job, started or not); another run is refused."""
    cfg = synthetic("epochs=2")
    run_files.begin(tmp_path / "a", cfg, {}, [], cfg.method.name, resolve(cfg).identity)
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [".hydra", "summary.json"]
    assert run_files.claim(tmp_path / "a", resolve(cfg).identity) == "retry"
    with pytest.raises(run_files.FolderTaken, match="holds another run"):
        run_files.claim(tmp_path / "a", resolve(synthetic("epochs=2", "seed=1")).identity)
    assert train(cfg, tmp_path / "a")["status"] == "completed"


def test_a_truncated_or_foreign_checkpoint_is_named_with_what_to_do(synthetic, tmp_path):
    cfg = synthetic()
    train(cfg, tmp_path / "a")
    data = (tmp_path / "a" / "checkpoint.pt").read_bytes()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "checkpoint.pt").write_bytes(data[:1000])
    with pytest.raises(run_files.FolderTaken, match="cannot be read: it is truncated or not an adrop checkpoint"):
        run_files.claim(tmp_path / "b", resolve(cfg).identity)
    (tmp_path / "c").mkdir()
    torch.save({"weights": torch.zeros(2)}, tmp_path / "c" / "checkpoint.pt")
    with pytest.raises(run_files.FolderTaken, match="not an adrop checkpoint.*move that folder aside"):
        run_files.claim(tmp_path / "c", resolve(cfg).identity)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("mine")
    with pytest.raises(run_files.FolderTaken, match="holds no adrop run"):
        run_files.claim(tmp_path / "d", resolve(cfg).identity)


def test_unknown_keys_are_refused_even_when_added_with_plus(config):
    cfg = config("+epoch=3", "+data.rot=1", "+dataset.colour=red")
    assert sorted(schema.unknown_keys(cfg)) == [("data.rot", "data.root"), ("epoch", "epochs")]
    # a data set's keys are its class's (adrop.train.data.schemas), checked as the run's settings are resolved
    with pytest.raises(TrainError, match=r"^unknown key dataset.colour for dataset=mnist; its keys: name, "):
        resolve(config("+dataset.colour=red"))
    with pytest.raises(TrainError, match=r"dataset.split_sed .*\(did you mean dataset.split_seed\?\)"):
        resolve(config("+dataset.split_sed=1"))
    with pytest.raises(TrainError, match=r"unknown key dataset.features for dataset=mnist"):  # synthetic's
        resolve(config("+dataset.features=3"))
    with pytest.raises(TrainError, match=r"unknown key epoch \(did you mean epochs\?\)"):
        resolve(config("method=logsum", "+epoch=3"))
    assert schema.unknown_keys(config("method=logsum", "lam=0.1")) == []


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["model.hidden=[]"], "model=lenet_300_100 with model.hidden=[] has no hidden layer; ask for model=linear"),
        (["model=mlp", "model.hidden=[]"], "model=mlp with model.hidden=[] has no hidden layer"),
        (["model.hidden=[50]"], "model=lenet_300_100 has hidden widths [300, 100], got [50]"),
        (["model=linear", "model.hidden=[5]"], "model=linear has no hidden layer"),
    ],
)
def test_a_model_without_hidden_layers_only_by_name(config, overrides, message):
    with pytest.raises(TrainError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        resolve(config(*overrides))


def test_linear_model_and_the_architecture_in_the_summary(synthetic, tmp_path):
    summary = train(synthetic("model=linear"), tmp_path / "linear")
    assert (summary["model"], summary["architecture"]) == ("linear", "20-4")
    summary = train(synthetic("model.hidden=[16,8]"), tmp_path / "mlp")
    assert (summary["model"], summary["architecture"]) == ("mlp", "20-16-8-4")
    assert json.loads((tmp_path / "mlp" / "summary.json").read_text())["identity"]["model"] == "mlp[16, 8]"


@pytest.mark.parametrize(
    "overrides,message",
    [
        (
            ["method=lasso"],
            "unknown method 'lasso'; valid method options: adaprox, adaptive_dropout, adatikhonov, dense,",
        ),
        (["epoch=3"], "unknown key epoch (did you mean epochs?)"),
        (["data.rot=x"], "unknown key data.rot (did you mean data.root?)"),
        (
            ["method=logsum", "method.params.penalty_params.eps=3"],
            "method.params.penalty_params.eps is not set by default (the penalty's own defaults apply): add it with "
            "+method.params.penalty_params.eps=<value>",
        ),
        (["epochs=abc"], "Error merging override epochs=abc: Value 'abc' of type 'str' could not be converted"),
        (["hydra/launcher=joblb"], "unknown hydra/launcher 'joblb'; valid hydra/launcher options:"),
    ],
)
def test_hydra_errors_become_one_line(config, overrides, message):
    with pytest.raises(Exception) as caught:
        config(*overrides)
    line = refusals.one_line(caught.value)
    assert message in line and "\n" not in line
    if overrides[0].startswith("hydra/launcher"):  # and what to install
        assert line.endswith("come with pip install -e '.[launchers]')")


def test_a_held_folder_cannot_be_held_again_until_released(tmp_path):
    folder = tmp_path / "new" / "run"
    with run_files.Held(folder):
        assert folder.is_dir() and not any(folder.iterdir())  # made, and no lock file in it
        with pytest.raises(run_files.FolderTaken, match="is in use: another adrop command is training this run"):
            run_files.Held(folder)
    run_files.Held(folder).close()  # released


# -- the command line -----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_folder_with_another_run_is_never_touched(adrop, tmp_path):
    """Case 1: a different command into a completed run's folder and into a killed run's folder; the same command."""
    import shutil

    done = tmp_path / "done"
    assert adrop("train", *SMALL, "method=hard_concrete", f"hydra.run.dir={done}").returncode == 0
    killed = tmp_path / "killed"  # that run's files, as if killed after its checkpoint: a run the other is not
    shutil.copytree(done, killed)
    summary = json.loads((killed / "summary.json").read_text())
    (killed / "summary.json").write_text(json.dumps({**summary, "status": "running", "epochs": 1}))  # as if killed
    before = {folder: files(folder) for folder in (done, killed)}
    assert {".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml"} <= set(before[done])
    for folder in (done, killed):
        other = adrop("train", *SMALL, "method=vardrop_lr_ar", "lam=0.5", f"hydra.run.dir={folder}")
        assert other.returncode == 2 and "Traceback" not in other.stderr
        assert last_line(other).startswith(f"adrop train: error: {folder} holds another run (method=")
        assert "choose another folder" in last_line(other) and len(other.stderr.strip().splitlines()) == 1
        assert files(folder) == before[folder]
    same = adrop("train", *SMALL, "method=hard_concrete", f"hydra.run.dir={done}")
    assert same.returncode == 0 and "already holds this run, completed; nothing to do" in same.stdout
    assert files(done) == before[done]


@pytest.mark.slow
def test_a_folder_in_use_by_another_command_is_refused(adrop, tmp_path):
    """A run half trained, its folder held as a running command holds it: the same command (which would resume it)
    is refused in one line as a single run; a sweep's job is held by that command, named, and not trained; nothing
    in the folder changes."""
    folder = tmp_path / "sweep" / "seed_0"
    assert adrop("train", *SMALL, "epochs=3", f"hydra.run.dir={folder}").returncode == 0
    summary = json.loads((folder / "summary.json").read_text())
    (folder / "summary.json").write_text(json.dumps({**summary, "status": "running"}))
    before = files(folder)
    with run_files.Held(folder):
        single = adrop("train", *SMALL, "epochs=3", f"hydra.run.dir={folder}")
        sweep = adrop(
            "train",
            "-m",
            *SMALL,
            "epochs=3",
            "seed=0,1",
            "hydra/launcher=stacked",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
            "hydra.sweep.subdir=seed_${seed}",
        )
    assert single.returncode == 2 and single.stderr.strip().splitlines() == [
        f"adrop train: error: {folder} is in use: another adrop command is training this run right now; rerun this "
        "one once that has stopped (the run resumes from its last checkpoint)"
    ]
    assert sweep.returncode == 0 and "seed_0: held by another command (still training)" in sweep.stdout
    assert sweep.stdout.strip().splitlines()[-1].startswith("adrop train: 1 jobs done, 1 held by another command")
    assert json.loads((tmp_path / "sweep" / "seed_1" / "summary.json").read_text())["status"] == "completed"
    assert files(folder) == before


@pytest.mark.slow
def test_a_truncated_checkpoint_is_one_line_and_left_alone(adrop, tmp_path):
    folder = tmp_path / "run"
    assert adrop("train", *SMALL, f"hydra.run.dir={folder}").returncode == 0
    (folder / "checkpoint.pt").write_bytes((folder / "checkpoint.pt").read_bytes()[:2000])
    before = files(folder)
    again = adrop("train", *SMALL, f"hydra.run.dir={folder}")
    assert again.returncode == 2 and "Traceback" not in again.stderr and len(again.stderr.strip().splitlines()) == 1
    assert "checkpoint.pt cannot be read: it is truncated or not an adrop checkpoint" in last_line(again)
    assert "move that folder aside" in last_line(again) and files(folder) == before


@pytest.mark.slow
def test_refused_or_failed_starts_leave_no_folder(adrop, tmp_path):
    """Cases 3, 4 and 6: a `+` typo, Hydra's errors, bad values, missing data: one line, no folder, no traceback."""
    cases = [
        (["method=logsum", "+epoch=3"], 2, "adrop train: error: unknown key epoch (did you mean epochs?)"),
        (["epoch=3"], 2, "adrop train: error: unknown key epoch (did you mean epochs?)"),
        (["method=lasso"], 2, "adrop train: error: unknown method 'lasso'; valid method options: adaprox"),
        (["lam=-1"], 2, "adrop train: error: lam must be >= 0, got -1.0"),
        (["model.hidden=[]"], 2, "adrop train: error: model=lenet_300_100 with model.hidden=[] has no hidden"),
        (["data.root=nowhere", "data.download=false"], 2, "adrop train: error: 4 data file(s) missing in "),
    ]
    for overrides, code, message in cases:
        out = adrop("train", "device=cpu", *overrides)
        assert out.returncode == code, (overrides, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and last_line(out).startswith(message), out.stderr
        assert not (tmp_path / "outputs").exists(), overrides
    full = adrop("train", "method=lasso", env={"HYDRA_FULL_ERROR": "1"})  # the documented way to a traceback
    assert full.returncode != 0 and "Traceback" in full.stderr


@pytest.mark.slow
def test_a_sweep_with_failed_jobs_exits_non_zero_and_keeps_its_record(adrop, tmp_path):
    """Case 2: every job runs, the failed ones say why in their folders, the exit status and one line count them;
    a second command into the sweep folder leaves the first one's multirun.yaml as it was."""
    out = adrop("train", "-m", *SMALL, "method=dense,logsum", "lam=0.001,-1", "hydra.sweep.dir=sweep")
    assert out.returncode == 2  # refused values, no failed run
    assert last_line(out) == (
        f"adrop train: error: 2 of 4 jobs refused (their settings, data or folder, as said "
        f"above; nothing trained in them): see {tmp_path / 'sweep'}"
    )
    summaries = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("*/summary.json")]
    assert sorted(s["status"] for s in summaries) == ["completed", "completed", "failed", "failed"]
    record = (tmp_path / "sweep" / "multirun.yaml").read_bytes()
    again = adrop("train", "-m", *SMALL, "method=dense,logsum", "lam=0.001", "hydra.sweep.dir=sweep")
    assert again.returncode == 0 and again.stdout.count("nothing to do") == 2
    assert (tmp_path / "sweep" / "multirun.yaml").read_bytes() == record
    assert (tmp_path / "sweep" / "multirun.2.yaml").exists()


def test_each_method_config_names_its_own_file_and_writes_no_default_twice(config):
    """conf/method/<name>.yaml runs method <name> (a mismatch would silently run another) and holds lam and lr only:
    the parameters' defaults are the method's Params dataclass, which the composed config carries."""
    import dataclasses
    from pathlib import Path

    import yaml

    from adrop import methods

    files = sorted((Path(__file__).resolve().parents[1] / "conf" / "method").glob("*.yaml"))
    assert {f.stem for f in files} == set(methods.names())
    for path in files:
        content = yaml.safe_load(path.read_text())
        assert content["name"] == path.stem and set(content) == {"name", "lam", "lr"}, path
        params = config(f"method={path.stem}").method.params
        cls = methods.get(path.stem).Params
        assert {f.name: getattr(cls(), f.name) for f in dataclasses.fields(cls)} == dict(params)
    with pytest.raises(TrainError, match="conf/method/logsum.yaml says name: dense"):
        resolve(config("method=dense"), "logsum")


def test_method_parameters_are_typed_and_closed(config):
    assert config("method=magnitude_pruning", "method.params.final_sparsity=0.5").method.params.final_sparsity == 0.5
    with pytest.raises(Exception) as caught:
        config("method=magnitude_pruning", "method.params.final_sparsty=0.5")
    assert refusals.one_line(caught.value) == (
        "unknown key method.params.final_sparsty (did you mean "
        "method.params.final_sparsity?); `adrop train --help` lists the keys "
        "and groups"
    )
    with pytest.raises(TrainError, match="method.params for logsum: Key 'epsilon' not in 'PenaltyParams'"):
        resolve(config("method=logsum", "+method.params.epsilon=1"))  # `+` passes Hydra, not the start


def test_help_lists_the_groups_a_user_chooses_from(adrop):
    """`adrop train --help` lists every config group of conf/ with its options, and not method_params (the chosen
    method fills it in); piped into a reader that stops early, it ends quietly."""
    out = adrop("train", "--help")
    assert out.returncode == 0 and out.stderr == ""
    groups = dict(
        line.split(": ", 1)
        for line in out.stdout.split("== Configuration groups ==")[1].split("== Config ==")[0].splitlines()
        if ": " in line
    )
    assert set(groups) == {"dataset", "experiment", "grid", "method", "model"}
    assert "logsum" in groups["method"].split(", ") and "lenet5" in groups["model"].split(", ")
    import subprocess
    import sys

    piped = subprocess.run(
        f"{sys.executable} -m adrop train --help | head -1", shell=True, capture_output=True, text=True, timeout=120
    )
    assert piped.stdout.startswith("adrop train:") and piped.stderr == ""
