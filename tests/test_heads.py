"""Attention heads as groups (structure=neuron on nn.MultiheadAttention's in_proj_weight) and the transformer without
its dead heads and feed-forward units (adrop.heads): the same function, in torch and in onnxruntime."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import adrop
from adrop.heads import CompactAttention, attentions, compact_heads, dead_heads, kept_heads

from user_nets import TinyGPT, TinyViT


def test_structure_neuron_makes_a_head_one_group_of_its_q_k_and_v_rows():
    torch.manual_seed(0)
    model = TinyViT(dim=16, heads=4)
    sp = adrop.sparsify(model, method="logsum", lam=1e-3, structure="neuron")
    layer = sp.layers[sp.names.index("encoder.layers.0.self_attn.in_proj_weight")]
    assert tuple(layer.weight.shape) == (3, 4, 4, 16) and layer.group_shape == (1, 4, 1, 1)
    assert layer.group_size == 3 * 4 * 16
    w = model.encoder.layers[0].self_attn.parametrizations.in_proj_weight.original.detach().reshape(48, 16)
    by_hand = [
        torch.cat([w[part * 16 + h * 4 : part * 16 + (h + 1) * 4] for part in range(3)]).norm() for h in range(4)
    ]
    assert torch.allclose(layer.group_norm(layer.weight).flatten(), torch.stack(by_hand))
    other = sp.layers[sp.names.index("encoder.layers.0.linear1")]
    assert other.group_shape == (32, 1)  # another tensor: its rows
    # the module reads the tensor as it was; strip gives it back in its own shape
    assert model.encoder.layers[0].self_attn.in_proj_weight.shape == (48, 16)
    adrop.strip(model)
    assert model.encoder.layers[0].self_attn.in_proj_weight.shape == (48, 16)


def planted(model: nn.Module) -> nn.Module:
    """Dead heads and units planted: head 0's v rows and head 2's out_proj columns zero, 5 feed-forward units that
    read nothing (their constant output goes on) and 2 that nothing reads."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.MultiheadAttention):
                E, d = m.embed_dim, m.embed_dim // m.num_heads
                m.in_proj_weight[2 * E : 2 * E + d] = 0
                m.out_proj.weight[:, 2 * d : 3 * d] = 0
            if isinstance(m, nn.TransformerEncoderLayer):
                m.linear1.weight[:5] = 0
                m.linear2.weight[:, 7:9] = 0
    return model.eval()


def test_compact_heads_keeps_the_function_of_a_vit_and_a_causal_model():
    torch.manual_seed(0)
    vit = planted(TinyViT(dim=16, heads=4, layers=2))
    x = torch.randn(5, 1, 8, 8)
    small = compact_heads(vit)
    assert [type(layer.self_attn) for layer in small.encoder.layers] == [CompactAttention] * 2
    assert [layer.self_attn.num_heads for layer in small.encoder.layers] == [2, 2]
    assert [layer.linear1.out_features for layer in small.encoder.layers] == [25, 25]
    with torch.no_grad():
        assert torch.allclose(small(x), vit(x), atol=1e-5)
        assert isinstance(vit.encoder.layers[0].self_attn, nn.MultiheadAttention)  # the model is left as it was
    gpt = planted(TinyGPT(heads=2))
    idx = torch.randint(0, 12, (3, 8))
    with torch.no_grad():
        assert torch.allclose(compact_heads(gpt)(idx), gpt(idx), atol=1e-5)
    assert kept_heads({"attn": 2}, gpt.state_dict()) == {"attn": [1, 2]}  # head 0 without v (2 heads: no head 2)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("kept", [[True, False, True, True], [False] * 4])
