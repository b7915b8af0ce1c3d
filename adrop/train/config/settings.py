"""A run's settings, resolved and checked once: the composed configuration becomes one frozen `Settings`.

Everything that needs neither data nor a folder is checked here (unknown keys, the method's parameters, values,
the logger, whether the model fits the data), and what follows from the configuration is derived here once: the
effective lam and lr, the method's Params, the run's identity (what makes two commands the same run) and its stack
key (what must agree for configurations to train as one stack). The Hydra callback, the task, the launchers, the
engine and the run folder all receive the same object.

Which settings do what is declared once:
- PER_CONFIGURATION: may differ inside a stack (with the method's `init_*` parameters, which act only when each
  configuration's network is made);
- NOT_A_RESULT (differences.py, with what the report and the lam search read): changes no result; never part of an
  identity or a stack key;
- IDENTITY_DEFAULTS: settings that enter a run's identity only when they differ from these defaults, so that runs
  checkpointed before those settings existed still resume.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

import torch
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from adrop import checks, methods
from adrop.train import current_paths, tasks
from adrop.train.config import schema
from adrop.train.config.differences import NOT_A_RESULT
from adrop.train.config.schedules import SCHEDULES
from adrop.train.errors import TrainError, brief
from adrop.train.nets import builtin
from adrop.train.run_folder import sweep_outcomes, tracking
from adrop.train.tasks.base import TARGETS

PER_CONFIGURATION = ("seed", "lam", "lr", "decay_start", "penalty_warmup")
IDENTITY_DEFAULTS = {
    "structure": "weight",
    "schedule": "linear",
    "decay_start": 0.0,
    "penalty_warmup": [0, 0],
    "init_from": None,
    "evaluate_unmasked": False,
    "lam_scale": {},
    "lam_cost": "weights",
    "target_nonzero": None,
    "target_cost": "weights",
    "include": [],
    "exclude": [],
    "task": "classification",
}
DEFAULT_MODEL = "lenet_300_100"
LAM_COSTS = ("weights", "macs")


@dataclass(frozen=True)
class Settings:
    """One configuration, resolved: what the engine, the run folder and the launchers read. `cfg` is the composed
    configuration (read only) as the run folder records it and stack keys compare it; everything a run does is read
    from the fields beside it, typed and checked."""

    cfg: DictConfig
    method: type  # the method's class (adrop.methods); its name: method.name
    params: object  # the method's Params, checked
    lam: float  # the effective lam and lr (cfg's, else the method's defaults)
    lr: float
    identity: dict  # what makes two commands the same run
    dataset: str  # the data set's name
    source: object  # the data set's class, made from cfg.dataset (adrop.train.data.sources.Source)
    data: DictConfig  # where the data are and how much of them: root (absolute), train_limit, download
    model: DictConfig  # the network's `_target_` and arguments (with its name)
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    task: str
    structure: str
    seed: int
    epochs: int
    batch_size: int
    eval_batch_size: int
    schedule: str
    decay_start: float
    penalty_warmup: tuple[float, float]
    init_from: str | None
    lam_scale: dict
    lam_cost: str
    target_nonzero: float | None  # a kept fraction lam is steered to (adrop.target), or None: lam as set
    target_cost: str
    evaluate_unmasked: bool
    compile: bool
    device: str
    progress: str  # auto, always or never
    logger: str
    stack_key: str  # what must agree for configurations to train as one stack

    @classmethod
    def of(cls, cfg: DictConfig, method: type, params, lam: float, lr: float, source) -> Settings:
        return cls(
            cfg=cfg,
            method=method,
            params=params,
            lam=lam,
            lr=lr,
            identity=identity_of(cfg, lam, lr, method, params, source),
            dataset=cfg.dataset.name,
            source=source,
            data=cfg.data,
            model=cfg.model,
            include=tuple(cfg.include),
            exclude=tuple(cfg.exclude),
            task=cfg.task,
            structure=cfg.structure,
            seed=int(cfg.seed),
            epochs=int(cfg.epochs),
            batch_size=int(cfg.batch_size),
            eval_batch_size=int(cfg.eval_batch_size),
            schedule=cfg.schedule,
            decay_start=float(cfg.decay_start),
            penalty_warmup=tuple(cfg.penalty_warmup),
            init_from=None if cfg.init_from is None else str(cfg.init_from),
            lam_scale=dict(cfg.lam_scale),
            lam_cost=cfg.lam_cost,
            target_nonzero=None if cfg.target_nonzero is None else float(cfg.target_nonzero),
            target_cost=cfg.target_cost,
            evaluate_unmasked=bool(cfg.evaluate_unmasked),
            compile=bool(cfg.compile),
            device=str(cfg.device),
            progress=progress_mode(cfg.progress),
            logger=str(cfg.logger),
            stack_key=stack_key(cfg),
        )

    def make_method(self, steps_per_epoch: int):
        return self.method(self.params, steps_per_epoch, self.epochs, self.structure)


def check_keys(cfg) -> None:
    unknown = schema.unknown_keys(cfg)
    if unknown:
        raise TrainError(schema.unknown_key_message(*unknown[0]))


def method_params(cfg):
    """The method's class and parameters, checked against its dataclass (unknown keys and wrong types fail here)."""
    try:
        cls = methods.get(cfg.method.name)
    except ValueError as err:
        raise TrainError(str(err)) from None
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


