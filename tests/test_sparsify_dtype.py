"""adrop.sparsify on a model in bfloat16 or float16, as large models are loaded: the new layers and every method's
own tensors follow the dtype (and device) of the weight they replace, every method trains, strip gives the model back
in its dtype, and the penalty's small constants that half precision cannot hold do not turn a gradient into NaN."""

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import adrop
from adrop import methods

LAM = {"vardrop_lr_ar": 1e-4}


class Tiny(nn.Module):
    """Every kind of weight adrop trains: an embedding and a Conv1d (parametrized), torch's Transformer layer (its
    attention's packed projection and its Linear layers parametrized), and a Linear layer swapped."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, 16)
        self.conv = nn.Conv1d(16, 16, 3, padding=1)
        self.enc = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 30)

    def forward(self, x):
        h = self.conv(self.emb(x).transpose(1, 2)).transpose(1, 2)
        return self.head(self.enc(h))


def options(method):
    if method == "magnitude_pruning":
        return {"total_steps": 4, "final_sparsity": 0.5, "frequency": 1}
    return {"lam": None if adrop.sparsifier.default_lam(method) == 0 else LAM.get(method, 1e-3)}


@pytest.mark.parametrize("structure", ["weight", "neuron"])
@pytest.mark.parametrize("method", methods.names())
def test_every_method_trains_a_bfloat16_model_in_bfloat16_and_strips_to_it(method, structure):
    torch.manual_seed(0)
    model = Tiny().to(torch.bfloat16)
    with torch.no_grad():
        model.head.weight[:, ::2] = 0  # zeros that fixed_mask keeps
    sp = adrop.sparsify(model, method=method, structure=structure, **options(method))
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert {b.dtype for b in model.buffers() if b.is_floating_point()} <= {torch.bfloat16}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sp.attach(optimizer)
    x = torch.randint(0, 30, (4, 6))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    for _ in range(4):
        out = model(x)
        assert out.dtype == torch.bfloat16
        loss = F.cross_entropy(out.float().flatten(0, 1), x.flatten()) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert any(not torch.equal(before[n], p) for n, p in model.named_parameters() if n in before)
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert int(sp.stats()["total"].sum()) > 0
    plain = adrop.strip(model)
    assert {p.dtype for p in plain.parameters()} == {torch.bfloat16}
    with torch.no_grad():
        assert plain(x).dtype == torch.bfloat16


@pytest.mark.parametrize("method", ["vardrop_lr_ar", "vardrop_lr", "logsum", "adaptive_dropout"])
def test_a_float16_weight_of_zero_gets_a_finite_gradient(method):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)).to(torch.float16)
    with torch.no_grad():
        model[0].weight[:, :3] = 0  # mu = 0: log(mu^2 + 1e-16), sqrt(var + 1e-8) in float16 would be -inf, 0
        model[0].weight[:, 3] = 1e-4  # mu^2 under float16's smallest number
    sp = adrop.sparsify(model, method=method, lam=1e-4)
    sp.attach(torch.optim.SGD(model.parameters(), lr=0.1))
    x = torch.zeros(16, 8, dtype=torch.float16)
    x[:, 3:] = torch.randn(16, 5).half()
    loss = model(x).float().pow(2).mean() + sp.penalty()
    loss.backward()
    assert torch.isfinite(loss)
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
