"""task=classification: integer labels 0..classes-1, cross entropy; the error (the fraction misclassified)."""

from __future__ import annotations

from .base import TargetsError, Task

FEW = 5  # a class with fewer training examples than this is named when the run starts (a stray label?)


class Classification(Task):
    name = "classification"
    metrics = ("error",)
    outputs = ("logits", "classes")
    data_term = "loss"

    def outputs_in_words(self, outputs, source):
        return f"{outputs} classes (from {source})"

    def loss(self, out, y):
        import torch.nn.functional as F

        return F.cross_entropy(out, y, reduction="none")

    def measure(self, predict, weights, split, batch):
        import torch

        wrong = torch.zeros((), dtype=torch.long, device=split.x.device)
        for start in range(0, len(split), batch):
            logits = predict(split.x[start : start + batch], weights)
            wrong += (logits.argmax(1) != split.y[start : start + batch]).sum()
        return {"error": wrong.item() / len(split)}

    def targets(self, raw_y, where, known, hint):
        import torch

        self.check_hint(hint, where)
        for split, y in raw_y.items():
            whole = not y.is_floating_point() or bool((torch.isfinite(y) & (y == y.round())).all())
            if not whole or y.dim() != 1:
                what = "real numbers" if not whole else f"shape {list(y.shape)}"
                raise TargetsError(
                    f"{where}: y_{split} holds {what}; task=classification needs one integer label per "
                    "example (task=regression for real-valued targets)"
                )
        raw_y = {split: y.long() for split, y in raw_y.items()}
        classes = known or 1 + int(raw_y["train"].max())  # inferred from the training labels alone
        for split, y in raw_y.items():
            bad = (y < 0) | (y >= classes)
            if bool(bad.any()):
                label = int(y[bad][0])
                fix = (
                    f"; y_train's labels are 0..{classes - 1}: if the data has {label + 1} classes, set "
                    f"dataset.classes={label + 1}"
                    if not known and label >= classes
                    else ""
                )
                raise TargetsError(f"{where}: y_{split} holds label {label}, outside [0, {classes}){fix}")
        return classes

    def prepare(self, y):
        return y.long()

    def notes(self, y_train, classes) -> tuple:
        """The run's notes on classes with fewer than FEW training examples (none at all, or a stray label's one)."""
        import torch

        counts = torch.bincount(y_train.long(), minlength=classes)
        few = [(c, int(counts[c])) for c in range(classes) if counts[c] < FEW]
        if not few:
            return ()
        shown = ", ".join(f"class {c}: {n}" for c, n in few[:5]) + (f" and {len(few) - 5} more" if len(few) > 5 else "")
        return (
            f"{len(few)} of the {classes} classes have fewer than {FEW} training examples ({shown}): a stray "
            "label? (labels must be 0..classes-1)",
        )
