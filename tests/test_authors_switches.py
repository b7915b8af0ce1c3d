"""Switches that follow the authors' public code where it departs from the paper (../shared/REFERENCE.md), off by
default: eta-Trick's dual and extra term, AdaProx's counting rule."""
import math

import numpy as np
import pytest
import torch

from adrop import methods
from adrop.train.loop import Run


def eta_trick(**params):
    cls = methods.get("eta_trick")
    return cls(cls.Params(**params), 1, 1)


def test_authors_dual_doubles_the_second_term_of_the_logsum_dual():
    eta = torch.tensor([0.0, 0.5, 1.0, 10.0], dtype=torch.float64)
    paper, authors = eta_trick().dual(eta), eta_trick(authors_dual=True).dual(eta)
    root = torch.sqrt(4.0 + 4.0 * eta)
    second = (root - 2.0) ** 2 / torch.where(eta > 0, 4.0 * eta, torch.ones_like(eta))  # (r - eps)^2 / (4 eta)
    assert torch.allclose(paper, 2 * torch.log((root + 2) / 2) - second)
    assert torch.allclose(authors, 2 * torch.log((root + 2) / 2) - 2 * second)
    assert float(paper[2]) == pytest.approx(2 * math.log((math.sqrt(8) + 2) / 2) - (math.sqrt(8) - 2) ** 2 / 4)
    with pytest.raises(ValueError, match="needs penalty=logsum"):
        eta_trick(authors_dual=True, penalty="l1", penalty_params={})


def test_authors_extra_term_is_half_the_papers():
    assert eta_trick(authors_extra_term=True).c == 0.5 * eta_trick().c == 5e-4


def test_authors_keep_rule_counts_with_the_step_size_and_trains_the_same(synthetic, tmp_path):
    common = ("method=adaprox", "lam=0.05", "lr=1e-2", "epochs=3")
    paper = Run(synthetic(*common), tmp_path / "paper")
    s_paper = paper.fit()
    authors = Run(synthetic(*common, "method.params.authors_keep_rule=true"), tmp_path / "authors")
    s_authors = authors.fit()
    a, b = np.load(tmp_path / "paper" / "weights.npz"), np.load(tmp_path / "authors" / "weights.npz")
    trained = authors.model.layers[0].weight.detach()
    assert torch.equal(paper.model.layers[0].weight.detach(), trained)  # the rule counts; it does not train
    rho = authors.model.layers[0].last_step
    eta = authors.method.pen.eta_hat(trained)
    expected = (torch.where(torch.isinf(eta), 1.0, eta / (eta + rho * 0.05)) >= 0.05)
    assert torch.equal(authors.method.keep_mask(authors.model.layers[0], 0.05), expected)
    assert s_authors["nonzero"] >= s_paper["nonzero"]  # rho lam < lam: more weights count as kept
    assert set(a.files) == set(b.files)


@pytest.mark.parametrize("mask", ["bernoulli", "gaussian"])
def test_adaptive_dropout_masks_have_the_duality_moments(mask):
    """E[s] = 1 and E[s^2] = 1/alpha (so E L(s w) carries lam/2 sum w^2/eta, eq. 4); s = 0 where alpha = 0."""
    cls = methods.get("adaptive_dropout")
    method = cls(cls.Params(mask=mask), 1, 1)
    torch.manual_seed(0)
    alpha = torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0]).repeat(200_000, 1)
    s = method.mask(alpha)
    assert torch.all(s[:, 0] == 0)
    assert torch.allclose(s[:, 1:].mean(0), torch.ones(4), atol=0.02)
    assert torch.allclose((s[:, 1:] ** 2).mean(0), 1 / alpha[0, 1:], rtol=0.03)


def test_adaptive_dropout_trains_sparse_on_synthetic_data(synthetic, tmp_path):
    summary = Run(synthetic("method=adaptive_dropout", "lam=0.05", "lr=1e-2", "epochs=4"), tmp_path).fit()
    assert summary["status"] == "completed" and summary["nonzero_fraction"] < 0.9
