"""torch.compile(model, fullgraph=True) of a sparsified model trains from its first step, without an eager forward
first, for every method, on a swapped Linear layer and a parametrized embedding alike; eval mode compiles too. The
checks the Sparsifier makes around a forward run eagerly (the step hooks), not inside the compiled graph."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import adrop
from adrop import methods
from adrop.sparsifier import default_lam


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, 16)
        self.head = nn.Linear(16, 30)

    def forward(self, tokens):
        return self.head(self.emb(tokens).mean(1))


@pytest.mark.slow
@pytest.mark.parametrize("method", methods.names())
def test_a_sparsified_model_compiles_with_fullgraph_from_the_first_step(method):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = Tiny()
    with torch.no_grad():
        model.head.weight[:, ::2] = 0  # zeros that fixed_mask keeps
    options = {"total_steps": 3} if method == "magnitude_pruning" else {}
    lam = None if default_lam(method) == 0 else 1e-3
    sp = adrop.sparsify(model, method=method, lam=lam, **options)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(optimizer)
    compiled = torch.compile(model, fullgraph=True)
    tokens = torch.randint(0, 30, (8, 5))
    before = model.head.weight.detach().clone()
    for _ in range(3):
        loss = F.cross_entropy(compiled(tokens), tokens[:, 0]) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert torch.isfinite(loss) and not torch.equal(model.head.weight, before)
    assert sp.steps == (3 if sp.needs_steps else 0)
    assert sp.positions == {"head": 1}  # recorded inside the compiled forward; the hook removed after a step
    compiled.eval()
    with torch.no_grad():
        assert torch.allclose(compiled(tokens), sp.plain_copy().eval()(tokens), atol=1e-5)
