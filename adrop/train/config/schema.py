"""The configuration schema of `adrop train` (structured configs: a typo or a wrong type fails at start).

The YAML files in conf/ fill it in; method-specific parameters (method.params) are checked against the method's own
dataclass (adrop.methods.<name>.Params) when the run starts.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf


@dataclass
class MethodConfig:
    name: str = MISSING  # the method (conf/method/<name>.yaml, adrop/methods/)
    lam: float = 0.0  # default lambda of this method (the paper's)
    lr: float = 1e-3  # default learning rate of this method (the paper's)
    params: Dict[str, Any] = field(default_factory=dict)  # the method's own parameters (below, per method)


@dataclass
class DataConfig:
    root: str = "data"  # the folder holding the data (MNIST/raw/, ...): $ADROP_DATA, else data/
    train_limit: Optional[int] = None  # use only the first N training examples
    download: bool = True  # let torchvision download what is missing


@dataclass
class Config:
    method: MethodConfig = field(default_factory=MethodConfig)
    # the data set: its class (`_target_`) and that class's keys (adrop.train.data.schemas: each data set its own)
    dataset: Dict[str, Any] = field(default_factory=dict)
    # an nn.Module by `_target_` (adrop's built-in networks too), its constructor's arguments beside it, and `name`;
    # open, since the arguments are the module's (a wrong one fails when the module is made, in one line)
    model: Dict[str, Any] = field(default_factory=dict)
    # classification (integer labels, cross entropy, the error) | regression (real targets, MSE; RMSE and R^2) |
    # language_model (token ids, next-token cross entropy; loss and perplexity): adrop.train.tasks
    task: str = "classification"
    data: DataConfig = field(default_factory=DataConfig)
    structure: str = "weight"  # weight: each weight its own group; neuron: whole units (a Linear layer's input
    #                                    units, a Conv2d layer's filters), so that networks lose units
    #                                    (adrop.methods.base)
    # the weights a method trains: every Linear, Conv, attention projection and embedding weight (adrop.selection);
    # exclude leaves modules or tensors out, by path or pattern (exclude=[head], exclude=['*.out_proj']); include adds
    # other tensors by parameter path or pattern (include=[cls,pos]: a class token, a positional embedding)
    include: List[str] = field(default_factory=list)
    exclude: List[str] = field(default_factory=list)
    lam: Optional[float] = None  # null: method.lam
    # lam times this in the named layers (+lam_scale.fc1=3; the others 1): their penalty, keep rule and prox
    # (adrop.methods.base.layer_lam)
    lam_scale: Dict[str, float] = field(default_factory=dict)
    lam_cost: str = "weights"  # weights | macs: lam prices a weight (group), or each multiply-add it does per
    #                                    example: a layer's lam times its weights' uses per example (a conv layer's
    #                                    output positions, a Linear on vectors 1), times lam_scale
    # a target sparsity in one run: lam set after each step so that the run ends at this fraction of the sparsified
    # weights (target_cost=macs: of their multiply-adds per example); lam above is where it starts (adrop.target)
    target_nonzero: Optional[float] = None
    target_cost: str = "weights"  # weights | macs: what target_nonzero counts (multiply-adds per example)
    lr: Optional[float] = None  # null: method.lr
    epochs: int = 10
    batch_size: int = 128
    seed: int = 0  # the network's initialisation, the noise and the batches' order
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    schedule: str = "linear"  # linear: lr decays linearly to 0; constant; linear_per_epoch (the authors')
    decay_start: float = 0.0  # linear: the lr stays flat for this fraction of training, then decays to 0
    penalty_warmup: List[float] = field(default_factory=lambda: [0.0, 0.0])  # epochs [a, b]: the penalty term's
    #                                    weight in the loss is 0 before epoch a and ramps linearly to 1 at epoch b
    #                                    (the loss only: AdaProx's proximal step and the keep rules use the full lam)
    init_from: Optional[str] = None  # a finished run's folder (or weights.npz): start from its weights and biases
    eval_batch_size: int = 8192  # examples per batch of evaluation (memory and speed)
    evaluate_unmasked: bool = False  # also record the final errors without the keep rule (test_error_unmasked,
    #                                    val_error_unmasked): how the authors' code evaluates all but VarDrop
    compile: bool = False  # torch.compile the training step's loss (optional; faster, not bitwise equal)
    progress: str = "auto"  # auto: a bar in a terminal, none in multirun; always | never
    logger: str = "none"  # none | tensorboard: live logging into <run>/tensorboard/ (adrop.train.run_folder.tracking)
    objective: Any = "val_error"  # what a sweep's job returns to the sweeper: a result, or a list of them
    #                                    (adrop.train.run_folder.sweep_outcomes.OBJECTIVES; never the test error)


def schema_keys(cls) -> dict:
    """{key: sub-schema or None} of a dataclass schema; open nodes (Dict[str, Any]) are None."""
    hints = typing.get_type_hints(cls)
    return {
        f.name: schema_keys(hints[f.name]) if dataclasses.is_dataclass(hints[f.name]) else None
        for f in dataclasses.fields(cls)
    }


def unknown_keys(cfg, schema: dict | None = None, prefix: str = "") -> list[tuple[str, str | None]]:
    """Keys of a composed config that the schema does not have (Hydra lets `+key=value` add them), each with the
    closest valid key (or None): [("epoch", "epochs")]. method.params is checked by the method's own dataclass."""
    schema = schema_keys(Config) if schema is None else schema
    out = []
    for key in cfg.keys():
        if key == "hydra" and not prefix:
            continue
        full = f"{prefix}{key}"
        if key not in schema:
            close = difflib.get_close_matches(str(key), list(schema), n=1, cutoff=0.6)
            out.append((full, f"{prefix}{close[0]}" if close else None))
        elif schema[key] is not None and hasattr(cfg[key], "keys"):
            out += unknown_keys(cfg[key], schema[key], f"{full}.")
    return out


