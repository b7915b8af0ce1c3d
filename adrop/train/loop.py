"""The training loop of `adrop train`: method-agnostic, data on the device, one host sync per epoch.

Each epoch: a fixed permutation for (seed, epoch) (so a resumed run sees the same batches), Adam on
data term + lam * method penalty, the method's after-step hook, the learning rate decayed per step; then the
masked validation error, per-layer sparsity, the CSV files and a checkpoint. At the end: the masked test error,
weights.npz and summary.json.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

from adrop import methods
from adrop.provenance import code_version

from . import data as data_mod
from . import cost, evaluate, model as model_mod, run_files, schedules, tracking
from .schedules import SCHEDULES
from .optim import FlatAdam

log = logging.getLogger("adrop.train")


class TrainError(Exception):
    """A run that cannot start or go on; the message is for the user (one line)."""


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise TrainError(f"device={name} but CUDA is not available here (torch {torch.__version__}); "
                             "use device=cpu or device=auto")
        return torch.device(name)
    if name == "cpu":
        return torch.device("cpu")
    raise TrainError(f"unknown device {name!r}; valid: auto, cpu, cuda, cuda:N")


def reset_state(seed: int, device: torch.device) -> None:
    """Every job starts from the same state, whatever ran before it in the process (sweeps run jobs in one)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def method_params(cfg):
    """The method's parameters, checked against its dataclass (unknown keys and wrong types fail here)."""
    cls = methods.get(cfg.method.name)
    fields = [f.name for f in dataclasses.fields(cls.Params)]
    valid = f"(valid: {', '.join(fields) or 'none'})"
    unknown = [key for key in cfg.method.params.keys() if key not in fields]  # `+method.params.x=1` gets past Hydra
    if unknown:
        raise TrainError(f"method.params for {cls.name}: Key {unknown[0]!r} not in {cls.Params.__name__!r} {valid}")
    try:
        merged = OmegaConf.merge(OmegaConf.structured(cls.Params), cfg.method.params)
        return cls, OmegaConf.to_object(merged)
    except Exception as err:
        raise TrainError(f"method.params for {cls.name}: {str(err).splitlines()[0]} {valid}") from None


def settings(cfg) -> dict:
    """The effective lam and lr (null = the method's default), validated."""
    lam = cfg.method.lam if cfg.lam is None else cfg.lam
    lr = cfg.method.lr if cfg.lr is None else cfg.lr
    checks = [(lam >= 0 and math.isfinite(lam), f"lam must be >= 0, got {lam}"),
              (lr > 0 and math.isfinite(lr), f"lr must be > 0, got {lr}"),
              (cfg.epochs >= 1, f"epochs must be >= 1, got {cfg.epochs}"),
              (cfg.batch_size >= 1, f"batch_size must be >= 1, got {cfg.batch_size}"),
              (cfg.schedule in SCHEDULES, f"schedule must be one of {', '.join(SCHEDULES)}, got {cfg.schedule!r}"),
              (0 <= cfg.decay_start < 1, f"decay_start must be in [0, 1), got {cfg.decay_start}"),
              (len(cfg.penalty_warmup) == 2 and 0 <= cfg.penalty_warmup[0] <= cfg.penalty_warmup[1],
               f"penalty_warmup must be [a, b] epochs with 0 <= a <= b, got {list(cfg.penalty_warmup)}"),
              (cfg.progress in ("auto", "always", "never"), "progress must be auto, always or never")]
    for ok, message in checks:
        if not ok:
            raise TrainError(message)
    return {"lam": float(lam), "lr": float(lr)}


def run_identity(cfg, hp: dict | None = None) -> dict:
    """What makes two commands the same run: a folder is resumed (or left alone, when finished) only by its own run.
    Settings added after checkpoints existed enter only when they differ from their default, so those still resume."""
    hp = settings(cfg) if hp is None else hp
    identity = {"method": cfg.method.name, "lam": hp["lam"], "lr": hp["lr"], "seed": cfg.seed,
                "epochs": cfg.epochs, "batch_size": cfg.batch_size, "dataset": cfg.dataset.name,
                "train_limit": cfg.data.train_limit}
    if cfg.schedule != "linear":
        identity["schedule"] = cfg.schedule
    if cfg.decay_start:
        identity["decay_start"] = cfg.decay_start
    if any(cfg.penalty_warmup):
        identity["penalty_warmup"] = list(cfg.penalty_warmup)
    if cfg.init_from:
        identity["init_from"] = str(cfg.init_from)
    if cfg.evaluate_unmasked:
        identity["evaluate_unmasked"] = True
    if cfg.model.name != "lenet_300_100":
        conv = [list(c) for c in cfg.model.conv]
        identity["model"] = f"{cfg.model.name}{conv if conv else ''}{list(cfg.model.hidden)}"
    cls, params = method_params(cfg)
    changed = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)
               if getattr(params, f.name) != getattr(cls.Params(), f.name)}
    if changed:
        identity["method_params"] = changed
    return identity


