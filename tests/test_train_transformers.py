"""`adrop train` on a user's transformer: a ViT (patches, a class token, a positional embedding, torch's
TransformerEncoder) and a causal attention model (an embedding of positions, nn.MultiheadAttention given a mask), every
weight trained by every method, named by path in layers.csv; weights.npz reloads into the user's class with the run's
error and exports to ONNX with it; stacks follow their single runs, or train as stacks of one and say why."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from adrop import methods
from adrop.train.config.settings import resolve
from adrop.train.run_folder import run_files

import user_nets
from helpers.engines import one, stack, train
from helpers.stacks import assert_follows

VIT = ("dataset=digits", "model=custom", "model._target_=user_nets.TinyViT", "device=cpu", "progress=never")
ATTENTION = [
    "patch",
    "encoder.layers.0.self_attn.in_proj_weight",
    "encoder.layers.0.self_attn.out_proj",
    "encoder.layers.0.linear1",
    "encoder.layers.0.linear2",
    "head",
]
ENV = {"PYTHONPATH": str(Path(user_nets.__file__).parent)}


class Arrays(dict):
    """A weights.npz's arrays, as assert_follows reads them (`files`, by key), editable."""

    def __init__(self, npz):
        super().__init__({k: npz[k].copy() for k in npz.files})

    @property
    def files(self):
        return list(self)


def reloaded_error(folder: Path, data) -> float:
    """The test error of a fresh TinyViT given the run's weights.npz (every key, strictly)."""
    saved = np.load(folder / "weights.npz")
    model = user_nets.TinyViT(classes=10)
    model.load_state_dict({k: torch.from_numpy(saved[k]) for k in saved.files})
    with torch.no_grad():
        return (model.eval()(data.test.x.view(-1, 1, 8, 8)).argmax(1) != data.test.y).float().mean().item()


def trained(cfg, folder: Path) -> dict:
    """A run trained in this process (the engine `adrop train` runs), its .hydra/config.yaml written as the command
    writes it (what `adrop export` reads to rebuild the user's network): its summary."""
    summary = train(cfg, folder)
    run_files.write_config(folder, resolve(cfg).cfg, {}, [])
    return summary


@pytest.fixture(scope="module")
def pruned_vit(tmp_path_factory, config):
    folder = tmp_path_factory.mktemp("pruned_vit")
    train(config(*VIT, "method=magnitude_pruning", "method.params.final_sparsity=0.5", "epochs=2"), folder)
    return folder


@pytest.mark.parametrize("method", methods.names())
def test_every_method_trains_every_weight_of_a_vit(method, config, pruned_vit, tmp_path):
    extra = {"magnitude_pruning": ["method.params.final_sparsity=0.5"], "fixed_mask": [f"init_from={pruned_vit}"]}.get(
        method, []
    )
    cfg = config(*VIT, f"method={method}", "epochs=2", *extra)
    engine = one(cfg, tmp_path)
    summary = engine.fit()[0]
    assert summary["status"] == "completed", summary
    assert list(summary["layers"]) == ATTENTION
    rows = pd.read_csv(tmp_path / "layers.csv")
    last = rows[rows.epoch == 2].set_index("layer")
    assert list(last.index[last.trained == "method"]) == ATTENTION
    # the attention's tokens: 4 patches and the class token, each projected once
    assert last.loc["encoder.layers.0.self_attn.in_proj_weight", "dense_macs"] == 48 * 16 * 5
    assert set(last.index[last.trained == "dense"]) >= {"(root)", "encoder.layers.0.self_attn", "norm"}
    assert reloaded_error(tmp_path, engine.data) == pytest.approx(summary["test_error"], abs=1 / 360)
    if method == "fixed_mask":  # the pruned run's zeros stay zeros
        kept, mask = np.load(tmp_path / "weights.npz"), np.load(pruned_vit / "weights.npz")
        assert all(not kept[k][mask[k] == 0].any() for k in ("head.weight", "encoder.layers.0.linear1.weight"))