def lam_and_lr(cfg) -> tuple[float, float]:
    """The effective lam and lr (null = the method's default), with every other value checked."""
    lam = cfg.method.lam if cfg.lam is None else cfg.lam
    lr = cfg.method.lr if cfg.lr is None else cfg.lr
    scale_problem = checks.lam_scale_problem(dict(cfg.lam_scale), lam, cfg.method.name)
    tests = [
        (
            cfg.structure in methods.STRUCTURES,
            f"structure must be one of {', '.join(methods.STRUCTURES)}, got {cfg.structure!r}",
        ),
        (checks.lam_problem(lam) is None, checks.lam_problem(lam)),
        (lr > 0 and math.isfinite(lr), f"lr must be > 0, got {lr}"),
        (cfg.epochs >= 1, f"epochs must be >= 1, got {cfg.epochs}"),
        (cfg.batch_size >= 1, f"batch_size must be >= 1, got {cfg.batch_size}"),
        (cfg.schedule in SCHEDULES, f"schedule must be one of {', '.join(SCHEDULES)}, got {cfg.schedule!r}"),
        (0 <= cfg.decay_start < 1, f"decay_start must be in [0, 1), got {cfg.decay_start}"),
        (
            len(cfg.penalty_warmup) == 2 and 0 <= cfg.penalty_warmup[0] <= cfg.penalty_warmup[1],
            f"penalty_warmup must be [a, b] epochs with 0 <= a <= b, got {list(cfg.penalty_warmup)}",
        ),
        (str(cfg.progress).lower() in PROGRESS, "progress must be auto, always or never (or true, false)"),
        (cfg.seed >= 0, f"seed must be >= 0, got {cfg.seed}"),
        (scale_problem is None, scale_problem),
        (cfg.lam_cost in LAM_COSTS, f"lam_cost must be one of {', '.join(LAM_COSTS)}, got {cfg.lam_cost!r}"),
        (
            cfg.lam_cost == "weights" or lam > 0,
            f"lam_cost=macs prices lam in multiply-adds, and "
            f"method={cfg.method.name} trains with lam 0 here: it would "
            "change nothing",
        ),
        (target_problem(cfg) is None, target_problem(cfg)),
        (
            cfg.data.train_limit is None or cfg.data.train_limit >= 1,
            f"data.train_limit must be >= 1 or null, got {cfg.data.train_limit}",
        ),
    ]
    for ok, message in tests:
        if not ok:
            raise TrainError(message)
    return float(lam), float(lr)