def run_summary(cfg, hp, identity, model, device, epoch, elapsed, status, test_error=None, val_error=None,
                layers=None, nonzero=None, total=None, unmasked=None) -> dict:
    """summary.json of one run (its schema: adrop.train.run_files); `model` gives the architecture and, for the cost,
    how often each layer's weights act per example; `unmasked` the (test, val) errors without the keep rule."""
    positions = model.positions()
    return {"status": status, "method": cfg.method.name, "lam": hp["lam"], "lr": hp["lr"],
            "seed": cfg.seed, "epochs": epoch, "epochs_planned": cfg.epochs,
            "test_error": test_error, "val_error": val_error,
            **({} if unmasked is None else {"test_error_unmasked": unmasked[0], "val_error_unmasked": unmasked[1]}),
            "nonzero_fraction": None if total is None else nonzero / total,
            "nonzero": nonzero, "total": total,
            "layers": None if layers is None else {name: {"shape": list(shape), "nonzero": nz, "total": n,
                                                           "fraction": nz / n, **cost.layer_cost(shape, nz, p)}
                                                    for (name, shape, nz, n), p in zip(layers, positions)},
            "cost": None if layers is None else cost.network_cost(layers, positions),
            "wall_time_s": elapsed, "device": str(device), "dataset": cfg.dataset.name,
            "code": code_version(), "model": cfg.model.name, "architecture": model.architecture,
            "identity": identity,
            "batch_size": cfg.batch_size, "train_limit": cfg.data.train_limit}


def unmasked_errors(cfg, predict, weights, data) -> tuple[float, float] | None:
    """(test, val) errors of the network with these unmasked weights (evaluate.unmasked), when cfg.evaluate_unmasked
    asks for them."""
    if not cfg.evaluate_unmasked:
        return None
    return tuple(evaluate.error(predict, weights, split, cfg.eval_batch_size) for split in (data.test, data.val))


def load_weights(model, source: Path) -> None:
    """Weights and biases from another run's weights.npz (its folder or the file); method parameters start fresh."""
    path = source / "weights.npz" if source.is_dir() else source
    if not path.is_file():
        raise TrainError(f"init_from={source}: no weights.npz there (a run writes it when it completes)")
    with np.load(path) as arrays:
        saved = {key: arrays[key] for key in arrays.files}
    with torch.no_grad():
        for name, layer in zip(model.names, model.layers):
            for part in ("weight", "bias"):
                key, target = f"{name}.{part}", getattr(layer, part)
                if key not in saved or saved[key].shape != tuple(target.shape):
                    found = saved[key].shape if key in saved else "nothing"
                    raise TrainError(f"init_from={source}: {key} should be {tuple(target.shape)}, found {found}")
                target.copy_(torch.from_numpy(saved[key]))


def compiled(fn, device: torch.device):
    """torch.compile(fn) for compile=true. On a CPU the random numbers inside the graph come from eager torch
    (inductor's fallback_random): inductor's own CPU generator measured slower than eager (HardConcrete's stacked
    epoch 0.64 s against 0.44 s with it, one thread), and with eager's generator a compiled run draws the noise its
    eager run draws, so it stays within rounding of it (tested)."""
    if device.type == "cpu":
        import torch._inductor.config as inductor_config

        inductor_config.fallback_random = True
    return torch.compile(fn)


@contextlib.contextmanager
def denormals_flushed(device: torch.device):
    """Subnormal floats read and written as zero while training on the CPU, and only then.

    Weights on their way to zero get gradients whose squares and averages fall below 1.2e-38 (subnormal floats),
    where x86 arithmetic is ~100x slower: an eta_trick epoch went from 6 s to 38 s. The flag is the processor's,
    so it is put back afterwards: set for good, it changed NumPy's arithmetic in the rest of the process (the
    penalty calculus, Hypothesis's float strategies)."""
    if device.type != "cpu":
        yield
        return
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


