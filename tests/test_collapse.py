"""No layer collapse: magnitude pruning's rankings across a layer's weights or groups keep at least min_kept of
each layer (its largest), and a run whose final network no longer depends on its input fails in one line."""
import json

import pytest
import torch

from adrop.methods import get
from adrop.methods.base import SparseLinear
from adrop.methods.magnitude_pruning import MagnitudePruning, PruningParams
from adrop.train import collapse
from adrop.train import network as network_mod

import user_nets
from engines import stack, train

SMALL = ("dataset=synthetic", "model=mlp", "device=cpu")


def pruned_masks(structure, scope, sparsity, weights, min_kept=1):
    """The masks magnitude pruning makes for Linear layers holding these weights (out x in each; a leading axis of
    K configurations when 3-d)."""
    method = MagnitudePruning(PruningParams(scope=scope, min_kept=min_kept), 1, 1, structure)
    configs = weights[0].shape[0] if weights[0].dim() == 3 else None
    layers = [SparseLinear(w.shape[-1], w.shape[-2], method, configs, bias=False) for w in weights]
    with torch.no_grad():
        for layer, w in zip(layers, weights):
            layer.weight.copy_(w)
    method.update_masks(layers, sparsity)
    return [layer.mask.clone() for layer in layers]


def small_and_large(generator, small_shape, large_shape):
    """Two layers' weights, the first far smaller than the second: one global ranking ranks all of it below."""
    return [1e-3 * torch.randn(small_shape, generator=generator), torch.randn(large_shape, generator=generator)]


def test_global_weight_ranking_keeps_the_largest_weight_of_a_layer_it_would_empty():
    weights = small_and_large(torch.Generator().manual_seed(0), (8, 6), (10, 40))  # 48 of 448 weights
    before = pruned_masks("weight", "global", 0.5, weights, min_kept=0)
    assert not before[0].any()  # without the floor the small layer empties
    after = pruned_masks("weight", "global", 0.5, weights)
    assert after[0].sum() == 1 and after[0].flatten()[weights[0].abs().argmax()]
    assert torch.equal(after[1], before[1])
    three = pruned_masks("weight", "global", 0.5, weights, min_kept=3)[0].flatten()
    assert torch.equal(three.nonzero().flatten().sort().values,
                       weights[0].abs().flatten().topk(3).indices.sort().values)


def test_layer_weight_ranking_keeps_the_largest_weight_of_a_layer_it_would_round_away():
    weights = [torch.randn(4, 5, generator=torch.Generator().manual_seed(1)), torch.randn(10, 100)]
    before = pruned_masks("weight", "layer", 0.98, weights, min_kept=0)  # round(0.98 * 20) = 20: all of it
    assert not before[0].any() and before[1].sum() == 20
    after = pruned_masks("weight", "layer", 0.98, weights)
    assert after[0].sum() == 1 and after[0].flatten()[weights[0].abs().argmax()]
    assert torch.equal(after[1], before[1])


def group_rms(w):
    return w.norm(dim=0) / w.shape[0] ** 0.5  # a Linear layer's groups are its columns (input units)


def test_global_group_ranking_keeps_the_largest_unit_of_a_layer_it_would_empty():
    weights = small_and_large(torch.Generator().manual_seed(2), (30, 20), (4, 30))  # fc1 600 of 720 weights
    before = pruned_masks("neuron", "global", 0.9, weights, min_kept=0)
    assert not before[0].any()  # every input unit of the first layer gone: no path at all
    after = pruned_masks("neuron", "global", 0.9, weights)
    kept = after[0].flatten()
    assert kept.sum() == 1 and kept[group_rms(weights[0]).argmax()]
    assert torch.equal(after[1], before[1])


