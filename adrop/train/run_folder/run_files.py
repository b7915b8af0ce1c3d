"""What a run leaves in its folder, and the checkpoint that lets it resume.

    metrics.csv    one row per epoch: epoch, train_loss, data_term, penalty_term, the task's validation metrics
                   (classification: val_error; regression: val_rmse, val_r2; language_model: val_perplexity,
                   val_loss; adrop.train.tasks), nonzero_fraction, lr, seconds
    layers.csv     one row per epoch and layer: epoch, layer, trained (method; dense: a module whose parameters
                   train densely, counted with its float32 bytes), shape, nonzero, total, nonzero_fraction, the units
                   kept on each side (units_in_kept of units_in: a Linear layer's inputs, a conv layer's input channels;
                   units_out_kept of units_out: its outputs or filters; adrop.train.loop.evaluate.kept_units), and the
                   cost (adrop.cost: compression, dense_bytes, csr_bytes, dense_macs, sparse_macs)
    summary.json   task; its metrics on test and validation (classification: test_error, val_error, fractions;
                   regression: test_rmse, test_r2, val_rmse, val_r2; language_model: test_perplexity, test_loss,
                   val_perplexity, val_loss; final, masked), with evaluate_unmasked also the first metric without
                   the keep rule (test_error_unmasked, val_error_unmasked), target_normalisation (regression: the
                   training targets' mean and std the network's outputs are in units of), vocabulary (text: the
                   symbol of each token id), nonzero_fraction, layers, epochs, wall_time_s,
                   device, method, lam, lr, seed, status (completed | failed | interrupted | running; pending:
                   started, no epoch finished yet), error (when failed or interrupted: why),
                   code (the git commit that ran, or the installed version), model and architecture, cost
                   (totals; per layer inside layers; compact_macs: the compact network's multiply-adds),
                   kept_architecture (adrop's built-in networks: the units the compact network keeps, input first,
                   e.g. 784-212-64-10 or 1x28x28-c6-c14-120-38-10; adrop.compact), heads (a network with
                   nn.MultiheadAttention: per attention, by path, [heads kept, heads]; adrop.heads),
                   input_normalisation (the mean and
                   std, one or one per channel or feature, the inputs were normalised with: x = (x - mean) / std,
                   pixels in [0, 1]),
                   identity (what makes two commands the same run; a folder is only ever resumed by its own run),
                   parameters (the whole network: total, nonzero, nonzero_fraction over every parameter; sparsified:
                   the weights the method trains, what nonzero_fraction counts; dense: the rest, biases included,
                   and dense_modules, those of modules other than the sparse layers, per module),
                   model_arguments (the arguments the model's class was constructed with, input_shape and classes
                   included where adrop passed them: what a reload of weights.npz needs)
    weights.npz    the network's state_dict under its own keys (for adrop's networks <layer>.weight, out x in, and
                   <layer>.bias; for any network also its buffers, BatchNorm's running statistics), the keep rule and
                   deterministic gates folded into the weights: exactly the tensors evaluation uses
    checkpoint.pt  the state after the last finished epoch (tensors and plain containers: loads with weights_only)
    .hydra/        config.yaml, hydra.yaml, overrides.yaml: the configuration, written once, when the run starts

A folder belongs to the first run that starts in it: `claim` says whether a run may use a folder (new, resume,
completed) before anything in it is written; a folder that holds another run, or files adrop cannot read, is refused.
While a command trains a run, it holds the folder (`Held`: an exclusive flock on the folder itself, no file added),
so that a second command on the same folder, one that would resume the same run, is refused instead of training it
a second time into the same files (FolderInUse: a sweep counts such a job as held by another command, `in_use`).

A file or folder that cannot be written raises WriteFailed, in plain words: "cannot write <path>: permission denied",
"... file too large (the file-size limit)", "... no space left on device" (`write_failed`).
"""

from __future__ import annotations

import csv
import errno
import json
import os
from pathlib import Path

import numpy as np

try:
    import fcntl
except ImportError:  # Windows: no flock; folders are not held there
    fcntl = None

from adrop import cost
from adrop.provenance import code_version
from adrop.train import current_paths

METRICS = ["epoch", "train_loss", "data_term", "penalty_term", "val_error", "nonzero_fraction", "lr", "seconds"]


