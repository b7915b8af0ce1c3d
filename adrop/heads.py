"""Attention heads and feed-forward units a sparse transformer no longer uses, and the smaller transformer without
them (`compact_heads`).

A head of nn.MultiheadAttention (packed projections, E = embed_dim, H heads of d = E/H) is dead when its v rows are
all zero (whatever it attends to, its output is its v bias: attention weights add up to 1, so out_proj's columns for it
add the constant W_o[:, h] b_v[h], which out_proj's bias takes) or when out_proj's columns for it are all zero (it adds
nothing). structure=neuron trains in_proj_weight by heads (adrop.methods.sparse_parameter), so its groups die whole.
A hidden unit of a Transformer layer's feed-forward block (linear1, activation, linear2) is dead when its linear1 row
is zero (it outputs activation(b1), a constant linear2's bias takes) or its linear2 column is.

`compact_heads(model)` returns a copy of a plain model (adrop.strip's, or the user's class with a run's weights.npz)
where each attention with dead heads is a `CompactAttention` of the kept heads and each Transformer layer's
feed-forward block keeps its live units: the same function in eval mode, to float32 rounding.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from adrop.feed_forward import compact_blocks


def linear(inputs: int, outputs: int, bias: bool, like: torch.Tensor) -> nn.Linear:
    """An uninitialised nn.Linear (its weights are copied in) of `like`'s dtype and device, zero-sized ones too (no
    warning about them)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.nn.init warns that a zero-element tensor is left as it is
        return nn.utils.skip_init(nn.Linear, inputs, outputs, bias=bias, dtype=like.dtype, device=like.device)


def dead_heads(in_proj_weight: torch.Tensor, out_proj_weight: torch.Tensor, heads: int) -> torch.Tensor:
    """(H,) bools: which heads are dead (their v rows, or their out_proj columns, all zero)."""
    embed = in_proj_weight.shape[1]
    d = embed // heads
    v = in_proj_weight[2 * embed :].reshape(heads, d * embed)
    columns = out_proj_weight.reshape(out_proj_weight.shape[0], heads, d).transpose(0, 1).reshape(heads, -1)
    return ~(v != 0).any(1) | ~(columns != 0).any(1)


def plain_attention(m: nn.Module) -> bool:
    """An nn.MultiheadAttention whose heads can go: packed projections, no key/value bias rows (add_bias_kv) and no
    zero key (add_zero_attn), with which a head without v rows still attends to something other than its v bias."""
    return isinstance(m, nn.MultiheadAttention) and m._qkv_same_embed_dim and m.bias_k is None and not m.add_zero_attn


def attentions(model: nn.Module) -> dict[str, int]:
    """The attentions whose heads can go (plain_attention), by path: their heads."""
    return {path: m.num_heads for path, m in model.named_modules() if plain_attention(m)}


def kept_heads(heads: dict[str, int], state: dict) -> dict[str, list[int]]:
    """{attention path: [heads kept, heads]} from a state dict's tensors (`attentions`' paths and heads)."""
    out = {}
    for path, h in heads.items():
        prefix = f"{path}." if path else ""
        dead = dead_heads(
            torch.as_tensor(state[f"{prefix}in_proj_weight"]), torch.as_tensor(state[f"{prefix}out_proj.weight"]), h
        )
        out[path] = [int((~dead).sum()), h]
    return out


