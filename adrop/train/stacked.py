"""Stacked training: K configurations of one method, model, dataset, epochs and batch size trained as one.

What stays each configuration's own: its seed (its initialisation, made exactly as its single run makes it, and its
data order per epoch), its lam and lr, its schedule settings (decay_start, penalty_warmup), its masks and
thresholds. What is shared: the products, batched over a leading configuration axis (baddbmm), one Adam over one
buffer (StackedAdam), one draw of noise for all configurations (so a stacked run does not replay its single run's
noise stream), and one pass of Python per step for all of them.

Each configuration writes exactly the files of a single run into its own folder (metrics.csv, layers.csv,
summary.json, weights.npz, checkpoint.pt; summary.json adds `stacked`: the stack's size), and its checkpoint is a
single run's checkpoint: a stacked run resumes stacked or alone. A configuration whose loss becomes NaN/inf is
marked failed in its own folder and frozen (lr 0, weights 0) while the others go on.

Not bitwise equal to the single runs (batched products and the per-row Adam step round differently): checked
against them by tolerance over the first steps and by statistics over a short training (tests/test_stacked.py).
"""
from __future__ import annotations

import json
import logging
import math
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F

from . import data as data_mod
from . import evaluate, model as model_mod, run_files, schedules, tracking
from .loop import (TrainError, compiled, denormals_flushed, load_weights, method_params, reset_state, resolve_device,
                   run_identity, run_summary, settings, unmasked_errors)
from .optim import StackedAdam

log = logging.getLogger("adrop.train")
# Each configuration's parameters are rows of one (K, n) buffer, so a (K, out, in) parameter is a strided view; its
# gradient is the same view of the gradient buffer and autograd accumulates into it in place, as intended (the
# agreement tests would fail otherwise). torch warns that such views are not dense; the warning says nothing here.
warnings.filterwarnings("ignore", message="grad and param do not obey the gradient layout contract")
PER_CONFIGURATION = ("seed", "lam", "lr", "decay_start", "penalty_warmup")  # what may differ inside a stack
# ... and a method's initialisation parameters (method.params.init_*: init_log_alpha, init_drop, ...), which act only
# when each configuration's network is made, as its single run makes it; the method's other parameters enter its
# elementwise math every step and must agree within a stack
NOT_A_RESULT = ("progress", "logger", "data.root", "data.download")  # what changes no result: never splits a stack


def stack_key(cfg) -> str:
    """Configurations with the same key can train as one stack: all but the per-configuration numbers agree."""
    from omegaconf import OmegaConf

    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra", None)
    for key in PER_CONFIGURATION + NOT_A_RESULT:
        parent, _, leaf = key.rpartition(".")
        (plain.get(parent, {}) if parent else plain).pop(leaf, None)
    params = plain.get("method", {}).get("params", {})
    for key in [k for k in params if k.startswith("init_")]:
        params.pop(key)
    return json.dumps(plain, sort_keys=True, default=str)