def target_problem(cfg) -> str | None:
    """Why target_nonzero and target_cost cannot be used as set, or None."""
    from adrop import target

    if cfg.target_nonzero is None:
        return None
    fraction = cfg.target_nonzero
    if not 0 < fraction < 1:
        return f"target_nonzero must be a fraction in (0, 1), got {fraction}"
    if cfg.target_cost not in target.COSTS:
        return f"target_cost must be one of {', '.join(target.COSTS)}, got {cfg.target_cost!r}"
    problem = target.refusal(cfg.method.name)
    if problem and cfg.method.name == "magnitude_pruning":
        return f"{problem} (method.params.final_sparsity={1 - fraction:g})"
    return problem


# progress=: how a run shows it; true and false (what YAML makes of progress=true) mean always and never
PROGRESS = {"auto": "auto", "always": "always", "never": "never", "true": "always", "false": "never"}


def progress_mode(value) -> str:
    """auto, always or never, from progress= as written."""
    return PROGRESS[str(value).lower()]


def identity_of(cfg, lam: float, lr: float, cls, params, source) -> dict:
    """What makes two commands the same run: a folder is resumed (or left alone, when finished) only by its own run."""
    identity = {
        "method": cfg.method.name,
        "lam": lam,
        "lr": lr,
        "seed": cfg.seed,
        "epochs": cfg.epochs,
        "batch_size": cfg.batch_size,
        "dataset": cfg.dataset.name,
        "train_limit": cfg.data.train_limit,
    }
    if cfg.dataset.get("path"):
        identity["dataset_path"] = cfg.dataset.path
    if cfg.dataset.get("options"):
        identity["dataset_options"] = OmegaConf.to_container(cfg.dataset.options, resolve=True)
    identity.update(source.identity())  # a text file's windows, a user's class
    if (cfg.dataset.get("augment") or "none") != "none":
        identity["augment"] = cfg.dataset.augment
    for key, default in IDENTITY_DEFAULTS.items():
        value = cfg[key]
        value = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        if value != default and (value or default is not None):
            identity[key] = str(value) if key == "init_from" else value
    if cfg.model.name != DEFAULT_MODEL or not shipped_built_in(cfg.model):
        identity["model"] = model_identity(cfg.model)
    changed = {
        f.name: getattr(params, f.name)
        for f in dataclasses.fields(params)
        if getattr(params, f.name) != getattr(cls.Params(), f.name)
    }
    if changed:
        identity["method_params"] = changed
    return identity


def shipped_built_in(model_cfg) -> bool:
    """A built-in model as conf/model/ ships it: its name, its class, no other arguments than its widths."""
    target = current_paths(model_cfg.get("_target_"))
    return (
        model_cfg.name in builtin.BUILT_IN
        and target in (None, *builtin.TARGETS)
        and set(model_cfg.keys()) <= {"name", "_target_", "hidden", "conv"}
    )


def model_identity(model_cfg) -> str:
    """A model as identities record it: a built-in one by name and widths, any other by name and arguments."""
    if shipped_built_in(model_cfg):
        conv = [list(c) for c in model_cfg.get("conv", [])]
        return f"{model_cfg.name}{conv if conv else ''}{list(model_cfg.get('hidden', []))}"
    args = {k: current_paths(v) for k, v in OmegaConf.to_container(model_cfg, resolve=True).items() if k != "name"}
    return f"{model_cfg.name}{json.dumps(args, sort_keys=True, default=str)}"


def with_model_name(cfg):
    """A model config without `name` (a user's file of `_target_` and arguments) is named by its class."""
    if cfg.model.get("name"):
        return cfg
    out = cfg.copy()
    with read_write(out), open_dict(out):
        out.model.name = str(cfg.model.get("_target_") or "custom").rpartition(".")[2]
    return out