def metrics_columns(task) -> list[str]:
    """metrics.csv's columns for a task (classification's: METRICS)."""
    return [*METRICS[:4], *(f"val_{m}" for m in task.metrics), *METRICS[5:]]


UNITS = ["units_in_kept", "units_in", "units_out_kept", "units_out"]  # adrop.train.loop.evaluate.kept_units
# trained: "method" for a sparse layer's weights, "dense" for a module whose parameters train densely (its row counts
# them, and their float32 bytes, in the network's totals)
LAYERS = ["epoch", "layer", "trained", "shape", "nonzero", "total", "nonzero_fraction", *UNITS, *cost.COLUMNS]
CHECKPOINT = "checkpoint.pt"
SUMMARY = "summary.json"
METRICS_CSV = "metrics.csv"
LAYERS_CSV = "layers.csv"
WEIGHTS = "weights.npz"
HYDRA_DIR = ".hydra"
CONFIG, HYDRA_CONFIG, OVERRIDES = "config.yaml", "hydra.yaml", "overrides.yaml"  # in HYDRA_DIR


class FolderTaken(Exception):
    """A folder that this run may not use (it holds another run, or files that are not a readable run's)."""


class FolderInUse(FolderTaken):
    """A folder that another process holds (Held) right now: another command is training this very run there."""


class WriteFailed(Exception):
    """A run file or folder that could not be written (a full disk, a file-size limit, a folder made read-only); the
    message names it, and the file as it was before stays."""


# what the operating system's refusals of a write mean, in the words a user acts on
WRITE_REASONS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large (the file-size limit)",
}
WRITE_ERRNOS = {*WRITE_REASONS, errno.ENOTDIR}  # an OSError of these: a write refused, not a bug


def os_error(err: BaseException) -> OSError | None:
    """The OSError behind `err`: itself, or the one it was raised from or during (torch.save's RuntimeError while
    writing to a file object carries the OSError that its write raised)."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, OSError) and err.errno is not None:
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def write_failed(path, err: BaseException, named: bool = True) -> WriteFailed:
    """`err`, raised writing `path` (a file, or a folder to make), as one plain line: what could not be written and
    why. `named`: say the path the error names where it names one (the folder of several that could not be made),
    rather than `path` (a file written through a temporary one)."""
    path = Path(os.path.abspath(path))
    found = os_error(err)
    if named and found is not None and found.filename:
        path = Path(os.path.abspath(found.filename))
    if found is not None and found.errno == errno.ENOTDIR:  # a file where a folder is needed
        blocker = next((p for p in (path, *path.parents) if p.is_file()), None)
        reason = f"{blocker} is a file, not a folder" if blocker else "a part of its path is not a folder"
    elif found is not None:
        reason = WRITE_REASONS.get(found.errno) or os.strerror(found.errno).lower()
    else:
        text = str(err).strip()
        reason = (text.splitlines()[-1] if text else type(err).__name__)[:200]
    return WriteFailed(f"cannot write {path}: {reason}")


def plain(err: Exception) -> str:
    """An error as one line: a write the system refused in plain words (write_failed, on the path it names),
    anything else as it says itself."""
    found = os_error(err)
    if found is not None and found.filename and found.errno in WRITE_ERRNOS:
        return str(write_failed(found.filename, found))
    return str(err)


def _atomic(path: Path, write) -> None:
    """Write through a temporary file and rename, so an interruption or a failed write never leaves half a file: the
    temporary file goes, the file as it was stays."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, (OSError, RuntimeError)):  # torch.save reports a failed write as a RuntimeError
            raise write_failed(path, err, named=False) from None
        raise


