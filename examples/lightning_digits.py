"""adrop in Lightning: the Sparsify callback on a LightningModule that knows nothing of it (an MLP on scikit-learn's
digits), the sparsity logged each epoch, the plain module saved.

    python examples/lightning_digits.py --epochs 10 --method logsum --lam 0.01 --out lightning_digits
"""

import argparse
import sys
from pathlib import Path

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from lightning.pytorch.loggers import CSVLogger
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from adrop import SparsifyError
from adrop.integrations.lightning import Sparsify


class Digits(pl.LightningModule):
    """An MLP on the 8 x 8 digits: 1,500 to train on, the rest to test on."""

    def __init__(self, lr=3e-3):
        super().__init__()
        digits = load_digits()
        order = torch.randperm(len(digits.target), generator=torch.Generator().manual_seed(0))
        self.x = torch.tensor(digits.data / 16.0, dtype=torch.float32)[order]
        self.y = torch.tensor(digits.target)[order]
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)  # a mean over the batch: Sparsify adds the penalty's gradient to it
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        return loss

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_accuracy", (self(x).argmax(1) == y).float().mean())

    def configure_optimizers(self):  # runs after Sparsify converted the net: the optimizer holds its new parameters
        return torch.optim.Adam(self.parameters(), lr=self.lr)

    def train_dataloader(self):
        return DataLoader(
            TensorDataset(self.x[:1500], self.y[:1500]),
            batch_size=64,
            shuffle=True,
            generator=torch.Generator().manual_seed(0),
        )

    def test_dataloader(self):
        return DataLoader(TensorDataset(self.x[1500:], self.y[1500:]), batch_size=512)


parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.error = lambda message: parser.exit(2, f"{parser.prog}: {message}\n")  # one line, exit 2
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--method", default="logsum", help="any of adrop's methods")
parser.add_argument("--lam", type=float, default=1e-2, help="the penalty's weight, per example")
parser.add_argument("--out", type=Path, default=Path("lightning_digits"), help="a folder: the logs and the model")
args = parser.parse_args()

torch.manual_seed(0)
module = Digits()
sparsify = Sparsify(method=args.method, lam=args.lam)
trainer = pl.Trainer(
    max_epochs=args.epochs,
    callbacks=[sparsify],
    logger=CSVLogger(args.out, name="logs"),
    accelerator="cpu",
    devices=1,
    enable_progress_bar=False,
    enable_model_summary=False,
    enable_checkpointing=False,
)
try:
    trainer.fit(module)
except SparsifyError as err:
    print(f"{parser.prog}: {err}", file=sys.stderr)
    sys.exit(2)
print(
    f"nonzero fraction {float(trainer.callback_metrics['sparsity/nonzero_fraction']):.3f} (logged in "
    f"{trainer.logger.log_dir}/metrics.csv each epoch)"
)
print(sparsify.stats()[["layer", "shape", "nonzero", "total", "nonzero_fraction"]].to_string(index=False))
accuracy = trainer.test(module, verbose=False)[0]["test_accuracy"]  # eval mode: the keep rule, as strip folds in
print(f"test accuracy {accuracy:.3f}")
sparsify.strip()
torch.save(module.net.state_dict(), args.out / "net.pt")
print(f"saved the plain net to {args.out / 'net.pt'}")
