"""adrop.sparsify under DistributedDataParallel, two gloo processes on the CPU, written the way a user writes it:
sparsify, then wrap, then the optimizer from the wrapped model. Each rank draws its own data and its own noise; after
training every tensor of the model (weights, gates, log sigma^2, adaptive dropout's alphas, pruning's masks) is the
same on both ranks. The orders that would train each rank alone are refused in one line."""

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import adrop
from adrop.sparsifier import SparsifyError

# one method per family: a penalty, a proximal step, gates, adaptive dropout, VarDrop, a pruning schedule
FAMILIES = {
    "logsum": 1e-2,
    "adaprox": 1e-2,
    "hard_concrete": 1e-3,
    "adaptive_dropout": 1e-2,
    "vardrop_lr_ar": 1e-3,
    "magnitude_pruning": None,
}
STEPS = 12


def mlp():
    torch.manual_seed(0)  # the same start on every rank (DDP broadcasts rank 0's anyway)
    return nn.Sequential(nn.Linear(10, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, 3))


def options(method):
    if method == "magnitude_pruning":
        return {"total_steps": STEPS, "final_sparsity": 0.5, "frequency": 2}
    return {"lam": FAMILIES[method]}


def ranks(rank, init, out):
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=2)
    torch.set_num_threads(1)
    try:
        for method in FAMILIES:
            model = mlp()
            sp = adrop.sparsify(model, method=method, **options(method))
            ddp = DistributedDataParallel(model)
            optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-2)
            sp.attach(optimizer)
            torch.manual_seed(100 + rank)  # each rank its own batches and its own noise
            for _ in range(STEPS):
                x = torch.randn(16, 10)
                loss = F.cross_entropy(ddp(x), x[:, :3].argmax(1)) + sp.penalty()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            torch.save({"state": state, "nonzero": int(sp.stats()["nonzero"].sum())}, f"{out}/{method}-{rank}.pt")
        refused = {}
        model = mlp()
        wrapped = DistributedDataParallel(model)
        try:
            adrop.sparsify(wrapped, method="logsum", lam=1e-2)
        except SparsifyError as err:
            refused["sparsify the wrapper"] = str(err)
        sp = adrop.sparsify(model, method="logsum", lam=1e-2)  # the module inside, after wrapping
        sp.attach(torch.optim.Adam(model.parameters(), lr=1e-2))
        try:
            wrapped(torch.randn(4, 10))
        except SparsifyError as err:
            refused["sparsify inside the wrapper"] = str(err)
        torch.save(refused, f"{out}/refused-{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_every_family_trains_the_same_model_on_both_ranks_and_the_wrong_orders_are_refused(tmp_path):
    mp.spawn(ranks, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    for method in FAMILIES:
        first, second = (torch.load(tmp_path / f"{method}-{r}.pt", weights_only=True) for r in (0, 1))
        assert first["state"].keys() == second["state"].keys()
        for key, value in first["state"].items():
            assert torch.equal(value, second["state"][key]), (method, key)
        assert first["nonzero"] == second["nonzero"]
        fresh = mlp().state_dict()
        assert not torch.equal(first["state"]["0.weight"], fresh["0.weight"]), method  # it trained
    for rank in (0, 1):
        refused = torch.load(tmp_path / f"refused-{rank}.pt", weights_only=True)
        assert refused.keys() == {"sparsify the wrapper", "sparsify inside the wrapper"}
        assert all("call adrop.sparsify(model) first, then wrap" in line for line in refused.values())
        assert all("\n" not in line for line in refused.values())