def make_folder(folder: Path) -> None:
    """`folder` and its parents made where missing; WriteFailed (one plain line) where they cannot be."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise write_failed(folder, err) from None


def write_csv(path: Path, columns, rows) -> None:
    def write(tmp):
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)

    _atomic(Path(path), write)


def metrics_row(epoch, loss, data_term, penalty, val: dict, nonzero, total, lr, seconds) -> dict:
    """metrics.csv's row of an epoch; `val`: the task's metrics on validation ({"error": ...})."""
    return {
        "epoch": epoch,
        "train_loss": loss,
        "data_term": data_term,
        "penalty_term": penalty,
        **{f"val_{m}": v for m, v in val.items()},
        "nonzero_fraction": nonzero / total,
        "lr": lr,
        "seconds": seconds,
    }


def layer_rows(epoch, layers, positions, biases=None, units=None, dense=()) -> list[dict]:
    """layers.csv's rows of one epoch: the sparse layers', then one per module whose parameters train densely
    (`dense`: adrop.train.loop.evaluate.dense; a sparse layer's bias is counted in its own row's cost, not here)."""
    units = units or [{}] * len(layers)
    names = {name for name, *_ in layers}
    return [
        {
            "epoch": epoch,
            "layer": name,
            "trained": "method",
            "shape": "x".join(map(str, shape)),
            "nonzero": nz,
            "total": n,
            "nonzero_fraction": nz / n,
            **dict(zip(UNITS, u)),
            **cost.layer_cost(shape, nz, p, b),
        }
        for (name, shape, nz, n), p, b, u in zip(layers, positions, biases or [True] * len(layers), units)
    ] + [
        {
            "epoch": epoch,
            "layer": owner,
            "trained": "dense",
            "nonzero": nz,
            "total": n,
            "nonzero_fraction": nz / n if n else None,
            "dense_bytes": cost.FLOAT * n,
            "csr_bytes": cost.FLOAT * n,
        }
        for owner, nz, n in dense
        if owner not in names
    ]


def write_history(folder: Path, metrics: list[dict], layers: list[dict], columns=METRICS) -> None:
    write_csv(Path(folder) / METRICS_CSV, columns, metrics)
    write_csv(Path(folder) / LAYERS_CSV, LAYERS, layers)


def summary(
    run,
    model,
    device,
    epoch: int,
    elapsed: float,
    status: str,
    stacked: int,
    task,
    results=None,
    layers=None,
    nonzero=None,
    total=None,
    unmasked=None,
    normalisation=None,
    units=None,
    kept=None,
    dense=None,
    heads=None,
    data=None,
) -> dict:
    """summary.json of one run (`run`: its adrop.train.config.settings.Settings; the schema: this module's docstring);
    `model` gives the architecture and, for the cost, how often each layer's weights act per example; `task` the
    run's (adrop.train.tasks), `results` its metrics so far ({"test_error": ..., "val_error": ...}; those missing are
    null); `unmasked` the (test, val) values of its first metric without the keep rule; `data` the run's data
    (its targets' normalisation and vocabulary); `stacked` the size of the stack it trained in (1: alone); `units` and
    `kept` what adrop.train.loop.evaluate.kept_units gives; `dense` what adrop.train.loop.evaluate.dense gives (the
    parameters trained densely: counted in `parameters`, the whole network's totals, beside the sparsified weights')."""
    positions, biases = model.positions(), model.biases()
    units = units or [()] * len(layers or [])
    network_cost = None
    if layers is not None:
        network_cost = cost.network_cost(layers, positions, biases)
        if kept is not None:
            network_cost["compact_macs"] = kept.macs()
    return {
        "status": status,
        "method": run.method.name,
        "lam": run.lam,
        "lr": run.lr,
        "seed": run.seed,
        "epochs": epoch,
        "epochs_planned": run.epochs,
        **{f"{split}_{m}": (results or {}).get(f"{split}_{m}") for split in ("test", "val") for m in task.metrics},
        **(
            {}
            if unmasked is None
            else {f"test_{task.metrics[0]}_unmasked": unmasked[0], f"val_{task.metrics[0]}_unmasked": unmasked[1]}
        ),
        "task": task.name,
        **({"target_normalisation": data.targets} if data is not None and data.targets else {}),
        "nonzero_fraction": None if total is None else nonzero / total,
        "nonzero": nonzero,
        "total": total,
        "layers": None
        if layers is None
        else {
            name: {
                "shape": list(shape),
                "nonzero": nz,
                "total": n,
                "fraction": nz / n,
                **dict(zip(UNITS, u)),
                **cost.layer_cost(shape, nz, p, b),
            }
            for (name, shape, nz, n), p, b, u in zip(layers, positions, biases, units)
        },
        "parameters": None if total is None or dense is None else parameters(nonzero, total, dense, model.names),
        "cost": network_cost,
        "structure": run.structure,
        "kept_architecture": None if kept is None else kept.architecture,
        **({"heads": heads} if heads else {}),
        "wall_time_s": elapsed,
        "device": str(device),
        "dataset": run.dataset,
        "code": code_version(),
        "model": run.model.name,
        "architecture": model.architecture,
        "model_arguments": getattr(model, "arguments", None),
        "identity": run.identity,
        "batch_size": run.batch_size,
        "train_limit": run.data.train_limit,
        "stacked": stacked,
        **({} if normalisation is None else {"input_normalisation": normalisation}),
        **({"vocabulary": data.vocabulary} if data is not None and data.vocabulary else {}),
    }


def parameters(nonzero: int, total: int, dense, names) -> dict:
    """summary.json's `parameters`: the whole network's count and nonzero fraction, the sparsified weights' and the
    dense ones' beside them, and the dense ones per module (a sparse layer's bias under its name)."""
    dense_nonzero, dense_total = sum(d[1] for d in dense), sum(d[2] for d in dense)
    return {
        "total": total + dense_total,
        "nonzero": nonzero + dense_nonzero,
        "nonzero_fraction": (nonzero + dense_nonzero) / (total + dense_total),
        "sparsified": total,
        "sparsified_nonzero": nonzero,
        "dense": dense_total,
        "dense_nonzero": dense_nonzero,
        "dense_bytes": cost.FLOAT * dense_total,
        "dense_modules": {owner: n for owner, _, n in dense if owner not in names},
    }


def write_summary(folder: Path, summary: dict) -> None:
    _atomic(Path(folder) / SUMMARY, lambda tmp: Path(tmp).write_text(json.dumps(summary, indent=2) + "\n"))


def read_summary(folder: Path) -> dict | None:
    path = Path(folder) / SUMMARY
    return json.loads(path.read_text()) if path.exists() else None


def mark_failed(folder: Path, message: str, method: str, identity: dict | None, **extra) -> dict:
    """summary.json says the run failed and why, keeping what it said before (epochs so far, the last val error)."""
    summary = dict(read_summary(folder) or {})
    summary.update({"status": "failed", "error": message, "method": method, "identity": identity, **extra})
    write_summary(folder, summary)
    return summary


def mark_interrupted(folder: Path, why: str) -> None:
    """summary.json says the run was interrupted (by a signal) after its last checkpoint: rerunning its command into
    the folder resumes it."""
    summary = read_summary(folder)
    if summary is not None and summary.get("status") in ("running", "pending"):
        write_summary(folder, {**summary, "status": "interrupted", "error": why})


def write_config(folder: Path, config, hydra_config, overrides) -> None:
    """The run's configuration as Hydra would write it (.hydra/config.yaml, hydra.yaml, overrides.yaml); adrop writes
    it itself, once the folder is claimed, so that a refused command never touches an earlier run's copy."""
    from omegaconf import OmegaConf

    target = Path(folder) / HYDRA_DIR
    make_folder(target)
    for name, node in ((CONFIG, config), (HYDRA_CONFIG, hydra_config), (OVERRIDES, overrides)):
        if not (target / name).exists():
            _atomic(target / name, lambda tmp, node=node: OmegaConf.save(node, tmp))


