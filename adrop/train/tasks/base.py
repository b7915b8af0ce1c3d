"""The interface every task implements (adrop.train.tasks). Tasks import torch only where they compute, so that the
report reads what a task names (its metrics) without torch."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# what a dataset that is for a task holds, as a message names it
TARGETS = {
    "regression": "real-valued targets (a regression set)",
    "language_model": "token sequences (next-token data)",
    "classification": "class labels",
}


class TargetsError(ValueError):
    """Targets that do not fit the task (one line); the data loader reports it as a DataError."""


class Task(ABC):
    name = ""
    metrics: tuple[str, ...] = ()  # reported on validation and test; the first is the objective (lower is better)
    data_term = "loss"  # what the run's line calls the data term
    outputs = ("outputs", "targets")  # what the network returns, and of what: a wrong output's message

    def check_hint(self, hint: str | None, where: str) -> None:
        """TargetsError where the source's data are for another task (`hint`: that task, or None)."""
        if hint not in (None, self.name):
            raise TargetsError(f"{where} holds {TARGETS[hint]}: use task={hint}")

    def outputs_in_words(self, outputs: int, source: str) -> str:
        """The run's opening words on what the network outputs: "10 classes (from the dataset)"."""
        return f"{outputs} outputs (from {source})"

    @abstractmethod
    def loss(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per example (N,): the data term of outputs `out` (N, ...) as the network returns them, for targets y."""

    @abstractmethod
    def measure(self, predict, weights, split, batch: int) -> dict[str, float]:
        """{metric: value} of the network (predict(x, state)) with these tensors on a split, in float32."""

    @abstractmethod
    def targets(self, raw_y: dict, where: str, known: int | None, hint: str | None):
        """The targets of each split (`raw_y`: {split: tensor}) checked for this task (TargetsError, one line): the
        network's outputs per example (per token), from `known` (the source's or dataset.classes) or the targets.
        `hint`: the task the source's data are for, where it says (a regression set)."""

    def fit(self, y_train) -> None:
        """What the task learns of the training split's targets (a regression: their mean and std)."""

    def prepare(self, y: torch.Tensor) -> torch.Tensor:
        """A split's targets as the loss takes them (standardised, for regression)."""
        return y

    def notes(self, y_train: torch.Tensor, outputs: int) -> tuple:
        """What the run's opening lines say of the targets."""
        return ()

    def output_shapes(self, batch: int, outputs: int, input_shape) -> list[list[int]]:
        """The output shapes the network may return for a batch."""
        return [[batch, outputs]]

    def divergence(self, data_term: float, outputs: int) -> str | None:
        """Why an epoch's mean data term counts as divergence, or None."""
        bound = DIVERGED * math.log(max(outputs, 2))
        if data_term > bound:
            return f"its cross-entropy reached {data_term:.3g}, above {DIVERGED:g} times a uniform guess's"
        return None

    def label(self, metric: str) -> str:
        return metric

    def format(self, metric: str, value) -> str:
        return "-" if value is None else f"{value:.4f}"


DIVERGED = 1e3  # a data term 1000 times a trivial guess's (a uniform guess's cross entropy; the targets' variance)
