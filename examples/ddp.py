"""adrop.sparsify under DistributedDataParallel or FSDP2: two processes on the CPU (gloo), each training on its own
half of scikit-learn's digits, in the order that trains them together: sparsify, wrap (or fully_shard each layer and
the model), the optimizer from the wrapped model, attach. At the end every tensor of the model (weights and the
method's own, gathered whole where sharded) is the same on both processes.

    python examples/ddp.py --steps 200 --method adaptive_dropout --lam 0.01
    python examples/ddp.py --steps 200 --method logsum --lam 0.01 --fsdp

On GPUs, the same script runs under torchrun with the nccl backend, one process per device.
"""

import argparse
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import adrop


def train(rank: int, world: int, init: str, args) -> None:
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    torch.set_num_threads(1)
    digits = load_digits()
    x, y = torch.tensor(digits.data / 16.0, dtype=torch.float32), torch.tensor(digits.target)
    mine = torch.arange(rank, 1500, world)  # this process's half of the training split
    torch.manual_seed(0)  # the same start everywhere (DDP broadcasts rank 0's weights anyway)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    sp = adrop.sparsify(model, method=args.method, lam=args.lam, total_steps=args.steps)  # first
    if args.fsdp:  # then shard: each layer (a large model's blocks), then the model
        from torch.distributed.fsdp import fully_shard

        for layer in (model[0], model[2]):
            fully_shard(layer)
        ddp = fully_shard(model)
    else:  # or wrap
        ddp = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=3e-3)
    sp.attach(optimizer)
    torch.manual_seed(1 + rank)  # each process its own batches and its own dropout noise
    for _ in range(args.steps):
        batch = mine[torch.randint(0, len(mine), (32,))]
        loss = F.cross_entropy(ddp(x[batch]), y[batch]) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    state = [getattr(t, "full_tensor", t.detach)().detach().clone() for t in model.state_dict().values()]
    gathered = [None] * world
    dist.all_gather_object(gathered, state)
    same = all(torch.equal(a, b) for other in gathered for a, b in zip(gathered[0], other))
    model.eval()  # every process: under FSDP a forward and stats() gather the shards together
    with torch.no_grad():
        accuracy = float((model(x[1500:]).argmax(1) == y[1500:]).float().mean())
    stats = sp.stats()
    if rank == 0:
        print(stats[["layer", "nonzero", "total", "nonzero_fraction"]].to_string(index=False))
        print(f"test accuracy {accuracy:.3f}; every tensor the same on the {world} processes: {same}")
    dist.destroy_process_group()
    if not same:
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--method", default="adaptive_dropout")
    parser.add_argument("--lam", type=float, default=1e-2)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--fsdp", action="store_true", help="shard with FSDP2's fully_shard instead of DDP")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        init = "file://" + os.path.join(folder, "rendezvous")
        mp.spawn(train, args=(args.processes, init, args), nprocs=args.processes, join=True)


if __name__ == "__main__":
    main()