def check_network(cfg, cls, params, source) -> None:
    """The network made and run on a batch of zeros in the data's shape, where the configuration says that shape
    (`source`: the data set's class): a module that does not import, has nothing to sparsify, fails or returns other
    than batch x classes is refused before any folder exists (other data are checked on a batch of theirs when the
    run starts)."""
    from adrop.train.data import sources as data
    from adrop.train.nets import network

    try:
        fixed = source.task
        if fixed is not None and fixed != cfg.task:
            raise TrainError(
                f"dataset={cfg.dataset.name} holds {TARGETS[fixed]}: use "
                f"task={fixed}" + (f" (task={cfg.task} here)" if cfg.task != "classification" else "")
            )
        shape = source.shape(cfg.task)
        tokens = source.tokens()
    except data.DataError as err:
        raise TrainError(str(err)) from None
    except TrainError:
        raise
    except Exception as err:  # a user's class that fails to say its shape: one line, not a traceback
        if type(source).__module__ == data.__name__:
            raise
        raise TrainError(f"dataset._target_={cfg.dataset.get('_target_')}: {brief(err)}") from None
    if shape is None:
        return
    input_shape, classes = shape
    dtype = torch.int64 if tokens else torch.float32
    net = network.build(cfg, input_shape, classes, cls(params, 1, cfg.epochs, cfg.structure), dtype=dtype)
    network.check_output(net, torch.zeros(2, *input_shape, dtype=dtype), tasks.get(cfg.task))
    network.scale_lam(net, cfg.lam_scale, cfg.lam_cost)


def resolve(cfg, chosen: str | None = None) -> Settings:
    """Every check that needs no data and no folder, then the settings. `chosen` is the method option Hydra composed
    (conf/method/<chosen>.yaml): its `name:` must be that, or another method would run silently."""
    from adrop.train.data import sources

    check_keys(cfg)
    if chosen is not None and cfg.method.name != chosen:
        raise TrainError(
            f"conf/method/{chosen}.yaml says name: {cfg.method.name}; a method's file and name must be "
            "the same (a registered method, adrop/methods/)"
        )
    cfg = with_model_name(cfg)
    try:
        tasks.get(cfg.task)
        tracking.check(cfg.logger)
        builtin.check_hidden(cfg.model)
    except ValueError as err:
        raise TrainError(str(err)) from None
    cls, params = method_params(cfg)
    lam, lr = lam_and_lr(cfg)
    try:
        cfg = with_dataset(cfg, sources.checked(cfg.dataset))  # its class's keys, with their defaults
        cfg = with_absolute_data_root(cfg)
        source = sources.source(cfg.dataset)
    except sources.DataError as err:
        raise TrainError(str(err)) from None
    try:
        sweep_outcomes.objectives(cfg.objective, cfg.task)
        check_network(cfg, cls, params, source)
    except ValueError as err:
        raise TrainError(str(err)) from None
    from adrop.train.runtime import resolve_device

    resolve_device(cfg.device)  # cuda where there is none: refused now, as a wrong command
    return Settings.of(cfg, cls, params, lam, lr, source)


def with_dataset(cfg, dataset):
    """A copy of cfg whose `dataset` node holds this one's keys and values."""
    out = cfg.copy()
    with read_write(out), open_dict(out):
        out.dataset = OmegaConf.to_container(dataset)  # the schema's node has checked them; the open field takes a dict
    return out


def with_absolute_data_root(cfg):
    """A copy of cfg whose data.root is an absolute path: a run's recorded configuration (.hydra/config.yaml) then
    finds its data from any folder (adrop export, adrop report)."""
    from pathlib import Path

    root = str(Path(cfg.data.root).expanduser().absolute())
    path = cfg.dataset.get("path")
    path = str(Path(path).expanduser().absolute()) if path else path
    if root == cfg.data.root and path == cfg.dataset.get("path"):
        return cfg
    out = cfg.copy()
    with read_write(out), open_dict(out):
        out.data.root = root
        if "path" in out.dataset:
            out.dataset.path = path
    return out


def stack_key(cfg) -> str:
    """Configurations with the same key can train as one stack: all but the per-configuration numbers agree."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra", None)
    for key in PER_CONFIGURATION + NOT_A_RESULT:
        parent, _, leaf = key.rpartition(".")
        (plain.get(parent, {}) if parent else plain).pop(leaf, None)
    params = plain.get("method", {}).get("params", {})
    for key in [k for k in params if k.startswith("init_")]:
        params.pop(key)
    return json.dumps(plain, sort_keys=True, default=str)
