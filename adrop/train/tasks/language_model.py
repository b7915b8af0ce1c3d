"""task=language_model: token ids in (x N x T), the next token of each position out (y N x T, x shifted by one), cross
entropy per token; the loss per token (nats) and the perplexity, exp(loss). The network returns N x T x vocabulary
logits (a causal model: position t sees tokens up to t)."""

from __future__ import annotations

import math

from .base import TargetsError, Task


class LanguageModel(Task):
    name = "language_model"
    metrics = ("perplexity", "loss")
    outputs = ("next-token logits", "vocabulary")
    data_term = "loss"

    def targets(self, raw_y, where, known, hint):
        self.check_hint(hint, where)
        for split, y in raw_y.items():
            if y.is_floating_point() or y.dim() != 2:
                what = "real numbers" if y.is_floating_point() else f"shape {list(y.shape)}"
                raise TargetsError(
                    f"{where}: y_{split} holds {what}; task=language_model needs token ids N x T (the "
                    "next token of each position)"
                )
        vocabulary = known or 1 + max(int(y.max()) for y in raw_y.values())
        for split, y in raw_y.items():
            if bool(((y < 0) | (y >= vocabulary)).any()):
                raise TargetsError(f"{where}: y_{split} holds a token id outside [0, {vocabulary})")
        return vocabulary

    def outputs_in_words(self, outputs, source):
        return f"a vocabulary of {outputs} tokens (from {source})"

    def loss(self, out, y):
        import torch.nn.functional as F

        return F.cross_entropy(out.reshape(y.numel(), -1), y.reshape(-1), reduction="none").view(y.shape).mean(1)

    def measure(self, predict, weights, split, batch):
        import torch
        import torch.nn.functional as F

        total = torch.zeros((), dtype=torch.float64, device=split.y.device)
        for start in range(0, len(split), batch):
            y = split.y[start : start + batch]
            out = predict(split.x[start : start + batch], weights)
            total += F.cross_entropy(out.reshape(y.numel(), -1).float(), y.reshape(-1), reduction="sum").double()
        loss = float(total) / split.y.numel()
        return {"perplexity": math.exp(min(loss, 700.0)), "loss": loss}

    def output_shapes(self, batch, outputs, input_shape):
        return [[batch, *input_shape, outputs]]

    def format(self, metric, value):
        return "-" if value is None else f"{value:.4g}" if metric == "perplexity" else f"{value:.4f}"
