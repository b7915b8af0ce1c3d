"""task=regression: real targets, one or several per example (y N or N x d), mean squared error on targets standardised
with the training split's mean and std (so that one lr and lam fit any units); the RMSE in the targets' own units and
R^2 (the coefficient of determination on the split, averaged over targets, as scikit-learn's r2_score)."""

from __future__ import annotations

import math

from .base import DIVERGED, TargetsError, Task


class Regression(Task):
    name = "regression"
    metrics = ("rmse", "r2")
    outputs = ("predictions", "targets")
    data_term = "mse"

    def __init__(self):
        self.mean = self.std = None  # the training targets' (per target), set by `targets` (or from a summary)

    def targets(self, raw_y, where, known, hint):
        import torch

        self.check_hint(hint, where)
        for split, y in raw_y.items():
            if y.dim() not in (1, 2):
                raise TargetsError(f"{where}: y_{split} has shape {list(y.shape)}; regression targets are N or N x d")
            if y.is_floating_point() and not bool(torch.isfinite(y).all()):
                raise TargetsError(f"{where}: y_{split} holds NaN or infinite values")
        widths = {split: y[0].numel() if len(y) else None for split, y in raw_y.items()}
        if len({w for w in widths.values() if w is not None}) > 1:
            raise TargetsError(f"{where}: the splits' targets differ in width ({widths}); each example has d targets")
        train = raw_y["train"].reshape(len(raw_y["train"]), -1)
        if len(train) < 2:
            raise TargetsError(f"{where}: regression needs at least 2 training examples")
        return train.shape[1]

    def fit(self, y_train):
        import torch

        train = y_train.double().reshape(len(y_train), -1)
        std = train.std(0) if len(train) > 1 else torch.ones(train.shape[1], dtype=torch.float64)
        self.mean, self.std = train.mean(0).tolist(), torch.where(std > 0, std, torch.ones_like(std)).tolist()

    def normalisation(self) -> dict:
        return {"mean": self.mean, "std": self.std}

    def prepare(self, y):
        import torch

        y = y.double().reshape(len(y), -1)
        return (
            (y - torch.tensor(self.mean, dtype=torch.float64)) / torch.tensor(self.std, dtype=torch.float64)
        ).float()

    def outputs_in_words(self, outputs, source):
        return f"{outputs} target{'s' if outputs > 1 else ''}"

    def loss(self, out, y):
        return (out.reshape(y.shape) - y).square().mean(1)

    def measure(self, predict, weights, split, batch):
        """RMSE in the targets' units and R^2, from sums in float64 over the split's batches."""
        import torch

        y = split.y.double()
        sse = torch.zeros(y.shape[1], dtype=torch.float64, device=y.device)
        for start in range(0, len(split), batch):
            out = predict(split.x[start : start + batch], weights).double()
            sse += (out.reshape(-1, y.shape[1]) - y[start : start + batch]).square().sum(0)
        sst = (y - y.mean(0)).square().sum(0)
        std = torch.tensor(self.std, dtype=torch.float64, device=y.device)
        rmse = math.sqrt(float((sse * std.square()).sum()) / y.numel())
        r2 = float((1 - sse / torch.where(sst > 0, sst, torch.ones_like(sst))).mean())
        return {"rmse": rmse, "r2": r2}

    def output_shapes(self, batch, outputs, input_shape):
        return [[batch, outputs]] + ([[batch]] if outputs == 1 else [])

    def divergence(self, data_term, outputs):
        if data_term > DIVERGED:
            return f"its mean squared error reached {data_term:.3g}, above {DIVERGED:g} times the targets' variance"
        return None

    def label(self, metric):
        return {"rmse": "RMSE", "r2": "R^2"}[metric]

    def format(self, metric, value):
        return "-" if value is None else f"{value:.4g}"
