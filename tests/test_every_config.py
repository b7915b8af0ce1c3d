"""Every option of every config group under conf/ composes with the rest and passes `adrop train`'s checks
(adrop.train.config.settings.resolve: keys, types, the method's parameters, the network built on a batch of zeros), so
that no config file can rot unseen; Hydra's own groups (hydra/launcher, hydra/sweeper) are composed by the tests of
the sweepers and launchers."""

from importlib import resources

import numpy as np
import pytest

from adrop.train.config.settings import resolve

ROOT = resources.files("adrop.conf")
GROUPS = ("method", "model", "dataset", "experiment")
OPTIONS = [
    (group, f.name[:-5])
    for group in GROUPS
    for f in sorted((ROOT / group).iterdir(), key=lambda p: p.name)
    if f.name.endswith(".yaml")
]
NEEDS = {  # what an option cannot do without, given the way a user gives it
    ("model", "custom"): ["model._target_=user_nets.TinyResNet", "dataset=digits"],
    ("model", "vgg_like"): ["dataset=cifar10"],
    ("dataset", "npz"): ["dataset.path=data.npz"],
    ("dataset", "torchvision"): ["dataset.name=FakeData"],
    ("dataset", "custom"): ["dataset._target_=user_nets.Blobs"],
    ("dataset", "diabetes"): ["task=regression", "model=mlp"],
    ("dataset", "text"): ["task=language_model", "model=gpt_tiny", "dataset.path=corpus.txt"],
    ("model", "gpt_tiny"): ["task=language_model", "dataset=text", "dataset.path=corpus.txt"],
    ("experiment", "gpt_tiny_text"): ["dataset.path=corpus.txt"],
}
LARGE = {"wrn", "l0_wrn_cifar10", "vgg_like", "sparse_vd_vgg_cifar10"}  # millions of weights: built on zeros, slowly


@pytest.mark.parametrize(
    "group, option", [pytest.param(*o, marks=pytest.mark.slow) if o[1] in LARGE else o for o in OPTIONS]
)
def test_every_option_composes_and_resolves(group, option, config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "data.npz",
        x_train=rng.random((40, 6), dtype=np.float32),
        y_train=np.arange(40) % 3,
        x_test=rng.random((10, 6), dtype=np.float32),
        y_test=np.arange(10) % 3,
    )
    (tmp_path / "corpus.txt").write_text("a short text of a few words, repeated. " * 200)
    cfg = config(f"{group}={option}", "device=cpu", *NEEDS.get((group, option), []))
    settings = resolve(cfg, cfg.method.name)
    assert settings.cfg.epochs >= 1 and settings.lam >= 0


def test_every_group_has_options():
    assert {group for group, _ in OPTIONS} == set(GROUPS) and len(OPTIONS) >= 40
