"""What a run leaves in its folder, and the checkpoint that lets it resume.

    metrics.csv    one row per epoch: epoch, train_loss, data_term, penalty_term, val_error, nonzero_fraction, lr,
                   seconds
    layers.csv     one row per epoch and layer: epoch, layer, shape, nonzero, total, nonzero_fraction
    summary.json   test_error, val_error (fractions, final, masked), nonzero_fraction, layers, epochs, wall_time_s,
                   device, method, lam, lr, seed, status (completed | failed | running), error (when failed),
                   code (the git commit that ran, or the installed version)
    weights.npz    <layer>.weight (out x in) and <layer>.bias of every Linear layer in forward order, exactly the
                   arrays evaluation uses (ReLU between layers; inputs normalised as the dataset says)
    checkpoint.pt  the state after the last finished epoch (tensors and plain containers: loads with weights_only)
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import torch

METRICS = ["epoch", "train_loss", "data_term", "penalty_term", "val_error", "nonzero_fraction", "lr", "seconds"]
LAYERS = ["epoch", "layer", "shape", "nonzero", "total", "nonzero_fraction"]
CHECKPOINT = "checkpoint.pt"


def _atomic(path: Path, write) -> None:
    """Write through a temporary file and rename, so an interruption never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def write_csv(path: Path, columns, rows) -> None:
    def write(tmp):
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
    _atomic(Path(path), write)


def write_summary(folder: Path, summary: dict) -> None:
    _atomic(Path(folder) / "summary.json", lambda tmp: Path(tmp).write_text(json.dumps(summary, indent=2) + "\n"))


def read_summary(folder: Path) -> dict | None:
    path = Path(folder) / "summary.json"
    return json.loads(path.read_text()) if path.exists() else None


def write_weights(folder: Path, weights) -> None:
    arrays = {}
    for name, w, b in weights:
        arrays[f"{name}.weight"] = w.float().cpu().numpy()
        arrays[f"{name}.bias"] = b.float().cpu().numpy()
    _atomic(Path(folder) / "weights.npz", lambda tmp: np.savez(open(tmp, "wb"), **arrays))


def save_checkpoint(folder: Path, state: dict) -> None:
    _atomic(Path(folder) / CHECKPOINT, lambda tmp: torch.save(state, tmp))


def load_checkpoint(folder: Path, device) -> dict | None:
    path = Path(folder) / CHECKPOINT
    if not path.exists():
        return None
    return torch.load(path, map_location=device, weights_only=True)