def begin(folder: Path, config, hydra_config, overrides, method: str, identity: dict) -> None:
    """A claimed folder's first files: .hydra/ (write_config) and, until the first epoch's, a summary.json with status
    "pending" and the run's identity, so that a run killed before its first checkpoint is still known as its own
    (claim says "retry") and not refused as a folder holding no run."""
    write_config(folder, config, hydra_config, overrides)
    if read_summary(folder) is None:
        write_summary(folder, {"status": "pending", "method": method, "epochs": 0, "identity": identity})


def claim(folder: Path, identity: dict) -> str:
    """May the run `identity` use `folder`? "new" (missing or empty), "resume" (its own checkpoint is there),
    "completed" (its own finished run), "retry" (its own start that failed before a checkpoint). Anything else
    raises FolderTaken with a message that says what is there and what to do. Reads only; writes nothing."""
    folder = Path(folder)
    if not folder.exists() or not any(folder.iterdir()):
        return "new"
    where = "move that folder aside or choose another folder (hydra.run.dir, or hydra.sweep.dir for a sweep)"
    summary = None
    try:
        summary = read_summary(folder)
    except (OSError, ValueError) as err:
        raise FolderTaken(f"{folder / SUMMARY} cannot be read ({err}); {where}") from None
    if (folder / CHECKPOINT).exists():
        try:
            state = load_checkpoint(folder, "cpu")
        except Exception as err:  # truncated, corrupt, or a pickle that weights_only refuses
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise FolderTaken(
                f"{folder / CHECKPOINT} cannot be read: it is truncated or not an adrop checkpoint "
                f"({reason[:160]}); {where}"
            ) from None
        found = current_paths(state.get("identity")) if isinstance(state, dict) else None
        if found is None:
            raise FolderTaken(f"{folder / CHECKPOINT} is not an adrop checkpoint (no run identity in it); {where}")
        if found != identity:
            raise FolderTaken(
                f"{folder} holds another run ({describe(found, summary)}); adrop never overwrites an "
                f"earlier run: {where}"
            )
        return "completed" if summary and summary.get("status") == "completed" else "resume"
    if summary is not None:
        found = current_paths(summary.get("identity"))
        if found == identity:
            return "completed" if summary.get("status") == "completed" else "retry"
        raise FolderTaken(
            f"{folder} holds another run ({describe(found or summary, summary)}); adrop never "
            f"overwrites an earlier run: {where}"
        )
    names = sorted(p.name for p in folder.iterdir())
    raise FolderTaken(
        f"{folder} is not empty and holds no adrop run ({', '.join(names[:5])}"
        f"{', ...' if len(names) > 5 else ''}); {where}"
    )


