"""The feed-forward blocks of Hugging Face transformers without their dead hidden units, and the attentions whose dead
heads `compact` leaves (named, not removed).

Three forms of block are recognised by their modules' names, whatever the model's class:

    gated (LLaMA, Mistral, Qwen ...)   down_proj(act_fn(gate_proj(x)) * up_proj(x))
    BERT, ViT                          output.dense(intermediate_act_fn(intermediate.dense(x)))
    GPT-2 (transformers' Conv1D)       c_proj(act(c_fc(x)))

A hidden unit goes when nothing reads it (its column of the last projection is zero), or when it outputs a constant
(its rows of the first projections zero, so it outputs act(b), or 0 where a gate or an up row is zero and has no
bias): a constant of 0 adds nothing, any other is added to the last projection's bias (kept where there is none).
The block computes what it did, to float32 rounding; its modules keep their class, with fewer rows or columns.
"""

from __future__ import annotations

import torch
from torch import nn


def _conv1d(m: nn.Module) -> bool:
    """transformers' Conv1D (GPT-2): y = x @ weight + bias, weight (inputs, outputs)."""
    return type(m).__name__ == "Conv1D" and hasattr(m, "nf")


def _projection(m) -> bool:
    return isinstance(m, nn.Linear) or _conv1d(m)


def _out_by_in(m: nn.Module) -> torch.Tensor:
    """The weight as (outputs, inputs), whichever way the module stores it."""
    return m.weight.t() if _conv1d(m) else m.weight


def blocks(model: nn.Module) -> list[tuple[str, list[nn.Module], nn.Module, object, bool]]:
    """Each feed-forward block: (path, its first projections, its last, the activation, gated)."""
    found = []
    for path, m in model.named_modules():
        if all(_projection(getattr(m, n, None)) for n in ("gate_proj", "up_proj", "down_proj")):
            found.append((path, [m.gate_proj, m.up_proj], m.down_proj, getattr(m, "act_fn", None), True))
        elif all(_projection(getattr(m, n, None)) for n in ("c_fc", "c_proj")) and hasattr(m, "act"):
            found.append((path, [m.c_fc], m.c_proj, m.act, False))
        else:
            first = getattr(getattr(m, "intermediate", None), "dense", None)
            last = getattr(getattr(m, "output", None), "dense", None)
            act = getattr(getattr(m, "intermediate", None), "intermediate_act_fn", None)
            if _projection(first) and _projection(last) and act is not None:
                found.append((path, [first], last, act, False))
    return [b for b in found if b[3] is not None]


@torch.no_grad()
def hidden_constants(first: list[nn.Module], act, gated: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Per hidden unit: whether it outputs a constant (its rows zero), and that constant (NaN where it does not)."""
    rows = [_out_by_in(m) for m in first]
    biases = [m.bias if m.bias is not None else torch.zeros_like(w[:, 0]) for m, w in zip(first, rows)]
    silent = [~(w != 0).any(1) for w in rows]  # a row of zeros: the projection outputs its bias there
    if gated:
        gate, up = silent
        gate_out, up_out = act(biases[0].clone()), biases[1]  # clone: an in-place activation would change the bias
        constant = (gate & up) | (gate & (gate_out == 0)) | (up & (up_out == 0))
        value = torch.where(gate & up, gate_out * up_out, torch.zeros_like(up_out))
    else:
        constant, value = silent[0], act(biases[0].clone())
    return constant, torch.where(constant, value, torch.full_like(value, float("nan")))


@torch.no_grad()
def compact_block(first: list[nn.Module], last: nn.Module, act, gated: bool) -> int:
    """Drop, in place, the block's dead hidden units; returns how many went."""
    w_last = _out_by_in(last)
    read = (w_last != 0).any(0)
    constant, value = hidden_constants(first, act, gated)
    foldable = constant & read & (value != 0)
    if last.bias is None:
        kept = read & ~(constant & (value == 0))
    else:
        kept = read & ~constant
        if bool(foldable.any()):
            last.bias += w_last[:, foldable] @ value[foldable].to(w_last.dtype)
    if bool(kept.all()):
        return 0
    for m in first:
        if _conv1d(m):
            m.weight = nn.Parameter(m.weight[:, kept].clone(), requires_grad=m.weight.requires_grad)
            m.nf = int(kept.sum())
        else:
            m.weight = nn.Parameter(m.weight[kept].clone(), requires_grad=m.weight.requires_grad)
            m.out_features = int(kept.sum())
        if m.bias is not None:
            m.bias = nn.Parameter(m.bias[kept].clone(), requires_grad=m.bias.requires_grad)
    if _conv1d(last):
        last.weight = nn.Parameter(last.weight[kept].clone(), requires_grad=last.weight.requires_grad)
        if hasattr(last, "nx"):
            last.nx = int(kept.sum())
    else:
        last.weight = nn.Parameter(last.weight[:, kept].clone(), requires_grad=last.weight.requires_grad)
        last.in_features = int(kept.sum())
    return int((~kept).sum())


def compact_blocks(model: nn.Module) -> dict[str, int]:
    """Every recognised feed-forward block of `model` without its dead units, in place: {block path: units dropped}."""
    return {path: compact_block(first, last, act, gated) for path, first, last, act, gated in blocks(model)}


def attentions_with_dead_heads(model: nn.Module) -> list[str]:
    """Attentions of Hugging Face's forms (o_proj, BERT's output.dense after self.query, GPT-2's c_attn and c_proj)
    with a head whose output projection columns are all zero: what `compact` leaves whole, by path."""
    found = []
    for path, m in model.named_modules():
        out, size = None, None
        if _projection(getattr(m, "o_proj", None)):
            out, size = m.o_proj, getattr(m, "head_dim", None)
        elif _projection(getattr(m, "c_attn", None)) and _projection(getattr(m, "c_proj", None)):
            out, size = m.c_proj, getattr(m, "head_dim", None)
        elif hasattr(getattr(m, "self", None), "query") and _projection(
            getattr(getattr(m, "output", None), "dense", None)
        ):
            out, size = m.output.dense, getattr(m.self, "attention_head_size", None)
        if out is None or not size:
            continue
        columns = _out_by_in(out)
        per_head = (columns != 0).reshape(columns.shape[0], -1, int(size)).any(2).any(0)
        if not bool(per_head.all()):
            found.append(path)
    return found