@pytest.mark.parametrize(
    "method, structure",
    [
        ("logsum", "weight"),
        ("adaprox", "weight"),
        ("hard_concrete", "weight"),
        ("vardrop_lr_ar", "weight"),
        ("logsum", "neuron"),
        ("hard_concrete", "neuron"),
    ],
)
def test_a_stack_of_vits_follows_each_single_run(method, structure, config, held_noise, tmp_path):  # noqa: F811
    cfgs = [
        config(
            *VIT,
            f"method={method}",
            f"seed={seed}",
            "epochs=1",
            "data.train_limit=600",
            "batch_size=128",
            f"structure={structure}",
            "+model.heads=4",
        )
        for seed in (0, 1)
    ]
    singles = [train(c, tmp_path / f"single{i}") for i, c in enumerate(cfgs)]
    stacked = stack(cfgs, [tmp_path / f"stack{i}" for i in range(2)]).fit()
    steps = math.ceil(cfgs[0].data.train_limit * 0.8 / 128)
    for i in range(2):
        a, b = (Arrays(np.load(tmp_path / f"{kind}{i}" / "weights.npz")) for kind in ("single", "stack"))
        # the keys' bias: softmax ignores it, its gradient is 0 but for rounding, whose sign Adam's normalised step
        # follows (about lr either way)
        lr_sum = steps * singles[i]["lr"]
        for arrays in (a, b):
            arrays["key_bias"] = arrays["encoder.layers.0.self_attn.in_proj_bias"][16:32].copy()
            arrays["encoder.layers.0.self_attn.in_proj_bias"][16:32] = 0
        assert np.abs(a["key_bias"] - b.pop("key_bias")).max() <= 6 * lr_sum
        a.pop("key_bias")
        # the longest sum: a projection's gradient, over the batch's 128 examples x 5 tokens
        assert_follows(a, b, steps, longest_product=128 * 5, lr_sum=lr_sum)
        assert stacked[i]["stacked"] == 2 and abs(stacked[i]["test_error"] - singles[i]["test_error"]) <= 2 / 360


@pytest.mark.slow
def test_heads_train_as_groups_and_the_onnx_export_goes_without_the_dead_ones(config, adrop, tmp_path):
    cfg = config(*VIT, "+model.heads=4", "method=logsum", "structure=neuron", "lam=3e-2", "lr=0.01", "epochs=20")
    assert trained(cfg, tmp_path / "run")["status"] == "completed"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    kept, heads = summary["heads"]["encoder.layers.0.self_attn"]
    assert heads == 4 and 0 < kept < 4, summary["heads"]
    saved = np.load(tmp_path / "run" / "weights.npz")
    v = saved["encoder.layers.0.self_attn.in_proj_weight"][32:].reshape(4, 4 * 16)
    assert ((v != 0).any(1)).sum() == kept  # whole heads: each head's v rows zero together, or none
    exported = adrop("export", "run", "--format", "onnx", env=ENV)
    assert exported.returncode == 0, exported.stderr
    assert f"attention heads 4 -> {kept}" in exported.stdout and "as the run's" in exported.stdout


def test_include_trains_a_class_token_and_exclude_leaves_a_layer_dense(config, tmp_path):
    summary = train(config(*VIT, "method=logsum", "epochs=1", "include=[cls,pos]", "exclude=[head]"), tmp_path)
    assert list(summary["layers"]) == ["cls", "pos", *ATTENTION[:-1]]
    rows = pd.read_csv(tmp_path / "layers.csv").set_index("layer")
    assert rows.loc["head", "trained"] == "dense" and rows.loc["cls", "trained"] == "method"
    assert np.isnan(rows.loc["cls", "dense_macs"])  # added, not multiplied: no product to count


@pytest.mark.slow
@pytest.mark.parametrize(
    "setting, message",
    [
        ("include=[token]", "include='token' names no parameter of user_nets.TinyViT; its parameters outside "),
        ("exclude=[nothing.here]", "exclude='nothing.here' names no module or tensor of user_nets.TinyViT"),
        (
            "exclude=['*']",
            "user_nets.TinyViT has no nn.Linear or nn.Conv2d for a method to sparsify (exclude left none)",
        ),
    ],
)
def test_a_bad_selection_is_refused_in_one_line_before_any_folder(setting, message, adrop, tmp_path):
    out = adrop("train", *VIT, "method=logsum", "epochs=1", setting, "hydra.run.dir=run", env=ENV)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"adrop train: error: {out.stderr.split('error: ', 1)[1].strip()}"]
    assert message in out.stderr and not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_vit_run_exports_to_onnx_with_its_test_error(config, adrop, tmp_path):
    summary = trained(config(*VIT, "method=hard_concrete", "epochs=3", "lr=0.01"), tmp_path / "run")
    assert summary["status"] == "completed", summary
    check = adrop("export", "--check", "run", env=ENV)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "each export reproduces its run's test error" in check.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["layers"]["encoder.layers.0.self_attn.in_proj_weight"]["shape"] == [48, 16]


@pytest.mark.slow
def test_the_stacked_launcher_stacks_a_vit_and_runs_a_model_fed_positions_in_stacks_of_one(adrop, tmp_path):
    out = adrop(
        "train",
        "-m",
        "hydra/launcher=stacked",
        "hydra.launcher.max_stack=2",
        "hydra.launcher.n_jobs=1",
        *VIT,
        "method=logsum",
        "seed=0,1",
        "epochs=1",
        "hydra.sweep.dir=vit",
        env=ENV,
    )
    assert out.returncode == 0, out.stderr
    assert "cannot be stacked" not in out.stdout and "of sizes 2" in out.stdout
    out = adrop(
        "train",
        "-m",
        "hydra/launcher=stacked",
        "hydra.launcher.max_stack=2",
        "hydra.launcher.n_jobs=1",
        *VIT[:2],
        "model._target_=user_nets.TinyCausal",
        "device=cpu",
        "method=logsum",
        "seed=0,1",
        "epochs=1",
        "hydra.sweep.dir=causal",
        env=ENV,
    )
    assert out.returncode == 0, out.stderr
    said = [line for line in out.stdout.splitlines() if "cannot be stacked" in line]
    assert len(said) == 1 and "Embedding is fed no batch of examples" in said[0], out.stdout
    for folder in (tmp_path / "causal").iterdir():
        if (folder / "summary.json").exists():
            assert json.loads((folder / "summary.json").read_text())["status"] == "completed"


