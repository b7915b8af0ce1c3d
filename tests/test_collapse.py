"""No layer collapse: a run whose final network no longer depends on its input fails in one line (the floor of
magnitude pruning's rankings, min_kept, is tests/test_min_kept.py's)."""

import json

import pytest
import torch

from adrop.methods import get
from adrop.train.loop import collapse
from adrop.train.nets import network as network_mod

import user_nets
from helpers.engines import stack, train

SMALL = ("dataset=synthetic", "model=mlp", "device=cpu")


def tiny_resnet():
    dense = get("dense")
    network = network_mod.Network(user_nets.TinyResNet(classes=4, width=4), dense(dense.Params(), 1, 1), (1, 8, 8), 4)
    network.train(False)
    return network, {key: t.detach().clone() for key, t in network.net.state_dict().items()}


def test_collapse_is_an_output_that_does_not_depend_on_the_input():
    network, state = tiny_resnet()
    x = torch.randn(16, 1, 8, 8, generator=torch.Generator().manual_seed(5))
    assert collapse.collapsed(network, state, x, "dense") is None
    state["blocks.0.conv2.weight"].zero_()  # an empty block: its skip connection still carries the input
    assert collapse.collapsed(network, state, x, "dense") is None
    state["head.weight"].zero_()  # the output layer: every path crosses it
    assert collapse.collapsed(network, state, x, "logsum") == (
        "the network collapsed: layers blocks.0.conv2, head keep no weight (no path from input to output); lower lam"
    )


def test_a_network_whose_units_all_stay_off_collapsed_with_no_layer_empty():
    from adrop.train.nets.builtin import MLP

    dense = get("dense")
    network = network_mod.Network(MLP([8], [5], 3), dense(dense.Params(), 1, 1), (5,), 3)
    network.train(False)
    state = {key: t.detach().clone() for key, t in network.net.state_dict().items()}
    x = torch.randn(32, 5, generator=torch.Generator().manual_seed(6))
    assert collapse.collapsed(network, state, x, "logsum") is None
    state["fc1.bias"].fill_(-1e3)  # every hidden unit below zero for these inputs: the ReLUs pass nothing on
    assert collapse.collapsed(network, state, x, "logsum") == (
        "the network collapsed: its output does not depend on its input; lower lam"
    )


NEURON_LAYER = (
    "method=magnitude_pruning",
    "structure=neuron",
    "method.params.scope=layer",
    "method.params.final_sparsity=0.98",
    "method.params.frequency=5",
    "epochs=2",
)


def test_a_run_whose_network_collapsed_fails_in_one_line(synthetic, tmp_path):
    """fc1's 20 input units round away at 98% per layer; without the floor nothing reaches the output."""
    summary = train(synthetic(*NEURON_LAYER, "method.params.min_kept=0"), tmp_path / "off")
    assert summary["status"] == "failed"
    assert summary["error"] == (
        "the network collapsed: layer fc1 keeps no weight (no path from input to output); "
        "lower method.params.final_sparsity (or raise method.params.min_kept)"
    )
    assert json.loads((tmp_path / "off" / "summary.json").read_text())["status"] == "failed"
    assert not (tmp_path / "off" / "weights.npz").exists()
    kept = train(synthetic(*NEURON_LAYER), tmp_path / "floor")  # the default floor: one input unit of fc1 stays
    assert kept["status"] == "completed"
    assert kept["layers"]["fc1"]["nonzero"] == 64  # one column of 64 weights


def test_in_a_stack_only_the_collapsed_configuration_fails(synthetic, tmp_path):
    """logsum at an enormous lam keeps no weight at all (alpha < 0.05 everywhere); at its default lam it trains."""
    cfgs = [synthetic("method=logsum", f"lam={lam}", "epochs=1") for lam in (1e9, 1e-3)]
    huge, fine = stack(cfgs, [tmp_path / "huge", tmp_path / "fine"]).fit()
    assert huge["status"] == "failed" and huge["error"] == (
        "the network collapsed: layers fc1, fc2 keep no weight (no path from input to output); lower lam"
    )
    assert fine["status"] == "completed"


@pytest.mark.slow
def test_a_collapsed_run_exits_1_with_one_line(adrop, tmp_path):
    out = adrop("train", *SMALL, *NEURON_LAYER, "method.params.min_kept=0", "hydra.run.dir=run")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1] == (
        "adrop train: error: the network collapsed: layer fc1 keeps no weight (no path from input to output); "
        "lower method.params.final_sparsity (or raise method.params.min_kept)"
    )
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "failed"
