"""structure=neuron: every method's group form keeps or drops whole units (a Linear layer's input units, a Conv2d
layer's filters), stacks follow their single runs, the unit-noise products are each configuration's own, and
structure=weight is untouched (its bitwise reference: tests/test_stacked.py and scripts/tools/fingerprint.py)."""

import math

import numpy as np
import pytest
import torch
from torch import nn

import adrop.methods.base as method_base
from adrop import methods
from adrop.methods.base import SparseConv2d, SparseLinear

from helpers.engines import one, stack, train
from helpers.stacks import assert_follows, three

PER_WEIGHT = {"dense", "fixed_mask"}  # no group parameters: a unit dies only when all its weights are zero
DROPS = {"logsum": 0.2, "adaprox": 0.1, "adatikhonov": 0.2, "adaptive_dropout": 0.05}  # lams that drop units quickly


def neuron_run(synthetic, method, *extra):
    return synthetic(f"method={method}", "structure=neuron", *extra)


def whole_units(weight) -> tuple[bool, int]:
    """Whether a Linear weight's zeros make whole columns (input units gone) and rows (units whose output no one
    reads any more, which decay to 0), and how many columns are gone."""
    nonzero = weight != 0
    rows, columns = nonzero.any(axis=1), nonzero.any(axis=0)
    return np.array_equal(nonzero, np.outer(rows, columns)), int((~columns).sum())


@torch.no_grad()
def spread_within_and_across_units(layer) -> None:
    """Weights that differ within every unit (one in two of its weights 1e-6 of the others) and across units (one
    unit in two 1e-12 of the others), so that a keep rule by single weights would split a unit, and one by units
    keeps some and drops others. A Linear layer's unit is a column (K, out, in); a conv layer's a filter (K, out, in,
    kh, kw)."""
    w = layer.weight
    w.copy_(torch.rand_like(w) + 0.5)
    within, across = (-2, -1) if w.dim() == 3 else (3, 1)  # a conv filter's rows (kh): it may have one channel
    w[(slice(None),) * (within % w.dim()) + (slice(None, None, 2),)] *= 1e-6
    w[(slice(None),) * (across % w.dim()) + (slice(None, None, 2),)] *= 1e-12


def own_tensors(layer) -> list[torch.Tensor]:
    """A method's own tensors on a layer (its parameters and buffers, beyond the weight and bias)."""
    own = [t for name, t in layer.named_parameters() if name not in ("weight", "bias")]
    return own + [t for _, t in layer.named_buffers()]


@pytest.mark.parametrize("method", sorted(set(methods.names()) - PER_WEIGHT))
def test_each_method_has_one_parameter_per_unit(method, synthetic, tmp_path):
    """The method's own tensors have the layer's group shape, one per input unit of a Linear layer, and its keep mask
    is constant over each unit's weights though they differ (the perturbation tests the keep rules that read the
    weights; the others read the method's own tensors, whose shape is checked); a method with no tensors of its own
    (the eta-hat methods: their keep rule reads the unit's norm) keeps the units of large norm and drops the others."""
    engine = one(neuron_run(synthetic, method, "epochs=1"), tmp_path)
    for layer in engine.model.layers:
        assert layer.group_shape == (1, 1, layer.weight.shape[-1])  # a stack of one: (K, 1, in)
        own = own_tensors(layer)
        assert all(tuple(t.shape) == layer.group_shape for t in own), [tuple(t.shape) for t in own]
        spread_within_and_across_units(layer)
        keep = engine.method.keep_mask(layer, engine.lam).expand_as(layer.weight)
        assert torch.equal(keep, keep.any(dim=-2, keepdim=True).expand_as(keep))  # constant over each column
        if not own:
            assert keep.any(dim=-2)[..., 1::2].all() and not keep[..., ::2].any()


@pytest.mark.parametrize("method", sorted(DROPS) + ["magnitude_pruning"])
def test_units_go_whole(method, synthetic, tmp_path):
    """After training, the zeros are whole units (no scattered zeros), and some units are gone."""
    extra = ["method.params.final_sparsity=0.6"] if method == "magnitude_pruning" else [f"lam={DROPS[method]}"]
    summary = train(neuron_run(synthetic, method, "epochs=3", "lr=0.01", *extra), tmp_path)
    assert summary["status"] == "completed"
    weights = np.load(tmp_path / "weights.npz")
    gone = 0
    for key in [k for k in weights.files if k.endswith("weight")]:
        whole, columns_gone = whole_units(weights[key])
        assert whole, key
        gone += columns_gone
    assert gone > 0


