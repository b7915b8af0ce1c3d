"""Effective penalties of dropout methods (paper Table 2, Sec. 4): the facts the paper states about them."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import dawsn

from adrop import penalties
from adrop.penalties.variational_dropout import kl_approx, kl_exact

W = np.concatenate([[0.0], np.logspace(-4, 1.5, 80)])


def test_bernoulli_l0_at_lam_1_is_mcp_1_1():
    bern, mcp = penalties.get("bernoulli_l0", lam=1.0), penalties.get("mcp", a=1.0, lam=1.0)
    assert np.allclose(bern.omega_elementwise(W), mcp.omega_elementwise(W), rtol=1e-6, atol=1e-12)
    inside = W < 0.999  # eta_hat is inf beyond a*lam = 1 for both
    assert np.allclose(bern.eta_hat(W[inside]), mcp.eta_hat(W[inside]), rtol=1e-4, atol=1e-10)
    assert np.all(np.isinf(bern.eta_hat(W[W > 1.001])))


def test_variational_dropout_kl_matches_adaptive_quadrature():
    ratio = np.array([1e-6, 1e-2, 0.5, 3.0, 100.0, 1e5])
    ref = [quad(lambda t: dawsn(np.sqrt(t / 2)) / np.sqrt(2 * t), 0, r, limit=400, epsrel=1e-12)[0] for r in ratio]
    assert np.allclose(kl_exact(ratio), ref, rtol=1e-10)


def test_variational_dropout_is_l1_near_zero_and_logarithmic_far_away():
    for lam in (1.0, 4.0):
        vd = penalties.get("variational_dropout", lam=lam)
        assert np.allclose(vd.omega_elementwise(1e-7) / 1e-7, 1 / np.sqrt(lam), rtol=1e-4)
    vd = penalties.get("variational_dropout")
    steps = np.diff(vd.omega_elementwise(np.array([1e3, 1e4, 1e5])))
    assert np.allclose(steps, np.log(10.0), rtol=1e-3)  # Omega ~ log|w| + const


def test_variational_dropout_approximation_is_close_to_exact():
    """Molchanov's sigmoid fit of the KL stays within 0.01 per unit of f; the penalties within 0.01."""
    eta = np.logspace(-6, 8, 200)
    assert np.max(np.abs(kl_exact(eta) - kl_approx(eta))) < 0.01
    exact, approx = (penalties.get("variational_dropout", approx=a) for a in (False, True))
    assert np.max(np.abs(exact.omega_elementwise(W) - approx.omega_elementwise(W))) < 0.01


@pytest.mark.parametrize("name", ["variational_dropout", "hard_concrete", "bernoulli_l0"])
def test_numerical_minimum_is_no_worse_than_brute_force(name):
    """The grid-then-golden search finds the global minimum over the dual curve (compared with a dense scan)."""
    pen = penalties.get(name)
    t = np.linspace(-30.0, 30.0, 60001)
    eta, f = pen._dual_curve(t)
    for x in (0.05, 0.3, 0.9, 2.5):
        with np.errstate(divide="ignore"):
            brute = np.min(0.5 * (x * x / eta + f))
        assert pen.omega_elementwise(x)[0] <= brute + 1e-12


def test_hard_concrete_moments_agree_with_monte_carlo():
    hc = penalties.get("hard_concrete")
    rng = np.random.default_rng(0)
    n = 400_000
    for log_a in (-3.0, 0.0, 2.5):
        u = rng.uniform(size=n)
        z = 1 / (1 + np.exp(-(np.log(u) - np.log1p(-u) + log_a) / hc.beta))
        s = np.clip((hc.zeta - hc.gamma) * z + hc.gamma, 0.0, 1.0)
        mean, var = hc.moments(np.array(log_a))
        assert abs(mean - s.mean()) < 5 * s.std() / np.sqrt(n)
        assert abs(var - s.var()) < 5 * np.std((s - s.mean()) ** 2) / np.sqrt(n)
        assert abs(hc.p_nonzero(log_a) - np.mean(s > 0)) < 5 * np.sqrt(0.25 / n)


def test_hard_concrete_is_a_smoothed_l0():
    """0 at 0, increasing, and capped at f(inf)/2 = 1 (every gate open), reached at a finite |w~|."""
    hc = penalties.get("hard_concrete")
    values = hc.omega_elementwise(W)
    assert values[0] == 0.0 and np.all(np.diff(values) >= -1e-12) and np.isclose(values[-1], 1.0)


def test_standout_closed_form_is_corollary_1_of_its_eta_hat():
    so = penalties.get("standout", lam=0.5, w2=1.5)
    z = np.linspace(0.0, 20.0, 101)
    assert np.allclose(so.omega_via_eta_hat(z), so.omega_elementwise(z), rtol=1e-8, atol=1e-12)
    assert np.allclose(so.omega_via_dual(z)[0], so.omega_elementwise(z), rtol=1e-6, atol=1e-12)  # f round trip
    assert np.all(so.omega_elementwise(-z) == 0.0)  # a function of (z)_+
    assert np.isclose(0.5 * so.omega_elementwise(50.0)[0], 1.5**2)  # lam * Omega does not depend on lam (lam = 0.5)


def test_magnitude_pruning_is_hard_thresh():
    w = np.array([0.3, -2.0, 0.0, 1.0, -0.5])
    mp, ht = penalties.get("magnitude_pruning", k=2), penalties.get("hard_thresh", k=2)
    assert np.array_equal(mp.eta_hat(w), [0, np.inf, 0, np.inf, 0]) and np.array_equal(mp.eta_hat(w), ht.eta_hat(w))
    assert mp.omega(w) == np.inf and mp.omega(np.where(np.isinf(mp.eta_hat(w)), w, 0.0)) == 0.0
