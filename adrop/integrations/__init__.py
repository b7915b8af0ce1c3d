"""adrop inside training frameworks: optional extras, each importing its framework only when imported itself.

    adrop.integrations.lightning      Sparsify, a Lightning Callback            pip install 'adrop[lightning]'
    adrop.integrations.transformers   sparsify_trainer, for a Hugging Face Trainer  pip install 'adrop[transformers]'

Both convert the model before the framework makes its optimizer (the method's own tensors, log_sigma2 or log_a, are
parameters the conversion creates), attach the Sparsifier to that optimizer, and add the penalty's gradient to the
loss's right before each optimizer step: the gradient of loss + penalty, with no code in the user's loss. Under
gradient accumulation it is added once per step, as to the mean loss over the accumulated batches; under mixed
precision after the gradients are unscaled. What both share is here.
"""

from __future__ import annotations

import torch

from adrop import optimizer_wiring
from adrop.sparsifier import Sparsifier, SparsifyError


def inner_optimizer(optimizer) -> torch.optim.Optimizer:
    """The torch optimizer inside a framework's wrapper: accelerate's AcceleratedOptimizer (an Optimizer itself, whose
    step hooks would not run) holds it as `optimizer`, Lightning's LightningOptimizer as `_optimizer`."""
    while True:
        inner = getattr(optimizer, "optimizer", None) or getattr(optimizer, "_optimizer", None)
        if not isinstance(inner, torch.optim.Optimizer):
            break
        optimizer = inner
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise SparsifyError(f"adrop cannot find the torch optimizer inside {type(optimizer).__name__}")
    return optimizer


def check_optimizer_holds(sp: Sparsifier, optimizer: torch.optim.Optimizer, advice: str) -> None:
    """Refuse an optimizer made before the conversion (it would train tensors the model no longer uses), with the
    framework's advice (sp.attach refuses it too, in the words of a plain loop)."""
    missing = optimizer_wiring.missing_from(optimizer, sp.names, sp.layers)
    if missing:
        raise SparsifyError(
            f"the optimizer does not hold {missing[0]} ({len(missing)} of the sparsified layers' "
            f"parameters missing): {advice}"
        )


def add_penalty_gradient(sp: Sparsifier, optimizer: torch.optim.Optimizer, scale: float = 1.0) -> None:
    """Add the gradient of sp.penalty() (times `scale`: what the loss's gradient is a multiple of its mean's) to the
    gradients the loss left. autograd.grad, not backward: no gradient hook of the model's (DDP's reduction) fires for
    a term every process computes alike."""
    params = [p for _, p in optimizer_wiring.trained_parameters(sp.names, sp.layers)]
    with torch.enable_grad():
        penalty = sp.penalty() if scale == 1.0 else scale * sp.penalty()
    if not penalty.requires_grad:  # a method without a penalty (dense, magnitude pruning)
        return
    grads = torch.autograd.grad(penalty, params, allow_unused=True)
    with torch.no_grad():
        for p, g in zip(params, grads):
            if g is None:
                continue
            if p.grad is None:
                p.grad = g
            else:
                p.grad.add_(g)


def before_step(sp: Sparsifier, optimizer: torch.optim.Optimizer, scale: float = 1.0) -> None:
    """What runs once the loss's gradients are complete, before the update: the penalty's gradient (times `scale`,
    add_penalty_gradient's), then the method's gradient work (pruning's masks zero masked gradients, the penalty's
    too). A step where the loss left no gradient at all (a skipped batch) gets neither: the optimizer does not move
    then."""
    if all(p.grad is None for group in optimizer.param_groups for p in group["params"]):
        return
    add_penalty_gradient(sp, optimizer, scale)
    sp.before_update()


def sparsity_metrics(sp: Sparsifier, per_layer: bool) -> dict[str, float]:
    """sparsity/nonzero_fraction: the nonzero weights of all sparsified layers over their weights;
    sparsity/collapsed: 1 where the network collapsed (sp.stats() warns with the line, a SparsityWarning);
    sparsity/lam: lam now (a target steers it); with per_layer, sparsity/<module path> each layer's fraction."""
    stats = sp.stats()
    metrics = {
        "sparsity/nonzero_fraction": float(stats.nonzero.sum() / stats.total.sum()),
        "sparsity/collapsed": float(stats.attrs["collapsed"] is not None),
        "sparsity/lam": float(sp.lam),
    }
    if per_layer:
        metrics.update(
            {f"sparsity/{name}": float(fraction) for name, fraction in zip(stats.layer, stats.nonzero_fraction)}
        )
    return metrics
