"""What a run learns: each task owns its loss, its metrics and how its data's targets must look.

    task=classification   integer labels, cross entropy; the error (fraction misclassified)
    task=regression       real targets (one or several per example), mean squared error on targets standardised on
                          the training split; RMSE (in the targets' own units) and R^2
    task=language_model   token ids in, the next token of each position out, cross entropy per token; the loss per
                          token (nats) and the perplexity

A task's first metric is its objective: lower is better, what the run's line shows, what a sweep returns by default
and what lam_search records. metrics.csv has `val_<metric>` for each metric, summary.json `val_<metric>` and
`test_<metric>`. A new task is one module here and its name in TASKS.
"""

from __future__ import annotations

from .base import TargetsError, Task
from .classification import Classification
from .language_model import LanguageModel
from .regression import Regression

TASKS: dict[str, type[Task]] = {
    "classification": Classification,
    "regression": Regression,
    "language_model": LanguageModel,
}


def get(name: str) -> Task:
    """The task of this name; ValueError (one line) naming the valid ones."""
    if name not in TASKS:
        raise ValueError(f"task={name} is not a task; valid: {', '.join(TASKS)}")
    return TASKS[name]()


def of(summary: dict) -> Task:
    """The task a run's summary.json was trained for (older runs: classification), with the normalisation of its
    targets where it has one."""
    task = get(summary.get("task") or "classification")
    normalisation = summary.get("target_normalisation")
    if normalisation and isinstance(task, Regression):
        task.mean, task.std = normalisation["mean"], normalisation["std"]
    return task


def headline(summary: dict, split: str = "test", first: bool = False) -> str:
    """A run's results in words: "test error 0.0210", "test RMSE 54.1, test R^2 0.452" (`first`: its first metric
    alone)."""
    task = of(summary)
    shown = task.metrics[:1] if first else task.metrics
    return ", ".join(f"{split} {task.label(m)} {task.format(m, summary.get(f'{split}_{m}'))}" for m in shown)


def result_columns(names) -> list[str]:
    """Of these column names, those that hold a task's results (test_error, val_rmse, ...), in the tasks' order."""
    names = set(names)
    out = []
    for task in TASKS.values():
        for split in ("test", "val"):
            out += [f"{split}_{m}" for m in task.metrics if f"{split}_{m}" in names and f"{split}_{m}" not in out]
    return out


__all__ = [
    "TASKS",
    "Classification",
    "LanguageModel",
    "Regression",
    "TargetsError",
    "Task",
    "get",
    "headline",
    "of",
    "result_columns",
]
