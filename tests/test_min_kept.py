"""No layer emptied: magnitude pruning's rankings across a layer's weights or groups keep at least min_kept of
each layer (its largest); min_kept=0 is the old ranking."""

import pytest
import torch

from adrop.methods.base import SparseLinear
from adrop.methods.magnitude_pruning import MagnitudePruning, PruningParams


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
    assert torch.equal(
        three.nonzero().flatten().sort().values, weights[0].abs().flatten().topk(3).indices.sort().values
    )


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
    assert torch.equal(
        after[0].flatten().nonzero().flatten().sort().values, group_rms(weights[0]).topk(2).indices.sort().values
    )
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
            for a, b in zip(
                pruned_masks(structure, scope, 0.9, spread, min_kept=0), pruned_masks(structure, scope, 0.9, spread)
            ):
                assert torch.equal(a, b)


def test_min_kept_below_zero_is_refused():
    with pytest.raises(ValueError, match="min_kept must be >= 0"):
        PruningParams(min_kept=-1)
