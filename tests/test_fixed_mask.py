"""init_from and fixed_mask: a second stage that starts from a finished run's weights and keeps its zeros."""

import numpy as np
import pytest
import torch

from adrop.methods.magnitude_pruning import Masked
from adrop.train.errors import TrainError

from helpers.engines import error, one, train


def test_fine_tuning_starts_from_the_run_and_keeps_exactly_its_zeros(synthetic, pruned, tmp_path):
    start = np.load(pruned / "weights.npz")
    run = one(synthetic("method=fixed_mask", "epochs=3", "lr=1e-2", f"init_from={pruned}"), tmp_path)
    for name, layer in zip(run.model.names, run.model.layers):
        assert np.array_equal(layer.weight[0].detach().numpy(), start[f"{name}.weight"])
        assert np.array_equal(layer.bias[0].detach().numpy(), start[f"{name}.bias"])
    first = error(run, run.data.val)
    assert first == pytest.approx(
        error(
            one(synthetic("method=magnitude_pruning", "method.params.final_sparsity=0.5", "epochs=3"), pruned),
            run.data.val,
        )
    )
    summary = run.fit()[0]
    end = np.load(tmp_path / "weights.npz")
    for key in start.files:
        if key.endswith(".weight"):
            assert np.array_equal(end[key] == 0, start[key] == 0)  # the same zeros, no more, no fewer
            assert not np.array_equal(end[key], start[key])  # and the rest trained
    assert summary["nonzero"] == sum(int(np.count_nonzero(start[k])) for k in start.files if k.endswith(".weight"))


def test_a_resumed_fine_tuning_keeps_the_mask(synthetic, pruned, tmp_path):
    overrides = ("method=fixed_mask", "epochs=2", f"init_from={pruned}")
    straight = train(synthetic(*overrides), tmp_path / "a")
    train(synthetic(*overrides), tmp_path / "b", stop_after=1)
    resumed = train(synthetic(*overrides), tmp_path / "b")
    assert (resumed["test_error"], resumed["nonzero"]) == (straight["test_error"], straight["nonzero"])


def test_init_from_without_weights_or_with_other_shapes_is_a_clear_error(synthetic, pruned, tmp_path):
    with pytest.raises(ValueError, match="set init_from="):  # nothing to keep fixed: refused, not trained dense
        one(synthetic("method=fixed_mask"), tmp_path / "none")
    with pytest.raises(TrainError, match="no weights.npz there"):
        one(synthetic("method=fixed_mask", f"init_from={tmp_path / 'nothing'}"), tmp_path / "a")
    with pytest.raises(TrainError, match=r"fc2.weight should be \(16, 64\), found \(4, 64\)"):
        one(synthetic("method=fixed_mask", "model.hidden=[64,16]", f"init_from={pruned}"), tmp_path / "b")


def test_masked_gradients_are_the_bits_of_the_masked_product(synthetic, pruned, tmp_path, monkeypatch):
    """The mask left the forward pass (before_update zeroes masked gradients instead): every gradient, masked or not,
    has the bits the forward product weight * mask gave it, so the reference runs are unchanged bit for bit."""
    run = one(synthetic("method=fixed_mask", f"init_from={pruned}"), tmp_path)
    run.method.start(run.model.layers)
    layers = run.model.layers
    x, y = run.data.train.x[:64], run.data.train.y[:64]
    assert any(bool((~layer.mask).any()) for layer in layers)

    def gradients():
        for layer in layers:
            layer.weight.grad = None
        torch.nn.functional.cross_entropy(run.model(x[None])[0], y).backward()
        return [layer.weight.grad.clone() for layer in layers]

    gradients()
    run.method.before_update(layers)
    now = [layer.weight.grad.clone() for layer in layers]
    with monkeypatch.context() as m:  # the mask in the forward pass, as before
        m.setattr(Masked, "forward", lambda self, layer, x: layer.product(x, layer.weight * layer.mask, layer.bias))
        before = gradients()
    for a, b in zip(before, now):
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))
