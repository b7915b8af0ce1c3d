"""A checkpoint and its resume in a plain PyTorch loop: adrop.sparsify with Adam and a StepLR schedule on
scikit-learn's digits. Stopped at --stop and resumed in a new process, a run ends with the very weights of the run
that went straight through (on the CPU, bit for bit).

    python examples/resume.py --steps 300 --stop 150 --checkpoint ckpt.pt        # trains 150 steps, saves, stops
    python examples/resume.py --steps 300 --checkpoint ckpt.pt --out resumed.pt  # goes on from the checkpoint
    python examples/resume.py --steps 300 --out straight.pt                      # the same run without a stop
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn

import adrop

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.error = lambda message: parser.exit(2, f"{parser.prog}: {message}\n")  # one line, exit 2
parser.add_argument("--steps", type=int, default=300, help="Adam steps on batches of 64")
parser.add_argument("--method", default="adaptive_dropout", help="any of adrop's methods")
parser.add_argument("--lam", type=float, default=1e-2, help="the penalty's weight, per example")
parser.add_argument("--stop", type=int, help="save the checkpoint after this many steps and stop")
parser.add_argument("--checkpoint", help="the checkpoint: resumed from where it exists, written at --stop")
parser.add_argument("--out", default="model.pt", help="where the trained model's state_dict goes")
args = parser.parse_args()

digits = load_digits()
x, y = torch.tensor(digits.data / 16.0, dtype=torch.float32), torch.tensor(digits.target)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
try:
    sp = adrop.sparsify(model, method=args.method, lam=args.lam, total_steps=args.steps)
except adrop.SparsifyError as err:
    sys.exit(f"{parser.prog}: {err}")
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)  # after sparsify: it holds the method's own parameters
sp.attach(optimizer)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=100, gamma=0.5)

start = 0
if args.checkpoint and os.path.exists(args.checkpoint) and args.stop is None:
    saved = torch.load(args.checkpoint, weights_only=True)
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    sp.load_state_dict(saved["sparsifier"])  # the step count, lam, the method's state, torch's generators
    start = saved["step"]
    print(f"resumed at step {start}")

for step in range(start, args.steps if args.stop is None else args.stop):
    batch = torch.randint(0, len(y), (64,))  # torch's generator: sp.state_dict() holds its state
    loss = F.cross_entropy(model(x[batch]), y[batch]) + sp.penalty()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()

if args.stop is not None:
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "sparsifier": sp.state_dict(),
        "step": args.stop,
    }
    torch.save(checkpoint, args.checkpoint or "checkpoint.pt")
    print(f"saved the checkpoint at step {args.stop} to {args.checkpoint or 'checkpoint.pt'}")
else:
    print(sp.stats()[["layer", "shape", "nonzero", "total"]].to_string(index=False))
    torch.save(model.state_dict(), args.out)
    print(f"saved the model to {args.out}")
