"""adrop.sparsify under FSDP2 (torch.distributed.fsdp.fully_shard), two gloo processes on the CPU, written the way a
user writes it: sparsify, then fully_shard each block and the model, then the optimizer from the sharded model.

A deterministic method trains exactly what one process trains on the two ranks' batches together (FSDP averages the
data term's gradients; the penalty's, summed over the shards, reaches each shard once), by weights and by units (a
Linear layer's input units span both shards). A noisy method trains on both ranks, and its statistics count every
weight, not a rank's shard. Sparsify after sharding, and FSDP1, are refused in one line."""

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn

import adrop
from adrop.sparsifier import SparsifyError

EXACT = {  # method: (lam, structure)
    "dense": (None, "weight"),
    "logsum": (1e-2, "weight"),
    "adaprox": (1e-2, "neuron"),
    "eta_trick": (1e-2, "weight"),
    "magnitude_pruning": (None, "weight"),
}
NOISY = {"adaptive_dropout": 1e-2, "vardrop_lr_ar": 1e-3, "hard_concrete": 1e-3}
STEPS, BATCH = 8, 16  # BATCH per rank


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(10, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))


class Tokens(nn.Module):
    """Parametrized tensors (an embedding, attention's packed projections) beside a swapped Linear."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb, self.att, self.head = (
            nn.Embedding(12, 16),
            nn.MultiheadAttention(16, 4, batch_first=True),
            nn.Linear(16, 3),
        )

    def forward(self, t):
        h = self.emb(t)
        return self.head(self.att(h, h, h, need_weights=False)[0].mean(1))


TOKENS = {
    "logsum-weight": ("logsum", "weight", {}),
    "adaprox-heads": ("adaprox", "neuron", {}),
    "adaprox-target": ("adaprox", "weight", {"target": 0.5, "total_steps": STEPS}),
}


def token_batches():
    torch.manual_seed(200)
    return [torch.randint(0, 12, (2 * BATCH, 5)) for _ in range(STEPS)]


def train_tokens(model, sp, optimizer, ts, rank=None):
    for t in ts:
        if rank is not None:
            t = t[rank * BATCH : (rank + 1) * BATCH]
        loss = F.cross_entropy(model(t), t[:, 0] % 3) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def options(method, lam, structure="weight"):
    if method == "magnitude_pruning":
        return {"total_steps": STEPS, "final_sparsity": 0.5, "frequency": 2}
    return {} if lam is None else {"lam": lam, "structure": structure}


def batches():
    torch.manual_seed(100)
    return [torch.randn(2 * BATCH, 10) for _ in range(STEPS)]


def train(model, sp, optimizer, xs, rank=None):
    for x in xs:
        if rank is not None:
            x = x[rank * BATCH : (rank + 1) * BATCH]
        loss = F.cross_entropy(model(x), x[:, :3].argmax(1)) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def whole(model):
    return {
        k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().clone() for k, v in model.state_dict().items()
    }


def ranks(rank, init, out):
    from torch.distributed.fsdp import FullyShardedDataParallel, fully_shard
    from torch.distributed.tensor import DTensor

    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=2)
    torch.set_num_threads(1)
    try:
        results = {}
        for method, lam in {**{m: v[0] for m, v in EXACT.items()}, **NOISY}.items():
            model = mlp()
            sp = adrop.sparsify(model, method=method, **options(method, lam, EXACT.get(method, (0, "weight"))[1]))
            for block in (model[0], model[3]):
                fully_shard(block)
            fully_shard(model)
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
            sp.attach(optimizer)
            torch.manual_seed(7 + rank)  # each rank its own noise
            train(model, sp, optimizer, batches(), rank)
            stats = sp.stats()
            sharded = isinstance(model[0].weight, DTensor) and model[0].weight.to_local().shape[0] == 8
            results[method] = {
                "sharded": sharded,
                "state": whole(model),
                "nonzero": stats["nonzero"].tolist(),
                "total": stats["total"].tolist(),
            }
        for case, (method, structure, extra) in TOKENS.items():
            model = Tokens()
            sp = adrop.sparsify(model, method=method, lam=1e-2, structure=structure, **extra)
            for block in (model.emb, model.att):
                fully_shard(block)
            fully_shard(model)
            optimizer = torch.optim.SGD(
                model.parameters(), lr=0.5
            )  # Adam would blow up k's bias: its gradient is rounding
            sp.attach(optimizer)
            train_tokens(model, sp, optimizer, token_batches(), rank)
            results[case] = {
                "state": whole(model),
                "nonzero": sp.stats()["nonzero"].tolist(),
                "kept": sp.kept_fraction(),
            }
        refused = {}
        model = mlp()
        sp = adrop.sparsify(model, method="logsum", lam=1e-2)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        sp.attach(optimizer)
        fully_shard(model)  # after the optimizer was made: it holds the parameters fully_shard replaced
        try:
            train(model, sp, optimizer, batches()[:1], rank)
        except SparsifyError as err:
            refused["optimizer before fully_shard"] = str(err)
        model = mlp()
        fully_shard(model)
        try:
            adrop.sparsify(model, method="logsum", lam=1e-2)
        except SparsifyError as err:
            refused["sparsify a sharded model"] = str(err)
        model = mlp()
        sp = adrop.sparsify(model, method="logsum", lam=1e-2)
        wrapped = FullyShardedDataParallel(model, use_orig_params=True, device_id=torch.device("cpu"))
        try:
            wrapped(torch.randn(4, 10))
        except SparsifyError as err:
            refused["FSDP1 after sparsify"] = str(err)
        try:
            adrop.sparsify(FullyShardedDataParallel(mlp(), device_id=torch.device("cpu")), method="logsum", lam=1e-2)
        except SparsifyError as err:
            refused["sparsify FSDP1"] = str(err)
        torch.save({"results": results, "refused": refused}, f"{out}/rank-{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_every_method_trains_under_fully_shard_as_one_process_does_and_the_wrong_orders_are_refused(tmp_path):
    mp.spawn(ranks, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    first, second = (torch.load(tmp_path / f"rank-{r}.pt", weights_only=True) for r in (0, 1))
    for method, (lam, structure) in EXACT.items():
        model = mlp()
        sp = adrop.sparsify(model, method=method, **options(method, lam, structure))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        sp.attach(optimizer)
        train(model, sp, optimizer, batches())
        one = model.state_dict()
        sharded = first["results"][method]
        assert sharded["sharded"], method  # each rank held half the rows
        assert sharded["state"].keys() == one.keys(), method
        for key, value in one.items():
            torch.testing.assert_close(sharded["state"][key], value, rtol=1e-4, atol=1e-5, msg=f"{method} {key}")
        assert sharded["nonzero"] == sp.stats()["nonzero"].tolist(), method
    for case, (method, structure, extra) in TOKENS.items():
        model = Tokens()
        sp = adrop.sparsify(model, method=method, lam=1e-2, structure=structure, **extra)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)  # Adam would blow up k's bias: its gradient is rounding
        sp.attach(optimizer)
        train_tokens(model, sp, optimizer, token_batches())
        for rank in (first, second):
            sharded = rank["results"][case]
            assert sharded["nonzero"] == sp.stats()["nonzero"].tolist(), case  # every shard counted, parametrized too
            assert sharded["kept"] == pytest.approx(sp.kept_fraction()), case
            for key, value in sp.plain_copy().state_dict().items():
                if key in sharded["state"]:
                    torch.testing.assert_close(sharded["state"][key], value, rtol=1e-4, atol=1e-5, msg=f"{case} {key}")
    assert first["results"]["adaprox-target"]["kept"] == pytest.approx(0.5, rel=0.05)
    fresh = mlp().state_dict()
    for method in NOISY:
        mine, theirs = first["results"][method], second["results"][method]
        assert mine["nonzero"] == theirs["nonzero"] and mine["total"] == theirs["total"], method
        assert mine["total"] == [160, 256, 48], method  # every weight counted, not a shard
        for key, value in mine["state"].items():
            assert torch.equal(value, theirs["state"][key]), (method, key)  # buffers (alpha, masks) are each rank's own
        assert not torch.equal(mine["state"]["0.weight"], fresh["0.weight"]), method  # it trained
    assert first["results"]["magnitude_pruning"]["nonzero"] != first["results"]["magnitude_pruning"]["total"]
    for rank in (first, second):
        refused = rank["refused"]
        assert refused.keys() == {
            "optimizer before fully_shard",
            "sparsify a sharded model",
            "FSDP1 after sparsify",
            "sparsify FSDP1",
        }
        assert "make the optimizer after fully_shard" in refused["optimizer before fully_shard"]
        assert "call adrop.sparsify(model) first, then fully_shard" in refused["sparsify a sharded model"]
        assert all(
            "fully_shard (FSDP2) after adrop.sparsify" in refused[k] for k in ("FSDP1 after sparsify", "sparsify FSDP1")
        )
        assert all("\n" not in line for line in refused.values())