def test_layer_group_ranking_keeps_the_largest_unit_of_a_layer_it_would_round_away():
    weights = [torch.randn(8, 20, generator=torch.Generator().manual_seed(3)), torch.randn(4, 100)]
    before = pruned_masks("neuron", "layer", 0.98, weights, min_kept=0)  # round(0.98 * 20) = 20 units
    assert not before[0].any() and before[1].sum() == 2
    after = pruned_masks("neuron", "layer", 0.98, weights, min_kept=2)
    assert torch.equal(after[0].flatten().nonzero().flatten().sort().values,
                       group_rms(weights[0]).topk(2).indices.sort().values)
    assert torch.equal(after[1], before[1])


def test_the_floor_acts_per_configuration_and_leaves_layers_that_keep_enough_alone():
    g = torch.Generator().manual_seed(4)
    small = torch.stack([1e-3 * torch.randn(8, 6, generator=g), torch.randn(8, 6, generator=g)])  # row 1 not small
    weights = [small, torch.randn(2, 10, 40, generator=g)]
    before = pruned_masks("weight", "global", 0.5, weights, min_kept=0)
    after = pruned_masks("weight", "global", 0.5, weights)
    assert not before[0][0].any() and after[0][0].sum() == 1
    assert before[0][1].sum() > 1 and torch.equal(after[0][1], before[0][1]) and torch.equal(after[1], before[1])
    spread = [torch.randn(30, 20, generator=g) for _ in range(3)]  # nothing empties: the very same masks
    for structure in ("weight", "neuron"):
        for scope in ("global", "layer"):
            for a, b in zip(pruned_masks(structure, scope, 0.9, spread, min_kept=0),
                            pruned_masks(structure, scope, 0.9, spread)):
                assert torch.equal(a, b)


def test_min_kept_below_zero_is_refused():
    with pytest.raises(ValueError, match="min_kept must be >= 0"):
        PruningParams(min_kept=-1)


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
        "the network collapsed: layers blocks.0.conv2, head keep no weight (no path from input to output); lower lam")


def test_a_network_whose_units_all_stay_off_collapsed_with_no_layer_empty():
    from adrop.train.networks import MLP

    dense = get("dense")
    network = network_mod.Network(MLP([8], [5], 3), dense(dense.Params(), 1, 1), (5,), 3)
    network.train(False)
    state = {key: t.detach().clone() for key, t in network.net.state_dict().items()}
    x = torch.randn(32, 5, generator=torch.Generator().manual_seed(6))
    assert collapse.collapsed(network, state, x, "logsum") is None
    state["fc1.bias"].fill_(-1e3)  # every hidden unit below zero for these inputs: the ReLUs pass nothing on
    assert collapse.collapsed(network, state, x, "logsum") == (
        "the network collapsed: its output does not depend on its input; lower lam")


NEURON_LAYER = ("method=magnitude_pruning", "structure=neuron", "method.params.scope=layer",
                "method.params.final_sparsity=0.98", "method.params.frequency=5", "epochs=2")


def test_a_run_whose_network_collapsed_fails_in_one_line(synthetic, tmp_path):
    """fc1's 20 input units round away at 98% per layer; without the floor nothing reaches the output."""
    summary = train(synthetic(*NEURON_LAYER, "method.params.min_kept=0"), tmp_path / "off")
    assert summary["status"] == "failed"
    assert summary["error"] == ("the network collapsed: layer fc1 keeps no weight (no path from input to output); "
                                "lower method.params.final_sparsity (or raise method.params.min_kept)")
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
        "the network collapsed: layers fc1, fc2 keep no weight (no path from input to output); lower lam")
    assert fine["status"] == "completed"


@pytest.mark.slow
def test_a_collapsed_run_exits_1_with_one_line(adrop, tmp_path):
    out = adrop("train", *SMALL, *NEURON_LAYER, "method.params.min_kept=0", "hydra.run.dir=run")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1] == (
        "adrop train: error: the network collapsed: layer fc1 keeps no weight (no path from input to output); "
        "lower method.params.final_sparsity (or raise method.params.min_kept)")
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "failed"