@pytest.mark.parametrize("scope", ["layer", "global"])
def test_group_pruning_reaches_its_sparsity_in_weights(scope, synthetic, tmp_path):
    summary = train(
        neuron_run(
            synthetic,
            "magnitude_pruning",
            "epochs=2",
            "method.params.final_sparsity=0.7",
            f"method.params.scope={scope}",
            "method.params.frequency=1",
        ),
        tmp_path,
    )
    assert 0.3 - 0.05 <= summary["nonzero_fraction"] <= 0.3 + 0.05, summary["nonzero_fraction"]


@pytest.mark.parametrize("method", methods.names())
def test_a_stack_of_three_follows_each_single_run_by_units(method, synthetic, held_noise, tmp_path):
    """As tests/test_stacked.py checks per weight: three configurations as one stack end where their single runs
    end (float32 rounding), with the noise held fixed."""
    extra = {
        "magnitude_pruning": ["method.params.final_sparsity=0.5", "method.params.frequency=2"],
        "adaptive_dropout": ["method.params.mask=gaussian"],
    }.get(method, [])
    if method == "fixed_mask":
        pruned = tmp_path / "pruned"
        train(neuron_run(synthetic, "magnitude_pruning", "method.params.final_sparsity=0.5", "epochs=2"), pruned)
        extra = [f"init_from={pruned}"]
    cfgs = three(synthetic, method, [*extra, "structure=neuron"])
    singles = [train(c, tmp_path / f"single{i}") for i, c in enumerate(cfgs)]
    stacked = stack(cfgs, [tmp_path / f"stack{i}" for i in range(3)]).fit()
    for i, cfg in enumerate(cfgs):
        a, b = np.load(tmp_path / f"single{i}" / "weights.npz"), np.load(tmp_path / f"stack{i}" / "weights.npz")
        steps = math.ceil((cfg.dataset.n_train - cfg.dataset.val_size) / cfg.batch_size)
        assert_follows(a, b, steps, longest_product=max(cfg.batch_size, *cfg.model.hidden), lr_sum=steps * cfg.lr)
        assert abs(stacked[i]["test_error"] - singles[i]["test_error"]) <= 2 / 500


class Recorded(method_base.Noise):
    """Gaussian draws kept, to recompute a product by hand."""

    def __init__(self):
        self.draws = []

    def gaussian_like(self, t):
        self.draws.append(torch.randn_like(t))
        return self.draws[-1]


def sparse_pair(module, K=2):
    """A stacked sparse layer of K copies of `module` (each row its own random weights) and the method behind it."""
    method = methods.get("vardrop_lr")(methods.get("vardrop_lr").Params(), 1, 1, "neuron")
    kind = SparseLinear if isinstance(module, nn.Linear) else SparseConv2d
    layer = kind.like(module, method, configs=K)
    with torch.no_grad():
        layer.weight.normal_()
        layer.bias.normal_()
    return layer


def test_unit_noise_scales_each_configurations_input_units(monkeypatch):
    recorded = Recorded()
    monkeypatch.setattr(method_base, "noise", recorded)
    layer = sparse_pair(nn.Linear(5, 3))
    x = torch.randn(2 * 4, 5)  # (K * batch, in), configuration-major
    mean, std = torch.rand(2, 1, 5) + 0.5, torch.rand(2, 1, 5)
    out = layer.product_with_unit_noise(x, layer.weight, layer.bias, mean, std)
    z = mean + std * recorded.draws[0]  # (K, batch, in)
    for k in range(2):
        expected = (x[4 * k : 4 * k + 4] * z[k]) @ layer.weight[k].T + layer.bias[k]
        torch.testing.assert_close(out[4 * k : 4 * k + 4], expected)


