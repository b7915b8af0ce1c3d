"""Each data set is a class named by `_target_` (adrop.train.data.sources): adrop's own in conf/dataset/, a user's
Source subclass with a YAML of its own, and a config without `_target_` (a run made before) read by its name."""

import io
import logging
import sys
from importlib import resources

import pytest
from omegaconf import OmegaConf

from adrop.train import errors
from adrop.train.command import app
from adrop.train.data import schemas, sources


@pytest.mark.parametrize(
    "name", sorted(p.name[:-5] for p in (resources.files("adrop.conf") / "dataset").iterdir() if p.suffix == ".yaml")
)
def test_every_dataset_config_names_its_class(config, name):
    cfg = config(f"dataset={name}").dataset
    if name == "custom":  # a user's class, given on the command line
        assert cfg.get("_target_") is None
        return
    source = sources.source(cfg)
    assert isinstance(source, sources.Source) and not isinstance(source, sources.Custom)
    assert f"{type(source).__module__}.{type(source).__name__}" == cfg._target_
    assert OmegaConf.get_type(cfg) is type(source).Config  # the file starts from its class's schema


def test_a_users_class_has_the_keys_of_its_own_schema():
    rings = {"_target_": "user_sources.Rings", "name": "rings"}  # a user's YAML, without a defaults list
    checked = sources.checked(OmegaConf.create(rings))
    assert (checked.features, checked.split_seed, checked.val_size) == (5, 42, 0.1)
    with pytest.raises(sources.DataError, match=r"dataset.featurs for dataset=rings \(did you mean dataset.features"):
        sources.checked(OmegaConf.create({**rings, "featurs": 3}))
    with pytest.raises(sources.DataError, match="^dataset.features of dataset=rings: Value 'many'"):
        sources.checked(OmegaConf.create({**rings, "features": "many"}))
    blobs = sources.checked(OmegaConf.create({"_target_": "user_sources.Blobs", "name": "b", "options": {"n": 1}}))
    assert blobs.options == {"n": 1} and OmegaConf.get_type(blobs) is schemas.OptionsConfig


def test_a_config_without_its_class_is_read_by_its_name(config):
    cfg = config("dataset=digits").dataset.copy()
    cfg._target_ = None  # the schema's default: what a config saved before holds
    assert type(sources.source(cfg)) is sources.Digits


