"""Optional live logging of a run (`logger=tensorboard` or `logger=mlflow`): a view of what the run's CSV and JSON
files record.

Each epoch: the metrics.csv row (train_loss, data_term, penalty_term, val_error, nonzero_fraction, lr), each layer's
nonzero fraction, and a histogram per layer of what decides its sparsity (the method's `keep_statistic`: the keep
probability alpha for the eta-hat methods and eta-Trick, log alpha for variational dropout, the test gate for
HardConcrete). TensorBoard: event files in <run folder>/tensorboard/ (`tensorboard --logdir outputs/` shows every run,
a sweep's jobs side by side). MLflow: a file store in <run folder>/mlruns/, no server (`mlflow ui --backend-store-uri
<run folder>/mlruns`): metrics by epoch, and each epoch's histograms as JSON artifacts (counts and bin edges), MLflow
having no histogram type; MLflow 3 keeps the file store in maintenance mode behind MLFLOW_ALLOW_FILE_STORE, which
adrop sets for its own store. Installed with an extra: pip install -e ".[tracking]".
"""

from __future__ import annotations

import os
from pathlib import Path

from adrop.train.run_folder import run_files

LOGGERS = ("none", "tensorboard", "mlflow")
PACKAGES = {"tensorboard": "tensorboard", "mlflow": "mlflow"}
LOGGED = [key for key in run_files.METRICS if key not in ("epoch", "seconds")]  # metrics.csv's columns, as metrics


class Tracker:
    """No logging (logger=none)."""

    wants_statistics = False  # whether epoch() uses the per-layer statistics (so that nobody computes them for none)

    def epoch(self, epoch: int, metrics: dict, layers: list[dict], statistics: dict) -> None:
        pass

    def close(self) -> None:
        pass


class TensorBoard(Tracker):
    wants_statistics = True

    def __init__(self, folder: Path):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(Path(folder) / "tensorboard"))

    def epoch(self, epoch, metrics, layers, statistics):
        for key in LOGGED:
            self.writer.add_scalar(f"train/{key}", metrics[key], epoch)
        for row in layers:
            self.writer.add_scalar(f"nonzero/{row['layer']}", row["nonzero_fraction"], epoch)
            self.writer.add_scalar(f"units/{row['layer']}", row["units_out_kept"], epoch)  # units (filters) kept
        for (layer, name), values in statistics.items():
            self.writer.add_histogram(f"{name}/{layer}", values.detach().float().cpu().flatten(), epoch)
        self.writer.flush()

    def close(self):
        self.writer.close()


def check(name: str) -> None:
    """Fails at start, in one line, when the logger is unknown or its package is not installed."""
    if name not in LOGGERS:
        raise ValueError(f"unknown logger {name!r}; valid loggers: {', '.join(LOGGERS)}")
    if name in PACKAGES:
        try:
            __import__(PACKAGES[name])
        except ImportError:
            raise ValueError(
                f"logger={name} needs the {PACKAGES[name]} package: pip install -e '.[tracking]'"
            ) from None


class MLflow(Tracker):
    wants_statistics = True

    def __init__(self, folder: Path, run_name: str):
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=(Path(folder).absolute() / "mlruns").as_uri())
        found = self.client.get_experiment_by_name("adrop")
        experiment = found.experiment_id if found else self.client.create_experiment("adrop")
        self.run_id = self.client.create_run(experiment, run_name=run_name).info.run_id

    def epoch(self, epoch, metrics, layers, statistics):
        import numpy as np

        for key in LOGGED:
            self.client.log_metric(self.run_id, key, float(metrics[key]), step=epoch)
        for row in layers:
            self.client.log_metric(self.run_id, f"nonzero_{row['layer']}", float(row["nonzero_fraction"]), step=epoch)
            self.client.log_metric(self.run_id, f"units_{row['layer']}", float(row["units_out_kept"]), step=epoch)
        if statistics:
            hist = {}
            for (layer, name), values in statistics.items():
                counts, edges = np.histogram(values.detach().float().cpu().numpy().ravel(), bins=50)
                hist[f"{name}/{layer}"] = {"counts": counts.tolist(), "edges": edges.tolist()}
            self.client.log_dict(self.run_id, hist, f"histograms/epoch_{epoch:04d}.json")

    def close(self):
        self.client.set_terminated(self.run_id)


def make(name: str, folder: Path) -> Tracker:
    check(name)
    if name == "tensorboard":
        return TensorBoard(folder)
    if name == "mlflow":
        return MLflow(folder, Path(folder).name)
    return Tracker()


def statistics(method, model, lam, k: int | None = None) -> dict:
    """{(layer, name): values} of what decides each layer's sparsity (configuration k's row, for a stack)."""
    out = {}
    for name, layer in zip(model.names, model.layers):
        stat = method.keep_statistic(layer, lam)
        if stat is not None:
            out[(name, stat[0])] = stat[1] if k is None else stat[1][k]
    return out
