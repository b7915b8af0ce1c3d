"""Evaluation with the sparsity mask applied (the authors' code, dlej/adaptive-dropout, leaves it out), and per-layer
sparsity.

Both use each layer's effective weight (masks and deterministic gates folded in), computed once per evaluation: a
weight counts as nonzero exactly when it is nonzero there, which is also what weights.npz holds.
"""

from __future__ import annotations

import torch

from adrop.methods.sparse_parameter import units_kept
from adrop.train.tasks import Classification


@torch.no_grad()
def effective(model, method, lam) -> dict:
    """The network's state (every parameter and buffer, stacked) with each sparse layer's weight its effective weight
    at this lam: what the network evaluates with."""
    state = {key: t.detach() for key, t in model.state_dict().items()}
    for name, layer in zip(model.names, model.layers):
        state[model.key[name]] = layer.as_module(method.effective_weight(layer, lam)).detach()
    return state


@torch.no_grad()
def unmasked(model, method) -> dict:
    """The same without the keep rule (Method.unmasked_weight): for `evaluate_unmasked`."""
    state = {key: t.detach() for key, t in model.state_dict().items()}
    for name, layer in zip(model.names, model.layers):
        state[model.key[name]] = layer.as_module(method.unmasked_weight(layer)).detach()
    return state


@torch.no_grad()
def measure(task, predict, weights, split, batch: int = 8192) -> dict[str, float]:
    """The task's metrics ({"error": ...}) of the network with these tensors (predict(x, state): its forward with
    them) on a split, in float32 throughout: cuDNN's convolutions would otherwise round their inputs to TF32 on a GPU,
    and what a run reports is what its weights.npz gives in float32 (adrop export checks it so)."""
    with torch.backends.cudnn.flags(enabled=torch.backends.cudnn.enabled, allow_tf32=False):
        return task.measure(predict, weights, split, batch)


def error(predict, weights, split, batch: int = 8192) -> float:
    """Fraction misclassified by the network with these tensors (classification's metric)."""
    return measure(Classification(), predict, weights, split, batch)["error"]


@torch.no_grad()
def sparsity(network, state: dict):
    """Per sparse layer (name, shape, nonzero count, total) and the totals, from one network's state."""
    layers = [
        (name, tuple(w.shape), int(torch.count_nonzero(w)), w.numel())
        for name, w in ((n, state[network.key[n]]) for n in network.names)
    ]
    nonzero, total = sum(l[2] for l in layers), sum(l[3] for l in layers)
    return layers, nonzero, total


@torch.no_grad()
def dense(network, state: dict) -> list[tuple[str, int, int]]:
    """(module, nonzero, total) of the parameters trained densely (all but the sparse layers' weights), per module that
    owns them, a sparse layer's bias under the layer's name, from one network's state."""
    out: dict[str, list[int]] = {}
    for name in network.dense_sizes:
        owner = name.rsplit(".", 1)[0] if "." in name else "(root)"
        counts = out.setdefault(owner, [0, 0])
        counts[0] += int(torch.count_nonzero(state[name]))
        counts[1] += state[name].numel()
    return [(owner, nz, n) for owner, (nz, n) in out.items()]


@torch.no_grad()
def kept_units(network, state: dict):
    """Per sparse layer (inputs kept, inputs, outputs kept, outputs), and the compact network (adrop.compact) for
    adrop's built-in chains, else None. A chain's units are the compact network's (a unit kept when it is read and
    reads); any other network's, read from each layer's weights alone: an input (a Linear column, a conv input channel)
    kept when a weight on it is nonzero, an output (a row, a filter) when one of its weights is."""
    from adrop.compact import compact

    weights = {n: state[network.key[n]].detach().cpu() for n in network.names}
    if network.chain:
        image = network.input_shape if any(w.dim() == 4 for w in weights.values()) else None
        biases = {n: state.get(f"{n}.bias") for n in network.names}
        kept = compact(
            network.names,
            {n: (weights[n].numpy(), None if biases[n] is None else biases[n].cpu().numpy()) for n in network.names},
            image,
        )
        return [
            (w.shape[1], weights[n].shape[1], w.shape[0], weights[n].shape[0])
            for n, (w, _) in zip(network.names, kept.layers)
        ], kept
    return [
        units_kept(weights[n] != 0, getattr(layer, "inputs_first", False))
        for n, layer in zip(network.names, network.layers)
    ], None


def unmasked_errors(run, task, predict, weights, data) -> tuple[float, float] | None:
    """(test, val) values of the task's first metric for the network with these unmasked weights (`unmasked`), when
    the run's settings (evaluate_unmasked) ask for them."""
    if not run.evaluate_unmasked:
        return None
    return tuple(
        measure(task, predict, weights, split, run.eval_batch_size)[task.metrics[0]] for split in (data.test, data.val)
    )
