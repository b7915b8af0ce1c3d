"""The training engine of `adrop train`: K >= 1 configurations of one method, model, dataset, epochs and batch size,
trained as one. A single run is a stack of one; every launcher trains through this.

Each epoch: each configuration's fixed permutation for (seed, epoch) (so a resumed run sees the same batches), Adam on
data term (the task's loss: adrop.train.tasks) + lam * method penalty, the method's hooks, each learning rate decayed
per step; then the task's masked validation metrics, per-layer sparsity, the CSV files and a checkpoint per
configuration. At the end: the masked test metrics, weights.npz and summary.json.

What stays each configuration's own: its seed (its initialisation, made exactly as a stack of one makes it, and its
data order), its lam and lr, its schedule settings (decay_start, penalty_warmup), its masks and thresholds. What is
shared: the products, batched over a leading configuration axis; one Adam over one (K, n) buffer (StackedAdam); one
draw of noise for all configurations (so a stack of K does not replay its members' noise streams when alone); and one
pass of Python per step.

Each configuration writes the files of a run into its own folder (summary.json says `stacked`: the stack's size), and
its checkpoint is the same whatever the stack: a run resumes in a stack or alone. A configuration whose loss becomes
non-finite, or whose data term passes 1000 times a trivial guess's (adrop.train.tasks), is marked failed in its own
folder and frozen (lr 0, weights 0) while the others go on.

The reference: K = 1 gives the same files bit for bit for the same command, seed and thread count on the CPU. A stack
of K > 1 rounds differently (batched products, per-row Adam) and is checked against its K stacks of one by tolerance
over the first steps and by statistics over a short training (tests/test_stacked.py).
"""

from __future__ import annotations

import logging
import math
import sys
import time
import warnings
from pathlib import Path

import torch

from adrop.heads import kept_heads
from adrop.methods.base import Method
from adrop.target import LamController, critical_lams
from adrop.train import current_paths, tasks
from adrop.train.config import schedules
from adrop.train.config.settings import Settings
from adrop.train.data import tensors
from adrop.train.errors import TrainError
from adrop.train.loop import collapse, evaluate
from adrop.train.loop.optim import StackedAdam
from adrop.train.nets import network as network_mod
from adrop.train.run_folder import run_files, tracking
from adrop.train.runtime import Interrupted, compiled, denormals_flushed, interruption, reset_state, resolve_device

log = logging.getLogger("adrop.train")
# Each configuration's parameters are rows of one (K, n) buffer, so a (K, out, in) parameter is a strided view; its
# gradient is the same view of the gradient buffer and autograd accumulates into it in place, as intended (the
# agreement tests would fail otherwise). torch warns that such views are not dense; the warning says nothing here.
warnings.filterwarnings("ignore", message="grad and param do not obey the gradient layout contract")


def rows(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """t[idx] for a (K, batch) index: each configuration's batch, (K, batch, ...). index_select, not advanced
    indexing: the same rows, and on one CPU core 36 -> 14 us for a batch of 128 MNIST images (one thread)."""
    return t.index_select(0, idx.reshape(-1)).view(*idx.shape, *t.shape[1:])


def load_weights(network, source: Path) -> None:
    """The tensors of another run's weights.npz (its folder or the file) that this network has (its sparse layers'
    weights and biases must be there); the method's own parameters start fresh."""
    path = source / run_files.WEIGHTS if source.is_dir() else source
    if not path.is_file():
        raise TrainError(f"init_from={source}: no {run_files.WEIGHTS} there (a run writes it when it completes)")
    saved = run_files.read_weights(path)
    state = network.state_dict()
    needed = [network.key[name] for name in network.names] + [
        f"{name}.bias" for name, layer in zip(network.names, network.layers) if layer.bias is not None
    ]
    with torch.no_grad():
        for key in network.keys:
            target = state[key]
            if key not in saved:
                if key in needed:
                    raise TrainError(f"init_from={source}: {key} should be {tuple(target.shape)}, found nothing")
                continue
            shape = network.shapes.get(key, tuple(target.shape))  # an attention's by heads: the module's
            if saved[key].shape != shape:
                raise TrainError(f"init_from={source}: {key} should be {shape}, found {saved[key].shape}")
            target.copy_(torch.from_numpy(saved[key]).view_as(target))


class Engine:
    """K configurations (`runs`, resolved Settings that share a stack key) trained as one, each in its own folder,
    resumed from their checkpoints when there are some. `multirun`: a sweep's job (no progress bar)."""

    def __init__(self, runs: list[Settings], folders: list[Path], multirun: bool = False):
        if len({r.stack_key for r in runs}) != 1:
            raise ValueError("a stack's configurations must agree in all but their per-configuration settings")
        self.runs, self.folders, self.K, self.multirun = list(runs), [Path(f) for f in folders], len(runs), multirun
        for folder in self.folders:
            folder.mkdir(parents=True, exist_ok=True)
        base = self.settings = runs[0]
        self.device = resolve_device(base.device)
        self.task = tasks.get(base.task)
        self.columns = run_files.metrics_columns(self.task)
        try:
            self.data = base.source.load(base.data, self.device, self.task)
        except tensors.DataError as err:
            raise TrainError(str(err)) from None
        self.steps_per_epoch = math.ceil(len(self.data.train) / base.batch_size)
        self.total_steps = self.steps_per_epoch * base.epochs
        self.method = runs[0].make_method(self.steps_per_epoch)
        self.input_shape = network_mod.input_shape_of(self.data)
        self.black = (
            (-torch.tensor(self.data.mean) / torch.tensor(self.data.std)).to(self.device)
            if self.data.mean is not None
            else None
        )  # a black pixel, normalised: crop_flip's padding
        try:
            self.model = self.stack_models()
            network_mod.check_output(self.single, self.data.train.x[:2], self.task)  # the module fits the data
            self.single.eval()
            positions = self.single.positions() if base.lam_cost == "macs" else None
            for net in (self.single, self.model):
                network_mod.scale_lam(net, base.lam_scale, base.lam_cost, positions)
        except ValueError as err:
            raise TrainError(str(err)) from None
        self.lam = torch.tensor([r.lam for r in runs], device=self.device)  # (K,): layer.per_config shapes it
        # target_nonzero: each configuration's lam steered after every step (adrop.target; the same target in a stack)
        self.targets = [
            LamController(r.target_nonzero, self.total_steps, r.target_cost) if r.target_nonzero else None for r in runs
        ]
        self.steered = self.targets[0] is not None
        self.works_after_step = type(self.method).after_step is not Method.after_step  # steered before it, too
        if self.steered:
            self.columns = [*self.columns, "lam"]
        self.warmups = [tuple(e * self.steps_per_epoch for e in r.penalty_warmup) for r in runs]
        self.optimizer = StackedAdam(self.model.parameters(), self.K)
        # compile=true: one fused kernel for many elementwise passes: the loss (the noisy methods' per-weight work),
        # and Adam's update with the method's after_step (AdaProx's prox), a dozen memory-bound passes made one
        self.loss = compiled(self.step_loss, self.device) if base.compile else self.step_loss
        self.apply_update = compiled(self.update, self.device) if base.compile else self.update
        self.epoch, self.elapsed = 0, 0.0
        self.metrics, self.layer_rows = [[] for _ in runs], [[] for _ in runs]
        self.failed: list[str | None] = [None] * self.K
        torch.manual_seed(sum(r.seed * 7919**i for i, r in enumerate(runs)) % 2**63)  # the stack's noise
        if not self.resume():
            self.method.start(self.model.layers)

    def stack_models(self):
        """Each configuration's network made from its seed (then init_from), stacked. The first configuration's is
        kept as `single`, the one-row network that evaluates every row (with that row's tensors), counts the cost's
        positions and checks that the module fits the data: each network is built once."""
        singles = []
        for k, run in enumerate(self.runs):
            reset_state(run.seed, self.device)
            method = self.method if k == 0 else run.make_method(self.steps_per_epoch)  # its init_*
            dtype = self.data.train.x.dtype  # the inputs': float, or token ids
            single = network_mod.build(run, self.input_shape, self.data.classes, method, dtype=dtype)
            if run.init_from:
                load_weights(single, Path(run.init_from))
            singles.append(single.state_dict())
            if k == 0:
                self.single = single.to(self.device)
        stacked = network_mod.build(self.settings, self.input_shape, self.data.classes, self.method, configs=self.K)
        with torch.no_grad():
            for name, tensor in stacked.state_dict().items():
                tensor.copy_(torch.stack([s[name] for s in singles]))
        return stacked.to(self.device)

    def describe(self) -> list[str]:
        """The run's opening lines: what the method trains and what trains densely (parameters counted), the data's
        classes and where they came from, and any note on the data."""
        data = self.data
        outputs = self.task.outputs_in_words(data.classes, data.classes_from)
        return [
            f"{self.single.describe(self.settings.method.name, self.settings.structure)}; "
            f"{outputs}, {len(data.train):,} training examples, {len(data.val):,} for validation",
            *data.notes,
        ]

    # -- checkpoints: each configuration's own -----------------------------------------------------------------------
    def resume(self) -> bool:
        states = [run_files.load_checkpoint(folder, self.device) for folder in self.folders]
        if all(s is None for s in states):
            return False
        if any(s is None for s in states) or len({s["epoch"] for s in states}) != 1:
            raise TrainError("a stack resumes only configurations checkpointed after the same epoch")
        ours = set(self.model.state_dict())
        for k, state in enumerate(states):
            missing = sorted(ours - set(state["model"]))
            if missing:
                raise TrainError(
                    f"{self.folders[k] / run_files.CHECKPOINT} holds no {missing[0]}: it was written by "
                    "another network or an earlier adrop and cannot resume here; train in a new folder"
                )
        with torch.no_grad():
            for k, state in enumerate(states):
                if current_paths(state["identity"]) != self.runs[k].identity:
                    raise TrainError(
                        f"{self.folders[k]} holds a different run ({state['identity']}); adrop never "
                        "overwrites an earlier run: choose another hydra.run.dir"
                    )
                for name, tensor in self.model.state_dict().items():
                    tensor[k].copy_(state["model"][name])
                self.optimizer.load_config_state(k, state["optimizer"])
                self.metrics[k], self.layer_rows[k] = state["metrics"], state["layers"]
                if self.steered:
                    self.lam[k] = state["lam"]
                    self.targets[k].load_state_dict(state["target"])
        self.method.load_state_dict(states[0]["method"])
        self.epoch, self.elapsed = states[0]["epoch"], states[0]["elapsed"]
        torch.set_rng_state(states[0]["rng_cpu"].cpu())
        if self.device.type == "cuda" and states[0].get("rng_cuda") is not None:
            torch.cuda.set_rng_state(states[0]["rng_cuda"].cpu(), self.device)
        log.info("resumed %s after epoch %d", ", ".join(map(str, self.folders)), self.epoch)
        return True

    def checkpoint(self, k: int) -> None:
        model = {name: tensor[k].clone() for name, tensor in self.model.state_dict().items()}
        run_files.save_checkpoint(
            self.folders[k],
            {
                "identity": self.runs[k].identity,
                "epoch": self.epoch,
                "model": model,
                "optimizer": self.optimizer.config_state(k),
                "method": self.method.state_dict(),
                "rng_cpu": torch.get_rng_state(),
                "rng_cuda": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None,
                "metrics": self.metrics[k],
                "layers": self.layer_rows[k],
                "elapsed": self.elapsed,
                "stacked": self.K,
                **({"lam": float(self.lam[k]), "target": self.targets[k].state_dict()} if self.steered else {}),
            },
        )

    # -- training -----------------------------------------------------------------------------------------------
    def active(self) -> list[int]:
        return [k for k in range(self.K) if self.failed[k] is None]

    def lrs(self, step: int) -> list[float]:
        return [
            0.0
            if self.failed[k]
            else schedules.lr_at(step, self.total_steps, r.lr, r.schedule, r.decay_start, self.steps_per_epoch)
            for k, r in enumerate(self.runs)
        ]

    def penalty_weights(self, step: int, steered: bool = False) -> list[float]:
        """lam times the penalty term's weight: 1 unless penalty_warmup ramps it in (Molchanov et al.: [5, 20]);
        steered, the weight alone (the step multiplies it by the steered lam)."""
        return [
            0.0 if self.failed[k] else schedules.lam_at(step, 1.0 if steered else r.lam, self.warmups[k])
            for k, r in enumerate(self.runs)
        ]

    def step_loss(self, x, y, weight):
        """Per configuration (K,): data term + weight * penalty, and its two parts, for one batch (K, B, ...)."""
        out = self.model(x)
        data_term = self.task.loss(out.flatten(0, 1), y.flatten(0, 1)).view(self.K, -1).mean(1)
        penalty = self.method.penalty(self.model.layers, self.lam)
        return data_term + weight * penalty, data_term, penalty

    def train_epoch(self, bar=None) -> torch.Tensor:
        train, batch = self.data.train, self.settings.batch_size
        orders = torch.stack(
            [
                torch.randperm(len(train), generator=torch.Generator().manual_seed(r.seed * 1_000_003 + self.epoch))
                for r in self.runs
            ]
        ).to(self.device)  # each its own order
        layers, K = self.model.layers, self.K
        self.model.train()
        sums = torch.zeros(K, 3, device=self.device)
        step0 = self.epoch * self.steps_per_epoch
        frozen = [k for k in range(K) if self.failed[k]]
        steps = range(step0, step0 + self.steps_per_epoch)  # each configuration's schedules, one copy per epoch
        lrs = torch.tensor([self.lrs(s) for s in steps], device=self.device)
        weights = torch.tensor([self.penalty_weights(s, steered=self.steered) for s in steps], device=self.device)
        for b, step in enumerate(steps):
            idx = orders[:, b * batch : (b + 1) * batch]
            self.optimizer.set_lr(lrs[b])
            self.method.before_step(step, self.lam)
            x = rows(train.x, idx)
            if self.data.augment != "none":
                x = tensors.augment(x, self.data.image, self.data.augment, self.black)
            weight = weights[b] * self.lam if self.steered else weights[b]
            loss, data_term, penalty = self.loss(x, rows(train.y, idx), weight)
            self.optimizer.zero_grad()
            loss.sum().backward()
            self.optimizer.advance()
            elementwise = self.method.after_step_is_elementwise(step + 1) and not self.steered
            self.apply_update(elementwise)
            if frozen:
                self.optimizer.freeze(frozen)
            if self.steered and self.works_after_step:
                self.steer(step + 1)  # the price for the stepped weights: the lam of the post-step work
            if not elementwise:
                self.method.after_step(layers, step + 1, self.lam, self.optimizer.effective_step)
            if self.steered:
                self.steer(step + 1)  # and for the weights it left: what evaluation reads
            sums += torch.stack([loss.detach(), data_term.detach(), penalty.detach()], 1)
            if bar is not None:
                bar.update(1)
        self.method.end_epoch(layers, self.lam, self.optimizer.effective_step, math.ceil(len(self.data.val) / batch))
        return sums / self.steps_per_epoch

    @torch.no_grad()
    def steer(self, step: int) -> None:
        """Each active configuration's lam set to its target's price for the weights as they are (adrop.target:
        LamController.bind), from every sparse layer's critical lams (Method.critical_lam) in that row."""
        positions = self.single.positions() if self.targets[0].cost == "macs" else None
        critical = critical_lams(self.method, self.model.layers, positions)
        for k in self.active():
            self.lam[k] = self.targets[k].bind(step, float(self.lam[k]), [(c[k], n) for c, n in critical])

    def update(self, with_after_step: bool) -> None:
        """The method's before_update, Adam's update (after optimizer.advance()) and, where it is elementwise
        arithmetic, the method's after_step (step=None): what compile=true traces into one kernel (a step whose
        after_step branches on the step, a pruning schedule's mask update, runs it after this, eagerly)."""
        self.method.before_update(self.model.layers)
        self.optimizer.apply()
        if with_after_step:
            self.method.after_step(self.model.layers, None, self.lam, self.optimizer.effective_step)

    def weights(self, k: int, all_weights: dict) -> dict:
        """Configuration k's row of the stack's state (evaluate.effective or evaluate.unmasked): one network's."""
        return {key: t[k] for key, t in all_weights.items()}

    def divergence(self, k: int, sums: list[float]) -> str | None:
        """Why configuration k's epoch counts as divergence, or None."""
        loss, data_term, penalty = sums
        run = self.runs[k]
        kept = f"the last good checkpoint (epoch {self.epoch - 1}) stays" if self.epoch > 1 else "no epoch finished"
        where = f"in epoch {self.epoch} (lr={run.lr}, lam={run.lam}); {kept}"
        if not all(math.isfinite(v) for v in sums):
            return f"the loss became {loss} {where}"
        why = self.task.divergence(data_term, self.data.classes)
        return None if why is None else f"the training diverged: {why}, {where}"

    def fail(self, k: int, message: str, **extra) -> None:
        """Configuration k stops (its last good checkpoint stays); the rest of the stack goes on. `extra`: more for
        its summary.json."""
        self.failed[k] = message
        self.optimizer.freeze([k])
        run_files.mark_failed(
            self.folders[k], message, self.settings.method.name, self.runs[k].identity, stacked=self.K, **extra
        )
        log.info("%s failed: %s", self.folders[k], message)  # the launcher tells the user, in one line

    def fit(self, stop_after: int | None = None) -> list[dict]:
        """Train to the planned epochs (or stop after epoch `stop_after`, leaving the runs to be resumed); each
        configuration's summary."""
        self.trackers = [tracking.make(r.logger, f) for r, f in zip(self.runs, self.folders)]
        try:
            with denormals_flushed(self.device):
                return self._fit(stop_after)
        except (KeyboardInterrupt, Interrupted) as stop:
            for k in self.active():
                done = self.metrics[k][-1]["epoch"] if self.metrics[k] else 0  # its last checkpoint's epoch
                kept = f"the checkpoint of epoch {done} stays" if done else "before its first checkpoint"
                run_files.mark_interrupted(self.folders[k], f"{interruption(stop)} in epoch {done + 1}; {kept}")
            raise
        finally:
            for tracker in self.trackers:
                tracker.close()

    def _fit(self, stop_after):
        epochs = self.settings.epochs
        bar = self.progress_bar()
        while self.epoch < epochs and self.active():
            if stop_after is not None and self.epoch >= stop_after:
                break
            t0 = time.perf_counter()
            sums = self.train_epoch(bar).tolist()  # the one host sync of the epoch's training
            all_weights = evaluate.effective(self.model, self.method, self.lam)
            self.epoch += 1
            seconds = time.perf_counter() - t0
            self.elapsed += seconds
            lr_end = self.lrs(self.epoch * self.steps_per_epoch - 1)
            for k in self.active():
                why = self.divergence(k, sums[k])
                if why is not None:
                    self.fail(k, why)
                    continue
                self.end_of_epoch(k, sums[k], self.weights(k, all_weights), lr_end[k], seconds, bar)
        if bar is not None:
            bar.close()
        done = self.epoch >= epochs
        all_weights = evaluate.effective(self.model, self.method, self.lam)
        all_unmasked = evaluate.unmasked(self.model, self.method)
        out = []
        for k in range(self.K):
            if self.failed[k] is not None:
                out.append(run_files.read_summary(self.folders[k]))
            elif not done:
                last = self.metrics[k][-1] if self.metrics[k] else {}
                out.append(self.summary(k, "running", **{c: last.get(c) for c in self.val_columns}))
            else:
                out.append(self.finish(k, self.weights(k, all_weights), self.weights(k, all_unmasked)))
        return out

    def end_of_epoch(self, k: int, sums: list[float], weights, lr: float, seconds: float, bar) -> None:
        """Configuration k's record of the epoch just trained: its rows, checkpoint, summary and tracking."""
        loss, data_term, penalty = sums
        val = evaluate.measure(self.task, self.single.predict, weights, self.data.val, self.settings.eval_batch_size)
        layers, nonzero, total = evaluate.sparsity(self.single, weights)
        units, _ = evaluate.kept_units(self.single, weights)
        row = run_files.metrics_row(self.epoch, loss, data_term, penalty, val, nonzero, total, lr, seconds)
        if self.steered:
            row["lam"] = float(self.lam[k])
            kept = nonzero / total
            if self.targets[k].cost == "macs":
                acting = [(n, t, p) for (_, _, n, t), p in zip(layers, self.single.positions()) if p]
                kept = sum(n * p for n, _, p in acting) / sum(t * p for _, t, p in acting)
            self.targets[k].record(self.epoch * self.steps_per_epoch, row["lam"], kept)
        self.metrics[k].append(row)
        self.layer_rows[k] += run_files.layer_rows(
            self.epoch,
            layers,
            self.single.positions(),
            self.single.biases(),
            units,
            evaluate.dense(self.single, weights),
        )
        run_files.write_history(self.folders[k], self.metrics[k], self.layer_rows[k], self.columns)
        self.checkpoint(k)
        run_files.write_summary(self.folders[k], self.summary(k, "running", **{f"val_{m}": v for m, v in val.items()}))
        tracker = self.trackers[k]
        stats = tracking.statistics(self.method, self.model, self.lam, k) if tracker.wants_statistics else {}
        tracker.epoch(self.epoch, self.metrics[k][-1], self.layer_rows[k][-len(layers) :], stats)
        # the data term, the penalty term beside it: a penalty's constant (LogSum's) would hide the data's progress
        first = self.task.metrics[0]
        shown = f"val {self.task.label(first)} {self.task.format(first, val[first])}"
        line = (
            f"epoch {self.epoch}/{self.settings.epochs}: {self.task.data_term} {data_term:.4f} (+ penalty "
            f"{loss - data_term:.4g}), {shown}, nonzero {nonzero / total:.4f}, {seconds:.1f} s"
        )
        log.info("%s: %s", self.folders[k].name, line)  # the job's log file
        if bar is not None and self.K == 1:
            bar.set_postfix(
                {
                    self.task.data_term: f"{data_term:.4f}",
                    "penalty": f"{loss - data_term:.4g}",
                    f"val_{first}": self.task.format(first, val[first]),
                    "nonzero": f"{nonzero / total:.4f}",
                }
            )
        elif bar is None and not self.multirun and self.settings.progress != "never":  # a line an epoch
            print(f"adrop train: {line}", file=sys.stderr, flush=True)

    def finish(self, k: int, weights, unmasked) -> dict:
        """Configuration k's final evaluation: the test error, weights.npz and its completed summary.json; or, where
        its network collapsed (adrop.train.loop.collapse), its failure."""
        run = self.runs[k]
        why = collapse.collapsed(self.single, weights, self.data.val.x, run.method.name)
        if why is not None:  # its sparsity and last val metrics kept: a lam search brackets its target with it
            _, nonzero, total = evaluate.sparsity(self.single, weights)
            self.fail(
                k,
                why,
                collapsed=True,
                nonzero_fraction=nonzero / total,
                **{c: self.metrics[k][-1][c] if self.metrics[k] else None for c in self.val_columns},
            )
            return run_files.read_summary(self.folders[k])
        test = evaluate.measure(self.task, self.single.predict, weights, self.data.test, run.eval_batch_size)
        layers, nonzero, total = evaluate.sparsity(self.single, weights)
        units, kept = evaluate.kept_units(self.single, weights)
        run_files.write_weights(self.folders[k], {key: weights[key] for key in self.single.keys})
        errors = evaluate.unmasked_errors(run, self.task, self.single.predict, unmasked, self.data)
        summary = self.summary(
            k,
            "completed",
            **{f"test_{m}": v for m, v in test.items()},
            **{c: self.metrics[k][-1][c] for c in self.val_columns},
            layers=layers,
            nonzero=nonzero,
            total=total,
            unmasked=errors,
            units=units,
            kept=kept,
            dense=evaluate.dense(self.single, weights),
            heads=kept_heads(self.single.attentions, weights),
        )
        run_files.write_summary(self.folders[k], summary)
        return summary

    def progress_bar(self):
        """A bar over the training steps, in a terminal, for a command that is not a sweep (progress=always: any)."""
        mode = self.settings.progress
        if mode == "never" or (mode == "auto" and (self.multirun or not sys.stderr.isatty())):
            return None
        from tqdm import tqdm

        name = self.settings.method.name + (f" x {self.K}" if self.K > 1 else "")
        return tqdm(
            total=self.settings.epochs * self.steps_per_epoch,
            initial=self.epoch * self.steps_per_epoch,
            desc=name,
            unit="step",
        )

    @property
    def val_columns(self) -> list[str]:
        return [f"val_{m}" for m in self.task.metrics]

    def summary(self, k: int, status: str, **results) -> dict:
        """Configuration k's summary.json: `results` the task's metrics by column (val_error=...) and the rest of
        run_files.summary's arguments."""
        names = {f"{split}_{m}" for split in ("test", "val") for m in self.task.metrics}
        metrics = {key: results.pop(key) for key in list(results) if key in names}
        normalisation = None if self.data.mean is None else {"mean": self.data.mean, "std": self.data.std}
        summary = run_files.summary(
            self.runs[k],
            self.single,
            self.device,
            self.epoch,
            self.elapsed,
            status,
            self.K,
            self.task,
            metrics,
            normalisation=normalisation,
            data=self.data,
            **results,
        )
        if self.steered:  # the target, and the lam it ended at (its path: metrics.csv's lam column)
            summary.update(
                target_nonzero=self.runs[k].target_nonzero,
                target_cost=self.runs[k].target_cost,
                lam_final=float(self.lam[k]),
            )
        return summary
