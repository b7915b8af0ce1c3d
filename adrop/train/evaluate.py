"""Evaluation with the sparsity mask applied (the authors' code forgot it; see REFERENCE.md), and per-layer sparsity.

Both use each layer's effective weight (masks and deterministic gates folded in), computed once per evaluation: a
weight counts as nonzero exactly when it is nonzero there, which is also what weights.npz holds.
"""
from __future__ import annotations

import torch


@torch.no_grad()
def effective(model, method, lam):
    """[(name, W_eff, b)] in forward order: the method's effective weights at this lam."""
    return [(name, method.effective_weight(layer, lam).detach(), layer.bias.detach())
            for name, layer in zip(model.names, model.layers)]


@torch.no_grad()
def unmasked(model, method):
    """[(name, W, b)] without the keep rule (Method.unmasked_weight): for `evaluate_unmasked`."""
    return [(name, method.unmasked_weight(layer).detach(), layer.bias.detach())
            for name, layer in zip(model.names, model.layers)]


@torch.no_grad()
def error(predict, weights, split, batch: int = 8192) -> float:
    """Fraction misclassified by the network with these weights (predict: the model's forward with given weights)."""
    wrong = torch.zeros((), dtype=torch.long, device=split.x.device)
    for start in range(0, len(split), batch):
        logits = predict(split.x[start:start + batch], weights)
        wrong += (logits.argmax(1) != split.y[start:start + batch]).sum()
    return wrong.item() / len(split)


@torch.no_grad()
def sparsity(weights):
    """Per layer (name, shape, nonzero count, total) and the totals."""
    layers = [(name, tuple(w.shape), int(torch.count_nonzero(w)), w.numel()) for name, w, _ in weights]
    nonzero, total = sum(l[2] for l in layers), sum(l[3] for l in layers)
    return layers, nonzero, total


def unmasked_errors(cfg, predict, weights, data) -> tuple[float, float] | None:
    """(test, val) errors of the network with these unmasked weights (`unmasked`), when cfg.evaluate_unmasked asks
    for them."""
    if not cfg.evaluate_unmasked:
        return None
    return tuple(error(predict, weights, split, cfg.eval_batch_size) for split in (data.test, data.val))