def test_a_users_source_and_its_yaml_train(tmp_path, monkeypatch, capsys):
    """A new data set: one class (tests/user_sources.py) and one YAML (here written into a config dir of the
    user's), nothing else."""
    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    (tmp_path / "conf" / "dataset" / "blobs.yaml").write_text(
        "_target_: user_sources.Blobs\nname: blobs\nval_size: 0.2\nsplit_seed: 42\noptions: {features: 5}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    args = ["--config-dir", str(tmp_path / "conf"), "dataset=blobs", "model=mlp", "device=cpu", "progress=never"]
    assert app.main([*args, "epochs=20", "lr=0.01", "hydra.run.dir=run"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert float(out.split("test error ")[1].split(",")[0]) < 0.1, out  # two blobs 3 standard deviations apart


def test_a_users_source_is_in_the_runs_identity_and_a_built_ins_is_not(config):
    from adrop.train.config.settings import resolve

    assert "dataset_target" not in resolve(config("dataset=digits", "model=mlp")).identity
    user = config("dataset=custom", "+dataset._target_=user_sources.Blobs", "+dataset.options.features=5", "model=mlp")
    assert resolve(user).identity["dataset_target"] == "user_sources.Blobs"


def test_a_name_that_is_not_the_built_in_classs_is_refused(config):
    with pytest.raises(sources.DataError, match="choose the data set with dataset=<name>"):
        sources.source(config("dataset=mnist", "dataset.name=fashion_mnist").dataset)
    with pytest.raises(sources.DataError):
        sources.source(config("dataset=mnist", "+dataset.source=torchvision", "dataset.name=KMNIST").dataset)


def test_a_refused_start_removes_its_own_folder_and_not_another_commands_beside_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    other = tmp_path / "outputs" / "runs" / "other" / "checkpoint.pt"
    args = ["dataset=custom", "dataset._target_=user_sources.Intruder", f"+dataset.options.other={other}"]
    assert app.main([*args, "model=mlp", "device=cpu", "hydra.run.dir=outputs/runs/mine"]) != 0
    assert other.exists() and not (tmp_path / "outputs" / "runs" / "mine").exists()
    assert "no data here" in capsys.readouterr().err


@pytest.mark.parametrize("target, said", [("Unfinished", "could not be made: TypeError"), ("Shapeless", "KeyError")])
def test_a_users_class_that_fails_is_refused_in_one_line(tmp_path, monkeypatch, capsys, target, said):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    args = ["dataset=custom", f"dataset._target_=user_sources.{target}", "+dataset.options.features=5", "model=mlp"]
    assert app.main([*args, "device=cpu", "hydra.run.dir=outputs/runs/mine"]) == errors.REFUSED
    out = capsys.readouterr()
    assert said in out.err and f"user_sources.{target}" in out.err
    assert "Traceback" not in out.out + out.err and len(out.err.strip().splitlines()) == 1, out.err
    assert not (tmp_path / "outputs").exists()


def test_an_error_while_the_run_starts_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    args = ["dataset=custom", "dataset._target_=user_sources.Unreadable", "+dataset.options.features=5", "model=mlp"]
    assert app.main([*args, "device=cpu", "hydra.run.dir=run"]) == errors.FAILED
    out = capsys.readouterr()
    assert out.err.strip() == "adrop train: error: RuntimeError: disk gone" and "Traceback" not in out.out, out.out
    assert not (tmp_path / "run").exists()  # it never began


def test_a_bugs_traceback_goes_to_the_log_file_not_the_console(tmp_path):
    shown = io.StringIO()
    console, file = logging.StreamHandler(shown), logging.FileHandler(tmp_path / "job.log")
    console.setLevel(logging.WARNING)  # as conf/config.yaml sets Hydra's job logging
    root = logging.getLogger()
    level = root.level
    root.addHandler(console), root.addHandler(file), root.setLevel(logging.INFO)
    try:
        try:
            raise RuntimeError("adrop's own")
        except RuntimeError as err:
            assert errors.bug(err) == "RuntimeError: adrop's own"
    finally:
        root.removeHandler(console), root.removeHandler(file), root.setLevel(level)
        file.close()
    assert shown.getvalue() == "" and "Traceback" in (tmp_path / "job.log").read_text()


def test_a_refused_start_keeps_a_folder_that_another_command_filled_after_the_start_checks(tmp_path, monkeypatch):
    from adrop.train.run_folder import run_files

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))

    def filled_meanwhile(folder, identity):  # another command's failed start of this run, found by the claim
        (folder / "summary.json").write_text('{"status": "failed"}')
        return "retry"

    monkeypatch.setattr(run_files, "claim", filled_meanwhile)
    args = ["dataset=custom", "dataset._target_=user_sources.Unreadable", "+dataset.options.features=5", "model=mlp"]
    assert app.main([*args, "device=cpu", "hydra.run.dir=run"]) == errors.FAILED
    assert (tmp_path / "run" / "summary.json").exists()


def test_dataset_custom_takes_a_class_with_keys_of_its_own(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    args = ["dataset=custom", "dataset._target_=user_sources.Rings", "+dataset.features=4", "model=mlp"]
    assert app.main([*args, "device=cpu", "epochs=2", "progress=never", "hydra.run.dir=run"]) == 0, capsys.readouterr()
    recorded = OmegaConf.load(tmp_path / "run" / ".hydra" / "config.yaml").dataset
    assert recorded.features == 4 and "options" not in recorded


def test_a_data_sets_unset_key_and_a_class_that_does_not_import_are_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert app.main(["dataset=npz", "model=mlp", "device=cpu"]) == errors.REFUSED
    out = capsys.readouterr()
    assert "dataset=npz needs dataset.path=" in out.err and "Traceback" not in out.out + out.err, out.out
    with pytest.raises(sources.DataError, match=r"dataset._target_=user_sources.Ringz does not import"):
        sources.checked(OmegaConf.create({"_target_": "user_sources.Ringz", "name": "rings", "features": 3}))


def test_a_bug_in_the_start_checks_is_one_line_without_a_traceback(tmp_path, monkeypatch, capsys):
    from adrop.train.command import start_checks

    def broken(*args, **kwargs):
        raise RuntimeError("adrop's own\nsecond line")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(start_checks, "resolve", broken)
    assert app.main(["dataset=synthetic", "model=mlp", "device=cpu", "hydra.run.dir=run"]) == errors.REFUSED
    out = capsys.readouterr()
    assert out.err.strip() == "adrop train: error: RuntimeError: adrop's own second line", out.err
    assert "Traceback" not in out.out and not (tmp_path / "run").exists()