class Held:
    """`folder` held by this process while it trains a run there: an exclusive, non-blocking flock on the folder
    (made if missing: WriteFailed where it cannot be), released by close() or when the process ends, however it ends.
    Raises FolderInUse when another process holds it. On a network file system flock may not reach other
    machines."""

    def __init__(self, folder: Path):
        self.folder, self.fd = Path(folder), None
        if fcntl is None:
            return
        make_folder(self.folder)
        fd = os.open(self.folder, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FolderInUse(
                f"{self.folder} is in use: another adrop command is training this run right now; "
                "rerun this one once that has stopped (the run resumes from its last checkpoint)"
            ) from None
        self.fd = fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def in_use(folder: Path) -> bool:
    """Whether another process holds `folder` (Held) right now: a shared flock tried and let go at once."""
    if fcntl is None or not Path(folder).is_dir():
        return False
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # and with it the shared lock
    return False


def describe(identity: dict, summary: dict | None) -> str:
    """A run in a few words: method, lam, lr, seed, epochs, and its status."""
    keys = ("method", "lam", "lr", "seed", "epochs")
    text = " ".join(f"{k}={identity[k]}" for k in keys if k in identity)
    status = (summary or {}).get("status")
    return f"{text}, {status}" if status else text


def write_weights(folder: Path, state: dict) -> None:
    """weights.npz: one network's state_dict (its own keys; masks and deterministic gates folded into the weights)."""
    arrays = {key: (t.float() if t.is_floating_point() else t).cpu().numpy() for key, t in state.items()}

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    _atomic(Path(folder) / WEIGHTS, write)


def read_weights(source: Path) -> dict:
    """weights.npz as {key: array} (what write_weights wrote), from a run folder or the file itself."""
    path = Path(source)
    with np.load(path / WEIGHTS if path.is_dir() else path) as arrays:
        return {key: arrays[key] for key in arrays.files}


def save_checkpoint(folder: Path, state: dict) -> None:
    import torch  # here, not at the top: report and export read run folders without torch

    def write(tmp):
        with open(tmp, "wb") as fh:  # a file object, not a path: a failed write then carries its OSError (EFBIG)
            torch.save(state, fh)

    _atomic(Path(folder) / CHECKPOINT, write)


def load_checkpoint(folder: Path, device) -> dict | None:
    path = Path(folder) / CHECKPOINT
    if not path.exists():
        return None
    import torch

    return torch.load(path, map_location=device, weights_only=True)