def test_unit_noise_scales_each_configurations_filters(monkeypatch):
    recorded = Recorded()
    monkeypatch.setattr(method_base, "noise", recorded)
    layer = sparse_pair(nn.Conv2d(2, 3, 3, padding=1))
    x = torch.randn(2 * 4, 2, 6, 6)
    mean, std = torch.rand(2, 3, 1, 1, 1) + 0.5, torch.rand(2, 3, 1, 1, 1)
    out = layer.product_with_unit_noise(x, layer.weight, layer.bias, mean, std)
    z = mean.view(2, 1, 3, 1, 1) + std.view(2, 1, 3, 1, 1) * recorded.draws[0]  # (K, batch, out, 1, 1)
    for k in range(2):
        conv = torch.nn.functional.conv2d(x[4 * k : 4 * k + 4], layer.weight[k], None, padding=1)
        torch.testing.assert_close(out[4 * k : 4 * k + 4], conv * z[k] + layer.bias[k].view(1, 3, 1, 1))


@pytest.mark.parametrize("method", ["logsum", "adatikhonov", "eta_trick"])
def test_a_unit_of_zeros_has_a_finite_gradient(method):
    """||w_g|| is not differentiable at 0; its gradient there is taken as 0, never NaN."""
    cls = methods.get(method)
    m = cls(cls.Params(), 1, 1, "neuron")
    layer = SparseLinear(4, 3, m)
    with torch.no_grad():
        layer.weight.normal_()
        layer.weight[:, 1] = 0
    m.layer_penalty(layer, 0.1).backward()
    assert torch.isfinite(layer.weight.grad).all()


@pytest.mark.slow
def test_a_per_weight_switch_is_refused_with_units(synthetic, adrop, tmp_path):
    result = adrop(
        "train",
        "dataset=synthetic",
        "model=mlp",
        "method=adaprox",
        "structure=neuron",
        "method.params.authors_keep_rule=true",
        "epochs=1",
    )
    assert result.returncode == 2 and "authors_keep_rule" in result.stderr.strip().splitlines()[-1]
    result = adrop("train", "dataset=synthetic", "model=mlp", "structure=filters", "epochs=1")
    assert result.returncode == 2 and "structure must be one of weight, neuron" in result.stderr


def kept_of(folder, image=None):
    """The compact network recomputed from a run's weights.npz alone (adrop.compact)."""
    from adrop.compact import compact

    weights = np.load(folder / "weights.npz")
    names = [k.removesuffix(".weight") for k in weights.files if k.endswith(".weight")]
    return compact(names, {n: (weights[f"{n}.weight"], weights[f"{n}.bias"]) for n in names}, image)


def test_a_runs_kept_architecture_is_its_weights(synthetic, tmp_path):
    """summary.json's kept_architecture, compact_macs and per-layer units are the compact network of weights.npz, and
    layers.csv's last epoch says the same."""
    import pandas as pd

    summary = train(
        neuron_run(
            synthetic, "magnitude_pruning", "epochs=2", "method.params.final_sparsity=0.7", "method.params.frequency=1"
        ),
        tmp_path,
    )
    kept = kept_of(tmp_path)
    assert summary["kept_architecture"] == kept.architecture != "-".join(kept.before)
    assert summary["cost"]["compact_macs"] == kept.macs() < summary["cost"]["dense_macs"]
    layers = pd.read_csv(tmp_path / "layers.csv")
    last = layers[layers.epoch == layers.epoch.max()]
    for name, (w, _) in zip(kept.names, kept.layers):
        row = last[last.layer == name].iloc[0]
        assert (row.units_in_kept, row.units_out_kept) == (w.shape[1], w.shape[0])
        assert summary["layers"][name]["units_in_kept"] == w.shape[1]


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(set(methods.names()) - PER_WEIGHT))
def test_each_method_trains_a_conv_net_by_filters(method, mnist, tmp_path):
    """Every group form on a conv net: a conv layer's method tensors are one per filter (output channel), its keep
    mask is constant over each filter, the run completes, and its kept architecture is its weights' compact network."""
    extra = ["method.params.final_sparsity=0.5"] if method == "magnitude_pruning" else []
    cfg = mnist(
        "model=conv_small",
        f"method={method}",
        "structure=neuron",
        "epochs=1",
        "batch_size=64",
        "data.train_limit=512",
        "lr=1e-3",
        *extra,
    )
    engine = one(cfg, tmp_path)
    summary = engine.fit()[0]
    assert summary["status"] == "completed"
    assert summary["kept_architecture"] == kept_of(tmp_path, (1, 28, 28)).architecture
    conv = engine.model.layers[0]
    assert conv.weight.dim() == 5 and conv.group_shape == (1, conv.weight.shape[1], 1, 1, 1)  # (K, out, in, kh, kw)
    own = own_tensors(conv)
    assert all(tuple(t.shape) == conv.group_shape for t in own), [tuple(t.shape) for t in own]
    spread_within_and_across_units(conv)
    keep = engine.method.keep_mask(conv, engine.lam).expand_as(conv.weight)
    by_filter = keep.flatten(2).any(dim=2)  # (K, out)
    assert torch.equal(keep, by_filter.view(*keep.shape[:2], 1, 1, 1).expand_as(keep))  # constant over each filter
    if not own:  # the eta-hat methods: by the filter's norm
        assert by_filter[:, 1::2].all() and not by_filter[:, ::2].any()


