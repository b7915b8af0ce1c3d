"""lam_scale: lam times a multiplier in the layers it names, the same for every method: their penalty term, keep rule
and prox; unknown layers, non-positive multipliers and methods without lam refused in one line."""

import pytest
import torch

from adrop.methods.eta_hat_layer import group_lam
from adrop.train.config.settings import resolve
from adrop.train.errors import TrainError

from helpers.engines import assert_stack_near_its_singles, one, train


@pytest.mark.parametrize("method", ["logsum", "hard_concrete", "vardrop_lr", "eta_trick"])
def test_a_layers_lam_multiplies_its_penalty_keep_rule_and_prox(method, synthetic, tmp_path):
    run = one(synthetic(f"method={method}", "lam=0.05", "+lam_scale.fc1=3"), tmp_path)
    first, second = run.model.layers[:2]
    assert (first.lam_scale, second.lam_scale) == (3.0, 1.0)
    lam = run.lam
    assert torch.equal(group_lam(first, lam), first.per_config(lam) * 3.0)
    assert torch.equal(group_lam(second, lam), second.per_config(lam))
    per_layer = [run.method.layer_penalty(layer, lam) for layer in run.model.layers]
    assert torch.allclose(run.method.penalty(run.model.layers, lam), 3.0 * per_layer[0] + sum(per_layer[1:]))


@pytest.mark.parametrize("method", ["logsum", "adaprox", "adaptive_dropout"])
def test_a_heavier_first_layer_keeps_fewer_of_its_weights(method, synthetic, tmp_path):
    common = (f"method={method}", "lam=0.05", "lr=1e-2", "epochs=3")
    plain = train(synthetic(*common), tmp_path / "plain")
    heavy = train(synthetic(*common, "+lam_scale.fc1=4"), tmp_path / "heavy")
    fraction = {name: run["layers"]["fc1"]["fraction"] for name, run in (("plain", plain), ("heavy", heavy))}
    assert fraction["heavy"] < fraction["plain"], fraction


def test_a_stack_with_lam_scale_follows_its_single_runs(synthetic, tmp_path):
    cfgs = [
        synthetic("method=adaprox", "lam=0.05", "lr=1e-2", "epochs=2", f"seed={seed}", "+lam_scale.fc1=4")
        for seed in (0, 1)
    ]
    assert_stack_near_its_singles(cfgs, tmp_path)


def test_lam_scale_enters_the_identity_only_when_set(synthetic):
    assert "lam_scale" not in resolve(synthetic("method=logsum")).identity
    assert resolve(synthetic("method=logsum", "+lam_scale.fc1=2")).identity["lam_scale"] == {"fc1": 2.0}


@pytest.mark.parametrize(
    "overrides, message",
    [
        (("method=logsum", "+lam_scale.fc9=2"), "lam_scale names fc9, not a sparse layer"),
        (("method=logsum", "+lam_scale.fc1=0"), "lam_scale's multipliers must be positive"),
        (("method=dense", "+lam_scale.fc1=2"), "lam_scale multiplies lam, and method=dense trains with lam 0"),
        (("method=logsum", "lam_cost=flops"), "lam_cost must be one of weights, macs, got 'flops'"),
        (
            ("method=dense", "lam_cost=macs"),
            "lam_cost=macs prices lam in multiply-adds, and method=dense trains with lam 0",
        ),
    ],
)
def test_a_wrong_lam_scale_is_refused_in_one_line(overrides, message, synthetic, tmp_path):
    with pytest.raises((TrainError, ValueError), match=message) as caught:
        one(synthetic(*overrides), tmp_path)
    assert "\n" not in str(caught.value)


def test_lam_cost_macs_prices_each_layer_by_its_output_positions(mnist, tmp_path):
    """conv_small: conv1's 5x5 kernels act at 24 x 24 positions of a 28 x 28 image, the Linear layers once; lam_scale
    multiplies on top."""
    run = one(
        mnist("model=conv_small", "method=logsum", "structure=neuron", "lam_cost=macs", "+lam_scale.fc1=2"), tmp_path
    )
    assert [layer.lam_scale for layer in run.model.layers] == [576.0, 2.0, 1.0]
    assert [layer.lam_scale for layer in run.single.layers] == [576.0, 2.0, 1.0]
    assert resolve(mnist("model=conv_small", "method=logsum", "lam_cost=macs")).identity["lam_cost"] == "macs"
    assert "lam_cost" not in resolve(mnist("model=conv_small", "method=logsum")).identity


@pytest.mark.slow
def test_lam_cost_macs_prunes_a_conv_layers_filters_harder(mnist, tmp_path):
    """Priced per multiply-add, conv1's filters go first, even at a tenth of the lam."""
    common = ("model=conv_small", "method=adaprox", "structure=neuron", "lr=1e-2", "epochs=2", "batch_size=64")
    plain = train(mnist(*common, "lam=3e-3"), tmp_path / "plain")
    macs = train(mnist(*common, "lam=3e-4", "lam_cost=macs"), tmp_path / "macs")
    kept = {name: run["layers"]["conv1"]["units_out_kept"] for name, run in (("plain", plain), ("macs", macs))}
    assert kept["macs"] < kept["plain"] == 4, kept


@pytest.mark.slow
def test_a_stack_priced_in_multiply_adds_follows_its_single_runs(mnist, tmp_path):
    cfgs = [
        mnist(
            "model=conv_small",
            "method=adaprox",
            "structure=neuron",
            "lam=3e-4",
            "lam_cost=macs",
            "lr=1e-2",
            "epochs=1",
            "batch_size=64",
            "data.train_limit=512",
            f"seed={seed}",
        )
        for seed in (0, 1)
    ]
    assert_stack_near_its_singles(cfgs, tmp_path)
