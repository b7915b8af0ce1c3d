"""A network as the engine trains it: any nn.Module, adrop's built-in ones or a user's (by `_target_`, as Hydra
instantiates), with every nn.Linear and nn.Conv2d in it, at any depth, made the method's sparse layer.

The method trains those layers (noise, gates, penalty, keep mask), named by their module paths (`fc1`, `block.0`,
`head`); everything else (BatchNorm, pooling, activations, residual sums, dropout, embeddings) trains as it is,
densely. A stack of K configurations is the same module with each tensor K times (sparse layers batch their products,
dense modules that hold tensors, and batch norms, go through adrop.train.nets.stacking), fed a folded batch: row
k * batch + b is configuration k's example b. Stacks assume batch-first tensors, as nn.Linear, nn.Conv2d and BatchNorm
see them, and no other module that mixes the examples of a batch.

A model config names the module's class in `_target_`; its other keys but `name` are the constructor's arguments
(nested `_target_`s instantiate too). `input_shape` (the data's: [C, H, W] for images, [D] for vectors) and `classes`
are passed where the constructor takes parameters of those names and the config does not set them. The module's
forward takes a batch in the data's shape and returns logits, batch x classes.
"""

from __future__ import annotations

import inspect
import logging
import math
import os
import sys

import torch
from omegaconf import OmegaConf
from torch import nn

from adrop import heads, selection
from adrop.methods.base import SparseLayer
from adrop.methods.sparse_parameter import SparseParameter
from adrop.selection import sparse_kind
from adrop.train import tasks
from adrop.train.errors import brief
from adrop.train.nets import builtin, stacking
from adrop.train.nets.stacking import Stacked, needs_stacking, owns_tensors


class NetworkError(ValueError):
    """A network that cannot be trained; the message names the cause (one line)."""


def target_of(model_cfg) -> str:
    target = model_cfg.get("_target_")
    if not target:
        raise NetworkError(
            f"model={model_cfg.get('name')} names no class: set model._target_=<module.Class> (an "
            "nn.Module whose forward returns logits)"
        )
    return str(target)


def instantiate(model_cfg, input_shape, classes: int) -> nn.Module:
    """The plain module a model config asks for (NetworkError naming the class when it cannot be made)."""
    from hydra.utils import get_object
    from hydra.utils import instantiate as hydra_instantiate

    target = target_of(model_cfg)
    cwd = on_import_path()
    hydra_log = logging.getLogger("hydra.utils")  # Hydra logs its own 3 lines before raising: ours is the one line
    silent, hydra_log.disabled = hydra_log.disabled, True
    try:
        cls = get_object(target)
    except Exception as err:
        cause = err.__cause__ or err
        hint = (
            f"; {target.split('.')[0]}.py is not in the current folder ({cwd}) nor an installed package"
            if isinstance(cause, ModuleNotFoundError) and cause.name == target.split(".")[0]
            else ""
        )
        raise NetworkError(f"model._target_={target} does not import ({brief(cause)}{hint})") from None
    finally:
        hydra_log.disabled = silent
    args = arguments(model_cfg, cls, input_shape, classes)
    try:
        module = hydra_instantiate(args, _convert_="all")
    except Exception as err:
        cause = err.__cause__ or err
        raise NetworkError(f"model={model_cfg.get('name')} ({target}) could not be made: {brief(cause)}") from None
    if not isinstance(module, nn.Module):
        raise NetworkError(f"model._target_={target} made a {type(module).__name__}, not a torch.nn.Module")
    return module


