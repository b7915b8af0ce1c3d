"""Eval mode computes a sparsified model's effective weights once and reuses them, and is never stale: an optimizer
step (a fused one too, which bumps no version), a load, an in-place edit, a new lam and a training forward all
count; with autograd on, eval computes afresh so that gradients reach the weights."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import adrop


class Model(nn.Module):
    """A swapped Linear layer and a parametrized embedding."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, tokens):
        return self.head(self.embed(tokens).mean(1))


def model_and_sp(method="logsum", lam=1e-2, fused=False):
    torch.manual_seed(0)
    model = Model()
    sp = adrop.sparsify(model, method=method, lam=lam)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05, fused=fused)
    sp.attach(optimizer)
    return model, sp, optimizer


def train(model, sp, optimizer, steps=3):
    model.train()
    for _ in range(steps):
        tokens = torch.randint(0, 20, (16, 5))
        loss = F.cross_entropy(model(tokens), tokens[:, 0] % 3) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def fresh(model, sp, tokens):
    """What eval mode must give: the stripped copy's output."""
    with torch.no_grad():
        return sp.plain_copy().eval()(tokens)


TOKENS = torch.arange(20).view(4, 5)


@pytest.mark.parametrize("fused", [False, True])
def test_eval_reuses_its_weights_and_an_optimizer_step_renews_them(fused):
    model, sp, optimizer = model_and_sp(fused=fused)
    train(model, sp, optimizer)
    model.eval()
    with torch.no_grad():
        first = model(TOKENS)
        cached = [layer._eval_cache[1] for layer in sp.layers]
        assert torch.equal(model(TOKENS), first)
        assert all(layer._eval_cache[1] is c for layer, c in zip(sp.layers, cached))  # reused, not recomputed
    assert torch.allclose(first, fresh(model, sp, TOKENS), atol=1e-6)
    model.train()
    tokens = torch.randint(0, 20, (16, 5))
    loss = F.cross_entropy(model(tokens), tokens[:, 0] % 3) + sp.penalty()
    optimizer.zero_grad()
    loss.backward()
    model.eval()  # evaluated between backward and step: the cache holds the weights before the step
    with torch.no_grad():
        assert torch.allclose(model(TOKENS), fresh(model, sp, TOKENS), atol=1e-6)
    optimizer.step()
    with torch.no_grad():
        after = model(TOKENS)
    assert not torch.equal(after, first)
    assert torch.allclose(after, fresh(model, sp, TOKENS), atol=1e-6)


def test_a_load_and_an_in_place_edit_each_renew_the_eval_weights():
    model, sp, optimizer = model_and_sp(method="adaptive_dropout", lam=1e-2)
    train(model, sp, optimizer, steps=5)
    other, other_sp, other_optimizer = model_and_sp(method="adaptive_dropout", lam=1e-2)
    train(other, other_sp, other_optimizer, steps=12)
    model.eval()
    with torch.no_grad():
        before = model(TOKENS)
        model.load_state_dict(other.state_dict())
        loaded = model(TOKENS)
    assert not torch.equal(loaded, before)
    assert torch.allclose(loaded, fresh(model, sp, TOKENS), atol=1e-6)
    with torch.no_grad():
        model.head.weight.mul_(2.0)
        edited = model(TOKENS)
    assert torch.allclose(edited, fresh(model, sp, TOKENS), atol=1e-6) and not torch.equal(edited, loaded)


def test_eval_with_autograd_computes_afresh_and_a_training_forward_frees_the_cache():
    model, sp, optimizer = model_and_sp()
    train(model, sp, optimizer)
    model.eval()
    with torch.no_grad():
        model(TOKENS)
    assert all(layer._eval_cache is not None for layer in sp.layers)
    model(TOKENS).sum().backward()  # a saliency pass in eval mode: gradients reach the trained weights
    assert model.head.weight.grad is not None and model.head.weight.grad.abs().sum() > 0
    with torch.no_grad():
        before = model(TOKENS)
        sp.lam = 10.0  # LogSum's keep rule drops more weights at a larger lam
        out = model(TOKENS)
    assert not torch.equal(out, before) and torch.allclose(out, fresh(model, sp, TOKENS), atol=1e-6)
    model.train()
    model(TOKENS)
    assert all(layer._eval_cache is None for layer in sp.layers)
