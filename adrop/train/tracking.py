"""Optional live logging of a run (`logger=tensorboard`): a view of what the run's CSV and JSON files record.

Each epoch: the metrics.csv row (train_loss, data_term, penalty_term, val_error, nonzero_fraction, lr), each layer's
nonzero fraction, and a histogram per layer of what decides its sparsity (the method's `keep_statistic`: the keep
probability alpha for the eta-hat methods and eta-Trick, log alpha for variational dropout, the test gate for
HardConcrete). Event files go to <run folder>/tensorboard/: `tensorboard --logdir outputs/` shows every run, a
sweep's jobs side by side. Installed with an extra: pip install -e ".[tracking]".
"""
from __future__ import annotations

from pathlib import Path

LOGGERS = ("none", "tensorboard")


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
        for key in ("train_loss", "data_term", "penalty_term", "val_error", "nonzero_fraction", "lr"):
            self.writer.add_scalar(f"train/{key}", metrics[key], epoch)
        for row in layers:
            self.writer.add_scalar(f"nonzero/{row['layer']}", row["nonzero_fraction"], epoch)
        for (layer, name), values in statistics.items():
            self.writer.add_histogram(f"{name}/{layer}", values.detach().float().cpu().flatten(), epoch)
        self.writer.flush()

    def close(self):
        self.writer.close()


def check(name: str) -> None:
    """Fails at start, in one line, when the logger is unknown or its package is not installed."""
    if name not in LOGGERS:
        raise ValueError(f"unknown logger {name!r}; valid loggers: {', '.join(LOGGERS)}")
    if name == "tensorboard":
        try:
            import tensorboard  # noqa: F401  (torch.utils.tensorboard needs it)
        except ImportError:
            raise ValueError("logger=tensorboard needs the tensorboard package: pip install -e '.[tracking]'") from None


def make(name: str, folder: Path) -> Tracker:
    check(name)
    return TensorBoard(folder) if name == "tensorboard" else Tracker()


def statistics(method, model, lam, k: int | None = None) -> dict:
    """{(layer, name): values} of what decides each layer's sparsity (configuration k's row, for a stack)."""
    out = {}
    for name, layer in zip(model.names, model.layers):
        stat = method.keep_statistic(layer, lam)
        if stat is not None:
            out[(name, stat[0])] = stat[1] if k is None else stat[1][k]
    return out
