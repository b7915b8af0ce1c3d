"""Which weights of a model a method trains, and putting the method's layers in their place: nn.Linear and nn.Conv2d
swapped for the method's sparse layers (they own their product), every other weight (attention's projections,
embeddings, Conv1d/3d, transposed convolutions, GPT-2's Conv1D, what `include` names) parametrized
(SparseParameter). `select` checks a model and the user's include/exclude before anything changes; `Selection.apply`
converts. adrop.sparsify's and the runner's (`convert`) one place for it.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Callable, Iterable

from torch import nn

from adrop.methods.base import SPARSE_LAYERS, Method, SparseLayer
from adrop.methods.sparse_parameter import SparseParameter, heads_of, stores_inputs_first

# torch's modules whose forward (their fused fast paths) reads their submodules' weights directly: those weights are
# parametrized, not swapped for a layer whose forward would be bypassed
FUSED = (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)
# modules with a weight and no layer of adrop's own: their `weight` is parametrized
TENSOR_MODULES = (
    nn.Embedding,
    nn.EmbeddingBag,
    nn.Conv1d,
    nn.Conv3d,
    nn.ConvTranspose1d,
    nn.ConvTranspose2d,
    nn.ConvTranspose3d,
)


def is_tensor_module(module: nn.Module) -> bool:
    """Whether the module's `weight` is parametrized: TENSOR_MODULES, and Hugging Face transformers' Conv1D (GPT-2's
    attention and feed-forward layers, whose weight is stored inputs x outputs: stores_inputs_first)."""
    return isinstance(module, TENSOR_MODULES) or stores_inputs_first(module)


class SparsifyError(ValueError):
    """A model, method or setting `sparsify` cannot use; the message names the module path and what to do."""


def sparse_kind(module: nn.Module):
    """The sparse layer that replaces this module, or None: nn.Linear and nn.Conv2d and subclasses that keep their
    forward (a subclass with its own forward may not compute what the layer's product does)."""
    for base, layer in SPARSE_LAYERS.items():
        if isinstance(module, base) and type(module).forward is base.forward:
            return layer
    return None


def convert(
    module: nn.Module,
    method: Method,
    configs: int | None = None,
    prefix: str = "",
    skip: Callable[[str], bool] = lambda path: False,
    other: Callable[[nn.Module, str, nn.Module], bool] | None = None,
) -> list[tuple[str, SparseLayer]]:
    """Replace, in place, every Linear and Conv2d under `module` (but those whose path `skip` names) by the method's
    sparse layer with its weights (K copies with configs=K); the sparse layers by module path, in order. `other`
    (parent, path, child) sees each other child first and returns True where it took care of it (the runner's
    stacks put a dense module's K copies there); the rest are searched for layers in turn."""
    from torch.nn.utils import parametrize

    out = []
    for name, child in list(module.named_children()):
        path = prefix + name
        kind = None if skip(path) else sparse_kind(child)
        if kind is not None and parametrize.is_parametrized(child):
            raise SparsifyError(
                f"{path} ({type(child).__name__}) has a parametrization (weight_norm, spectral_norm, "
                "...): adrop trains a Linear or Conv2d layer's own weight, so it cannot train this "
                "one"
            )
        if kind is not None:
            layer = kind.like(child, method, configs)
            setattr(module, name, layer)
            out.append((path, layer))
        elif other is None or not other(module, path, child):
            out += convert(child, method, configs, path + ".", skip, other)
    return out


def tensor_key(name: str, keys) -> str:
    """The state_dict key of a sparse layer's weight by its name: the name itself where it is a tensor's path
    (`attn.in_proj_weight`, an included `cls`), else a module's `<name>.weight`."""
    return name if name in keys else f"{name}.weight"


def weight_tensors(model: nn.Module) -> list[tuple[str, nn.Module, str]]:
    """(name, module, tensor name) of every weight a SparseParameter trains by default: nn.MultiheadAttention's
    projections (in_proj_weight, or q/k/v_proj_weight; `<path>.in_proj_weight`), the Linear and Conv2d layers inside
    FUSED modules, and the weights of TENSOR_MODULES and transformers' Conv1D (by module path)."""
    out = []

    def visit(module: nn.Module, prefix: str, fused: bool) -> None:
        for name, child in module.named_children():
            path = prefix + name
            if isinstance(child, nn.MultiheadAttention):
                out.extend(
                    (f"{path}.{t}", child, t)
                    for t in ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight")
                    if isinstance(getattr(child, t, None), nn.Parameter)
                )
            elif (fused and sparse_kind(child) is not None) or is_tensor_module(child):
                out.append((path, child, "weight"))
            visit(child, path + ".", fused or isinstance(child, FUSED))

    visit(model, "", False)
    return out


def included_tensors(
    model: nn.Module, patterns: list[str], label: str | None = None
) -> list[tuple[str, nn.Module, str]]:
    """(path, module, tensor name) of each parameter whose path (as model.named_parameters gives it) an `include`
    pattern names or matches; a pattern that matches none is refused, naming the parameters."""
    params = dict(model.named_parameters())
    out = []
    for pattern in patterns:
        hits = [path for path in params if path == pattern or fnmatch.fnmatchcase(path, pattern)]
        if not hits:
            raise SparsifyError(
                f"include={pattern!r} names no parameter of {label or type(model).__name__}; its "
                f"parameters outside sparsified layers: {', '.join(sorted(params)) or 'none'}"
            )
        for path in hits:
            if params[path].dim() == 0:
                raise SparsifyError(f"include={pattern!r}: {path} is a scalar; a method trains tensors with an axis")
            parent, _, tensor = path.rpartition(".")
            out.append((path, model.get_submodule(parent), tensor))
    return out


@dataclass
class Selection:
    """The weights a method will train: `names` (module paths; another tensor than a module's weight by its own
    path), `path` (each name's parameter path), the swapped modules' paths (`swapped`) and the parametrized tensors
    (`tensors`: name -> (module, tensor name)); `skip_module` what `convert` leaves alone."""

    names: list[str]
    path: dict[str, str]
    swapped: set[str]
    tensors: dict[str, tuple[nn.Module, str]]
    skip_module: Callable[[str], bool]

    def apply(self, model: nn.Module, method: Method) -> list[tuple[str, SparseLayer]]:
        """Convert in place: the sparse layers by name, in the model's parameter order."""
        order = {name: i for i, (name, _) in enumerate(model.named_parameters())}
        converted = convert(model, method, skip=self.skip_module)
        converted += [
            (
                name,
                SparseParameter(
                    *self.tensors[name], method, heads=heads_of(*self.tensors[name], method.structure)
                ).register(),
            )
            for name in self.names
            if name in self.tensors
        ]
        return sorted(converted, key=lambda item: order[self.path[item[0]]])


def select(
    model: nn.Module, exclude: Iterable[str] = (), include: Iterable[str] = (), label: str | None = None
) -> Selection:
    """The weights of `model` a method trains, `exclude` (module or tensor paths or patterns) left out and `include`
    (parameter paths or patterns) added; SparsifyError, naming the module and what to do, where none is left, a
    pattern names nothing, or a weight cannot be trained as its own (a parametrization, a tie). `label`: the model
    as messages name it (its class's name)."""
    from torch.nn.utils import parametrize

    patterns = list(exclude)
    fused = [path for path, m in model.named_modules() if isinstance(m, FUSED)]
    under_fused = lambda path: any(path.startswith(f + ".") for f in fused)
    # every path of a Linear or Conv2d (one module reachable at two is a tie, refused below)
    swapped = [
        path
        for path, m in model.named_modules(remove_duplicate=False)
        if sparse_kind(m) is not None and not under_fused(path)
    ]
    tensors = {name: (host, t) for name, host, t in weight_tensors(model)}
    # each name's parameter path: a module's weight named by module path, another tensor by its own path
    path_of = {name: f"{name}.weight" for name in swapped}
    path_of.update({name: (name if name.endswith("." + t) else f"{name}.weight") for name, (_, t) in tensors.items()})
    label = label or type(model).__name__
    for path, host, t in included_tensors(model, list(include), label):
        if path in path_of.values():
            continue  # selected already
        if path.rpartition(".")[0] in swapped:
            raise SparsifyError(
                f"include={path!r}: {path.rpartition('.')[0]} ({type(host).__name__}) becomes a "
                "sparse layer of its own, whose weight the method trains; include names other "
                "tensors (its bias trains densely)"
            )
        tensors[path], path_of[path] = (host, t), path
    found = swapped + list(tensors)
    paths = [n for n, _ in model.named_modules() if n] + [n for n, _ in model.named_parameters()]
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(path, p) or path == p for path in paths)]
    if unmatched:
        raise SparsifyError(
            f"exclude={unmatched[0]!r} names no module or tensor of {label} (its "
            f"weights: {', '.join(sorted(found)) or 'none'})"
        )
    matches = lambda path: any(fnmatch.fnmatchcase(path, p) or path == p for p in patterns)
    # a name is excluded by its own path or its tensor's (`fc` or `fc.weight`, `attn.in_proj_weight`)
    chosen = [name for name in found if not (matches(name) or matches(path_of[name]))]
    if not chosen:
        raise SparsifyError(
            f"{label} has no nn.Linear or nn.Conv2d for a method to sparsify"
            + (" (exclude left none)" if found else " (nor another weight: include names one)")
        )
    tied = [
        name
        for name in chosen
        if (
            parametrize.is_parametrized(model.get_submodule(name))
            if name in swapped
            else parametrize.is_parametrized(*tensors[name])
        )
    ]
    if tied:
        where = model.get_submodule(tied[0]) if tied[0] in swapped else tensors[tied[0]][0]
        raise SparsifyError(
            f"{tied[0]} ({type(where).__name__}) has a parametrization (weight_norm, spectral_norm, "
            f"...): adrop trains a layer's own weight; exclude it (exclude=[{tied[0]!r}]) or remove "
            "the parametrization"
        )
    owners: dict[int, list[str]] = {}  # a shared tensor (tied embeddings): each path it has
    for path, p in model.named_parameters(remove_duplicate=False):
        owners.setdefault(id(p), []).append(path)
    for name in chosen:
        others = [o for o in owners[id(model.get_parameter(path_of[name]))] if o != path_of[name]]
        if others:
            both = [name] + [c for c in chosen if c != name and path_of[c] in others]
            raise SparsifyError(
                f"{name}'s weight is tied to {others[0].rpartition('.')[0] or others[0]}'s: "
                f"converting it would untie them; pass exclude={both!r}"
            )
    return Selection(
        chosen,
        path_of,
        set(swapped),
        {n: tensors[n] for n in chosen if n in tensors},
        lambda path: under_fused(path) or matches(path) or matches(f"{path}.weight"),
    )
