"""adrop.sparsify on every weight: a ViT (patch conv, class token, positional embedding, torch's TransformerEncoder)
and a GPT (token and position embeddings, causal nn.MultiheadAttention), every method; attention's projections and
embeddings parametrized (adrop.methods.sparse_parameter), named by module path; eval mode and strip agree; include and
exclude by path; groups of a tensor's rows."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrize

import adrop
from adrop import methods
from adrop.methods.base import SparseLayer
from adrop.sparsifier import SparsifyError, default_lam

from user_nets import TinyGPT, TinyViT

EVERY = [m for m in methods.names() if m != "fixed_mask"]
VIT_LAYERS = [
    "cls",
    "pos",
    "patch",
    "encoder.layers.0.self_attn.in_proj_weight",
    "encoder.layers.0.self_attn.out_proj",
    "encoder.layers.0.linear1",
    "encoder.layers.0.linear2",
    "head",
]
GPT_LAYERS = ["tok", "pos", "attn.in_proj_weight", "attn.out_proj", "mlp.0", "mlp.2", "head"]


def batch(net, seed):
    g = torch.Generator().manual_seed(seed)
    if isinstance(net, TinyViT):
        return torch.randn(16, 1, 8, 8, generator=g), torch.randint(0, 4, (16,), generator=g)
    tokens = torch.randint(0, 12, (16, 8), generator=g)
    return tokens, tokens.roll(-1, 1)


def loss_of(net, x, y):
    out = net(x)
    return F.cross_entropy(out.flatten(0, 1), y.flatten()) if out.dim() == 3 else F.cross_entropy(out, y)


def trained(Net, method, steps=20, **options):
    torch.manual_seed(0)
    net = Net()
    if method == "magnitude_pruning":
        options.setdefault("total_steps", steps)
    sp = adrop.sparsify(net, method, lam=options.pop("lam", default_lam(method)), **options)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    sp.attach(opt)
    for step in range(steps):
        x, y = batch(net, step)
        loss = loss_of(net, x, y) + sp.penalty()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert np.isfinite(float(loss.detach()))
    return net, sp


@pytest.mark.parametrize("method", EVERY)
@pytest.mark.parametrize("Net", [TinyViT, TinyGPT])
def test_every_method_trains_every_weight_of_a_vit_and_a_gpt(Net, method):
    include = ["cls", "pos"] if Net is TinyViT else []
    net, sp = trained(Net, method, include=include)
    assert list(sp.stats().layer) == (VIT_LAYERS if Net is TinyViT else GPT_LAYERS)
    net.eval()
    x, _ = batch(net, 99)
    with torch.no_grad():
        sparse_out = net(x)  # eval mode: the effective weights, torch's fused fast paths included
    effective = sp.effective()
    plain = adrop.strip(net)
    assert not any(parametrize.is_parametrized(m) for m in plain.modules())
    fresh = Net()
    assert plain.state_dict().keys() == fresh.state_dict().keys()  # the user's own keys again
    fresh.load_state_dict(plain.state_dict())
    fresh.eval()
    with torch.no_grad():
        assert torch.equal(fresh(x), sparse_out)
    assert torch.equal(
        dict(fresh.named_parameters())["cls" if Net is TinyViT else "attn.in_proj_weight"],
        effective["cls" if Net is TinyViT else "attn.in_proj_weight"],
    )


@pytest.mark.parametrize("method", ["hard_concrete", "vardrop_lr", "vardrop_lr_ar", "adaptive_dropout"])
def test_a_parametrized_weight_carries_the_methods_noise_in_training_and_its_effective_weight_in_eval(method):
    torch.manual_seed(0)
    net = TinyGPT()
    sp = adrop.sparsify(net, method, lam=1e-3)
    sp.method.before_step(0, sp.lam)  # what the model's pre-forward hook does before each training forward
    original = net.attn.parametrizations.in_proj_weight.original
    first, second = net.attn.in_proj_weight, net.attn.in_proj_weight  # one draw per read
    assert not torch.equal(first, original) and not torch.equal(first, second)
    first.sum().backward()  # the draw is differentiable in the tensor itself
    assert original.grad is not None and original.grad.abs().sum() > 0
    net.eval()
    assert torch.equal(net.attn.in_proj_weight, sp.effective()["attn.in_proj_weight"])
    assert isinstance(net.attn, nn.MultiheadAttention)  # the user's module, its tensor parametrized
    assert isinstance(net.mlp[0], SparseLayer) and not isinstance(net.attn.out_proj, SparseLayer)  # swapped outside


def test_linear_layers_inside_torchs_transformer_layers_are_parametrized_not_swapped():
    net, sp = trained(TinyViT, "magnitude_pruning")
    layer = net.encoder.layers[0]
    assert not isinstance(layer.linear1, SparseLayer) and parametrize.is_parametrized(layer.linear1, "weight")
    assert parametrize.is_parametrized(layer.self_attn.out_proj, "weight")
    stats = sp.stats().set_index("layer")
    assert stats.loc["encoder.layers.0.linear1", "nonzero_fraction"] < 0.5  # pruned, as every other weight
    assert stats.loc["encoder.layers.0.self_attn.in_proj_weight", "nonzero_fraction"] < 0.5


def test_include_and_exclude_by_path():
    torch.manual_seed(0)
    net = TinyViT()
    sp = adrop.sparsify(net, "logsum", lam=1e-3, include=["pos"], exclude=["*.in_proj_weight", "head"])
    assert sp.names == [
        "pos",
        "patch",
        "encoder.layers.0.self_attn.out_proj",
        "encoder.layers.0.linear1",
        "encoder.layers.0.linear2",
    ]
    attention = net.encoder.layers[0].self_attn
    assert not parametrize.is_parametrized(attention, "in_proj_weight") and type(net.head) is nn.Linear
    assert isinstance(net.cls, nn.Parameter)  # not included: dense
    with pytest.raises(SparsifyError, match=r"^include='token' names no parameter of TinyViT; its parameters"):
        adrop.sparsify(TinyViT(), "logsum", lam=1e-3, include=["token"])
    with pytest.raises(SparsifyError, match=r"^exclude='nope' names no module or tensor of TinyViT"):
        adrop.sparsify(TinyViT(), "logsum", lam=1e-3, exclude=["nope"])
    untouched = TinyViT()
    keys = untouched.state_dict().keys()
    with pytest.raises(SparsifyError, match="lam_scale names tok"):
        adrop.sparsify(untouched, "logsum", lam=1e-3, lam_scale={"tok": 2.0})
    assert untouched.state_dict().keys() == keys  # refused before anything was converted


def test_lam_scale_reaches_a_parametrized_weight():
    torch.manual_seed(0)
    net = TinyGPT()
    base = copy.deepcopy(net)
    scaled = adrop.sparsify(net, "logsum", lam=1e-2, lam_scale={"attn.in_proj_weight": 3.0})
    plain = adrop.sparsify(base, "logsum", lam=1e-2)
    i = plain.names.index("attn.in_proj_weight")
    one = plain.method.layer_penalty(plain.layers[i], plain.lam)
    assert float((scaled.penalty() - plain.penalty()).detach()) == pytest.approx(
        2.0 * 1e-2 * float(one.detach()), rel=1e-5
    )


def test_rows_are_groups_of_a_parametrized_tensor_with_structure_neuron():
    net, sp = trained(TinyGPT, "magnitude_pruning", structure="neuron", final_sparsity=0.5, scope="layer", steps=30)
    for name in ("tok", "attn.in_proj_weight"):
        w = sp.effective()[name]
        rows = (w != 0).any(1)
        assert 0 < int(rows.sum()) < len(rows)  # whole rows gone: a token, one output feature of q, k or v
        assert torch.equal((w != 0).all(1), rows)  # a row is kept whole or not at all


def test_conv1d_and_transposed_convolutions_are_trained_and_strip_to_themselves():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv1d(2, 4, 3), nn.ReLU(), nn.ConvTranspose1d(4, 2, 3), nn.Flatten(), nn.Linear(20, 3))
    sp = adrop.sparsify(net, "adaprox", lam=0.05)
    assert sp.names == ["0", "2", "4"]
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    sp.attach(opt)
    x, y = torch.randn(32, 2, 10), torch.randint(0, 3, (32,))
    for _ in range(30):
        loss = F.cross_entropy(net(x), y) + sp.penalty()
        opt.zero_grad()
        loss.backward()
        opt.step()
    stats = sp.stats().set_index("layer")
    assert (stats.nonzero_fraction < 1).all()  # the prox zeroes weights in every one of them
    net.eval()
    with torch.no_grad():
        out = net(x)
        plain = adrop.strip(net)
        assert [type(m) for m in plain] == [nn.Conv1d, nn.ReLU, nn.ConvTranspose1d, nn.Flatten, nn.Linear]
        assert torch.equal(plain(x), out)


def test_a_tied_weight_is_refused_before_anything_is_converted():
    tied = nn.Sequential(nn.Embedding(50, 16), nn.Linear(16, 50))
    tied[1].weight = tied[0].weight
    with pytest.raises(
        SparsifyError,
        match=r"^1's weight is tied to 0's: converting it would untie them; "
        r"pass exclude=\['1', '0'\]",
    ):
        adrop.sparsify(tied, "logsum", lam=1e-3)
    assert type(tied[1]) is nn.Linear and not parametrize.is_parametrized(tied[0])


@pytest.mark.slow
def test_a_sparsified_vit_stripped_exports_to_onnx_with_its_logits():
    """torch.onnx (torch.export, as adrop export uses it) of the stripped ViT; onnxruntime computes its logits."""
    import warnings

    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    net, sp = trained(TinyViT, "magnitude_pruning", include=["cls", "pos"], final_sparsity=0.5)
    net.eval()
    plain = adrop.strip(net)
    assert 0 < float((plain.encoder.layers[0].self_attn.in_proj_weight == 0).float().mean()) < 1
    x = torch.randn(5, 1, 8, 8, generator=torch.Generator().manual_seed(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            plain,
            (x,),
            input_names=["x"],
            output_names=["logits"],
            dynamic_shapes={"x": {0: torch.export.Dim("n")}},
            dynamo=True,
            verbose=False,
        )
    session = ort.InferenceSession(program.model_proto.SerializeToString())
    with torch.no_grad():
        expected = plain(x).numpy()
    assert np.allclose(session.run(None, {"x": x.numpy()})[0], expected, atol=1e-5)


def test_exclude_by_tensor_path_include_inside_a_layer_and_a_module_at_two_paths():
    torch.manual_seed(0)
    net = TinyGPT()
    sp = adrop.sparsify(net, "logsum", lam=1e-3, exclude=["head.weight", "tok.weight"])
    assert "head" not in sp.names and "tok" not in sp.names and type(net.head) is nn.Linear
    with pytest.raises(SparsifyError, match=r"^include='head.bias': head \(Linear\) becomes a sparse layer of its own"):
        adrop.sparsify(TinyGPT(), "logsum", lam=1e-3, include=["head.bias"])
    shared = nn.Linear(4, 4)
    twice = nn.ModuleDict({"a": shared, "seq": nn.Sequential(shared, nn.ReLU())})
    with pytest.raises(SparsifyError, match=r"^seq.0's weight is tied to a's: converting it would untie them"):
        adrop.sparsify(twice, "logsum", lam=1e-3, exclude=["a"])
    assert twice["seq"][0] is twice["a"] and type(shared) is nn.Linear  # nothing converted


def test_one_draw_of_noise_per_forward_however_often_attention_reads_its_weights(monkeypatch):
    torch.manual_seed(0)
    net = TinyViT()
    sp = adrop.sparsify(net, "hard_concrete", lam=1 / 60000)
    draws = []
    sample = type(sp.method).weight_sample
    monkeypatch.setattr(
        type(sp.method), "weight_sample", lambda self, layer: draws.append(layer) or sample(self, layer)
    )
    x, _ = batch(net, 0)
    first = net(x)
    assert len(draws) == len(sp.layers) and len({id(layer) for layer in draws}) == len(sp.layers)
    assert not torch.equal(net(x), first) and len(draws) == 2 * len(sp.layers)  # the next forward draws anew
