"""The eta-trick identities for every closed-form penalty, as properties (paper eq. 5, eq. 6, Appendix A)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from adrop import penalties
from adrop.penalties import duality

# 0 or >= 1e-30: below that eta_hat (|w|^(2-p)) can leave the float64 range that the numerical search covers
magnitudes = st.one_of(st.just(0.0), st.floats(1e-30, 50.0))
unit = st.floats(0.0, 1.0)

SEPARABLE = {  # name -> strategy for its parameters
    "l1": st.just({}),
    "lpp": st.builds(dict, p=st.floats(0.1, 1.9)),
    "l0": st.just({}),
    "elastic_net": st.builds(dict, theta=st.floats(0.0, 0.95)),
    "huber": st.builds(dict, eps=st.floats(0.05, 5.0)),
    "logsum": st.builds(dict, eps=st.floats(0.05, 5.0)),
    "scad": st.builds(dict, a=st.floats(2.1, 6.0), lam=st.floats(0.1, 3.0)),
    "mcp": st.builds(dict, a=st.floats(0.2, 6.0), lam=st.floats(0.1, 3.0)),
}


def close(a, b, rtol=1e-6, atol=1e-10):
    return np.allclose(a, b, rtol=rtol, atol=atol)


def objective(pen, w, eta):
    """1/2 (w^2/eta + f(eta)) for one coordinate."""
    return 0.5 * (duality.tikhonov(w, eta) + pen.f_elementwise(eta))


@pytest.mark.parametrize("name", sorted(SEPARABLE))
@given(data=st.data(), w=magnitudes)
def test_omega_is_min_over_eta(name, data, w):
    """Omega(w) = min_eta 1/2 (w^2/eta + f(eta)), the minimum found numerically from f alone."""
    pen = penalties.get(name, **data.draw(SEPARABLE[name]))
    numeric, _ = pen.omega_via_dual(w)
    assert close(numeric, pen.omega_elementwise(w))


@pytest.mark.parametrize("name", sorted(SEPARABLE))
@given(data=st.data(), w=magnitudes, t=st.floats(-8.0, 8.0))
def test_eta_hat_is_the_minimiser(name, data, w, t):
    pen = penalties.get(name, **data.draw(SEPARABLE[name]))
    eta_hat = pen.eta_hat(w)
    lo, hi = pen.domain()
    assert lo <= eta_hat[0] <= hi
    assert close(objective(pen, w, eta_hat), pen.omega_elementwise(w))
    eta = np.clip(np.exp(t), lo, hi)  # any other eta in H does no better
    assert objective(pen, w, eta)[0] >= pen.omega_elementwise(w)[0] - 1e-9 * (1 + abs(pen.omega_elementwise(w)[0]))


@pytest.mark.parametrize("name", sorted(SEPARABLE))
@given(data=st.data(), u1=st.floats(0.0, 100.0), u2=st.floats(0.0, 100.0), t=unit)
def test_concave_in_w_squared(name, data, u1, u2, t):
    pen = penalties.get(name, **data.draw(SEPARABLE[name]))
    g = lambda u: pen.omega_elementwise(np.sqrt(u))[0]  # noqa: E731
    assert g(t * u1 + (1 - t) * u2) >= t * g(u1) + (1 - t) * g(u2) - 1e-9 * (1 + abs(g(u1)) + abs(g(u2)))


vectors = st.lists(st.floats(-10.0, 10.0), min_size=1, max_size=6).map(np.array)


@given(w=vectors, p=st.floats(0.2, 1.9), noise=st.lists(st.floats(-2.0, 2.0), min_size=6, max_size=6))
def test_lp_norm_identities(w, p, noise):
    """ell_p is not separable: the identity holds for whole vectors, with f = ||eta||_q."""
    pen = penalties.get("lp", p=p)
    assume(np.abs(w).max() > 1e-3)
    eta = pen.eta_hat(w)
    at_hat = 0.5 * (np.sum(duality.tikhonov(w, eta)) + pen.f(eta))
    assert close(at_hat, pen.omega(w))
    other = eta * np.exp(np.array(noise[: w.size])) + 1e-12
    assert 0.5 * (np.sum(duality.tikhonov(w, other)) + pen.f(other)) >= pen.omega(w) * (1 - 1e-9)


@given(
    u1=st.lists(st.floats(0, 10), min_size=4, max_size=4),
    u2=st.lists(st.floats(0, 10), min_size=4, max_size=4),
    t=unit,
    p=st.floats(0.2, 1.9),
)
def test_lp_concave_in_w_squared(u1, u2, t, p):
    pen = penalties.get("lp", p=p)
    u1, u2 = np.array(u1), np.array(u2)
    g = lambda u: pen.omega(np.sqrt(u))  # noqa: E731
    assert g(t * u1 + (1 - t) * u2) >= t * g(u1) + (1 - t) * g(u2) - 1e-9 * (1 + g(u1) + g(u2))


@given(w=st.lists(st.floats(-5.0, 5.0), min_size=1, max_size=8).map(np.array), k=st.integers(0, 8))
def test_hard_thresh_is_iht(w, k):
    """HardThresh(k): eta_hat = inf on the Top-k, in H, and the eta-trick objective there equals Omega."""
    pen = penalties.get("hard_thresh", k=k)
    eta = pen.eta_hat(w)
    assert np.count_nonzero(eta) <= max(k, 0) and pen.f(eta) == 0.0
    kept = np.isinf(eta)
    assert np.all(np.abs(w[kept]).min(initial=np.inf) >= np.abs(w[~kept]).max(initial=0.0))
    value = 0.5 * (np.sum(duality.tikhonov(w, eta)) + pen.f(eta))
    assert value == pen.omega(w) == (np.inf if np.count_nonzero(w) > k else 0.0)


@pytest.mark.parametrize("name", sorted(set(SEPARABLE) - {"l0"}))
def test_f_is_the_legendre_fenchel_dual(name):
    """f from Omega by the LF sup matches the table's f on H, to 1e-6."""
    pen = penalties.get(name)
    lo, hi = pen.domain()
    eta = np.concatenate([[lo], np.logspace(-5, 4, 120)])
    eta = eta[(eta >= lo) & (eta < hi)]
    assert close(pen.f_via_transform(eta), pen.f_elementwise(eta))


