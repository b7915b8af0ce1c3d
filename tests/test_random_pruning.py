"""random_pruning, the floor: each layer keeps a random `keep` fraction of its weights (or of its units), drawn from
the run's seed, fixed from the start; the kept ones train. In the library, the runner and a stack alike."""

import numpy as np
import torch
from torch import nn

import adrop

from helpers.engines import one, stack, train


def test_each_layer_keeps_its_fraction_at_random_and_the_zeros_stay(synthetic, tmp_path):
    summary = train(synthetic("method=random_pruning", "method.params.keep=0.25", "epochs=3", "lr=1e-2"), tmp_path)
    weights = np.load(tmp_path / "weights.npz")
    layers = [k for k in weights.files if k.endswith(".weight")]
    for key in layers:
        w = weights[key]
        assert np.count_nonzero(w) == round(0.25 * w.size), key  # exactly its share, in every layer
    assert summary["nonzero"] == sum(round(0.25 * weights[k].size) for k in layers)
    other = train(synthetic("method=random_pruning", "method.params.keep=0.25", "epochs=3", "seed=1"), tmp_path / "1")
    assert other["status"] == "completed"
    assert not np.array_equal(np.load(tmp_path / "1" / "weights.npz")[layers[0]] != 0, weights[layers[0]] != 0)


def test_by_units_whole_groups_go_and_a_stack_draws_one_mask_per_configuration(synthetic, tmp_path):
    run = one(synthetic("method=random_pruning", "method.params.keep=0.5", "structure=neuron", "epochs=1"), tmp_path)
    run.fit()
    for layer in run.model.layers:
        live = (layer.weight[0] != 0).any(0)  # a Linear's input units
        assert int(live.sum()) == round(0.5 * live.numel())
    cfgs = [synthetic("method=random_pruning", "method.params.keep=0.5", f"seed={s}", "epochs=1") for s in (0, 1)]
    stacked = stack(cfgs, [tmp_path / "s0", tmp_path / "s1"])
    stacked.fit()
    first = stacked.model.layers[0].mask
    assert first.shape[0] == 2 and not torch.equal(first[0], first[1])
    assert all(int(m.sum()) == round(0.5 * m.numel()) for m in first)


def test_the_library_prunes_at_random_at_sparsify_and_trains_the_rest():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 30), nn.ReLU(), nn.Linear(30, 4))
    sp = adrop.sparsify(model, method="random_pruning", keep=0.2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(optimizer)
    kept = {name: w != 0 for name, w in sp.effective().items()}
    assert [int(k.sum()) for k in kept.values()] == [120, 24]
    for _ in range(5):
        x = torch.randn(16, 20)
        loss = nn.functional.cross_entropy(model(x), x[:, :4].argmax(1)) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert all(torch.equal(w != 0, kept[name]) for name, w in sp.effective().items())
