"""Whether a sparse network collapsed: its output no longer depends on its input (a lam or a method that emptied a
layer, or kept units that no longer connect), and which of its sparse layers keep no weight. `adrop train` fails
such a run (adrop.train.loop.collapse: the same tolerance and message); a Sparsifier says it in sp.stats() and
sp.collapsed(), and the integrations log it.
"""

from __future__ import annotations

import torch

TOLERANCE = 1e-6


def message(empty: list[str], advice: str = "lower lam", depends: bool = False) -> str | None:
    """The one line that says the network collapsed, naming every sparse layer that keeps no weight; None where the
    output depends on the input (`depends`)."""
    if depends:
        return None
    where = (
        "its output does not depend on its input"
        if not empty
        else f"{'layer' if len(empty) == 1 else 'layers'} {', '.join(empty)} "
        f"{'keeps' if len(empty) == 1 else 'keep'} no weight (no path from input to output)"
    )
    return f"the network collapsed: {where}; {advice}"


def first_tensor(out) -> torch.Tensor | None:
    """A model's main output: the tensor itself, a Hugging Face output's logits, a tuple's or a dict's first tensor."""
    if isinstance(out, torch.Tensor):
        return out
    logits = getattr(out, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    values = out.values() if isinstance(out, dict) else out if isinstance(out, (tuple, list)) else ()
    return next((t for t in (first_tensor(v) for v in values) if t is not None), None)


def alike(out: torch.Tensor) -> bool | None:
    """Whether every example of a batch's output (first axis) is the same, to TOLERANCE; None for a batch of one."""
    if out is None or out.dim() == 0 or out.shape[0] < 2 or not out.is_floating_point():
        return None
    return bool(torch.allclose(out[1:], out[:1].expand_as(out[1:]), rtol=0, atol=TOLERANCE))


def zeroed(inputs):
    """A model's inputs with every floating-point tensor zeros (token ids and masks as they are), in a tuple, list or
    dict as given."""
    if isinstance(inputs, torch.Tensor):
        return torch.zeros_like(inputs) if inputs.is_floating_point() else inputs
    if isinstance(inputs, dict):
        return {k: zeroed(v) for k, v in inputs.items()}
    if isinstance(inputs, (tuple, list)):
        return type(inputs)(zeroed(v) for v in inputs)
    return inputs