@pytest.mark.parametrize("name", sorted(set(SEPARABLE) - {"l0"}))
def test_corollary1_integral_of_eta_hat(name):
    """Omega(w) - Omega(0) = int_0^|w| s / eta_hat(s) ds (l0 is excluded: its eta_hat jumps at 0, see the paper)."""
    pen = penalties.get(name)
    w = np.concatenate([[0.0], np.logspace(-6, 2, 150)])
    assert close(pen.omega_via_eta_hat(w), pen.omega_elementwise(w))


@pytest.mark.parametrize("name", penalties.names())
def test_finite_documented_values_at_the_edges(name):
    """w = 0, eta = 0 and eta = inf give numbers, never NaN (inf only where the value is infinite)."""
    pen = penalties.get(name)
    w = np.array([0.0, 1e-300, 1e-8, 1.0, 1e8])
    if pen.separable:
        assert not np.isnan(pen.omega_elementwise(w)).any()
        assert not np.isnan(pen.f_elementwise(np.array([0.0, 1e-300, 1.0, 1e300, np.inf]))).any()
        assert np.isfinite(pen.omega_elementwise(0.0)).all()
        assert np.isfinite(pen.f_elementwise(pen.domain()[0])).all()  # f at the low end of H (0 but for huber)
    else:
        assert not np.isnan(pen.omega(w)) and not np.isnan(pen.f(np.array([0.0, 1.0, np.inf])))
    assert not np.isnan(pen.eta_hat(w)).any() and np.isfinite(pen.eta_hat(0.0)).all()


EDGE_VALUES = [  # (name, params, omega(0), f(0), f(inf))
    ("l1", {}, 0.0, 0.0, np.inf),
    ("l0", {}, 0.0, 0.0, 2.0),
    ("logsum", {"eps": 2.0}, np.log(2.0), 2 * np.log(2.0), np.inf),
    ("mcp", {"a": 2.0, "lam": 1.5}, 0.0, 0.0, 3.0),
    ("scad", {"a": 3.7, "lam": 1.0}, 0.0, 0.0, 4.7),
    ("huber", {"eps": 1.0}, 0.5, np.inf, np.inf),  # f = inf outside H = [eps, inf)
    ("variational_dropout", {}, 0.0, 0.0, np.inf),
    ("hard_concrete", {}, 0.0, 0.0, 2.0),
    ("bernoulli_l0", {}, 0.0, 0.0, 1.0),
]


@pytest.mark.parametrize("name,params,omega0,f0,finf", EDGE_VALUES)
def test_documented_edge_values(name, params, omega0, f0, finf):
    pen = penalties.get(name, **params)
    assert close(pen.omega_elementwise(0.0), omega0)
    assert close(pen.f_elementwise(np.array([0.0, np.inf])), [f0, finf])


ALL_WITH_PARAMS = [(name, {}) for name in penalties.names()] + [
    ("elastic_net", {"theta": 0.5}),
    ("huber", {"eps": 2.0}),
    ("lp", {"p": 1.5}),
    ("lpp", {"p": 0.5}),
]


@pytest.mark.parametrize("name,params", ALL_WITH_PARAMS)
@settings(max_examples=15)
@given(below=st.floats(1e-12, 1e6), above=st.floats(1e-12, 1e6))
def test_f_is_inf_outside_the_domain(name, params, below, above):
    """f(eta) = +inf for eta outside H, for every penalty (whatever its formula would give there); non-separable
    penalties are inf for a vector with any coordinate outside."""
    pen = penalties.get(name, **params)
    lo, hi = pen.domain()
    out = [lo - below, -np.inf] + ([hi + above, hi * (1 + 1e-9) + above] if np.isfinite(hi) else [])
    if pen.separable:
        assert np.all(pen.f_elementwise(np.array(out)) == np.inf)
    else:
        for eta in out:
            assert pen.f(np.array([lo + 1.0, eta])) == np.inf


@pytest.mark.parametrize("name,params", ALL_WITH_PARAMS)
def test_f_is_never_nan_inside_the_domain(name, params):
    pen = penalties.get(name, **params)
    lo, hi = pen.domain()
    inner = lo + np.array([0.0, 5e-324, 1e-8, 0.5, 1.0]) * (min(hi, lo + 10.0) - lo)
    if pen.separable:
        assert not np.isnan(pen.f_elementwise(inner)).any()
    else:
        assert not np.isnan(pen.f(inner))