@pytest.fixture(scope="module")
def tokens(tmp_path_factory):
    """Token ids (0..11, 8 per example) whose class is (first + last) mod 3: the last token must attend to the
    first, which causal attention allows."""
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("tokens") / "tokens.npz"
    x = rng.integers(0, 12, (1200, 8))
    y = (x[:, 0] + x[:, -1]) % 3
    np.savez(path, x_train=x[:1000], y_train=y[:1000], x_test=x[1000:], y_test=y[1000:])
    return path


@pytest.mark.parametrize("method", methods.names())
def test_every_method_trains_a_gpt_on_token_ids(method, config, tokens, tmp_path):
    extra = {
        "magnitude_pruning": ["method.params.final_sparsity=0.5"],
        "fixed_mask": [f"init_from={tmp_path / 'pruned'}"],
    }.get(method, [])
    base = (
        "dataset=npz",
        f"dataset.path={tokens}",
        "model=custom",
        "model._target_=user_nets.TokenClassifier",
        "device=cpu",
        "progress=never",
        "epochs=2",
    )
    if method == "fixed_mask":
        train(config(*base, "method=magnitude_pruning", "method.params.final_sparsity=0.5"), tmp_path / "pruned")
    engine = one(config(*base, f"method={method}", *extra), tmp_path / "run")
    summary = engine.fit()[0]
    assert engine.data.train.x.dtype == torch.int64 and summary.get("input_normalisation") is None
    assert summary["status"] == "completed", summary
    assert {"gpt.tok", "gpt.pos", "gpt.attn.in_proj_weight", "gpt.attn.out_proj", "gpt.head"} <= set(summary["layers"])
    assert summary["heads"] == {"gpt.attn": [2, 2]} or method != "dense"
    saved = np.load(tmp_path / "run" / "weights.npz")
    model = user_nets.TokenClassifier(input_shape=[8])
    model.load_state_dict({k: torch.from_numpy(saved[k]) for k in saved.files})
    with torch.no_grad():
        wrong = (model.eval()(engine.data.test.x).argmax(1) != engine.data.test.y).float().mean().item()
    assert wrong == pytest.approx(summary["test_error"], abs=1 / 200)


@pytest.mark.slow
def test_a_gpt_on_token_ids_learns_and_exports_to_onnx(config, adrop, tokens, tmp_path):
    cfg = config(
        "dataset=npz",
        f"dataset.path={tokens}",
        "model=custom",
        "model._target_=user_nets.TokenClassifier",
        "device=cpu",
        "progress=never",
        "method=logsum",
        "epochs=30",
        "lr=0.01",
    )
    assert trained(cfg, tmp_path / "run")["status"] == "completed"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["test_error"] < 0.5  # chance: 2/3
    check = adrop("export", "--check", "run", env=ENV)
    assert check.returncode == 0 and "each export reproduces its run's test error" in check.stdout, check.stdout


def test_a_stack_tells_a_shared_attention_mask_from_its_batch_when_they_are_alike_in_length():
    from adrop.train.nets.stacking import Stacked, folded

    torch.manual_seed(0)
    attention = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
    stack = Stacked(attention, 2).eval()
    with torch.no_grad():
        stack.in_proj_weight[1] += 0.1  # configuration 1 differs
    L = 6  # = 2 configurations x 3 examples
    x, mask = torch.randn(6, L, 8), torch.ones(L, L, dtype=torch.bool).triu(1)
    with torch.no_grad(), folded(6):
        got = stack(x, x, x, attn_mask=mask, need_weights=False)[0]
        for k in range(2):
            state = {n: t[k] for n, t in stack.state().items()}
            want = torch.func.functional_call(
                attention, state, (x[3 * k : 3 * k + 3],) * 3, {"attn_mask": mask, "need_weights": False}
            )[0]
            assert torch.allclose(got[3 * k : 3 * k + 3], want, atol=1e-6)


def test_lam_cost_macs_prices_an_embedding_per_weight(config, tokens, tmp_path):
    summary = train(
        config(
            "dataset=npz",
            f"dataset.path={tokens}",
            "model=custom",
            "model._target_=user_nets.TokenClassifier",
            "device=cpu",
            "progress=never",
            "epochs=1",
            "method=logsum",
            "lam_cost=macs",
        ),
        tmp_path,
    )
    assert summary["status"] == "completed"
    assert summary["layers"]["gpt.tok"]["dense_macs"] is None
    assert summary["layers"]["gpt.head"]["dense_macs"] == 3 * 16 * 8  # every token's
