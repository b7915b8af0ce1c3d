"""Sparsify: any adrop method in a Lightning training, as a Callback; the LightningModule needs no change.

    sparsify = Sparsify(method="logsum", lam=1e-4)
    trainer = pl.Trainer(max_epochs=10, callbacks=[sparsify])
    trainer.fit(module)
    print(sparsify.stats())      # per layer: nonzero, units kept, multiply-adds
    plain = sparsify.strip()     # the module with plain nn.Linear / nn.Conv2d, masks folded in

What it does, hook by hook:
- setup (fit): refuses strategies that start processes by spawn or fork (ddp_spawn, ddp_notebook: the main process
  would get the weights back, not the sparsified module); converts the module's nn.Linear and nn.Conv2d (of
  `pl_module`, or of its submodule named by `module=`) with adrop.sparsify, total_steps =
  trainer.estimated_stepping_batches (the training data must be ready then: a DataModule or the module's
  *_dataloader methods, as for that property). Lightning calls configure_optimizers after the setup hooks, so an
  optimizer made there from self.parameters() holds the method's new parameters. training_step may call the module
  or any submodule: the method is ready for each step after the one before.
- on_train_start: checks that the optimizer holds every parameter of the sparsified layers and attaches to it.
- on_before_optimizer_step (the gradients complete, unscaled under 16-mixed, before gradient clipping): adds the
  penalty's gradient, so the step is that of loss + sp.penalty() with the module's loss a per-example mean; then the
  method's gradient work. After the step, the method's post-step work (the optimizer's step hook).
- on_train_epoch_end: the method's end of epoch, then logs sparsity/nonzero_fraction (all sparsified layers),
  sparsity/collapsed (1 where the network collapsed: sp.stats() warns with its line) and, with per_layer,
  sparsity/<module path>, through pl_module.log_dict to the Trainer's loggers.
- state_dict / load_state_dict: the Sparsifier's (step count, lam, the random generators' state), which Lightning
  keeps in its checkpoints.
"""

from __future__ import annotations

import lightning.pytorch as pl

import adrop
from adrop.integrations import before_step, check_optimizer_holds, inner_optimizer, sparsity_metrics
from adrop.sparsifier import Sparsifier, SparsifyError, lam_of


class Sparsify(pl.Callback):
    """method, lam and the other options (exclude, lam_scale, structure, total_steps, the method's parameters) as
    adrop.sparsify takes them; module: the path of the submodule to sparsify (default the LightningModule)."""

    def __init__(
        self,
        method: str = "logsum",
        lam: float | None = None,
        module: str | None = None,
        per_layer: bool = True,
        **options,
    ):
        if lam is not None or options.get("target") is None:  # a target sets lam itself
            lam = lam_of(method, lam)  # a missing or bad lam refused here, not at fit
        self.method, self.lam, self.module, self.per_layer, self.options = method, lam, module, per_layer, options
        self.sparsifier: Sparsifier | None = None
        self.optimizer = None
        self._pending_state: dict | None = None  # a checkpoint's state that came before the conversion
        self._handle = None

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage != "fit":
            return
        launcher = type(getattr(trainer.strategy, "launcher", None)).__name__
        if launcher == "_MultiProcessingLauncher":
            method = getattr(trainer.strategy, "_start_method", "spawn")
            raise SparsifyError(
                f"Sparsify cannot train under a strategy that starts its processes by {method} (ddp_spawn, "
                "ddp_notebook): they hand the main process only the weights, not the sparsified module and its "
                "Sparsifier; use strategy='ddp' (each process runs your script)"
            )
        target = pl_module if self.module is None else pl_module.get_submodule(self.module)
        if self.sparsifier is not None and self.sparsifier.model is target and not self.sparsifier._stripped:
            return  # a second fit of the same module goes on with its Sparsifier
        options = dict(self.options)
        if "total_steps" not in options:
            steps = trainer.estimated_stepping_batches
            options["total_steps"] = int(steps) if steps != float("inf") else None
        self.sparsifier = adrop.sparsify(target, method=self.method, lam=self.lam, **options)
        if self._pending_state is not None:
            self.sparsifier.load_state_dict(self._pending_state)
            self._pending_state = None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        sp = self._require()
        self.optimizer = self._optimizer_of(trainer)
        sp.attach(self.optimizer, pre_step=False)  # before_update runs in on_before_optimizer_step

    def on_before_optimizer_step(self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer) -> None:
        if self.sparsifier is not None and inner_optimizer(optimizer) is self.optimizer:
            before_step(self.sparsifier, self.optimizer)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        sp = self._require()
        sp.end_epoch()
        pl_module.log_dict(sparsity_metrics(sp, self.per_layer), on_step=False, on_epoch=True)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.sparsifier is not None:
            self.sparsifier.detach()
        self.optimizer = None

    def state_dict(self) -> dict:
        return {} if self.sparsifier is None else self.sparsifier.state_dict()

    def load_state_dict(self, state_dict: dict) -> None:
        if not state_dict:
            return
        if self.sparsifier is None:
            self._pending_state = state_dict
        else:
            self.sparsifier.load_state_dict(state_dict)

    def stats(self):
        """Per sparsified layer: nonzero, units kept, multiply-adds (Sparsifier.stats)."""
        return self._require().stats()

    def strip(self):
        """The sparsified module with plain nn.Linear / nn.Conv2d, masks folded in (adrop.strip)."""
        return self._require().strip()

    def _require(self) -> Sparsifier:
        if self.sparsifier is None:
            raise SparsifyError("Sparsify converts the module when trainer.fit sets it up; nothing is sparsified yet")
        return self.sparsifier

    def _optimizer_of(self, trainer: pl.Trainer):
        """The optimizer that trains the sparsified layers (the one holding their first weight)."""
        sp = self._require()
        advice = (
            "make it in configure_optimizers from self.parameters(): Sparsify converts the module in setup, "
            "before configure_optimizers runs"
        )
        weight = sp.layers[0].weight
        optimizers = [inner_optimizer(o) for o in trainer.optimizers]
        holding = [o for o in optimizers if any(p is weight for g in o.param_groups for p in g["params"])]
        if not holding:
            raise SparsifyError(f"no optimizer of the Trainer holds {sp.names[0]}.weight: {advice}")
        check_optimizer_holds(sp, holding[0], advice)
        return holding[0]