def rows(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """t[idx] for a (K, batch) index: each configuration's batch, (K, batch, ...). index_select, not advanced
    indexing: the same rows, and on the 2-core CPU 36 -> 14 us for a batch of 128 MNIST images (one thread)."""
    return t.index_select(0, idx.reshape(-1)).view(*idx.shape, *t.shape[1:])


class StackedRun:
    def __init__(self, cfgs: list, folders: list[Path]):
        if len({stack_key(c) for c in cfgs}) != 1:
            raise ValueError("a stack's configurations must agree in all but " + ", ".join(PER_CONFIGURATION))
        self.cfgs, self.folders, self.K = list(cfgs), [Path(f) for f in folders], len(cfgs)
        for folder in self.folders:
            folder.mkdir(parents=True, exist_ok=True)
        base = cfgs[0]
        self.hps = [settings(c) for c in cfgs]
        self.identities = [run_identity(c, hp) for c, hp in zip(cfgs, self.hps)]
        method_cls, params = method_params(base)
        self.device = resolve_device(base.device)
        try:
            self.data = data_mod.load(base.dataset, base.data, self.device)
        except data_mod.DataError as err:
            raise TrainError(str(err)) from None
        self.steps_per_epoch = math.ceil(len(self.data.train) / base.batch_size)
        self.total_steps = self.steps_per_epoch * base.epochs
        self.method = method_cls(params, self.steps_per_epoch, base.epochs)
        self.model = self.stack_models()
        self.single = model_mod.build(base.model, self.data, self.method)  # one row's network: predict(), positions()
        self.lam = torch.tensor([hp["lam"] for hp in self.hps], device=self.device)  # (K,): layer.per_config shapes it
        self.warmups = [tuple(e * self.steps_per_epoch for e in c.penalty_warmup) for c in cfgs]
        self.optimizer = StackedAdam(self.model.parameters(), self.K)
        # compile=true: one fused kernel for many elementwise passes: the loss (the noisy methods' per-weight work),
        # and Adam's update with the method's after_step (AdaProx's prox), a dozen memory-bound passes made one
        self.loss = compiled(self.step_loss, self.device) if base.compile else self.step_loss
        self.apply_update = compiled(self.update, self.device) if base.compile else self.update
        self.epoch, self.elapsed = 0, 0.0
        self.metrics, self.layer_rows = [[] for _ in cfgs], [[] for _ in cfgs]
        self.failed: list[str | None] = [None] * self.K
        torch.manual_seed(sum(c.seed * 7919 ** i for i, c in enumerate(cfgs)) % 2 ** 63)  # the stack's noise
        if not self.resume():
            self.method.start(self.model.layers)

    def stack_models(self):
        """Each configuration's network made as its single run makes it (its seed, then init_from), stacked."""
        singles = []
        for cfg in self.cfgs:
            method_cls, params = method_params(cfg)  # its own initialisation parameters
            reset_state(cfg.seed, self.device)
            single = model_mod.build(cfg.model, self.data, method_cls(params, self.steps_per_epoch, cfg.epochs))
            if cfg.init_from:
                load_weights(single, Path(cfg.init_from))
            singles.append(single.state_dict())
        stacked = model_mod.build(self.cfgs[0].model, self.data, self.method, configs=self.K)
        with torch.no_grad():
            for name, tensor in stacked.state_dict().items():
                tensor.copy_(torch.stack([s[name] for s in singles]))
        return stacked.to(self.device)

    # -- checkpoints: each configuration's own, in a single run's format ---------------------------------------------
    def resume(self) -> bool:
        states = [run_files.load_checkpoint(folder, self.device) for folder in self.folders]
        if all(s is None for s in states):
            return False
        if any(s is None for s in states) or len({s["epoch"] for s in states}) != 1:
            raise TrainError("a stack resumes only configurations checkpointed after the same epoch")
        with torch.no_grad():
            for k, state in enumerate(states):
                if state["identity"] != self.identities[k]:
                    raise TrainError(f"{self.folders[k]} holds a different run ({state['identity']})")
                for name, tensor in self.model.state_dict().items():
                    tensor[k].copy_(state["model"][name])
                self.optimizer.load_config_state(k, state["optimizer"])
                self.metrics[k], self.layer_rows[k] = state["metrics"], state["layers"]
        self.epoch, self.elapsed = states[0]["epoch"], states[0]["elapsed"]
        torch.set_rng_state(states[0]["rng_cpu"].cpu())
        if self.device.type == "cuda" and states[0].get("rng_cuda") is not None:
            torch.cuda.set_rng_state(states[0]["rng_cuda"].cpu(), self.device)
        log.info("resumed a stack of %d after epoch %d", self.K, self.epoch)
        return True

    def checkpoint(self, k: int) -> None:
        model = {name: tensor[k].clone() for name, tensor in self.model.state_dict().items()}
        run_files.save_checkpoint(self.folders[k], {
            "identity": self.identities[k], "epoch": self.epoch, "model": model,
            "optimizer": self.optimizer.config_state(k), "method": self.method.state_dict(),
            "rng_cpu": torch.get_rng_state(),
            "rng_cuda": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
            "metrics": self.metrics[k],
            "layers": self.layer_rows[k], "elapsed": self.elapsed, "stacked": self.K})

    # -- training -----------------------------------------------------------------------------------------------
    def active(self) -> list[int]:
        return [k for k in range(self.K) if self.failed[k] is None]

    def lrs(self, step: int) -> list[float]:
        return [0.0 if self.failed[k] else schedules.lr_at(step, self.total_steps, hp["lr"], c.schedule, c.decay_start,
                                                           self.steps_per_epoch)
                for k, (c, hp) in enumerate(zip(self.cfgs, self.hps))]

    def penalty_weights(self, step: int) -> list[float]:
        return [0.0 if self.failed[k] else schedules.lam_at(step, hp["lam"], self.warmups[k])
                for k, hp in enumerate(self.hps)]

    def step_loss(self, x, y, weight):
        """Per configuration (K,): data term + weight * penalty, and its two parts, for one batch (K, B, ...)."""
        logits = self.model(x)
        data_term = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none").view(self.K, -1).mean(1)
        penalty = self.method.penalty(self.model.layers, self.lam)
        return data_term + weight * penalty, data_term, penalty

    def train_epoch(self) -> torch.Tensor:
        train, batch = self.data.train, self.cfgs[0].batch_size
        orders = torch.stack([torch.randperm(len(train), generator=torch.Generator().manual_seed(
            c.seed * 1_000_003 + self.epoch)) for c in self.cfgs]).to(self.device)  # each its single run's order
        layers, K = self.model.layers, self.K
        self.model.train()
        sums = torch.zeros(K, 3, device=self.device)
        step0 = self.epoch * self.steps_per_epoch
        frozen = [k for k in range(K) if self.failed[k]]
        steps = range(step0, step0 + self.steps_per_epoch)  # each configuration's schedules, one copy per epoch
        lrs = torch.tensor([self.lrs(s) for s in steps], device=self.device)
        weights = torch.tensor([self.penalty_weights(s) for s in steps], device=self.device)
        for b, step in enumerate(steps):
            idx = orders[:, b * batch:(b + 1) * batch]
            self.optimizer.set_lr(lrs[b])
            self.method.before_step(step, self.lam)
            loss, data_term, penalty = self.loss(rows(train.x, idx), rows(train.y, idx), weights[b])
            self.optimizer.zero_grad()
            loss.sum().backward()
            self.optimizer.advance()
            elementwise = self.method.after_step_is_elementwise(step + 1)
            self.apply_update(elementwise)
            if frozen:
                self.optimizer.freeze(frozen)
            if not elementwise:
                self.method.after_step(layers, step + 1, self.lam, self.optimizer.effective_step)
            sums += torch.stack([loss.detach(), data_term.detach(), penalty.detach()], 1)
        self.method.end_epoch(layers, self.lam, self.optimizer.effective_step,
                              math.ceil(len(self.data.val) / batch))
        return sums / self.steps_per_epoch

    def update(self, with_after_step: bool) -> None:
        """The method's before_update, Adam's update (after optimizer.advance()) and, where it is elementwise
        arithmetic, the method's after_step (step=None): what compile=true traces into one kernel (a step whose
        after_step branches on the step, a pruning schedule's mask update, runs it after this, eagerly)."""
        self.method.before_update(self.model.layers)
        self.optimizer.apply()
        if with_after_step:
            self.method.after_step(self.model.layers, None, self.lam, self.optimizer.effective_step)

    def weights(self, k: int, all_weights) -> list:
        return [(name, w[k], b[k]) for name, w, b in all_weights]

    def fail(self, k: int, message: str) -> None:
        """Configuration k stops (its last good checkpoint stays); the rest of the stack goes on."""
        self.failed[k] = message
        self.optimizer.freeze([k])
        run_files.mark_failed(self.folders[k], message, self.cfgs[k].method.name, self.identities[k], stacked=self.K)
        log.warning("%s failed: %s", self.folders[k], message)

    def fit(self, stop_after: int | None = None) -> list[dict]:
        self.trackers = [tracking.make(c.logger, f) for c, f in zip(self.cfgs, self.folders)]
        try:
            with denormals_flushed(self.device):
                return self._fit(stop_after)
        finally:
            for tracker in self.trackers:
                tracker.close()

    def _fit(self, stop_after):
        base = self.cfgs[0]
        while self.epoch < base.epochs and self.active():
            if stop_after is not None and self.epoch >= stop_after:
                break
            t0 = time.perf_counter()
            sums = self.train_epoch().tolist()  # the one host sync of the epoch's training
            all_weights = evaluate.effective(self.model, self.method, self.lam)
            self.epoch += 1
            seconds = time.perf_counter() - t0
            self.elapsed += seconds
            lr_end = self.lrs(self.epoch * self.steps_per_epoch - 1)
            for k in self.active():
                loss, data_term, penalty = sums[k]
                if not all(math.isfinite(v) for v in sums[k]):
                    self.fail(k, f"the loss became {loss} in epoch {self.epoch} (lr={self.hps[k]['lr']}, "
                                 f"lam={self.hps[k]['lam']}); the last good checkpoint (epoch {self.epoch - 1}) stays")
                    continue
                weights = self.weights(k, all_weights)
                val_error = evaluate.error(self.single.predict, weights, self.data.val, base.eval_batch_size)
                layers, nonzero, total = evaluate.sparsity(weights)
                self.metrics[k].append(run_files.metrics_row(self.epoch, loss, data_term, penalty, val_error,
                                                             nonzero, total, lr_end[k], seconds))
                self.layer_rows[k] += run_files.layer_rows(self.epoch, layers, self.single.positions())
                run_files.write_history(self.folders[k], self.metrics[k], self.layer_rows[k])
                self.checkpoint(k)
                run_files.write_summary(self.folders[k], self.summary(k, "running", val_error=val_error))
                tracker = self.trackers[k]
                stats = tracking.statistics(self.method, self.model, self.lam, k) if tracker.wants_statistics else {}
                tracker.epoch(self.epoch, self.metrics[k][-1], self.layer_rows[k][-len(layers):], stats)
        done = self.epoch >= base.epochs
        all_weights = evaluate.effective(self.model, self.method, self.lam)
        all_unmasked = evaluate.unmasked(self.model, self.method)
        out = []
        for k in range(self.K):
            if self.failed[k] is not None:
                out.append(run_files.read_summary(self.folders[k]))
                continue
            if not done:
                last = self.metrics[k][-1]["val_error"] if self.metrics[k] else None
                out.append(self.summary(k, "running", val_error=last))
                continue
            weights = self.weights(k, all_weights)
            test_error = evaluate.error(self.single.predict, weights, self.data.test, base.eval_batch_size)
            layers, nonzero, total = evaluate.sparsity(weights)
            run_files.write_weights(self.folders[k], weights)
            unmasked = unmasked_errors(self.cfgs[k], self.single.predict, self.weights(k, all_unmasked), self.data)
            summary = self.summary(k, "completed", test_error=test_error, val_error=self.metrics[k][-1]["val_error"],
                                   layers=layers, nonzero=nonzero, total=total, unmasked=unmasked)
            run_files.write_summary(self.folders[k], summary)
            out.append(summary)
        return out

    def summary(self, k: int, status: str, **results) -> dict:
        out = run_summary(self.cfgs[k], self.hps[k], self.identities[k], self.single, self.device, self.epoch,
                          self.elapsed, status, **results)
        out["stacked"] = self.K  # trained in a stack of this many configurations (itself included)
        return out
