"""Runs made before adrop/train/ was sorted into rooms name their networks by the modules' old paths (in the saved
config's `_target_` and in the identity their checkpoint and summary.json keep): such a run still resumes, is
replayed when finished, and exports."""

import json

import pytest
import torch

from adrop.train.run_folder import run_files

OLD = "adrop.train.tiny_transformers.ViTTiny"
NEW = "adrop.train.nets.tiny_transformers.ViTTiny"


def test_the_old_paths_import_the_modules_themselves():
    import hydra.utils

    import adrop.train.nets.builtin as builtin
    import adrop.train.networks as old

    assert old is builtin and builtin.__spec__.name == "adrop.train.nets.builtin"  # its own spec kept
    assert hydra.utils.get_class(OLD) is hydra.utils.get_class(NEW)
    assert hydra.utils.get_class("adrop.train.cifar_networks.ResNet").__module__ == "adrop.train.nets.cifar"


def as_made_before(folder):
    """The run folder as the code before the rooms wrote it: old module paths in every file that names one."""
    for path in [*folder.rglob("*.yaml"), *folder.glob("*.json")]:
        path.write_text(path.read_text().replace("adrop.train.nets.builtin.", "adrop.train.networks."))
    checkpoint = folder / run_files.CHECKPOINT
    if checkpoint.exists():
        state = torch.load(checkpoint, weights_only=True)
        state["identity"] = json.loads(json.dumps(state["identity"]).replace("nets.builtin.", "networks."))
        torch.save(state, checkpoint)


@pytest.mark.slow
def test_a_run_made_before_the_rooms_resumes_replays_and_exports(adrop, synthetic, tmp_path):
    from helpers.engines import train

    run = tmp_path / "run"
    # a built-in class under a name of the user's: the identity records the `_target_` itself
    args = ["model.name=my_mlp", "model.hidden=[12]", "method=logsum", "lam=1e-3", "epochs=2"]
    cfg = synthetic(*args)
    train(cfg, run, stop_after=1)
    run_files.write_config(run, cfg, {}, [])
    assert "adrop.train.nets.builtin.MLP" in (run / run_files.SUMMARY).read_text()
    as_made_before(run)
    assert "adrop.train.networks.MLP" in (run / run_files.SUMMARY).read_text()

    first_epoch = (run / "metrics.csv").read_text().splitlines()

    command = ["train", "dataset=synthetic", "model=mlp", "device=cpu", "progress=never", *args, f"hydra.run.dir={run}"]
    resumed = adrop(*command)
    assert resumed.returncode == 0, resumed.stderr
    epochs = (run / "metrics.csv").read_text().splitlines()
    assert epochs[: len(first_epoch)] == first_epoch and len(epochs) == len(first_epoch) + 1  # went on from epoch 1
    assert json.loads((run / run_files.SUMMARY).read_text())["status"] == "completed"
    as_made_before(run)
    replayed = adrop(*command)
    assert replayed.returncode == 0, replayed.stderr
    for form, out in (("csr", "weights.npz"), ("compact", "compact.pt")):  # a built-in network, by its old path
        exported = adrop("export", str(run), "--format", form, "--out", str(tmp_path / out))
        assert exported.returncode == 0, exported.stderr