def on_import_path() -> str:
    """The current folder on the import path, as `python -m` has it, so that a network in ./mynet.py is
    model._target_=mynet.Net (the `adrop` console script alone would not see it); the folder."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    return cwd


def arguments(model_cfg, cls, input_shape, classes: int) -> dict:
    """The model config as the class is constructed with it (`_target_` and its arguments, `name` aside), with
    `input_shape` and `classes` from the data where the constructor takes parameters of those names and the config
    does not set them: what summary.json records, so that weights.npz reloads from the run folder alone."""
    args = {k: v for k, v in OmegaConf.to_container(model_cfg, resolve=True).items() if k != "name"}
    try:
        accepted = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        accepted = {}
    given = {"input_shape": [int(s) for s in input_shape], "classes": int(classes)}
    return {**args, **{k: v for k, v in given.items() if k in accepted and k not in args}}


def convert(
    module: nn.Module, method, configs: int | None, chosen: selection.Selection
) -> tuple[nn.Module, list[tuple[str, SparseLayer]]]:
    """Put the method's layers in place, in `module` (or around it: `Network.net`), for the weights `chosen` names
    (adrop.selection.select, the library's choice): every Linear and Conv2d the layers can batch made the method's
    sparse layer (the library's adrop.selection.convert), and every module that holds tensors the layers cannot batch
    made a Stacked one (adrop.train.nets.stacking: K copies of its tensors, run per configuration, with the weights the
    method trains in it as its SparseParameters); the method's layers by name, in the module's parameter order."""
    tensors = {chosen.path[name]: name for name in chosen.names}  # parameter path -> name
    order = {path: i for i, (path, _) in enumerate(module.named_parameters())}

    def tree(path: str, child: nn.Module) -> bool:
        """Whether the module must run per configuration as a whole: torch's fused attention and Transformer layers
        (their forward reads their tensors directly), a module hosting a chosen tensor of its own (an embedding, a
        class token), or one holding tensors beside children that hold some."""
        if isinstance(child, selection.FUSED):
            return True
        if any(tensors.get(f"{path}.{n}".lstrip(".")) for n, _ in child.named_parameters(recurse=False)):
            return True
        return needs_stacking(child) and any(owns_tensors(m) or sparse_kind(m) for p, m in child.named_modules() if p)

    found = []

    def stacked(child: nn.Module, path: str) -> Stacked:
        prefix = f"{path}." if path else ""
        inside = [p for p, _ in child.named_parameters() if prefix + p in tensors]
        made = Stacked(child, configs, method, inside)
        found.extend((tensors[prefix + p], layer) for p, layer in zip(inside, made.sparse))
        return made

    def other(parent: nn.Module, path: str, child: nn.Module) -> bool:
        if tree(path, child):
            setattr(parent, path.rsplit(".", 1)[-1], stacked(child, path))
            return True
        if not needs_stacking(child):
            return False
        if configs is not None:
            setattr(parent, path.rsplit(".", 1)[-1], Stacked(child, configs))
        return True

    if tree("", module):
        root = stacked(module, "")
    else:
        root = module
        found += selection.convert(module, method, configs, skip=chosen.skip_module, other=other)
    return root, sorted(found, key=lambda item: order[chosen.path[item[0]]])


class Network:
    """A module made trainable by a method: `net` (the module, its Linear and Conv2d layers replaced), `names` and
    `layers` (the sparse layers), `keys` (the module's own state_dict keys: what weights.npz holds), `configs` (K, or
    None for one unstacked network, which evaluation uses)."""

    def __init__(
        self,
        module: nn.Module,
        method,
        input_shape,
        classes: int,
        configs: int | None = None,
        architecture: str | None = None,
        include=(),
        exclude=(),
        dtype: torch.dtype = torch.float32,
    ):
        self.keys = list(module.state_dict().keys())
        self.dtype = dtype  # the inputs': float32, or int64 token ids
        self.input_shape, self.classes, self.configs = tuple(int(s) for s in input_shape), int(classes), configs
        self.architecture = getattr(module, "architecture", None) or architecture or type(module).__qualname__
        shared = shared_parameters(module)
        if shared:
            raise NetworkError(
                f"{self.architecture} uses one parameter in several places ({', '.join(shared[:2])}): "
                "adrop trains each layer's weights as its own, so it cannot train tied weights"
            )
        self.shapes = {name: tuple(p.shape) for name, p in module.named_parameters()}  # the user's, before conversion
        self.attentions = heads.attentions(module)  # whose heads summary.json counts
        self.embeds = any(isinstance(m, (nn.Embedding, nn.EmbeddingBag)) for m in module.modules())  # reads token ids
        try:
            chosen = selection.select(module, exclude, include, self.architecture)
        except selection.SparsifyError as err:
            raise NetworkError(str(err)) from None
        self.net, found = convert(module, method, configs, chosen)
        lost = [key for key in self.keys if key not in self.net.state_dict()]
        if lost:  # a layer whose weight lives elsewhere (the old weight_norm's weight_g and weight_v)
            raise NetworkError(
                f"{self.architecture}: {lost[0]} is not a plain layer's tensor (a weight norm?): adrop "
                "trains a Linear or Conv2d layer's own weight, so it cannot train this network"
            )
        self.chain = isinstance(module, (builtin.MLP, builtin.ConvNet))  # what adrop.compact can make smaller
        # modules run whole per configuration, beyond a single module's own tensors (attention, a class token)
        self.whole_modules = any(
            isinstance(m, Stacked) and (m.sparse_paths or any(m.children())) for m in self.net.modules()
        )
        self.names = [n for n, _ in found]
        self.layers = [layer for _, layer in found]
        self.key = {name: chosen.path[name] for name in self.names}  # each layer's weight in the state (weights.npz)
        # every parameter of the module the method does not train (biases, norms, a class token...): trained densely,
        # counted in the network's totals beside the sparsified weights
        trained = set(self.key.values())
        self.dense_sizes = {name: math.prod(shape) for name, shape in self.shapes.items() if name not in trained}
        self._positions = None

    def dense_owners(self) -> dict[str, int]:
        """Parameters trained densely, counted per module that owns them (a sparse layer's bias under its name)."""
        out: dict[str, int] = {}
        for name, size in self.dense_sizes.items():
            owner = name.rsplit(".", 1)[0] if "." in name else "(root)"
            out[owner] = out.get(owner, 0) + size
        return out

    def describe(self, method_name: str, structure: str) -> str:
        """What the method trains and what trains densely, parameters counted: the run's opening words."""
        weights = sum(layer.weight.numel() for layer in self.layers) // (self.configs or 1)
        shown = ", ".join(self.names[:4]) + (f" and {len(self.names) - 4} more" if len(self.names) > 4 else "")
        plural = "s" if len(self.names) > 1 else ""
        what = f"{method_name} trains {weights:,} weights of {len(self.names)} layer{plural} ({shown})"
        if structure != "weight":
            what += f" as {structure}s"
        owners = self.dense_owners()
        dense = sum(owners.values())
        if not dense:
            return what + "; nothing trains densely"
        biases = sum(n for owner, n in owners.items() if owner in self.names)
        others = sorted(((n, owner) for owner, n in owners.items() if owner not in self.names), reverse=True)
        parts = [f"{owner} {n:,}" for n, owner in others[:4]] + (
            [f"{len(others) - 4} more modules"] if len(others) > 4 else []
        )
        if biases:
            parts.append(f"the layers' biases {biases:,}")
        return what + f"; {dense:,} parameters train densely ({', '.join(parts)})"

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (K, batch, classes) of inputs (K, batch, ...) (each configuration's own batch)."""
        K, B = x.shape[:2]
        if not self.whole_modules:
            return self.net(x.reshape(K * B, *self.input_shape)).view(K, B, -1)
        with stacking.folded(K * B):  # which of their inputs are the batch's
            return self.net(x.reshape(K * B, *self.input_shape)).view(K, B, -1)

    def predict(self, x: torch.Tensor, state: dict) -> torch.Tensor:
        """Logits of an unstacked network's inputs (batch, ...) with the given tensors (a row of the stack's state:
        effective weights, running statistics), in eval mode."""
        from torch.func import functional_call

        return functional_call(self.net, state, (x.reshape(-1, *self.input_shape),))

    def positions(self) -> list[int | None]:
        """How many times each sparse layer's weights act per example (1 for a Linear on vectors, a convolution's
        output positions, an attention's tokens): measured by running one example through the network, for the cost
        accounting; None for a weight that does no product (an embedding's, a class token)."""
        if self._positions is None:
            counts: dict[str, int] = {}

            def count(name, per):
                return lambda m, i, out: counts.__setitem__(name, counts.get(name, 0) + per(m, out))

            products = lambda m, out: out.numel() // m.weight.shape[0]
            targets = [
                (name, layer, products)
                for name, layer in zip(self.names, self.layers)
                if not isinstance(layer, SparseParameter)
            ]
            twins = {id(layer): name for name, layer in zip(self.names, self.layers)}
            for stack in (m for m in self.net.modules() if isinstance(m, Stacked)):
                for path, layer in zip(stack.sparse_paths, stack.sparse):
                    where, _, tensor = path.rpartition(".")
                    host = stack.inner.get_submodule(where)
                    parent = stack.inner.get_submodule(where.rpartition(".")[0]) if where else None
                    if isinstance(parent, nn.MultiheadAttention) and host is parent.out_proj:
                        host = parent  # read by its attention, which calls no module of it: the same tokens
                    if isinstance(host, nn.MultiheadAttention):  # each token projected once
                        targets.append((twins[id(layer)], host, lambda m, out: out[0].numel() // m.embed_dim))
                    elif sparse_kind(host) is not None and tensor == "weight":
                        targets.append((twins[id(layer)], host, products))
            hooks = [module.register_forward_hook(count(name, per)) for name, module, per in targets]
            training, fastpath = self.net.training, torch.backends.mha.get_fastpath_enabled()
            try:  # the fused fast paths read weights without calling their modules
                self.net.eval()
                torch.backends.mha.set_fastpath_enabled(False)
                with torch.no_grad():
                    self.net(self.example())
            finally:
                torch.backends.mha.set_fastpath_enabled(fastpath)
                self.net.train(training)
                for hook in hooks:
                    hook.remove()
            self._positions = [counts.get(n) for n in self.names]
        return self._positions

    def example(self) -> torch.Tensor:
        """One example of zeros, on the network's device."""
        return torch.zeros(1, *self.input_shape, dtype=self.dtype, device=next(self.net.parameters()).device)

    def biases(self) -> list[bool]:
        """Whether each sparse layer has a bias (what its cost counts)."""
        return [layer.bias is not None or getattr(layer, "host_bias", False) for layer in self.layers]

    def state_dict(self) -> dict:
        return self.net.state_dict()

    def parameters(self):
        return self.net.parameters()

    def buffers(self):
        return self.net.buffers()

    def train(self, mode: bool = True) -> "Network":
        self.net.train(mode)
        return self

    def eval(self) -> "Network":
        return self.train(False)

    def to(self, device) -> "Network":
        self.net.to(device)
        return self


def shared_parameters(module: nn.Module) -> list[str]:
    """The names under which a parameter that appears more than once (tied weights, a module used twice) is seen."""
    seen, shared = {}, []
    for name, p in module.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            shared += [seen[id(p)], name]
        seen.setdefault(id(p), name)
    return shared


def build(
    cfg, input_shape, classes: int, method, configs: int | None = None, dtype: torch.dtype = torch.float32
) -> Network:
    """The network a run's settings (or its composed configuration) ask for: its model, include and exclude, for
    inputs of this dtype."""
    model_cfg = cfg.model
    module = instantiate(model_cfg, input_shape, classes)
    network = Network(
        module,
        method,
        input_shape,
        classes,
        configs,
        architecture=target_of(model_cfg),
        include=list(getattr(cfg, "include", None) or ()),
        exclude=list(getattr(cfg, "exclude", None) or ()),
        dtype=dtype,
    )
    network.arguments = arguments(model_cfg, type(module), input_shape, classes)
    return network


def scale_lam(network: Network, scales, lam_cost: str = "weights", positions: list[int] | None = None) -> None:
    """lam_scale: each named sparse layer's lam multiplier (SparseLayer.lam_scale); a name the network does not have is
    refused in one line that lists those it has. lam_cost=macs multiplies each layer's by how many times its weights
    act per example (`positions`: a conv layer's output positions, a Linear on vectors 1), so that lam prices
    multiply-adds: exactly for HardConcrete (its groups' expected weights count times positions), through sqrt(|g|)
    for the eta-hat methods' groups. A stacked network is given the positions of its one-configuration network."""
    unknown = [name for name in scales if name not in network.names]
    if unknown:
        raise NetworkError(
            f"lam_scale names {', '.join(unknown)}, not a sparse layer of {network.architecture}; its "
            f"layers: {', '.join(network.names)}"
        )
    if lam_cost == "macs" and positions is None:
        if network.configs is not None:
            raise ValueError("scale_lam: a stacked network's positions come from its one-configuration network")
        positions = network.positions()
    for i, (name, layer) in enumerate(zip(network.names, network.layers)):
        # a weight that does no product (an embedding's, a class token) is priced per weight under macs
        uses = positions[i] if lam_cost == "macs" and positions[i] is not None else 1
        layer.lam_scale = float(scales.get(name, 1.0)) * uses


def check_output(network: Network, x: torch.Tensor, task=None) -> None:
    """A forward pass of a batch of real inputs (batch, ...): NetworkError when it fails or its output is not what
    the task wants (classification: batch x classes). Token ids: the network must embed them, and a language model's
    must take every id of the vocabulary (a batch of the largest one is run too)."""
    task = task or tasks.get("classification")
    what = network.architecture
    batch = x.reshape(-1, *network.input_shape)
    tokens = not batch.is_floating_point()
    if tokens and task.name == "language_model":
        batch = torch.cat([batch, torch.full_like(batch[:1], network.classes - 1)])
    network.eval()
    try:
        with torch.no_grad():
            out = network.net(batch)
    except Exception as err:
        if tokens and not network.embeds:
            raise NetworkError(
                f"the data's inputs are token ids (integers) and {what} fails on them with no "
                f"embedding to read them ({brief(err)}): a model that embeds tokens (model=gpt_tiny), "
                "or data of real numbers"
            ) from None
        if tokens and task.name == "language_model" and isinstance(err, IndexError):
            raise NetworkError(
                f"{what} fails on token id {network.classes - 1}: an embedding of it holds fewer "
                f"than the data's vocabulary of {network.classes} ({brief(err)})"
            ) from None
        raise NetworkError(f"{what} fails on a batch of the data, shape {list(batch.shape)} ({brief(err)})") from None
    finally:
        network.train()
    shape = list(getattr(out, "shape", []))
    wanted = task.output_shapes(len(batch), network.classes, network.input_shape)
    if shape not in wanted:
        if task.name == "language_model" and shape[:-1] == wanted[0][:-1]:
            raise NetworkError(
                f"{what} returns logits over {shape[-1]} tokens; the data's vocabulary has "
                f"{network.classes} (the model's vocabulary: its `classes`)"
            )
        outputs, of = task.outputs
        raise NetworkError(
            f"{what} returns {shape or type(out).__name__} for a batch of {len(batch)}; it must "
            f"return {outputs}, {' x '.join(['batch', *map(str, wanted[0][1:])])} (the data's {of})"
        )


def stack_problem(cfg, input_shape, classes: int, method, tokens: bool = False) -> str | None:
    """Why this network cannot train as a stack, or None: on the CPU, two configurations with the same tensors must
    give, for a batch each, what one network gives for it (in eval mode), and train (a forward and backward pass): a
    module whose forward torch.func cannot vmap (a Python number read from a tensor, say), or one fed something
    other than the batch's examples (positions, a shared tensor), which a stack cannot tell from its batch, fails."""
    try:
        single = build(cfg, input_shape, classes, method)
        stacked = build(cfg, input_shape, classes, method, configs=2)
        with torch.no_grad():
            for name, tensor in stacked.state_dict().items():
                tensor.copy_(torch.stack([single.state_dict()[name]] * 2))
            random = torch.Generator().manual_seed(0)
            x = (
                torch.randint(0, 2, (2, 3, *input_shape), generator=random)
                if tokens
                else torch.rand(2, 3, *input_shape, generator=random)
            )
            single.eval(), stacked.eval()
            got, want = stacked(x), torch.stack([single.net(x[k]) for k in range(2)])
        if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
            return (
                "a module of it is fed something other than its batch's examples (positions, say), which a stack "
                "cannot tell from a batch"
            )
        stacked.train()
        method.before_step(0, torch.zeros(2))
        stacked(torch.zeros(2, 2, *input_shape, dtype=x.dtype)).sum().backward()
    except Exception as err:
        return brief(err)
    return None


def input_shape_of(data) -> tuple:
    return tuple(data.image) if data.image else (data.in_features,)
