"""adrop as a library: any method of adrop's in your own training loop, with your loss and your optimizer.

    sp = adrop.sparsify(model, method="logsum", lam=1e-4)     # every weight of the model, in place
    sp.attach(optimizer)                                       # required: what runs around each optimizer step
    for x, y in loader:
        loss = F.cross_entropy(model(x), y) + sp.penalty()     # the regulariser, scaled as adrop train scales it
        optimizer.zero_grad(); loss.backward(); optimizer.step()
    print(sp.stats())                                          # per layer: nonzero, units kept, multiply-adds
    plain = adrop.strip(model)                                 # plain nn.Linear / nn.Conv2d, masks folded in

`sparsify` replaces, in place, every nn.Linear and nn.Conv2d of the model (at any depth, named by module path; those
`exclude` names or matches stay as they are) by the method's sparse layer with the module's own weights: the model stays
the user's nn.Module (its other modules, its forward, its state_dict keys for them). Every other weight a model has is
trained through a parametrization of the tensor (adrop.methods.sparse_parameter): attention's projections
(nn.MultiheadAttention's, and the Linear layers of torch's Transformer layers, whose fused fast paths read weights
directly), embeddings, Conv1d, Conv3d, transposed convolutions, GPT-2's Conv1D, and any parameter `include` names (a
class token, a positional embedding); named by module path (a tensor other than a module's `weight` by its own path, as
`attn.in_proj_weight`). The rest (biases, norms, what `include` does not name) trains densely. In training mode each
sparse layer runs the method's forward (noise, gates); in eval mode the weight evaluation uses (the keep rule and
deterministic gates folded in). The method's elementwise math, its penalty and its hooks are adrop.methods', the same
code `adrop train` runs: the runner converts its networks through adrop.selection.convert, as this does.

The step size a method needs around a step (AdaProx's proximal step, adaptive dropout's alpha update) is read from
the attached optimizer at each step (adrop.optimizer_wiring): Adam and AdamW per coordinate, lr / (sqrt(v_hat) + eps),
from their state (as the authors' `update_alphas_Adam` reads it); SGD, with or without momentum, its lr. What makes a
loop silently wrong is refused instead: an optimizer that does not hold the sparsified layers' parameters, training
with none attached, a step the hooks did not see, a lam that is missing, negative or not finite (adrop.checks, as
`adrop train` checks it), a stripped Sparsifier used again. Checkpoints: adrop.checkpoints; a collapse:
adrop.collapse.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from typing import Callable, Iterable

import torch
from torch import nn

from adrop import checkpoints, checks, collapse, cost, distributed, methods, optimizer_wiring
from adrop.methods.base import Method, SparseLayer
from adrop.methods.sparse_parameter import SparseParameter, units_kept, unparametrize
from adrop.selection import SparsifyError, select
from adrop.target import START_LAM, LamController, critical_lams
from adrop.target import refusal as target_refusal


class SparsityWarning(UserWarning):
    """A sparsified network that collapsed: its output no longer depends on its input."""


def default_lam(name: str) -> float:
    """A method's lam in `adrop train` (its conf/method/<name>.yaml: the paper's values)."""
    from importlib import resources

    import yaml

    text = resources.files("adrop.conf").joinpath("method", f"{name}.yaml").read_text()
    return float(yaml.safe_load(text).get("lam") or 0.0)


def make_method(
    name: str, params: dict, total_steps: int | None, steps_per_epoch: int | None, structure: str
) -> Method:
    """The method by name with its parameters (its Params dataclass: an unknown one is refused naming the valid)."""
    try:
        cls = methods.get(name)
    except ValueError as err:
        raise SparsifyError(str(err)) from None
    fields = [f.name for f in dataclasses.fields(cls.Params)]
    unknown = [key for key in params if key not in fields]
    if unknown:
        raise SparsifyError(
            f"method {name!r} has no parameter {unknown[0]!r}; its parameters: {', '.join(fields) or 'none'}"
        )
    try:
        values = cls.Params(**params)
    except (TypeError, ValueError) as err:
        raise SparsifyError(f"method {name!r}: {err}") from None
    per_epoch = steps_per_epoch or total_steps or 1
    epochs = max(1, math.ceil((total_steps or per_epoch) / per_epoch))
    try:
        return cls(values, per_epoch, epochs, structure)
    except ValueError as err:
        raise SparsifyError(str(err)) from None


def overrides(method: Method, *hooks: str) -> bool:
    """Whether the method does something in any of these hooks (Method's defaults do nothing)."""
    return any(getattr(type(method), hook) is not getattr(Method, hook) for hook in hooks)


def unit_step(p: torch.Tensor) -> torch.Tensor:
    return torch.ones_like(p)


_LIVE: "weakref.WeakSet[Sparsifier]" = weakref.WeakSet()  # every Sparsifier in use, for the global step hook
_WATCH = []  # the handle of torch's global optimizer post-step hook, registered once


def _watch(sparsifier: "Sparsifier") -> None:
    """Let every optimizer step in the process be seen: a step of an optimizer that is not the attached one, over
    the model's sparsified parameters or the tensors sparsify replaced, is refused (Sparsifier._foreign_step)."""
    _LIVE.add(sparsifier)
    if not _WATCH:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        _WATCH.append(register_optimizer_step_post_hook(_any_step))


def _any_step(optimizer, args, kwargs) -> None:
    for sparsifier in list(_LIVE):
        sparsifier._forget_eval_weights()
        sparsifier._foreign_step(optimizer)


class _Positions:
    """A forward hook that records, once, how many times a layer's weights act per example (a conv's output
    positions, 1 for a Linear on vectors; stats() counts multiply-adds with it); the Sparsifier removes it after the
    next optimizer step (Sparsifier._unseen)."""

    def __init__(self, sparsifier: "Sparsifier", name: str):
        self.sparsifier, self.name = sparsifier, name

    def __call__(self, layer, inputs, out):
        if self.name not in self.sparsifier.positions:  # removed after the step (a compiled forward cannot)
            self.sparsifier.positions[self.name] = out[0].numel() // layer.weight.shape[0]


class Sparsifier:
    """A model prepared by `sparsify`: its sparse layers (`names`, `layers`), the method, lam; the penalty, the hooks
    around the optimizer's step, the statistics, and a state_dict for checkpoints."""

    def __init__(
        self,
        model: nn.Module,
        method: Method,
        lam: float,
        names: list[str],
        layers: list[SparseLayer],
        replaced: Iterable[torch.Tensor] = (),
        target: LamController | None = None,
    ):
        self.model, self.method, self.names, self.layers = model, method, names, layers
        self.target = target  # lam steered to a kept fraction (adrop.target), or None: lam as set
        self._lam = float(lam)
        self._replaced = weakref.WeakSet(replaced)  # the tensors sparsify replaced: an optimizer made before holds them
        self._verdicts = weakref.WeakKeyDictionary()  # an optimizer that is not attached: why its step is refused
        self.steps = 0  # optimizer steps taken (what the methods' schedules count)
        self.optimizer = None
        self._reader = None  # the attached optimizer's step sizes (optimizer_wiring.reader)
        self._handles: list = []
        self._stripped = False
        self._versions = None  # a weight's version after our last post-step: an untracked step changes it
        self.needs_steps = target is not None or overrides(
            method, "before_step", "before_update", "after_step", "end_epoch"
        )
        self.positions: dict[str, int] = {}
        self._last_batch = None  # the last training forward's inputs (args, kwargs): what collapsed() reruns
        for layer in layers:
            layer.eval_lam = self._lam  # eval mode: the effective weight (keep rule and gates folded in)
        self._pre = model.register_forward_pre_hook(self._before_forward, with_kwargs=True)
        self._caching = []  # parametrize.cached() contexts open during the model's forward
        if any(isinstance(layer, SparseParameter) for layer in layers):  # one draw per forward, however often read
            self._cache_hooks = [
                model.register_forward_pre_hook(self._open_cache),
                model.register_forward_hook(self._close_cache, always_call=True),
            ]
        else:
            self._cache_hooks = []
        self._seen = {
            name: layer.register_forward_hook(_Positions(self, name))  # a product's layers
            for name, layer in zip(names, layers)
            if not isinstance(layer, SparseParameter)
        }
        self._checkpoint_hooks = checkpoints.install(layers)
        self.method.start(layers)
        self.method.before_step(self.steps, self._lam)  # and after each step: a submodule called alone is ready
        self._versions = self.versions()
        _watch(self)

    @property
    def lam(self) -> float:
        """The penalty's weight per example; setting it (a warm-up, a schedule) sets the keep rule eval mode uses."""
        return self._lam

    @lam.setter
    def lam(self, value: float) -> None:
        self._lam = lam_of(self.method.name, value)
        for layer in self.layers:
            layer.eval_lam = self._lam  # eval mode: the effective weight (keep rule and gates folded in)
        self.method.before_step(self.steps, self._lam)

    def __getstate__(self):
        """torch.save(model) pickles the model's hooks and so this Sparsifier: without the optimizer (attach again
        after loading) and the open caches."""
        state = dict(self.__dict__)
        state.update(optimizer=None, _reader=None, _handles=[], _caching=[], _last_batch=None)
        state.update(_replaced=None, _verdicts=None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._replaced, self._verdicts = weakref.WeakSet(), weakref.WeakKeyDictionary()
        _watch(self)

    def _foreign_step(self, optimizer) -> None:
        """Refuse a step of an optimizer that is not the attached one where it trains the model's sparsified
        parameters (not attached: the method's work around it would be missed) or holds the tensors sparsify
        replaced (made before sparsify: it trains nothing of the model)."""
        if self._stripped:
            return
        if optimizer is self.optimizer:
            self._still_held(optimizer)
            return
        if optimizer not in self._verdicts:
            held = {id(p) for group in optimizer.param_groups for p in group["params"]}
            ours = [n for n, p in optimizer_wiring.trained_parameters(self.names, self.layers) if id(p) in held]
            if ours:
                why = (
                    f"an optimizer that is not attached stepped {ours[0]}: the method works around the attached "
                    "optimizer's steps; call sp.attach(optimizer) before training (it replaces the one before)"
                )
            elif any(id(p) in held for p in self._replaced):
                why = (
                    "an optimizer made before adrop.sparsify stepped: it holds the tensors sparsify replaced and "
                    "trains nothing of the model; make it after sparsify, from model.parameters(), and call "
                    "sp.attach(optimizer)"
                )
            else:
                why = None
            self._verdicts[optimizer] = why
        if self._verdicts[optimizer]:
            raise SparsifyError(self._verdicts[optimizer])

    def _still_held(self, optimizer) -> None:
        """Refuse a step of the attached optimizer once the model's parameters are no longer the ones it holds:
        fully_shard (or another wrapper that makes new parameters) ran after it was made, and it trains nothing."""
        now = [id(p) for _, p in optimizer_wiring.trained_parameters(self.names, self.layers)]
        if now == self._held:
            return
        problem = distributed.fsdp1_problem(p for group in optimizer.param_groups for p in group["params"])
        if problem:
            raise SparsifyError(problem)
        if optimizer_wiring.missing_from(optimizer, self.names, self.layers):
            raise SparsifyError(
                "the attached optimizer holds parameters the model no longer has (fully_shard, or another wrapper, "
                "replaced them after the optimizer was made): it trains nothing; make the optimizer after "
                "fully_shard, from model.parameters(), and call sp.attach(optimizer)"
            )
        self._held = now

    def _forget_eval_weights(self) -> None:
        """Drop the effective weights eval mode cached (SparseLayer.eval_weight): a step changed what they are made
        of, or training needs their memory."""
        for layer in self.layers:
            layer._eval_cache = None

    def _live(self) -> None:
        if self._stripped:
            raise SparsifyError(
                "this Sparsifier's model was stripped (adrop.strip): its layers are plain again; sparsify the "
                "model anew to train it"
            )

    # -- the loop's pieces ------------------------------------------------------------------------------------------
    def penalty(self) -> torch.Tensor:
        """lam times the method's regulariser: sum over the sparse layers of lam_scale x R (for LogSum sum log(|w| +
        eps), for HardConcrete the expected number of nonzero weights, ...). `adrop train` adds exactly this to a data
        term that is a mean over the batch's examples, so lam is per example: add it to a per-example mean loss
        (with a summed loss, multiply it by the batch size)."""
        self._live()
        return self.lam * self.method.penalty(self.layers, self.lam)

    def attach(self, optimizer: torch.optim.Optimizer, pre_step: bool = True) -> "Sparsifier":
        """Attach the optimizer that trains the model (required before training): it must hold every parameter of
        the sparsified layers (make it after sparsify, from model.parameters()). Registers what runs around each of
        its steps: before it, the method's gradient work (pruning's masks); after it, its proximal steps, alpha
        updates and schedules, with the step size read from the optimizer at that step (Adam, AdamW: per
        coordinate from their state; SGD: lr), so schedulers, optimizer.load_state_dict and a re-made optimizer
        (attach it: it replaces the one before) all count. pre_step=False leaves before_update() to the caller: for
        a step that runs the backward pass in a closure (Lightning's), whose pre-step hook comes before the
        gradients."""
        self._live()
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise SparsifyError(f"attach takes a torch.optim.Optimizer, not {type(optimizer).__name__}")
        problem = distributed.fsdp1_problem(p for group in optimizer.param_groups for p in group["params"])
        if problem:
            raise SparsifyError(problem)
        missing = optimizer_wiring.missing_from(optimizer, self.names, self.layers)
        if missing:
            raise SparsifyError(
                f"the optimizer does not hold {missing[0]} ({len(missing)} of the sparsified layers' parameters "
                "missing): make it after adrop.sparsify (and after fully_shard), from model.parameters(), and give "
                "it every parameter of the sparsified layers (param groups for different learning rates)"
            )
        reader = optimizer_wiring.reader(optimizer)
        if reader is None and self.method.needs_step_size:
            raise SparsifyError(
                f"method {self.method.name!r} needs the step size of each optimizer step, which adrop "
                f"reads from Adam, AdamW and SGD, not {type(optimizer).__name__}"
            )
        if self.method.name == "hard_concrete" and isinstance(optimizer, torch.optim.SGD):
            raise SparsifyError(
                "hard_concrete's gates (log_a) move by lr x lam x dP(open)/dlog_a per SGD step, lam being per "
                "example: far too little for a gate to close; train it with Adam or AdamW (a per-coordinate step)"
            )
        self.detach()
        self.optimizer, self._reader = optimizer, reader
        self._held = [id(p) for _, p in optimizer_wiring.trained_parameters(self.names, self.layers)]
        if self.needs_steps:
            self._handles = [optimizer.register_step_post_hook(self._after_optimizer_step)]
            if pre_step:
                self._handles.append(optimizer.register_step_pre_hook(self._before_optimizer_step))
        return self

    def _after_optimizer_step(self, optimizer, args, kwargs):
        self.step()

    def _before_optimizer_step(self, optimizer, args, kwargs):
        self.before_update()

    def detach(self) -> None:
        """Take the hooks off the attached optimizer."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self.optimizer, self._reader = None, None

    def before_update(self) -> None:
        """Before the optimizer's step: the method's gradient work (magnitude pruning zeroes masked gradients)."""
        self._live()
        self.method.before_update(self.layers)

    def step_size(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """step_size(p): the step the attached optimizer takes now for each coordinate of p (1 for a method that
        reads none)."""
        if self._reader is not None:
            return self._reader()
        if self.method.needs_step_size:
            raise SparsifyError(
                f"method {self.method.name!r} needs the step size of each optimizer step: call "
                "sp.attach(optimizer), whose hooks do this work"
            )
        return unit_step

    def step(self) -> None:
        """After the optimizer's step: the method's post-step work (proximal steps, alpha updates, pruning
        schedules) and the step count. The attached optimizer's post-step hook calls it."""
        self._live()
        self._unseen()
        self.steps += 1
        if self.target is not None and overrides(self.method, "after_step"):
            self._steer()  # the price for the stepped weights: the lam of the post-step work (alphas, a prox)
        self.method.after_step(self.layers, self.steps, self.lam, self.step_size())
        if self.target is not None:
            self._steer()  # and for the weights that work left (a prox shrinks them): what eval and stats read
            self.target.record(self.steps, self.lam, self.kept_fraction(self.target.cost))
            if self.steps == self.target.total_steps:
                self._ended()
        self.method.before_step(self.steps, self.lam)  # the next step's, whichever module its forward calls first
        self._versions = self.versions()

    def _unseen(self) -> None:
        """Remove the hooks of the layers whose positions are recorded (outside any forward: a compiled one cannot)."""
        for name in [n for n in self._seen if n in self.positions]:
            self._seen.pop(name).remove()

    def _steer(self) -> None:
        """Set lam to the target's price for the weights as this step left them (adrop.target)."""
        macs = self.target.cost == "macs" and self.positions  # by weights until a forward has shown the positions
        positions = [self.positions.get(name) for name in self.names] if macs else None
        self.lam = self.target.bind(self.steps, self.lam, critical_lams(self.method, self.layers, positions))

    def _ended(self) -> None:
        """The last step of a run with a target: where it ended is recorded, and said where it missed."""
        import warnings

        missed = self.target.missed(self.target.path[-1][2])
        if missed:
            warnings.warn(missed, SparsityWarning, stacklevel=3)

    @torch.no_grad()
    def kept_fraction(self, of: str = "weights") -> float:
        """The fraction of the sparse layers' weights the keep rule keeps now (what stats() counts), or with
        of="macs" of their multiply-adds per example (the layers a forward pass has shown acting; by weights before
        the first)."""
        kept = total = 0
        for name, layer in zip(self.names, self.layers):
            weight = self.method.effective_weight(layer, self.lam)
            nonzero, size = int(distributed.full((weight != 0).sum())), weight.numel()  # FSDP2: every shard's
            if of == "macs" and self.positions:
                if name not in self.positions:
                    continue
                nonzero, size = nonzero * self.positions[name], size * self.positions[name]
            kept, total = kept + nonzero, total + size
        return kept / total if total else 1.0

    def end_epoch(self, validation_batches: int = 0) -> None:
        """After an epoch's last step: what a method does between epochs (AdaProx's authors_validation_prox)."""
        self._live()
        self.method.end_epoch(self.layers, self.lam, self.step_size(), validation_batches)

    def versions(self) -> list[int]:
        return [layer.weight._version for layer in self.layers]

    def _before_forward(self, module, args, kwargs):
        if not module.training or torch.compiler.is_compiling():  # a compiled forward: the checks run eagerly only
            return
        self._live()
        self._forget_eval_weights()
        problem = distributed.ddp_problem(
            lambda: [p for _, p in optimizer_wiring.trained_parameters(self.names, self.layers)]
        ) or distributed.fsdp1_problem(layer.weight for layer in self.layers)
        if problem:
            raise SparsifyError(problem)
        # a method that works around each step, its weights changed by a step it did not see: not attached
        if self.needs_steps and not self._handles and self.versions() != self._versions:
            raise SparsifyError(
                f"method {self.method.name!r} works around each optimizer step, and the weights "
                "changed without it: call sp.attach(optimizer) before training"
            )
        self._last_batch = (args, kwargs)
        self.method.before_step(self.steps, self.lam)

    def _open_cache(self, module, args):
        """A parametrized tensor read several times in one forward pass (torch's attention reads its projections
        for its fast-path checks, then uses them) is computed once: one draw of the method's noise."""
        from torch.nn.utils import parametrize

        if torch.compiler.is_compiling():  # a context across two hooks cannot be traced; a compiled forward reads
            return  # each tensor where it uses it
        context = parametrize.cached()
        context.__enter__()
        self._caching.append(context)

    def _close_cache(self, module, args, out):
        if self._caching and not torch.compiler.is_compiling():
            self._caching.pop().__exit__(None, None, None)

    # -- what it did ------------------------------------------------------------------------------------------------
    @torch.no_grad()
    def effective(self) -> dict[str, torch.Tensor]:
        """Each sparse layer's effective weight (what eval mode and `strip` use), by module path."""
        self._live()
        weights = {}
        for name, layer in zip(self.names, self.layers):
            with distributed.unsharded(
                self.model, layer, layer.tensors()
            ) as gathered:  # FSDP2: one block whole at a time
                weight = layer.as_module(self.method.effective_weight(layer, self.lam)).detach()
                weights[name] = weight.clone() if gathered else weight
        return weights

    @torch.no_grad()
    def stats(self):
        """A pandas DataFrame, one row per sparse layer: name, shape, nonzero, total, fraction, the units kept on
        each side (inputs: a Linear's columns, a conv's input channels, a tensor's second axis; outputs: rows,
        filters, an embedding's tokens; none for a tensor of one axis), and the cost (adrop.cost: compression, bytes
        dense and CSR, multiply-adds dense and sparse per example, the latter where a forward pass has shown how often
        a Linear or Conv2d layer acts): the numbers layers.csv holds. A collapse is flagged, never silent: the
        column keeps_nothing marks a layer without a weight, and where the network collapsed (collapsed(): its
        output no longer depends on its input) the frame's attrs["collapsed"] holds the line and a
        SparsityWarning says it."""
        import warnings

        import pandas as pd

        rows = []
        for name, layer, weight in zip(self.names, self.layers, self.effective().values()):
            nonzero = weight != 0
            shape, count = tuple(weight.shape), int(nonzero.sum())
            units = {"units_in_kept": None, "units_in": None, "units_out_kept": None, "units_out": None}
            if weight.dim() > 1:
                units = dict(zip(units, units_kept(nonzero, getattr(layer, "inputs_first", False))))
            row = {
                "layer": name,
                "shape": "x".join(map(str, shape)),
                "nonzero": count,
                "total": weight.numel(),
                "nonzero_fraction": count / weight.numel(),
                "keeps_nothing": count == 0,
                **units,
                **cost.layer_cost(shape, count, self.positions.get(name, 1), layer.bias is not None),
            }
            if name not in self.positions:
                row["dense_macs"] = row["sparse_macs"] = None
            rows.append(row)
        frame = pd.DataFrame(rows)
        frame.attrs["lam"] = self.lam  # a target steers it: its path is sp.target.path
        frame.attrs["collapsed"] = self.collapsed([r["layer"] for r in rows if r["keeps_nothing"]])
        if frame.attrs["collapsed"]:
            warnings.warn(frame.attrs["collapsed"], SparsityWarning, stacklevel=2)
        return frame

    @torch.no_grad()
    def collapsed(self, empty: list[str] | None = None) -> str | None:
        """Whether the network collapsed, in one line (adrop.collapse.message: the layers that keep no weight), or
        None: the model in eval mode answers the examples of its last training batch alike (to 1e-6), and an input
        whose floating-point tensors are zeros alike too, as `adrop train` checks it: its output no longer depends on
        its input. None before a training batch and for a batch of one example."""
        self._live()
        if self._last_batch is None:
            return None
        if empty is None:
            empty = [name for name, w in self.effective().items() if not w.any()]
        args, kwargs = self._last_batch
        modes = {m: m.training for m in self.model.modules()}
        self.model.eval()
        try:
            out = collapse.first_tensor(self.model(*args, **kwargs))
            if collapse.alike(out):  # every example answered alike: and an input of zeros (its floats), too?
                zeros = collapse.first_tensor(self.model(*collapse.zeroed(args), **collapse.zeroed(kwargs)))
                same = zeros is not None and zeros.shape == out.shape
                same = same and bool(torch.allclose(zeros, out, rtol=0, atol=collapse.TOLERANCE))
            else:
                same = False
        except RuntimeError:  # a forward that eval mode cannot run on that batch: nothing to tell from it
            same = False
        finally:
            for m, mode in modes.items():
                m.training = mode
        advice = {"magnitude_pruning": "lower final_sparsity", "random_pruning": "raise keep"}.get(
            self.method.name, "lower lam"
        )
        return collapse.message(empty, advice, depends=not same)

    def state_dict(self) -> dict:
        """What resumes the method exactly beside the model's and optimizer's own state_dicts: the step count, lam,
        the method's state (a pruning schedule's, say), and torch's random number generators (CPU, and CUDA where
        it is in use), which the noise methods draw from: loading it restores them, so that a resumed run draws what
        the uninterrupted one would have."""
        self._live()
        rng = {"cpu": torch.get_rng_state()}
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            rng["cuda"] = torch.cuda.get_rng_state_all()
        state = {"steps": self.steps, "lam": self.lam, "method": self.method.state_dict(), "rng": rng}
        if self.target is not None:
            state["target"] = self.target.state_dict()
        return state

    def load_state_dict(self, state: dict, rng: bool = True) -> None:
        """Resume from sp.state_dict(): rng=False keeps torch's generators as they are (a new seed from a shared
        checkpoint)."""
        self._live()
        self.steps, self.lam = int(state["steps"]), float(state["lam"])
        self.method.load_state_dict(state["method"])
        if self.target is not None and "target" in state:
            self.target.load_state_dict(state["target"])
        saved = (state.get("rng") or {}) if rng else {}
        if "cpu" in saved:
            torch.set_rng_state(saved["cpu"])
        if saved.get("cuda") and torch.cuda.is_available():
            devices = min(len(saved["cuda"]), torch.cuda.device_count())
            for device, generator in enumerate(saved["cuda"][:devices]):
                torch.cuda.set_rng_state(generator, device)
        self._versions = self.versions()

    @torch.no_grad()
    def compact(self) -> nn.Module:
        """The smaller dense network the kept units make, computing what the model does in eval mode (to float32
        rounding); the model itself is left as it is. A model that is an nn.Sequential of Linear layers with ReLU
        between (a Flatten first, Dropout anywhere): a new nn.Sequential without the units that no kept weight
        connects (adrop.compact: a unit that reads nothing but is read outputs a constant, folded into the next
        layer's bias), the inputs it reads picked first. Any other model: a plain copy (as `strip` makes it) without
        its attentions' dead heads and its Transformer layers' dead feed-forward units (adrop.heads.compact_heads:
        nn.MultiheadAttention with dead heads becomes a CompactAttention of the others), and the dead hidden units of
        Hugging Face's feed-forward blocks (LLaMA's gated, BERT's and ViT's, GPT-2's: adrop.feed_forward); the dead
        heads of Hugging Face's attentions stay, named in a SparsityWarning."""
        from adrop.compact import compact as compact_of

        self._live()

        children = (
            [m for m in self.model.children() if not isinstance(m, nn.Dropout)]
            if isinstance(self.model, nn.Sequential)
            else []
        )
        flatten = bool(children) and isinstance(children[0], nn.Flatten)
        body = children[1:] if flatten else children
        chain = (
            len(body) % 2 == 1
            and all(isinstance(m, nn.ReLU) for m in body[1::2])
            and all(isinstance(m, SparseLayer) and m.weight.dim() == 2 for m in body[0::2])
        )
        if not chain:
            return self._compact_transformer()
        layers = body[0::2]
        names = [self.names[self.layers.index(layer)] for layer in layers]
        weights = {
            n: (w.cpu().numpy(), None if layer.bias is None else layer.bias.detach().cpu().numpy())
            for (n, w), layer in zip(((n, self.effective()[n]) for n in names), layers)
        }
        small = compact_of(names, weights)
        device = layers[0].weight.device
        modules: list[nn.Module] = [nn.Flatten()] if flatten else []
        modules.append(InputColumns(torch.as_tensor(small.input_index, dtype=torch.long)))
        for i, (w, b) in enumerate(small.layers):
            linear = nn.utils.skip_init(nn.Linear, w.shape[1], w.shape[0])
            linear.weight.copy_(torch.from_numpy(w))
            linear.bias.copy_(torch.from_numpy(b))
            modules += [linear] + ([nn.ReLU()] if i < len(small.layers) - 1 else [])
        return nn.Sequential(*modules).to(device).eval()

    def _compact_transformer(self) -> nn.Module:
        import warnings

        from adrop.feed_forward import attentions_with_dead_heads
        from adrop.heads import compact_heads

        small = compact_heads(self.plain_copy())
        left = attentions_with_dead_heads(small)
        if left:
            warnings.warn(
                f"compact() keeps the dead heads of {len(left)} attention{'s' if len(left) > 1 else ''} "
                f"({', '.join(left[:3])}{', ...' if len(left) > 3 else ''}): it removes the heads of torch's "
                "nn.MultiheadAttention, and of other attentions only their feed-forward blocks' dead units",
                SparsityWarning,
                stacklevel=2,
            )
        return small

    @torch.no_grad()
    def plain_copy(self) -> nn.Module:
        """A copy of the model as `strip` would leave it (effective weights in plain modules and tensors); the model
        stays as it is. The copy's parametrized modules lose their parametrization here, not through
        parametrize.remove_parametrizations, which would take the tensor's property off the class they share with
        the model's own."""
        import copy

        plain = copy.deepcopy(self.model, memo={id(self): self})  # the copy's hooks call this Sparsifier: removed
        ours = {h.id for h in self._hooks()}
        for module in plain.modules():
            for hooks in (
                module._forward_pre_hooks,
                module._forward_hooks,
                module._state_dict_hooks,
                module._load_state_dict_pre_hooks,
            ):
                for key in ours & set(hooks):
                    del hooks[key]
        return strip(plain, self)

    def strip(self) -> nn.Module:
        """The model back as plain modules (see adrop.strip); the Sparsifier is done with it."""
        self._live()
        return strip(self.model, self)

    def _hooks(self) -> list:
        return [self._pre, *self._cache_hooks, *self._seen.values(), *self._checkpoint_hooks]

    def _release(self) -> None:
        """Take every hook of this Sparsifier off the model and the optimizer: the model keeps no reference to it."""
        self.detach()
        for handle in self._hooks():
            handle.remove()
        self._stripped, self._last_batch = True, None


class InputColumns(nn.Module):
    """The input features a compact network reads (the others no kept weight reads)."""

    def __init__(self, index: torch.Tensor):
        super().__init__()
        self.register_buffer("index", index)

    def forward(self, x):
        return x.index_select(-1, self.index)


def sparsify(
    model: nn.Module,
    method: str = "logsum",
    lam: float | None = None,
    structure: str = "weight",
    exclude: Iterable[str] = (),
    include: Iterable[str] = (),
    lam_scale: dict | None = None,
    total_steps: int | None = None,
    steps_per_epoch: int | None = None,
    target: float | None = None,
    target_cost: str = "weights",
    **params,
) -> Sparsifier:
    """Prepare `model` in place for `method` and return its Sparsifier.

    method: adrop's methods by name (logsum, adaprox, adatikhonov, adaptive_dropout, eta_trick, vardrop, vardrop_lr,
    vardrop_lr_ar, hard_concrete, magnitude_pruning, random_pruning, dense); its parameters as keywords
    (`method.params` of `adrop train`). lam: the penalty's weight per example, required for a method with a penalty
    (lam_of says why). structure: "weight", or "neuron" (whole
    units: a Linear layer's inputs, a conv's filters, another tensor's rows). exclude: module or tensor paths or shell
    patterns ("head", "*.proj", "*.in_proj_weight") left dense. include: parameter paths or patterns trained by the
    method beside the model's weights ("cls", "pos_embed"). lam_scale: a multiplier of lam per sparsified name.
    total_steps (and steps_per_epoch): what a schedule counts (magnitude pruning's), the optimizer's steps over
    training. target: the fraction of the weights (target_cost="weights") or of the multiply-adds ("macs") the run
    ends at, lam steered to it during training (adrop.target; lam, if given, where it starts; total_steps needed;
    magnitude pruning takes it as its final_sparsity)."""
    if not isinstance(model, nn.Module):
        raise SparsifyError(f"sparsify takes a torch.nn.Module, not {type(model).__name__}")
    problem = distributed.wrapper_problem(model)
    if problem:
        raise SparsifyError(problem)
    if any(isinstance(m, SparseLayer) for m in model.modules()):
        raise SparsifyError(f"{type(model).__name__} is sparsified already (adrop.strip gives the plain model back)")
    controller = None
    if target is not None:
        params, lam, controller = steered(method, params, lam, target, target_cost, total_steps)
    runs = make_method(method, params, total_steps, steps_per_epoch, structure)
    lam = lam_of(method, lam)
    if overrides(runs, "after_step") and method == "magnitude_pruning" and not total_steps:
        raise SparsifyError(
            "method 'magnitude_pruning' follows a schedule over training: give total_steps (the "
            "optimizer steps it lasts)"
        )
    selection = select(model, exclude, include)
    scales = dict(lam_scale or {})
    unknown = [name for name in scales if name not in selection.names]
    if unknown:
        raise SparsifyError(
            f"lam_scale names {unknown[0]}, not a sparsified layer; they are: {', '.join(sorted(selection.names))}"
        )
    problem = checks.lam_scale_problem(scales, lam, method)
    if problem:
        raise SparsifyError(problem)
    before = list(model.parameters())
    converted = selection.apply(model, runs)  # no partial conversion: every check above came first
    kept = {id(p) for p in model.parameters()}
    for name, layer in converted:
        layer.lam_scale = float(scales.get(name, 1.0))
    replaced = [p for p in before if id(p) not in kept]
    names, layers = [n for n, _ in converted], [layer for _, layer in converted]
    return Sparsifier(model, runs, lam, names, layers, replaced, controller)


def steered(method: str, params: dict, lam, target, cost: str, total_steps) -> tuple[dict, float, LamController]:
    """The method's parameters, its starting lam and the controller for a target (a pruning schedule takes the
    target as its final sparsity, and needs no controller)."""
    try:
        controller = LamController(target, total_steps, cost)
    except ValueError as err:
        raise SparsifyError(str(err)) from None
    if method == "magnitude_pruning":
        if cost != "weights" or "final_sparsity" in params:
            raise SparsifyError(
                "magnitude_pruning prunes to its own schedule: give target (of the weights) or final_sparsity, "
                "not both, and not target_cost='macs'"
            )
        return {**params, "final_sparsity": 1.0 - target}, lam, None
    try:
        problem = target_refusal(method)
    except ValueError as err:
        raise SparsifyError(str(err)) from None
    if problem:
        raise SparsifyError(problem)
    return params, START_LAM if lam is None else lam, controller


def lam_of(method: str, lam) -> float:
    """lam as given, checked (adrop.checks, as `adrop train` checks it). The library has no default lam for a method
    with a penalty: the lam that sparsifies well depends on the model, the data, the steps and the learning rate
    (the paper's MNIST values never let a small transformer learn, and empty small networks), so it is the user's
    choice; methods without one (dense, magnitude pruning, a fixed mask) take 0."""
    try:
        methods.get(method)
    except ValueError as err:
        raise SparsifyError(str(err)) from None
    if lam is None:
        paper = default_lam(method)
        if paper == 0:
            return 0.0
        raise SparsifyError(
            f"method {method!r} needs lam, the penalty's weight per example: no default fits every model (it "
            f"depends on the model, the data, the steps and the learning rate; adrop train's for LeNet on MNIST is "
            f"{paper:.3g}); try a few values and read sp.stats()"
        )
    problem = checks.lam_problem(lam)
    if problem:
        raise SparsifyError(problem)
    return float(lam)


@torch.no_grad()
def strip(model: nn.Module, sparsifier: Sparsifier | None = None) -> nn.Module:
    """The model with each sparse layer replaced, in place, by a plain nn.Linear or nn.Conv2d holding its effective
    weight (the keep rule and deterministic gates folded in: the tensors `adrop train`'s weights.npz holds) and
    bias, and each parametrized tensor a plain parameter again holding its effective weight; the method's own
    tensors go; the Sparsifier that prepared the model takes its hooks off and refuses any further use. Returns the
    model."""
    for module in list(model.modules()):
        for hooks in (module._forward_pre_hooks, module._forward_hooks):
            for hook in list(hooks.values()):
                owner = getattr(hook, "__self__", None)
                if isinstance(owner, Sparsifier) and not owner._stripped:
                    owner._release()
    tensors: dict[int, tuple[nn.Module, dict]] = {}
    for tensor in [m for m in model.modules() if isinstance(m, SparseParameter)]:
        lam = tensor.eval_lam if tensor.eval_lam is not None else (sparsifier.lam if sparsifier else 0.0)
        weight = tensor.as_module(tensor.method.effective_weight(tensor, lam)).detach().clone()
        tensors.setdefault(id(tensor._host[0]), (tensor._host[0], {}))[1][tensor.tensor_name] = weight
    for host, weights in tensors.values():
        unparametrize(host, weights)
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if not isinstance(child, SparseLayer):
                continue
            lam = (
                child.eval_lam
                if getattr(child, "eval_lam", None) is not None
                else (sparsifier.lam if sparsifier else 0.0)
            )
            weight = child.method.effective_weight(child, lam).detach()
            plain = child.plain()
            child.weight.copy_(weight)
            plain.weight = child.weight  # the same Parameter: an optimizer that holds it goes on training it
            plain.bias = child.bias
            setattr(module, child_name, plain)
    return model