def unknown_key_message(key: str, close: str | None) -> str:
    hint = f" (did you mean {close}?)" if close else ""
    if key.startswith("dataset.") and not close:  # each data set has its own keys (adrop.train.data.schemas)
        return f"unknown key {key} for the chosen data set; `adrop train dataset=<name> --help` shows its keys"
    return f"unknown key {key}{hint}; `adrop train --help` lists the keys and groups"


def config_groups() -> str:
    """`group: option, ...` for each config group of conf/ a user chooses from, as `adrop train --help` shows them
    (Hydra's own list would also show `method_params`, which the chosen method fills in by itself)."""
    root = resources.files("adrop.conf")
    groups = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in ("hydra", "__pycache__"))
    return "\n".join(
        f"{g}: {', '.join(sorted(f.name[:-5] for f in (root / g).iterdir() if f.name.endswith('.yaml')))}"
        for g in groups
    )


def register(method_params: dict | None = None) -> None:
    """The schema, and each method's parameters as a config group `method_params` (its Params dataclass: the one place
    its defaults are written), which conf/config.yaml puts at method.params for the chosen method. The help passes
    the Params' defaults as plain dicts instead (adrop.train.command.help_page: no torch)."""
    OmegaConf.register_new_resolver("adrop_config_groups", config_groups, replace=True)
    store = ConfigStore.instance()
    store.store(name="adrop_schema", node=Config)
    from adrop.train.data.schemas import SCHEMAS

    for name, node in SCHEMAS.items():  # what conf/dataset/<name>.yaml starts from (its defaults list)
        store.store(group="dataset_schema", name=name, node=node)
    if method_params is None:
        from adrop import methods

        method_params = {name: cls.Params for name, cls in methods.METHODS.items()}
    for name, node in method_params.items():
        store.store(group="method_params", name=name, node=node)
