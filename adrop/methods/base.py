"""What a sparsification method is to the training engine, and the registry that finds one by name.

The split: a layer (`SparseLinear`, `SparseConv2d`) holds the parameters and owns the product (a linear map or a
convolution, or K of them batched when K configurations train stacked); the method owns the elementwise math (noise,
gates, penalty, keep mask) and calls the layer's product. lam and the optimiser's step sizes reach the method from the
engine, as arguments, never as copies: the engine's tensor of K values (K = 1 for a single run), or a float for a
layer outside a stack, which `layer.per_config(lam)` shapes to broadcast against that layer's weights. The engine only
ever calls:

    layer(x)                                  training forward: method.forward(layer, x), by default the layer's
                                              product with method.weight_sample(layer)
    method.init_weights(layer)                as each configuration's network is built: its own initialisation
    method.start(layers)                      once, before the first step of a new run (not on resume)
    method.before_step(step, lam)             before every step's forward pass (adaptive dropout's masks need lam)
    method.penalty(layers, lam)               the regulariser R; the engine minimises  data term + lam * R
    method.before_update(layers)              after the backward pass, before the optimiser's step (a gradient mask)
    method.after_step(layers, step, lam, step_size)   e.g. a proximal step or a pruning schedule
    method.end_epoch(layers, lam, step_size, validation_batches)   after an epoch's steps, before its evaluation
    method.keep_mask(layer, lam)              which weights count as nonzero (the paper's rule, adrop.keep_rule)
    method.effective_weight(layer, lam)       the weight evaluation uses, masks and deterministic gates folded in
    method.unmasked_weight(layer)             the same without the keep rule (evaluate_unmasked: the authors' way)

Structure (`structure=`, STRUCTURES): "weight" makes each weight its own group; "neuron" makes a group of every weight
one unit owns, so that a group gone is a unit gone: a Linear layer's input unit (a column of W; on the first layer an
input pixel, elsewhere the previous layer's hidden unit) and a Conv2d layer's output channel (a filter). A method's
per-group tensors (eta, gates, masks, noise) have the layer's `group_shape` and broadcast against its weights;
`layer.group_norm(w)` is ||w_g||_2 per group. The eta-trick carries over unchanged: one eta per group gives
Omega(||w_g||), and one dropout mask per group is its dual (adrop.linear.groups; docs/guide.md, "Whole units").

Every random draw of a method goes through `noise` (Gaussian, uniform), one call for the whole tensor (all K
configurations of a stack at once); tests swap it to hold the noise fixed.
Adding a method means one module here (registered with @register) and one file conf/method/<name>.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from adrop.distributed import full

from .batched_linear import batched_linear

METHODS: dict[str, type["Method"]] = {}
STRUCTURES = ("weight", "neuron")


def register(cls):
    METHODS[cls.name] = cls
    return cls


def names() -> list[str]:
    return sorted(METHODS)


def get(name: str) -> type["Method"]:
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; valid methods: {', '.join(names())}")
    return METHODS[name]


class Noise:
    """The methods' source of randomness (torch's global generator); tests replace it to hold noise fixed."""

    def gaussian_like(self, t: torch.Tensor) -> torch.Tensor:
        return torch.randn_like(t)

    def uniform_like(self, t: torch.Tensor) -> torch.Tensor:
        return torch.rand_like(t)


noise = Noise()


class SparseLayer(nn.Module):
    """The parameters of one layer (weight, bias, and the method's own per-weight parameters) and its product, made
    from a network's own nn.Linear or nn.Conv2d (`like`: its weights, its settings). With `configs=K` every tensor has
    a leading axis of K and the product is batched over it; the method's elementwise math is the same either way.

    Training, the forward pass is the method's (noise, gates); in eval mode it is the plain product with the layer's
    weight, which evaluation sets to the effective one: the network then computes what its nn.Linear or nn.Conv2d
    would with those weights. A stack's inputs are folded, (K * batch, ...), configuration-major: row k * batch + b is
    configuration k's example b. Subclasses say what the product is, and which weight axes a unit's group spans
    (`unit_axes`, counted from the end)."""

    unit_axes: tuple = ()
    lam_scale: float = 1.0  # this layer's lam multiplier (lam_scale; adrop.train.nets.network.scale_lam)
    # the library's eval mode (adrop.sparsify): the product with the effective weight at this lam; None, the engine's:
    # the plain product with `weight`, which its evaluation sets to the effective one
    eval_lam: float | None = None
    _eval_cache: tuple | None = None  # (what it was computed from, the effective weight): eval_weight's

    def __init__(self, weight_shape: tuple, has_bias: bool, method: "Method", configs: int | None = None):
        super().__init__()
        self.configs, self.method = configs, method
        lead = () if configs is None else (configs,)
        self.weight = nn.Parameter(torch.empty(*lead, *weight_shape))
        self.bias = nn.Parameter(torch.empty(*lead, weight_shape[0])) if has_bias else None
        self.grouped = method.structure == "neuron"
        shape = list(self.weight.shape)
        self.group_size = 1
        if self.grouped:
            for axis in self.unit_axes:
                self.group_size *= shape[axis]
                shape[axis] = 1
        self.group_shape = tuple(shape)  # a per-group tensor's shape (with a stack's leading K)
        method.add_parameters(self)

    def group_norm(self, w: torch.Tensor) -> torch.Tensor:
        """||w_g||_2 of each group, in group_shape; per weight, w itself (the penalties take |w| themselves). Its
        gradient at a group of zeros is 0 (torch.linalg.vector_norm's), not NaN."""
        return torch.linalg.vector_norm(w, dim=self.unit_axes, keepdim=True) if self.grouped else w

    def unit_noise(self, rows: torch.Tensor, mean, std) -> torch.Tensor:
        """z = mean + std * N(0, 1) for every example and unit: `rows` a (batch, ..., units) view of the example
        axis with the units, mean and std per group (a stack's (K, ..., units) against rows (K, batch, ..., units))."""
        return mean + std * noise.gaussian_like(rows)

    def copy_from(self, module: nn.Module) -> "SparseLayer":
        """The weights of the module this layer replaces (a stack: the same in every row), on its device and in its
        dtype: the method's own tensors too (a bfloat16 model's gates and noise parameters are bfloat16)."""
        self.to(device=module.weight.device, dtype=module.weight.dtype)
        with torch.no_grad():
            self.weight.copy_(module.weight)
            if self.bias is not None:
                self.bias.copy_(module.bias)
        self.method.init_weights(self)
        return self

    def per_config(self, value):
        """A per-configuration value (lam, a threshold) shaped to broadcast against this layer's weights: a float as
        it is; a stack's (K,) tensor as (K, 1, ..., 1)."""
        if not isinstance(value, torch.Tensor) or value.dim() == 0:
            return value
        return value.view(-1, *([1] * (self.weight.dim() - 1)))

    def as_module(self, w: torch.Tensor) -> torch.Tensor:
        """A tensor in the layout the method sees as the module reads it: the same, but for an attention's input
        projection trained by heads (SparseParameter)."""
        return w

    def layer_lam(self, lam):
        """This layer's lam: per_config(lam) times lam_scale."""
        lam = self.per_config(lam)
        return lam if self.lam_scale == 1.0 else lam * self.lam_scale

    def total(self, t: torch.Tensor) -> torch.Tensor:
        """Sum over one run's weights: a scalar, or one per configuration (K,) for a stack."""
        return t.sum() if self.configs is None else t.flatten(1).sum(1)

    @property
    def weight_orig(self) -> torch.Tensor:
        """The trained weight under the key the library's checkpoints save it by (adrop.checkpoints): what torch's
        distributed checkpointing (get_model_state_dict, FSDP) finds by that key."""
        return self.weight

    def eval_weight(self, weight: torch.Tensor | None = None) -> torch.Tensor:
        """The weight eval mode uses: `weight` where eval_lam is None (the engine's evaluation sets it), else the
        effective weight at eval_lam. Without autograd (torch.no_grad, inference_mode) it is computed once and reused
        while what it is computed from stays: eval_lam and each of the layer's tensors (by version and storage:
        load_state_dict, an in-place edit under no_grad change it). The library's Sparsifier forgets it at every
        optimizer step (a fused optimizer bumps no version) and training forward (its memory back). A write through
        `.data`, which torch does not count, is the one change it cannot see. `weight`: the layer's weight where the
        caller holds it already (a parametrization's original)."""
        if self.eval_lam is None:
            return self.weight if weight is None else weight
        if torch.is_grad_enabled() or torch.compiler.is_compiling():
            return self.method.effective_weight(self, self.eval_lam)
        key = (self.eval_lam, *((t._version, t.data_ptr()) for t in self.tensors(weight)))
        if self._eval_cache is None or self._eval_cache[0] != key:
            self._eval_cache = None  # its memory free before the new one is made
            self._eval_cache = (key, self.method.effective_weight(self, self.eval_lam))
        return self._eval_cache[1]

    def __getstate__(self):
        state = dict(super().__getstate__())
        state["_eval_cache"] = None  # a pickled model carries no cached weight
        return state

    def tensors(self, weight: torch.Tensor | None = None) -> list[torch.Tensor]:
        """What the layer's weights are computed from: its weight, and its own parameters and buffers."""
        own = [t for t in (*self._parameters.values(), *self._buffers.values()) if t is not None]
        return [self.weight if weight is None else weight, *own]

    def forward(self, x):
        if not self.training:
            return self.product(x, self.eval_weight(), self.bias)
        return self.method.forward(self, x)


class SparseLinear(SparseLayer):
    """A Linear layer: weight out x in. Inputs (..., in); a stack's (K * batch, ..., in). A unit's group is a column
    (an input unit: every weight that reads it)."""

    unit_axes = (-2,)

    def __init__(
        self, in_features: int, out_features: int, method: "Method", configs: int | None = None, bias: bool = True
    ):
        self.in_features, self.out_features = in_features, out_features
        super().__init__((out_features, in_features), bias, method, configs)

    @classmethod
    def like(cls, module: nn.Linear, method: "Method", configs: int | None = None) -> "SparseLinear":
        return cls(module.in_features, module.out_features, method, configs, module.bias is not None).copy_from(module)

    def plain(self) -> nn.Linear:
        """An nn.Linear of this layer's shape (adrop.strip fills it)."""
        return nn.Linear(self.in_features, self.out_features, self.bias is not None)

    def product(self, x, weight, bias=None):
        """x W^T + b: F.linear for an unstacked layer; for a stack, each configuration's rows times its own weight,
        (K, rows, in) x (K, out, in) -> (K, rows, out), batched."""
        if self.configs is None:
            return F.linear(x, weight, bias)
        out = batched_linear(x.reshape(self.configs, -1, x.shape[-1]), weight, bias)
        return out.view(*x.shape[:-1], self.out_features)

    def product_with_unit_noise(self, x, weight, bias, mean, std):
        """The product with each example's input units scaled by their own noise z (unit_noise): one
        multiplicative noise per group and example (and per position, for inputs with more axes than batch and
        units), the exact form of a group's noise (no local reparameterisation needed)."""
        rows = x if self.configs is None else x.reshape(self.configs, -1, x.shape[-1])
        return self.product((rows * self.unit_noise(rows, mean, std)).view_as(x), weight, bias)


class SparseConv2d(SparseLayer):
    """A 2-d convolution with nn.Conv2d's settings (stride, padding, dilation, groups, padding mode): weight
    out x in/groups x kh x kw, one sparsified weight per kernel entry. Inputs (batch, in, H, W); a stack's
    (K * batch, in, H, W) are viewed as (batch, K * in, H, W), configuration-major channels, for one grouped
    convolution (groups K * groups), and folded back. A unit's group is a filter (an output channel)."""

    unit_axes = (-3, -2, -1)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel,
        method: "Method",
        configs: int | None = None,
        bias: bool = True,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        padding_mode: str = "zeros",
    ):
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel = tuple(kernel) if isinstance(kernel, (tuple, list)) else (kernel, kernel)
        self.stride, self.padding, self.dilation, self.padding_mode = stride, padding, dilation, padding_mode
        self.pad = None  # F.pad's amounts for a padding mode other than zeros (as nn.Conv2d computes them)
        super().__init__((out_channels, in_channels // groups, *self.kernel), bias, method, configs)

    @classmethod
    def like(cls, module: nn.Conv2d, method: "Method", configs: int | None = None) -> "SparseConv2d":
        layer = cls(
            module.in_channels,
            module.out_channels,
            module.kernel_size,
            method,
            configs,
            module.bias is not None,
            module.stride,
            module.padding,
            module.dilation,
            module.groups,
            module.padding_mode,
        )
        layer.module_padding = module.padding  # nn.Conv2d's own (a padding mode other than zeros pads apart)
        if module.padding_mode != "zeros":
            layer.pad, layer.padding = module._reversed_padding_repeated_twice, 0
        return layer.copy_from(module)

    def plain(self) -> nn.Conv2d:
        """An nn.Conv2d with this layer's settings (adrop.strip fills it)."""
        return nn.Conv2d(
            self.in_channels,
            self.out_channels,
            self.kernel,
            self.stride,
            getattr(self, "module_padding", self.padding),
            self.dilation,
            self.groups,
            self.bias is not None,
            self.padding_mode,
        )

    def product(self, x, weight, bias=None):
        if self.pad is not None:
            x = F.pad(x, self.pad, mode=self.padding_mode)
        if self.configs is None:
            return F.conv2d(x, weight, bias, self.stride, self.padding, self.dilation, self.groups)
        K, rows = self.configs, x.shape[0] // self.configs
        x = x.view(K, rows, *x.shape[1:]).transpose(0, 1).reshape(rows, K * x.shape[1], *x.shape[2:])
        out = F.conv2d(
            x,
            weight.reshape(K * self.out_channels, *weight.shape[2:]),
            None if bias is None else bias.reshape(-1),
            self.stride,
            self.padding,
            self.dilation,
            K * self.groups,
        )
        shape = (self.out_channels, *out.shape[2:])
        return out.view(rows, K, *shape).transpose(0, 1).reshape(K * rows, *shape)

    def product_with_unit_noise(self, x, weight, bias, mean, std):
        """The convolution with each example's output channels scaled by their own noise z (unit_noise), before
        the bias: a filter's weights times z, one multiplicative noise per filter and example (exact)."""
        out = self.product(x, weight)
        K = self.configs or 1
        per_config = (K, 1, self.out_channels, 1, 1)  # group_shape (K, out, 1, 1, 1) against (K, batch, out, H, W)
        mean, std = (v.view(per_config) if isinstance(v, torch.Tensor) else v for v in (mean, std))
        grid = out.view(K, -1, *out.shape[1:])
        scaled = grid * self.unit_noise(grid[..., :1, :1], mean, std)
        if bias is not None:
            scaled = scaled + bias.view(K, 1, self.out_channels, 1, 1)
        return scaled.view_as(out)


SPARSE_LAYERS = {nn.Linear: SparseLinear, nn.Conv2d: SparseConv2d}  # what a method trains, by the module it replaces


@dataclass
class NoParams:
    pass


class Method:
    """Base of every method: its name, its parameters (a dataclass, so typos fail fast), and its elementwise math.
    By default a plain dense layer: no penalty, zeros only where a weight is exactly 0."""

    name: ClassVar[str] = ""
    Params: ClassVar[type] = NoParams
    needs_step_size: ClassVar[bool] = False  # after_step or end_epoch reads step_size (a proximal step)

    def __init__(self, params, steps_per_epoch: int, epochs: int, structure: str = "weight"):
        if structure not in STRUCTURES:
            raise ValueError(f"structure must be one of {', '.join(STRUCTURES)}, got {structure!r}")
        self.params, self.structure = params, structure
        self.steps_per_epoch, self.total_steps = steps_per_epoch, steps_per_epoch * epochs

    def per_weight_only(self, *switches: str) -> None:
        """Refuse, in one line, any of these switches (the authors' per-weight forms) with whole units."""
        for name in switches:
            if getattr(self.params, name) and self.structure != "weight":
                raise ValueError(f"method.params.{name} is the authors' per-weight form: it needs structure=weight")

    def add_parameters(self, layer: SparseLayer) -> None:
        """Create the method's own parameters and buffers on the layer: per weight (layer.weight's shape) or, where
        the method has a group form, per group (layer.group_shape, the weight's shape with structure=weight)."""

    def forward(self, layer: SparseLayer, x):
        return layer.product(x, self.weight_sample(layer), layer.bias)

    def weight_sample(self, layer: SparseLayer) -> torch.Tensor:
        """The weight one training step uses, noise and gates drawn (one draw per weight, or per group, each step):
        the forward pass of a layer with a product, and the weight any other module reads (SparseParameter). A
        method whose forward pass needs the product itself (VarDrop's local reparameterisation) overrides forward
        there and keeps this weight-noise form for the rest."""
        return layer.weight

    def layer_penalty(self, layer: SparseLayer, lam) -> torch.Tensor:
        return layer.weight.new_zeros(() if layer.configs is None else (layer.configs,))

    def penalty(self, layers, lam) -> torch.Tensor:
        """sum over layers of lam_scale R_l; the engine multiplies by lam."""
        return sum(  # a sharded layer's term summed over the ranks (FSDP2): adrop.distributed
            p if layer.lam_scale == 1.0 else layer.lam_scale * p
            for layer, p in ((layer, full(self.layer_penalty(layer, lam))) for layer in layers)
        )

    def keep_mask(self, layer: SparseLayer, lam) -> torch.Tensor:
        return layer.weight != 0

    def effective_weight(self, layer: SparseLayer, lam) -> torch.Tensor:
        return layer.weight * self.keep_mask(layer, lam)

    def unmasked_weight(self, layer: SparseLayer) -> torch.Tensor:
        """The weight the network has without the keep rule: what the authors' code evaluates every method but
        VarDrop with (dlej/adaptive-dropout never applies the mask there). Methods whose forward pass
        already applies their mask or gate (pruning, fixed masks, HardConcrete) keep it: it is their model."""
        return layer.weight

    def critical_lam(self, layer: SparseLayer) -> torch.Tensor | None:
        """Per group (layer.group_shape), the largest lam at which the keep rule keeps it given the weights as they
        are, where the rule reads lam directly (eta_hat's methods); None where it does not (gates, VarDrop's alpha,
        the eta-trick's eta), whose sparsity follows lam only through training. adrop.target uses it."""
        return None

    def keep_statistic(self, layer: SparseLayer, lam) -> tuple[str, torch.Tensor] | None:
        """What decides this layer's sparsity, for a live histogram (logger=tensorboard): (its name, its values)."""
        return None

    def before_step(self, step: int, lam) -> None:
        """Called before every training step's forward pass (step counts from 0) with the run's lam."""

    def start(self, layers) -> None:
        """Called once before the first training step of a new run (after init_from), not when one resumes."""

    def init_weights(self, layer: SparseLayer) -> None:
        """Called when a layer has taken its module's weights, as its network is built from the configuration's seed
        (before init_from): a method may draw others (VarDrop's authors_init). Nothing by default."""

    def before_update(self, layers) -> None:
        """Called after every step's backward pass, before the optimiser's update (pruning zeroes masked gradients)."""

    def after_step_is_elementwise(self, step: int) -> bool:
        """Whether after_step at this step is elementwise tensor arithmetic that does not branch on `step` (AdaProx's
        prox, a mask folded into the weights, or nothing): then a stack with compile=true traces it with the
        optimiser's update, passing step=None. A step with Python control flow (a pruning schedule's mask update)
        answers False and after_step runs eagerly after the compiled update, with its step."""
        return True

    def after_step(self, layers, step: int, lam, step_size: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """Called after every optimiser step (step counts from 1); step_size(p) is the step the optimiser just took
        for each coordinate of parameter p (for Adam, lr / (sqrt(v_hat) + eps))."""

    def end_epoch(
        self, layers, lam, step_size: Callable[[torch.Tensor], torch.Tensor], validation_batches: int
    ) -> None:
        """Called after an epoch's last step, before it is evaluated (and checkpointed); validation_batches is how
        many batches the validation set makes at the run's batch size. Nothing by default: only a method that
        follows a training loop's work between epochs (AdaProx's authors_validation_prox) uses it."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass
