"""The VarDrop methods' KL with its gradient written out (kl_and_slope) against autograd of Molchanov's fit."""

import pytest
import torch

from adrop.methods.variational_dropout import AdditiveKL, ClampedKL
from adrop.penalties.variational_dropout import kl_approx_log


def fit(log_alpha, per_config):
    kl = kl_approx_log(-log_alpha.clamp(-10.0, 10.0))
    return kl.flatten(1).sum(1) if per_config else kl.sum()


def grads(value, per_config, *leaves):
    weight = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    (value * weight).sum().backward() if per_config else (3.0 * value).backward()
    out = [t.grad.clone() for t in leaves]
    for t in leaves:
        t.grad = None
    return out


@pytest.mark.parametrize("per_config", [False, True])
def test_clamped_kl_matches_autograd_of_the_fit_inside_and_outside_the_clamp(per_config):
    log_alpha = torch.linspace(-14.0, 14.0, 3 * 40, dtype=torch.float64).view(3, 5, 8).requires_grad_()
    value = ClampedKL.apply(log_alpha, -10.0, 10.0, per_config)
    (slope,) = grads(value, per_config, log_alpha)
    expected = fit(log_alpha, per_config)
    (expected_slope,) = grads(expected, per_config, log_alpha)
    assert torch.allclose(value, expected, rtol=1e-12)
    assert torch.allclose(slope, expected_slope, rtol=1e-10, atol=1e-14)
    outside = log_alpha.detach().abs() >= 10  # clamp passes no gradient at lo or hi either
    assert outside.any() and (slope[outside] == 0).all() and (slope[~outside] != 0).all()


@pytest.mark.parametrize("per_config", [False, True])
def test_additive_kl_matches_autograd_through_log_sigma2_and_the_weight(per_config):
    g = torch.Generator().manual_seed(0)
    mu = (0.05 * torch.randn(3, 20, 30, generator=g, dtype=torch.float64)).requires_grad_()
    log_sigma2 = (24 * torch.rand(3, 20, 30, generator=g, dtype=torch.float64) - 18).requires_grad_()
    with torch.no_grad():
        mu[0, 0, :3] = 0.0  # log alpha clamped at 10: no gradient
    value = AdditiveKL.apply(mu, log_sigma2, -10.0, 10.0, per_config)
    got = grads(value, per_config, mu, log_sigma2)
    expected = fit(log_sigma2 - torch.log(mu * mu + 1e-16), per_config)
    want = grads(expected, per_config, mu, log_sigma2)
    assert torch.allclose(value, expected, rtol=1e-12)
    for a, b in zip(got, want):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-14)
    assert (got[0][0, 0, :3] == 0).all()
