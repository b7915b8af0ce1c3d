"""sparsify_trainer: any adrop method in a Hugging Face Trainer's training; the model and the loss need no change.

    trainer = Trainer(model=model, args=args, train_dataset=train)
    sp = sparsify_trainer(trainer, method="logsum", lam=1e-4)   # converts trainer.model, installs SparsifyCallback
    trainer.train()
    sp.strip().save_pretrained(path)                            # plain nn.Linear again: from_pretrained reads it

Why a function of the Trainer and not a callback alone: the model must be converted before the Trainer makes its
optimizer (in train(), before any callback event but on_init_end, which cannot see the data that fixes the number of
steps), and the callback that logs the sparsity must come before the reporting callbacks (TensorBoard, W&B, ...)
for them to see it. sparsify_trainer converts trainer.model in place with adrop.sparsify (total_steps: the steps
train() will take, from max_steps or the epochs and the training set's size), and puts a SparsifyCallback first:
- on_train_begin: checks that the optimizer holds every parameter of the sparsified layers, attaches to it (the torch
  optimizer inside accelerate's wrapper) and sets the step count to the Trainer's (a resumed run goes on from its
  checkpoint's step);
- before each optimizer step (the optimizer's step hook: the gradients accumulated, unscaled, clipped): adds the
  penalty's gradient, so the step is that of loss + sp.penalty(), then the method's gradient work; after it, the
  method's post-step work. The model's loss is a mean (per example for a classifier, per token for a language
  model), which is what lam is per. Under gradient accumulation, where the Trainer sums the batches' mean losses
  (a model whose forward takes **kwargs but does not divide by num_items_in_batch: LossScale finds it), the
  penalty's gradient is taken as many times, so that lam stays per example against the data term. max_grad_norm
  (default 1.0) clips the loss's gradient only: the penalty's joins
  after, as a regulariser's proximal step would;
- on_epoch_end: the method's end of epoch; on_log: sparsity/nonzero_fraction, sparsity/collapsed (1 where the
  network collapsed: sp.stats() warns with its line) and, with per_layer, sparsity/<module path> join every log
  (the Trainer's log_history, the reporters, the console).

What adrop converts: every nn.Linear (and nn.Conv2d): BERT's query, key, value and dense projections, its pooler and
classifier; LLaMA's q/k/v/o_proj, gate/up/down_proj and lm_head; GPT-2's attention and feed-forward layers
(transformers' Conv1D, through a parametrization of their weight); and every nn.Embedding (adrop.sparsify's weights);
not norms. A weight tied to another module's (an lm_head tied to the input embeddings) is refused: conversion would
untie it; pass both to exclude (exclude=["lm_head", "*.embed_tokens"]; GPT-2: ["lm_head", "transformer.wte"]). With
weight_decay > 0 the Trainer decays every parameter but biases and norms, the method's own (log_sigma2, log_a) too.
"""

from __future__ import annotations

import fnmatch
import math

import torch
from torch import nn
from transformers import Trainer, TrainerCallback

import adrop
from adrop.integrations import before_step, check_optimizer_holds, inner_optimizer, sparsity_metrics
from adrop.selection import sparse_kind
from adrop.sparsifier import Sparsifier, SparsifyError


class LossScale:
    """What the Trainer's accumulated gradient of the loss is a multiple of: the gradient of the mean loss over a
    step's examples (1) where the Trainer divides each batch's loss by the accumulation steps, or the model divides by
    num_items_in_batch; the accumulation steps where the model takes loss kwargs (its forward has **kwargs, so the
    Trainer leaves the division to it) but does not divide by num_items_in_batch (BertForSequenceClassification):
    the Trainer then sums the batches' means. Which, is probed once, at the first batch the Trainer computes a loss
    for with num_items_in_batch: that loss with num_items_in_batch and twice it, without gradients and with torch's
    generators restored after each (the same dropout, the run's draws untouched); equal losses mean the model
    ignores it."""

    def __init__(self, trainer: Trainer):
        self.trainer, self.ignored = trainer, None
        original = trainer.compute_loss

        def compute_loss(model, inputs, *args, num_items_in_batch=None, **kwargs):
            if self.ignored is None and num_items_in_batch is not None and self.trusted():
                self.ignored = self.probe(original, model, inputs, num_items_in_batch)
            return original(model, inputs, *args, num_items_in_batch=num_items_in_batch, **kwargs)

        trainer.compute_loss = compute_loss

    def trusted(self) -> bool:
        """Whether the Trainer leaves the division by the accumulated items to the model."""
        trainer = self.trainer
        return bool(getattr(trainer, "model_accepts_loss_kwargs", False)) and trainer.compute_loss_func is None

    @staticmethod
    def probe(original, model, inputs, items) -> bool:
        generators = torch.get_rng_state(), (torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None)

        def restore():
            torch.set_rng_state(generators[0])
            if generators[1] is not None:
                torch.cuda.set_rng_state_all(generators[1])

        with torch.no_grad():
            once = original(model, dict(inputs), num_items_in_batch=items)
            restore()
            twice = original(model, dict(inputs), num_items_in_batch=2 * items)
            restore()
        return bool(torch.allclose(once, twice))

    def factor(self) -> float:
        if not (self.ignored and self.trusted()):
            return 1.0
        steps = self.trainer.args.gradient_accumulation_steps
        return float(getattr(self.trainer, "current_gradient_accumulation_steps", steps))


