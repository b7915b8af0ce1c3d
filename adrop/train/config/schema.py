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
from typing import Any, Dict, List, Optional, Union

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf


@dataclass
class MethodConfig:
    name: str = MISSING  # the method (conf/method/<name>.yaml, adrop/methods/)
    lam: float = 0.0  # default lambda of this method (the paper's)
    lr: float = 1e-3  # default learning rate of this method (the paper's)
    params: Dict[str, Any] = field(default_factory=dict)  # the method's own parameters (below, per method)


@dataclass
class DatasetConfig:
    name: str = MISSING  # the data set's name (choose one with dataset=<name>; adrop's classes refuse another):
    #                           mnist | fashion_mnist | synthetic | digits | diabetes | npz | text | with
    #                           dataset=torchvision, a torchvision.datasets class | a name for a user's class
    source: str = "adrop"  # adrop, or torchvision (set by dataset=torchvision): torchvision.datasets.<name>
    # the data set's class: adrop's (adrop.train.data.sources, named by each conf/dataset file), or a user's: a Source
    # subclass, or any class whose instance holds x_train, y_train, x_test, y_test (optionally x_val, y_val, classes)
    _target_: Optional[str] = None
    path: Optional[str] = None  # npz: the file (x_train, y_train, x_test, y_test; optionally x_val, y_val); text: the
    #                             text file
    options: Dict[str, Any] = field(default_factory=dict)  # torchvision, _target_: more arguments of the class
    # the validation split, taken from the training set at random (split_seed) unless the data has x_val: a fraction
    # of the training examples (0 < val_size < 1) or a count (MNIST's 12000, the paper's split)
    val_size: Union[int, float] = 0.1
    test_size: Union[int, float] = 360  # digits, diabetes: held out as the test set (a count or a fraction); text:
    #                                    the file's last fraction
    context: int = 64  # text: tokens a window holds (the model's context)
    level: str = "char"  # text: char (UTF-8 characters) or byte tokens
    split_seed: int = 42  # the random validation split's seed (the same split for every run's seed)
    mean: Any = None  # normalisation x = (x - mean) / std (x in [0, 1] for pixels): one number or one per
    std: Any = None  # channel; null: the data set's usual values, else computed on the training split
    classes: Optional[int] = None  # null: the labels' largest value + 1 (synthetic: how many to generate)
    augment: str = "none"  # crop_flip: random padded crops and horizontal flips of training images (CIFAR)
    # synthetic data only
    features: int = 20  # input dimension
    n_train: int = 2000  # training examples (validation taken from them)
    n_test: int = 500  # test examples
    separation: float = 2.0  # distance between the classes' means (larger: easier)
    image: Optional[List[int]] = None  # channels, height, width of image data (MNIST: [1, 28, 28]); null: flat vectors


@dataclass
class DataConfig:
    root: str = "data"  # the folder holding the data (MNIST/raw/, ...): $ADROP_DATA, else data/
    train_limit: Optional[int] = None  # use only the first N training examples
    download: bool = True  # let torchvision download what is missing


@dataclass
class Config:
    method: MethodConfig = field(default_factory=MethodConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
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
    if method_params is None:
        from adrop import methods

        method_params = {name: cls.Params for name, cls in methods.METHODS.items()}
    for name, node in method_params.items():
        store.store(group="method_params", name=name, node=node)