@pytest.mark.slow
def test_a_conv_net_loses_filters_and_its_compact_exports_reproduce_the_run(mnist, tmp_path, capsys):
    from adrop.commands.export import main
    from adrop.train.run_folder import run_files

    folder = tmp_path / "conv"
    cfg = mnist(
        "model=conv_small",
        "method=magnitude_pruning",
        "structure=neuron",
        "epochs=2",
        "batch_size=64",
        "data.train_limit=512",
        "method.params.final_sparsity=0.6",
        "method.params.frequency=2",
    )
    summary = train(cfg, folder)
    run_files.write_config(folder, cfg, {}, [])
    kept = kept_of(folder, (1, 28, 28))
    assert summary["kept_architecture"] == kept.architecture
    assert kept.layers[0][0].shape[0] < 4 or kept.layers[1][0].shape[1] < 4 * 144  # filters or positions gone
    for fmt in ("compact", "onnx"):
        assert main([str(folder), "--format", fmt, "--out", str(tmp_path / f"net.{fmt}")]) == 0
        printed = capsys.readouterr().out
        assert f"test error {summary['test_error']:.4f}, as the run's" in printed
        assert kept.architecture in printed


@pytest.mark.parametrize("dead", [(), ("conv1",), ("conv2",), ("fc1",), ("conv1", "fc2")])
def test_the_compact_network_computes_what_the_full_one_does(dead):
    """adrop.compact on a conv net with some filters, columns and whole layers zeroed (a layer keeping no unit at all
    included): the same logits as the module's own forward."""
    from adrop.compact import compact
    from adrop.train.nets.builtin import ConvNet

    torch.manual_seed(0)
    net = ConvNet([[6, 3], [8, 3]], [20], [2, 14, 14], 10)
    state = net.state_dict()
    with torch.no_grad():
        state["conv1.weight"][::3] = 0
        state["conv2.weight"][1::2] = 0
        state["fc1.weight"][:, ::5] = 0
        for name in dead:
            state[f"{name}.weight"].zero_()
    net.load_state_dict(state)
    names = ["conv1", "conv2", "fc1", "fc2"]
    kept = compact(names, {n: (state[f"{n}.weight"].numpy(), state[f"{n}.bias"].numpy()) for n in names}, (2, 14, 14))
    x = torch.randn(30, 2, 14, 14)
    with torch.no_grad():
        expected = net(x).numpy()
    np.testing.assert_allclose(kept.predict(x.reshape(30, -1).numpy()), expected, rtol=1e-4, atol=1e-5)
    if not dead:  # conv1 keeps filters 1, 2, 4, 5; conv2 0, 2, 4, 6; fc1 those 4 channels' 16 inputs but 0, 10, 25
        assert kept.architecture == "2x14x14-c4-c4-13-20-10"
        assert kept.macs() == 4 * 2 * 9 * 144 + 4 * 4 * 9 * 16 + 13 * 20 + 20 * 10
    else:  # nothing reaches the classes but the last layer's biases: a constant
        assert kept.architecture == "0x14x14-c0-c0-0-0-10" and kept.macs() == 0
