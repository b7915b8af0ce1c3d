"""adrop.sparsify in a plain PyTorch loop: an MLP on scikit-learn's digits, the penalty added to the loss, the
method's work around each Adam step, the sparsity per layer, and the plain model saved.

    python examples/plain_loop.py --steps 600 --method logsum --lam 0.01 --out digits_mlp.pt
    python examples/plain_loop.py --steps 600 --method adaprox --target 0.1 --out digits_mlp.pt

With --target, lam is set during training so that the run ends at that fraction of the weights (adrop.target).
"""

import argparse
import sys

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn

import adrop

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.error = lambda message: parser.exit(2, f"{parser.prog}: {message}\n")  # one line, exit 2
parser.add_argument("--steps", type=int, default=600, help="Adam steps on batches of 64")
parser.add_argument("--method", default="logsum", help="any of adrop's methods")
parser.add_argument("--lam", type=float, default=None, help="the penalty's weight, per example (default 0.01)")
parser.add_argument("--target", type=float, default=None, help="end at this fraction of the weights (lam steered)")
parser.add_argument("--out", default="digits_mlp.pt", help="where the plain model's state_dict goes")
args = parser.parse_args()

digits = load_digits()
order = torch.randperm(len(digits.target), generator=torch.Generator().manual_seed(0))  # a shuffled split
x, y = torch.tensor(digits.data / 16.0, dtype=torch.float32)[order], torch.tensor(digits.target)[order]
train, test = slice(0, 1500), slice(1500, None)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
try:
    lam = args.lam if args.lam is not None or args.target is not None else 1e-2
    sp = adrop.sparsify(model, method=args.method, lam=lam, total_steps=args.steps, target=args.target)
except adrop.SparsifyError as err:
    print(f"{parser.prog}: {err}", file=sys.stderr)
    sys.exit(2)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)  # after sparsify: it holds the method's own parameters
sp.attach(optimizer)

batches = torch.Generator().manual_seed(0)
for step in range(args.steps):
    batch = torch.randint(train.start, train.stop, (64,), generator=batches)
    loss = F.cross_entropy(model(x[batch]), y[batch]) + sp.penalty()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

model.eval()  # the keep rule: what strip folds in
with torch.no_grad():
    accuracy = float((model(x[test]).argmax(1) == y[test]).float().mean())
print(sp.stats()[["layer", "shape", "nonzero", "total", "nonzero_fraction"]].to_string(index=False))
print(f"test accuracy {accuracy:.3f}, lam {sp.lam:.3g}")
torch.save(adrop.strip(model).state_dict(), args.out)
print(f"saved the plain model to {args.out}")
