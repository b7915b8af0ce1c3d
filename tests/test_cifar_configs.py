"""The CIFAR benchmarks as configs (model=vgg_like, resnet20, wrn; experiment=sparse_vd_vgg_cifar10, l0_wrn_cifar10,
resnet20_cifar10): meant for a GPU, checked here for their shapes and for a few training steps on torchvision's
FakeData in CIFAR's shape."""

import numpy as np
import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from adrop.train.config.settings import resolve
from adrop.train.nets import network

from helpers.engines import one

FAKE_CIFAR = (
    "dataset.name=FakeData",
    "+dataset.options={size: 48, image_size: [3, 32, 32], num_classes: 10}",
    "dataset.val_size=16",
    "device=cpu",
    "progress=never",
    "epochs=1",
    "batch_size=16",
)


@pytest.mark.parametrize(
    "model, weights, layers",
    [
        ("vgg_like", 14_977_728, 15),  # 13 convs, 2 fc
        ("resnet20", 270_896, 22),  # 19 convs, 2 projection shortcuts, 1 fc
        ("wrn", 36_461_232, 29),  # 1 + 24 convs, 3 projection shortcuts, 1 fc
    ],
)
def test_a_cifar_network_has_its_published_shape(model, weights, layers, config):
    cfg = resolve(config(f"model={model}", "dataset=cifar10", "device=cpu")).cfg  # checked on a batch of zeros
    method = resolve(config(f"model={model}", "dataset=cifar10")).make_method(1)
    net = network.build(cfg, (3, 32, 32), 10, method)
    assert len(net.layers) == layers and sum(layer.weight.numel() for layer in net.layers) == weights
    assert net.architecture.startswith("adrop.train.nets.cifar.")


@pytest.mark.parametrize(
    "experiment, shrink",
    [
        ("sparse_vd_vgg_cifar10", ["model.width=0.25"]),
        ("l0_wrn_cifar10", ["model.depth=10", "model.widen=1"]),
        ("resnet20_cifar10", ["method=logsum"]),
    ],
)
def test_a_cifar_experiment_trains_a_few_steps_on_fake_data(experiment, shrink, config, tmp_path):
    cfg = config(f"experiment={experiment}", *FAKE_CIFAR, *shrink)
    assert cfg.dataset.augment == "crop_flip" and cfg.epochs == 1
    run = one(cfg, tmp_path)
    assert run.data.image == (3, 32, 32) and run.steps_per_epoch == 2
    summary = run.fit()[0]
    assert summary["status"] == "completed" and summary["epochs"] == 1
    # the files hold the network as trained: weights.npz reloads into a fresh instance with the run's test error
    args = {k: v for k, v in OmegaConf.to_container(run.settings.model).items() if k != "name"}
    net = instantiate(args, classes=10, input_shape=[3, 32, 32])
    with np.load(tmp_path / "weights.npz") as arrays:
        net.load_state_dict({k: torch.from_numpy(arrays[k]) for k in arrays.files})
    with torch.no_grad():
        logits = net.eval()(run.data.test.x.view(-1, 3, 32, 32))
    assert (logits.argmax(1) != run.data.test.y).sum().item() / len(run.data.test) == summary["test_error"]


def test_the_experiments_keep_their_recipes(config):
    vgg = config("experiment=sparse_vd_vgg_cifar10")
    assert (
        vgg.method.name,
        vgg.model.name,
        vgg.dataset.name,
        vgg.batch_size,
        vgg.epochs,
        vgg.lr,
        vgg.decay_start,
        list(vgg.penalty_warmup),
    ) == ("vardrop_lr_ar", "vgg_like", "CIFAR10", 100, 200, 1e-5, 0.5, [5, 20])
    assert vgg.lam == pytest.approx(1 / 45000)
    wrn = config("experiment=l0_wrn_cifar10")
    assert (wrn.method.name, wrn.model.depth, wrn.model.widen, wrn.batch_size) == ("hard_concrete", 28, 10, 128)
    assert wrn.lam == pytest.approx(0.001 / 45000)