class CompactAttention(nn.Module):
    """nn.MultiheadAttention's function with only some of its heads (any number, 0 included): q, k and v projections to
    heads x d features, scaled dot-product attention per head, out_proj back to embed_dim. Called as the attention it
    replaces is (query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal;
    batch_first as it was); returns (output, None). Written with matmul and softmax so that any ONNX exporter takes
    it."""

    _qkv_same_embed_dim = False  # torch's fused Transformer fast path does not apply: it wants all heads

    def __init__(self, attention: nn.MultiheadAttention, kept: torch.Tensor):
        super().__init__()
        E, H = attention.embed_dim, attention.num_heads
        d = E // H
        self.embed_dim, self.num_heads, self.head_dim = E, int(kept.sum()), d
        self.batch_first, self.dropout = attention.batch_first, attention.dropout
        rows = torch.arange(E).view(H, d)[kept].reshape(-1)
        self.heads_before = H
        self.register_buffer("kept", torch.nonzero(kept).flatten(), persistent=False)  # a per-head mask's rows
        with torch.no_grad():
            w, b = attention.in_proj_weight, attention.in_proj_bias
            self.in_proj = linear(E, 3 * len(rows), b is not None, w)
            self.in_proj.weight.copy_(torch.cat([w[i * E : (i + 1) * E][rows] for i in range(3)]))
            if b is not None:
                self.in_proj.bias.copy_(torch.cat([b[i * E : (i + 1) * E][rows] for i in range(3)]))
            out = attention.out_proj
            self.out_proj = linear(len(rows), E, True, w)
            self.out_proj.weight.copy_(out.weight[:, rows])
            bias = out.bias.clone() if out.bias is not None else torch.zeros_like(out.weight[:, 0])
            if b is not None:  # a dead head outputs its v bias, which out_proj's columns for it carry to the output
                gone = torch.arange(E).view(H, d)[~kept].reshape(-1)
                bias += out.weight[:, gone] @ b[2 * E :][gone]
            self.out_proj.bias.copy_(bias)

    @property
    def in_proj_bias(self):
        """What torch's Transformer layers look for."""
        return self.in_proj.bias

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights=True,
        attn_mask=None,
        average_attn_weights=True,
        is_causal=False,
    ):
        unbatched, same = query.dim() == 2, query is key and key is value
        if unbatched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        B, L, _ = query.shape
        S, h, d = key.shape[1], self.num_heads, self.head_dim
        if h == 0:
            out = self.out_proj.bias.expand(B, L, self.embed_dim)
        else:
            w, b = self.in_proj.weight, self.in_proj.bias
            n = h * d
            if same:  # self-attention: one product, fewer operators for a runtime
                q, k, v = self.in_proj(query).chunk(3, -1)
            else:
                q, k, v = (
                    F.linear(x, w[i * n : (i + 1) * n], None if b is None else b[i * n : (i + 1) * n])
                    for i, x in enumerate((query, key, value))
                )
            q, k, v = (t.reshape(B, -1, h, d).transpose(1, 2) for t in (q, k, v))
            scores = (q * (1 / math.sqrt(d))) @ k.transpose(-2, -1)  # B x h x L x S
            if is_causal and attn_mask is None:
                attn_mask = torch.ones(L, S, dtype=torch.bool, device=query.device).triu(1)
            if attn_mask is not None:
                # a mask per head (B * H, L, S) is the original heads': the kept heads' rows
                mask = (
                    attn_mask.view(B, self.heads_before, L, S).index_select(1, self.kept)
                    if attn_mask.dim() == 3
                    else attn_mask
                )
                scores = scores.masked_fill(mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
            if key_padding_mask is not None:
                pad = key_padding_mask.view(B, 1, 1, S)
                scores = scores.masked_fill(pad, float("-inf")) if pad.dtype == torch.bool else scores + pad
            weights = F.dropout(scores.softmax(-1), self.dropout, self.training)
            out = self.out_proj((weights @ v).transpose(1, 2).reshape(B, L, h * d))
        if unbatched:
            out = out[0]
        elif not self.batch_first:
            out = out.transpose(0, 1)
        return out, None


def compact_feed_forward(layer: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer) -> None:
    """Keep, in place, the live hidden units of a Transformer layer's linear1 -> activation -> linear2."""
    w1, b1, w2 = layer.linear1.weight, layer.linear1.bias, layer.linear2.weight
    reads = (w1 != 0).any(1)
    read = (w2 != 0).any(0)
    kept = reads & read
    if b1 is not None and layer.linear2.bias is None:
        kept = read  # a unit that reads nothing outputs a constant no bias can take: it stays
    if bool(kept.all()):
        return
    with torch.no_grad():
        constant = ~reads & read  # reads nothing: outputs activation(b1), which linear2's bias takes
        if b1 is not None and bool(constant.any()) and layer.linear2.bias is not None:
            act = layer.activation if callable(layer.activation) else getattr(F, layer.activation)
            layer.linear2.bias += w2[:, constant] @ act(b1[constant])
        one = linear(w1.shape[1], int(kept.sum()), b1 is not None, w1)
        one.weight.copy_(w1[kept])
        if b1 is not None:
            one.bias.copy_(b1[kept])
        two = linear(int(kept.sum()), w2.shape[0], layer.linear2.bias is not None, w2)
        two.weight.copy_(w2[:, kept])
        if layer.linear2.bias is not None:
            two.bias.copy_(layer.linear2.bias)
    layer.linear1, layer.linear2 = one.to(w1.device), two.to(w1.device)


def compact_heads(model: nn.Module) -> nn.Module:
    """A copy of a plain model without its dead heads and dead feed-forward units (in eval mode): torch's attentions
    and Transformer layers here, Hugging Face's feed-forward blocks by adrop.feed_forward."""
    model = copy.deepcopy(model).eval()
    compact_blocks(model)
    for path, module in list(model.named_modules()):
        for name, child in list(module.named_children()):
            if plain_attention(child):
                dead = dead_heads(child.in_proj_weight, child.out_proj.weight, child.num_heads)
                if bool(dead.any()):
                    setattr(module, name, CompactAttention(child, ~dead).to(child.in_proj_weight.device).eval())
            elif isinstance(child, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
                compact_feed_forward(child)
    for encoder in model.modules():  # its nested-tensor fast path asks its first layer's attention only
        if isinstance(encoder, nn.TransformerEncoder) and any(
            isinstance(m, CompactAttention) for m in encoder.modules()
        ):
            encoder.use_nested_tensor = False
    return model
