"""sp.compact() on Hugging Face transformers (LLaMA's gated blocks with grouped-query attention, BERT, GPT-2's Conv1D):
the dead hidden units of each feed-forward block go, units that output a constant fold into a bias, the logits stay
what they were, and the attentions whose dead heads stay are named."""

import warnings

import pytest
import torch

import adrop
from adrop.sparsifier import SparsityWarning

hf = pytest.importorskip("transformers")


def llama():
    config = hf.LlamaConfig(
        mlp_bias=True,  # biases: a unit whose rows are zero outputs act(b_gate) * b_up, a constant folded into down's
        vocab_size=40,
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16,
    )
    return hf.LlamaForCausalLM(config)


def bert():
    config = hf.BertConfig(
        vocab_size=40,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=24,
        max_position_embeddings=16,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return hf.BertForSequenceClassification(config)


def gpt2():
    config = hf.GPT2Config(
        n_layer=2,
        n_embd=16,
        n_head=2,
        n_inner=24,
        vocab_size=40,
        n_positions=16,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    return hf.GPT2LMHeadModel(config)


@torch.no_grad()
def plant(model):
    """Random biases (the libraries start them at 0, where no constant would be folded); in each block units 0-2 read
    by nothing, units 3-4 read nothing (gated: both rows zero), so 5 of 24 go and units 3-4's constants, act(b) (gated:
    act(b_gate) * b_up), move into the last projection's bias."""
    for m in model.modules():
        if hasattr(m, "bias") and isinstance(m.bias, torch.Tensor):
            m.bias.normal_()
    for m in model.modules():
        if hasattr(m, "gate_proj"):
            m.down_proj.weight[:, 0:3] = 0
            m.up_proj.weight[3:5] = 0
            m.gate_proj.weight[3:5] = 0
        elif hasattr(m, "c_fc"):
            m.c_proj.weight[0:3] = 0  # Conv1D: (inputs, outputs)
            m.c_fc.weight[:, 3:5] = 0
        elif hasattr(m, "intermediate") and hasattr(m, "output"):
            m.output.dense.weight[:, 0:3] = 0
            m.intermediate.dense.weight[3:5] = 0
    return model


def hidden_sizes(model):
    sizes = []
    for m in model.modules():
        if hasattr(m, "gate_proj"):
            sizes.append((m.gate_proj.out_features, m.up_proj.out_features, m.down_proj.in_features))
        elif hasattr(m, "c_fc"):
            sizes.append((m.c_fc.nf, m.c_fc.weight.shape[1], m.c_proj.weight.shape[0]))
        elif hasattr(m, "intermediate") and hasattr(m, "output"):
            sizes.append((m.intermediate.dense.out_features, m.output.dense.in_features))
    return sizes


@pytest.mark.parametrize("make", [llama, bert, gpt2])
def test_compact_drops_the_dead_units_of_each_feed_forward_block_and_keeps_the_logits(make):
    torch.manual_seed(0)
    model = plant(make()).eval()
    ids = torch.randint(0, 40, (3, 8))
    with torch.no_grad():
        before = model(input_ids=ids).logits
    tied = ["lm_head", "transformer.wte"] if make is gpt2 else []  # GPT-2's output layer is its embedding
    sp = adrop.sparsify(model, method="dense", exclude=tied)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SparsityWarning)  # no dead head: nothing to name
        small = sp.compact()
    assert all(set(s) == {19} for s in hidden_sizes(small)) and len(hidden_sizes(small)) == 2
    with torch.no_grad():
        torch.testing.assert_close(small(input_ids=ids).logits, before, rtol=1e-4, atol=1e-5)
    assert all(set(s) == {24} for s in hidden_sizes(sp.plain_copy()))  # the model itself is left as it was


def test_attentions_whose_dead_heads_stay_are_named():
    torch.manual_seed(0)
    model = llama().eval()
    with torch.no_grad():
        model.model.layers[1].self_attn.o_proj.weight[:, 4:8] = 0  # head 1 adds nothing
    sp = adrop.sparsify(model, method="dense")
    with pytest.warns(SparsityWarning, match=r"dead heads of 1 attention \(model.layers.1.self_attn\)"):
        sp.compact()