class Run:
    """One training run in `folder`, resumed from its checkpoint when there is one."""

    def __init__(self, cfg, folder: Path, multirun: bool = False):
        self.cfg, self.folder, self.multirun = cfg, Path(folder), multirun
        self.hp = settings(cfg)
        self.folder.mkdir(parents=True, exist_ok=True)
        method_cls, params = method_params(cfg)
        self.device = resolve_device(cfg.device)
        reset_state(cfg.seed, self.device)
        try:
            self.data = data_mod.load(cfg.dataset, cfg.data, self.device)
        except data_mod.DataError as err:
            raise TrainError(str(err)) from None
        self.steps_per_epoch = math.ceil(len(self.data.train) / cfg.batch_size)
        self.warmup_steps = tuple(e * self.steps_per_epoch for e in cfg.penalty_warmup)  # the ramp, in steps
        self.method = method_cls(params, self.steps_per_epoch, cfg.epochs)
        try:
            self.model = model_mod.build(cfg.model, self.data, self.method)
        except ValueError as err:
            raise TrainError(str(err)) from None
        if cfg.init_from:
            load_weights(self.model, Path(cfg.init_from))
        self.model.to(self.device)
        self.optimizer = FlatAdam(self.model.parameters(), lr=self.hp["lr"])
        self.loss = compiled(self.step_loss, self.device) if cfg.compile else self.step_loss
        self.epoch, self.metrics, self.layer_rows, self.elapsed = 0, [], [], 0.0
        self.identity = run_identity(cfg, self.hp)
        if not self.resume():
            self.method.start(self.model.layers)

    # -- checkpoint ---------------------------------------------------------------------------------------------
    def resume(self) -> bool:
        state = run_files.load_checkpoint(self.folder, self.device)
        if state is None:
            return False
        if state["identity"] != self.identity:
            raise TrainError(f"{self.folder} holds a different run ({state['identity']}); adrop never overwrites "
                             "an earlier run: choose another hydra.run.dir")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.method.load_state_dict(state["method"])
        torch.set_rng_state(state["rng_cpu"].cpu())
        if self.device.type == "cuda" and state.get("rng_cuda") is not None:
            torch.cuda.set_rng_state(state["rng_cuda"].cpu(), self.device)
        self.epoch, self.metrics, self.layer_rows = state["epoch"], state["metrics"], state["layers"]
        self.elapsed = state["elapsed"]
        log.info("resumed %s after epoch %d", self.folder, self.epoch)
        return True

    def checkpoint(self):
        run_files.save_checkpoint(self.folder, {
            "identity": self.identity, "epoch": self.epoch, "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(), "method": self.method.state_dict(),
            "rng_cpu": torch.get_rng_state(),
            "rng_cuda": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
            "metrics": self.metrics, "layers": self.layer_rows, "elapsed": self.elapsed})

    # -- training -----------------------------------------------------------------------------------------------
    def lr_at(self, step: int) -> float:
        return schedules.lr_at(step, self.steps_per_epoch * self.cfg.epochs, self.hp["lr"], self.cfg.schedule,
                               self.cfg.decay_start, self.steps_per_epoch)

    def lam_at(self, step: int) -> float:
        """lam times the penalty term's weight: 1 unless penalty_warmup ramps it in (Molchanov et al.: [5, 20])."""
        return schedules.lam_at(step, self.hp["lam"], self.warmup_steps)

    def step_loss(self, x, y, lam):
        """data term + lam * penalty for one batch, and its two parts."""
        data_term = F.cross_entropy(self.model(x), y)
        penalty = torch.as_tensor(self.method.penalty(self.model.layers, self.hp["lam"]))
        return data_term + lam * penalty, data_term, penalty

    def train_epoch(self):
        cfg, train = self.cfg, self.data.train
        g = torch.Generator().manual_seed(cfg.seed * 1_000_003 + self.epoch)
        order = torch.randperm(len(train), generator=g).to(self.device)
        layers = self.model.layers
        self.model.train()
        sums = torch.zeros(3, device=self.device)
        step0 = self.epoch * self.steps_per_epoch
        for b in range(self.steps_per_epoch):
            idx = order[b * cfg.batch_size:(b + 1) * cfg.batch_size]
            for group in self.optimizer.param_groups:
                group["lr"] = self.lr_at(step0 + b)
            self.method.before_step(step0 + b, self.hp["lam"])
            loss, data_term, penalty = self.loss(train.x[idx], train.y[idx], self.lam_at(step0 + b))
            self.optimizer.zero_grad()
            loss.backward()
            self.method.before_update(layers)
            self.optimizer.step()
            self.method.after_step(layers, step0 + b + 1, self.hp["lam"], self.optimizer.effective_step)
            sums += torch.stack([loss.detach(), data_term.detach(), penalty.detach()])
        self.method.end_epoch(layers, self.hp["lam"], self.optimizer.effective_step,
                              math.ceil(len(self.data.val) / cfg.batch_size))
        return (sums / self.steps_per_epoch).tolist()  # the one host sync of the epoch

    def evaluate(self, split):
        self.model.eval()
        weights = evaluate.effective(self.model, self.method, self.hp["lam"])
        return weights, evaluate.error(self.model.predict, weights, split, self.cfg.eval_batch_size)

    def fit(self, stop_after: int | None = None) -> dict:
        """Train to cfg.epochs (or stop after epoch `stop_after`, leaving the run to be resumed)."""
        self.tracker = tracking.make(self.cfg.logger, self.folder)  # only now: Run() may still have refused the folder
        try:
            with denormals_flushed(self.device):
                return self._fit(stop_after)
        finally:
            self.tracker.close()

    def _fit(self, stop_after: int | None) -> dict:
        cfg = self.cfg
        bar = self.progress_bar()
        while self.epoch < cfg.epochs:
            if stop_after is not None and self.epoch >= stop_after:
                return self.summary("running", val_error=self.metrics[-1]["val_error"] if self.metrics else None)
            t0 = time.perf_counter()
            loss, data_term, penalty = self.train_epoch()
            if not all(math.isfinite(v) for v in (loss, data_term, penalty)):
                raise TrainError(f"the loss became {loss} in epoch {self.epoch + 1} (lr={self.hp['lr']}, "
                                 f"lam={self.hp['lam']}); the last good checkpoint (epoch {self.epoch}) stays")
            weights, val_error = self.evaluate(self.data.val)
            layers, nonzero, total = evaluate.sparsity(weights)
            self.epoch += 1
            seconds = time.perf_counter() - t0
            self.elapsed += seconds
            self.metrics.append(run_files.metrics_row(self.epoch, loss, data_term, penalty, val_error, nonzero, total,
                                                      self.lr_at(self.epoch * self.steps_per_epoch - 1), seconds))
            self.layer_rows += run_files.layer_rows(self.epoch, layers, self.model.positions())
            run_files.write_history(self.folder, self.metrics, self.layer_rows)
            self.checkpoint()
            run_files.write_summary(self.folder, self.summary("running", val_error=val_error))
            stats = (tracking.statistics(self.method, self.model, self.hp["lam"]) if self.tracker.wants_statistics
                     else {})
            self.tracker.epoch(self.epoch, self.metrics[-1], self.layer_rows[-len(layers):], stats)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.4f}", val_err=f"{val_error:.4f}", nonzero=f"{nonzero / total:.4f}")
        if bar is not None:
            bar.close()
        weights, test_error = self.evaluate(self.data.test)
        layers, nonzero, total = evaluate.sparsity(weights)
        run_files.write_weights(self.folder, weights)
        summary = self.summary("completed", test_error=test_error, val_error=self.metrics[-1]["val_error"],
                               layers=layers, nonzero=nonzero, total=total,
                               unmasked=unmasked_errors(self.cfg, self.model.predict,
                                                        evaluate.unmasked(self.model, self.method), self.data))
        run_files.write_summary(self.folder, summary)
        return summary

    def progress_bar(self):
        mode = self.cfg.progress
        if mode == "never" or (mode == "auto" and (self.multirun or not sys.stderr.isatty())):
            return None
        from tqdm import tqdm

        return tqdm(total=self.cfg.epochs, initial=self.epoch, desc=self.cfg.method.name, unit="epoch")

    def summary(self, status, **results) -> dict:
        return run_summary(self.cfg, self.hp, self.identity, self.model, self.device, self.epoch, self.elapsed, status,
                           **results)