class SparsifyCallback(TrainerCallback):
    """The Trainer's events for a model sparsify_trainer converted (see the module's docstring)."""

    def __init__(self, sparsifier: Sparsifier, per_layer: bool = False, scale: LossScale | None = None):
        self.sparsifier, self.per_layer, self.scale = sparsifier, per_layer, scale
        self._handle = None

    def on_train_begin(self, args, state, control, optimizer=None, **kwargs):
        sp = self.sparsifier
        torch_optimizer = inner_optimizer(optimizer)
        check_optimizer_holds(
            sp, torch_optimizer, "let the Trainer make its optimizer after sparsify_trainer converted the model"
        )
        sp.attach(torch_optimizer, pre_step=False)
        self._remove_hook()
        factor = self.scale.factor if self.scale is not None else (lambda: 1.0)
        self._handle = torch_optimizer.register_step_pre_hook(lambda *_: before_step(sp, torch_optimizer, factor()))
        if sp.needs_steps:
            sp.steps = state.global_step

    def on_epoch_end(self, args, state, control, **kwargs):
        self.sparsifier.end_epoch()

    def on_log(self, args, state, control, logs=None, **kwargs):
        metrics = sparsity_metrics(self.sparsifier, self.per_layer)
        logs.update(metrics)
        if state.log_history:  # the Trainer appended this log's copy just before
            state.log_history[-1].update(metrics)

    def on_train_end(self, args, state, control, **kwargs):
        self.sparsifier.detach()
        self._remove_hook()

    def _remove_hook(self):
        if self._handle is not None:
            self._handle.remove()
            self._handle = None


def sparsify_trainer(
    trainer: Trainer, method: str = "logsum", lam: float | None = None, per_layer: bool = False, **options
) -> Sparsifier:
    """Convert trainer.model for `method` before trainer.train() and install the SparsifyCallback; returns the
    Sparsifier (stats(), strip()). options: as adrop.sparsify takes them (exclude, lam_scale, structure,
    total_steps, the method's parameters)."""
    if trainer.optimizer is not None:
        raise SparsifyError(
            "the Trainer was given its optimizer (optimizers=...), made from the model before "
            "conversion: let the Trainer make it, or call adrop.sparsify before making it yourself"
        )
    if trainer.model_init is not None:
        raise SparsifyError(
            "the Trainer makes a new model from model_init in train(), which would not be "
            "sparsified: give it the model itself"
        )
    refuse_tied(trainer.model, options.get("exclude", ()))
    options.setdefault("total_steps", planned_steps(trainer))
    sp = adrop.sparsify(trainer.model, method=method, lam=lam, **options)
    trainer.callback_handler.callbacks.insert(0, SparsifyCallback(sp, per_layer, LossScale(trainer)))
    return sp


def planned_steps(trainer: Trainer) -> int | None:
    """The optimizer steps train() will take, as the Trainer counts them: max_steps, or the epochs times the steps
    of an epoch (its batches per process, gradient_accumulation_steps to a step); None for data without a length."""
    args, data = trainer.args, trainer.train_dataset
    if args.max_steps > 0:
        return args.max_steps
    if data is None or not hasattr(data, "__len__"):
        return None
    per_process = math.ceil(len(data) / args.world_size)
    rounding = math.floor if args.dataloader_drop_last else math.ceil
    batches = rounding(per_process / args.train_batch_size)
    per_epoch = max(math.ceil(batches / args.gradient_accumulation_steps), 1)
    return math.ceil(args.num_train_epochs * per_epoch)


def refuse_tied(model: nn.Module, exclude) -> None:
    """Refuse a layer to convert whose weight another module shares (tied embeddings): conversion would untie it."""
    owners: dict[int, list[str]] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        for name, p in module.named_parameters(recurse=False, remove_duplicate=False):
            owners.setdefault(id(p), []).append(path)
    patterns = list(exclude)
    for path, module in model.named_modules():
        if sparse_kind(module) is None or any(fnmatch.fnmatchcase(path, p) for p in patterns):
            continue
        others = sorted(set(owners[id(module.weight)]) - {path})
        if others:
            raise SparsifyError(
                f"{path}'s weight is tied to {others[0]}'s: converting it would untie them; pass exclude=[{path!r}]"
            )
