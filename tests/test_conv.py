"""Convolutional networks: every method on Conv2d layers (one weight, and its eta, sigma^2, gate or mask, per kernel
entry), LeNet-5's shapes, the files a reader needs to recompute the test error, stacks of conv nets, bad fits."""

import json
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from adrop import methods
from adrop.train.config.settings import resolve
from adrop.train.errors import TrainError

from helpers.engines import one, stack, train
from helpers.stacks import assert_follows

SMALL = ("model=conv_small", "epochs=1", "batch_size=64", "data.train_limit=512", "dataset.val_size=500")


@pytest.fixture(scope="module")
def pruned_conv(tmp_path_factory, mnist):
    folder = tmp_path_factory.mktemp("pruned_conv")
    train(mnist("method=magnitude_pruning", "method.params.final_sparsity=0.5", *SMALL), folder)
    return folder


def recompute_test_error(folder, split):
    """What a reader does with weights.npz: plain functional calls, torch layout (conv: out x in x kh x kw)."""
    w = {k: torch.from_numpy(v) for k, v in np.load(folder / "weights.npz").items()}
    x = split.x.view(-1, 1, 28, 28)
    x = F.max_pool2d(F.relu(F.conv2d(x, w["conv1.weight"], w["conv1.bias"])), 2).flatten(1)
    x = F.relu(F.linear(x, w["fc1.weight"], w["fc1.bias"]))
    x = F.linear(x, w["fc2.weight"], w["fc2.bias"])
    return int((x.argmax(1) != split.y).sum()) / len(split)


@pytest.mark.slow
@pytest.mark.parametrize("method", methods.names())
def test_each_method_trains_a_conv_net_and_its_files_agree(method, mnist, pruned_conv, tmp_path):
    extra = {"magnitude_pruning": ["method.params.final_sparsity=0.5"], "fixed_mask": [f"init_from={pruned_conv}"]}.get(
        method, []
    )
    run = one(mnist(f"method={method}", *SMALL, "lr=1e-3", *extra), tmp_path)
    summary = run.fit()[0]
    assert summary["status"] == "completed" and summary["architecture"] == "1x28x28-c4k5-p2-576-16-10"
    assert summary["layers"]["conv1"]["shape"] == [4, 1, 5, 5] and summary["layers"]["conv1"]["total"] == 100
    arrays = np.load(tmp_path / "weights.npz")
    assert list(arrays.keys()) == ["conv1.weight", "conv1.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    for name, layer in summary["layers"].items():
        assert np.count_nonzero(arrays[f"{name}.weight"]) == layer["nonzero"]
    assert recompute_test_error(tmp_path, run.data.test) == pytest.approx(summary["test_error"], abs=1e-9)
    assert "1,conv1,method,4x1x5x5," in (tmp_path / "layers.csv").read_text()


def test_lenet5_has_the_caffe_shapes(config):
    from adrop.train.nets import network

    dense = methods.get("dense")
    net = network.build(config("model=lenet5"), (1, 28, 28), 10, dense(dense.Params(), 1, 1))
    shapes = [tuple(layer.weight.shape) for layer in net.layers]
    assert shapes == [(20, 1, 5, 5), (50, 20, 5, 5), (500, 800), (10, 500)] and net.names == [
        "conv1",
        "conv2",
        "fc1",
        "fc2",
    ]
    assert sum(int(np.prod(s)) for s in shapes) == 430_500  # + 580 biases: LeNet-5-Caffe's 431,080 parameters
    assert net(torch.zeros(1, 3, 784)).shape == (1, 3, 10) and net.positions() == [24 * 24, 8 * 8, 1, 1]


@pytest.mark.parametrize(
    "overrides,message",
    [
        (
            ["model=lenet5", "dataset=synthetic"],
            "model=lenet5 (adrop.train.nets.builtin.ConvNet) could not be made: ValueError: a conv net needs images "
            "(channels, height, width); the data gives flat",
        ),
        (
            ["model=lenet5", "model.conv=[[20,5],[50,12]]"],
            "does not fit 1x28x28 images: a 12x12 convolution meets a 12x12",
        ),
        (
            ["model=mlp", "+model.conv=[[4,5]]"],
            "model=mlp (adrop.train.nets.builtin.MLP) could not be made: TypeError: "
            "MLP.__init__() got an unexpected keyword argument 'conv'",
        ),
    ],
)
def test_a_model_that_does_not_fit_the_data_fails_at_start(config, overrides, message):
    with pytest.raises(TrainError, match=re.escape(message)):
        resolve(config(*overrides))


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dense", "logsum", "vardrop_lr_ar", "hard_concrete", "magnitude_pruning"])
def test_a_stack_of_conv_nets_follows_each_single_run(method, mnist, held_noise, tmp_path):  # noqa: F811
    """Grouped convolutions for a stack: three configurations end where their single runs end (noise held), as far as
    float32 rounding allows (test_stacked.assert_follows)."""
    extra = ["method.params.final_sparsity=0.5", "method.params.frequency=2"] if method == "magnitude_pruning" else []
    cfgs = [
        mnist(f"method={method}", *SMALL, f"seed={i}", f"lr={lr}", *extra) for i, lr in enumerate((1e-3, 2e-3, 5e-4))
    ]
    for i, cfg in enumerate(cfgs):
        train(cfg, tmp_path / f"single{i}")
    summaries = stack(cfgs, [tmp_path / f"stack{i}" for i in range(3)]).fit()
    for i, lr in enumerate((1e-3, 2e-3, 5e-4)):
        a, b = np.load(tmp_path / f"single{i}" / "weights.npz"), np.load(tmp_path / f"stack{i}" / "weights.npz")
        # 8 steps of 64 examples; the longest sum is conv1's gradient, over 64 examples x 24 x 24 positions
        assert_follows(a, b, steps=8, longest_product=64 * 24 * 24, lr_sum=8 * lr)
        assert (
            json.loads((tmp_path / f"stack{i}" / "summary.json").read_text())["architecture"]
            == summaries[i]["architecture"]
            == "1x28x28-c4k5-p2-576-16-10"
        )


@pytest.mark.parametrize("shape", [(16, 20, 24, 24), (16, 50, 8, 8), (3, 4, 5, 7)])
def test_relu_pool_is_max_pool_of_relu_bit_for_bit_gradients_included(shape):
    from adrop.train.nets.builtin import relu_pool

    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(shape, generator=g).round(decimals=1)  # many ties, positive, negative and zero
    x0[:, :, ::3] = 0.0
    grad = torch.randn(shape[0], shape[1], shape[2] // 2, shape[3] // 2, generator=g)
    results = []
    for f in (lambda x: F.max_pool2d(F.relu(x), 2), relu_pool):
        x = x0.clone().requires_grad_()
        y = f(x)
        y.backward(grad)
        assert y.is_contiguous()
        results.append((y.detach(), x.grad))
    assert torch.equal(results[0][0], results[1][0])
    assert torch.equal(results[0][1], results[1][1])