def test_compact_attention_is_the_attention_it_replaces(batch_first, kept):
    torch.manual_seed(1)
    attention = nn.MultiheadAttention(16, 4, batch_first=batch_first).eval()
    kept = torch.tensor(kept)
    with torch.no_grad():
        for h in torch.nonzero(~kept).flatten().tolist():
            attention.in_proj_weight[32 + 4 * h : 32 + 4 * (h + 1)] = 0
    assert torch.equal(dead_heads(attention.in_proj_weight, attention.out_proj.weight, 4), ~kept)
    compact = CompactAttention(attention, kept).eval()
    q = torch.randn(3, 7, 16) if batch_first else torch.randn(7, 3, 16)
    pad = torch.zeros(3, 7, dtype=torch.bool)
    pad[0, -2:] = True
    causal = torch.ones(7, 7, dtype=torch.bool).triu(1)
    per_head = torch.rand(3 * 4, 7, 7) < 0.3  # B * H masks, one per example and (original) head
    per_head[..., 0] = False  # each row attends somewhere
    with torch.no_grad():
        for options in (
            {},
            {"key_padding_mask": pad},
            {"attn_mask": causal},
            {"attn_mask": causal.float() * -1e9},
            {"attn_mask": per_head},
        ):
            want = attention(q, q, q, need_weights=False, **options)[0]
            got = compact(q, q, q, need_weights=False, **options)[0]
            assert torch.allclose(got, want, atol=1e-5), options


def test_sparsifier_compact_drops_the_heads_training_killed_and_the_model_still_runs():
    torch.manual_seed(0)
    model = TinyViT(classes=4, dim=16, heads=4, layers=1)
    sp = adrop.sparsify(model, method="logsum", lam=5e-2, structure="neuron")  # kills 3 heads of 4 here
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    sp.attach(opt)
    x, y = torch.randn(64, 1, 8, 8), torch.randint(0, 4, (64,))
    for _ in range(100):
        loss = F.cross_entropy(model(x), y) + sp.penalty()
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        before = model(x)
    small = sp.compact()
    heads = small.encoder.layers[0].self_attn.num_heads
    assert 0 < heads < 4, heads
    with torch.no_grad():
        assert torch.allclose(small(x), before, atol=1e-5)
        assert torch.equal(model(x), before)  # the sparsified model works on after its copy lost its parametrizations


@pytest.mark.slow
def test_a_compact_vit_exports_to_onnx_and_runs_in_onnxruntime():
    pytest.importorskip("onnxscript")
    import warnings

    import onnxruntime as ort

    torch.manual_seed(0)
    small = compact_heads(planted(TinyViT(dim=16, heads=4, layers=2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            small,
            (torch.zeros(2, 1, 8, 8),),
            input_names=["x"],
            output_names=["logits"],
            dynamic_shapes={"x": {0: torch.export.Dim("n")}},
            dynamo=True,
            verbose=False,
        )
    session = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = torch.randn(6, 1, 8, 8)
    with torch.no_grad():
        assert np.allclose(session.run(None, {"x": x.numpy()})[0], small(x).numpy(), atol=1e-5)


def test_attentions_with_key_value_bias_rows_or_a_zero_key_keep_their_heads():
    torch.manual_seed(0)
    for options in ({"add_bias_kv": True}, {"add_zero_attn": True}):
        model = nn.Sequential()
        model.attn = nn.MultiheadAttention(16, 4, batch_first=True, **options).eval()
        with torch.no_grad():
            model.attn.in_proj_weight[32:36] = 0  # head 0 without v rows still attends to the extra key
        assert kept_heads(attentions(model), model.state_dict()) == {}
        assert isinstance(compact_heads(model).attn, nn.MultiheadAttention)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
def test_an_encoder_whose_later_layer_lost_heads_takes_a_padding_mask_in_eval():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2).eval()  # nested tensors on: its fast path asks layer 0 only
    with torch.no_grad():
        encoder.layers[1].self_attn.in_proj_weight[32:36] = 0
    small = compact_heads(encoder)
    assert isinstance(small.layers[0].self_attn, nn.MultiheadAttention)
    x, pad = torch.randn(3, 7, 16), torch.zeros(3, 7, dtype=torch.bool)
    pad[0, -3:] = True
    with torch.no_grad():
        want, got = encoder(x, src_key_padding_mask=pad), small(x, src_key_padding_mask=pad)
    assert torch.allclose(got[~pad], want[~pad], atol=1e-5)
