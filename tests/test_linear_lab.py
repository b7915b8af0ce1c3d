"""The linear-regression lab: solvers against peers, dropout as Tikhonov, Theorem 1 on a small problem, bad input."""

import numpy as np
import pytest
from sklearn.linear_model import ElasticNet, Lasso

from adrop.linear import fit, make_sparse_regression, standardise
from adrop.linear.dropout_tikhonov import expected_dropout_loss, monte_carlo_dropout_loss
from adrop.linear.irls import ridge_start


@pytest.fixture(scope="module")
def small():
    return make_sparse_regression(n=120, d=40, k=4, noise=0.1, seed=3)


@pytest.fixture(scope="module")
def wide():
    return make_sparse_regression(n=100, d=400, k=5, noise=0.3, correlation=0.3, seed=4)


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def test_generator_standardises_and_plants_k_nonzeros(small):
    X = small.problem.X
    assert np.allclose(np.mean(X * X, axis=0), 1.0) and np.count_nonzero(small.w_true) == 4
    assert small.problem.is_standardised()
    assert np.allclose(np.mean(standardise(3 * X) ** 2, axis=0), 1.0)


@pytest.mark.parametrize("data_name", ["small", "wide"])
@pytest.mark.parametrize("solver", ["irls", "adaprox"])
def test_lasso_matches_scikit_learn(data_name, solver, request):
    data = request.getfixturevalue(data_name)
    X, y, lam = data.problem.X, data.problem.y, 0.08
    ours = fit(X, y, "l1", lam, solver, tol=1e-10, max_iter=None if solver == "irls" else 200000)
    ref = Lasso(alpha=lam, fit_intercept=False, tol=1e-12, max_iter=200000).fit(X, y).coef_
    assert rel(ours.w, ref) < 1e-4
    assert np.array_equal(ours.w != 0, ref != 0)


@pytest.mark.parametrize("data_name", ["small", "wide"])
@pytest.mark.parametrize("theta", [0.2, 0.7])
def test_elastic_net_matches_scikit_learn(data_name, theta, request):
    data = request.getfixturevalue(data_name)
    X, y, lam = data.problem.X, data.problem.y, 0.08
    ours = fit(X, y, "elastic_net", lam, "irls", theta=theta, tol=1e-10)
    ref = ElasticNet(alpha=lam, l1_ratio=1 - theta, fit_intercept=False, tol=1e-12, max_iter=200000).fit(X, y).coef_
    assert rel(ours.w, ref) < 1e-4


@pytest.mark.parametrize(
    "name,lam,params",
    [("logsum", 0.05, {"eps": 1.0}), ("scad", 0.05, {"a": 3.7}), ("mcp", 0.05, {"a": 3.0}), ("lpp", 0.02, {"p": 0.5})],
)
def test_irls_and_adaprox_reach_the_same_stationary_point(small, name, lam, params):
    X, y = small.problem.X, small.problem.y
    start = ridge_start(small.problem, lam)
    a = fit(X, y, name, lam, "irls", w0=start, **params)
    b = fit(X, y, name, lam, "adaprox", w0=start, tol=1e-11, **params)
    assert rel(b.w, a.w) < 1e-6 and np.array_equal(a.keep_mask(), b.keep_mask())
    # a stationary point: grad L + lam Omega'(w) = 0 on the support
    grad = small.problem.gradient(a.w)
    on = a.w != 0
    assert np.allclose(grad[on] + lam * a.w[on] / a.penalty.eta_hat(a.w[on]), 0.0, atol=1e-7)


def test_hard_thresh_irls_is_least_squares_on_the_top_k(small):
    X, y = small.problem.X, small.problem.y
    r = fit(X, y, "hard_thresh", 0.1, "irls", k=4)
    support = np.flatnonzero(r.w)
    assert support.size == 4 and set(support) == set(small.support)
    ls = np.linalg.lstsq(X[:, support], y, rcond=None)[0]
    assert np.allclose(r.w[support], ls)


def test_irls_handles_eta_inf_and_zero_without_nan(small):
    """MCP gives eta_hat = inf to large weights (unpenalised) and 0 to those that leave the support."""
    X, y = small.problem.X, small.problem.y
    r = fit(X, y, "mcp", 0.05, "irls", a=3.0)
    eta = r.penalty.eta_hat(r.w)
    assert np.isinf(eta).any() and (eta == 0).any() and np.all(np.isfinite(r.w))
    assert not r.history.isna().drop(columns="change").any().any()


def test_working_set_gives_the_dense_answer(wide):
    X, y = wide.problem.X, wide.problem.y
    dense = fit(X, y, "l1", 0.08, "irls", working_set=False, tol=1e-10)
    ws = fit(X, y, "l1", 0.08, "irls", working_set=True, tol=1e-10)
    assert rel(ws.w, dense.w) < 1e-8


@pytest.mark.parametrize("mask", ["gaussian", "bernoulli"])
def test_dropout_is_tikhonov_by_monte_carlo(small, mask):
    rng = np.random.default_rng(5)
    w, alpha = rng.normal(size=40), rng.uniform(0.4, 1.0, size=40)
    mc = monte_carlo_dropout_loss(small.problem, w, alpha, mask=mask, samples=60000, seed=11)
    se = (mc.high - mc.low) / (2 * 2.5758)
    assert abs(mc.mean - mc.closed_form) < 4 * se  # 4 standard errors (the sample is right-skewed)
    # with standardised columns the dropout term is lam/2 sum w^2/eta for alpha = eta/(eta + lam)
    lam = 0.3
    eta = lam * alpha / (1 - alpha)
    assert np.isclose(
        expected_dropout_loss(small.problem, w, alpha), small.problem.loss(w) + lam / 2 * np.sum(w**2 / eta)
    )


@pytest.mark.parametrize("mask", ["gaussian", "bernoulli"])
def test_adaptive_dropout_approaches_the_irls_solution(small, mask):
    """Theorem 1, in small: with decaying steps, Algorithm 1 lands near the effective penalty's ERM solution."""
    X, y = small.problem.X, small.problem.y
    ref = fit(X, y, "scad", 0.05, "irls", a=3.7)
    run = fit(X, y, "scad", 0.05, "adaptive_dropout", a=3.7, max_iter=3000, mask=mask, seed=1, record_every=50)
    assert rel(run.w, ref.w) < 1e-2 and np.array_equal(run.keep_mask(), ref.keep_mask())
    assert run.history.objective.iloc[-1] < run.history.objective.iloc[0]


def test_plain_adaptive_dropout_runs_and_drops_alpha_zero_weights(small):
    X, y = small.problem.X, small.problem.y
    run = fit(X, y, "hard_thresh", 0.05, "adaptive_dropout", k=4, additive=False, max_iter=200, seed=0)
    assert np.all(np.isfinite(run.w)) and len(run.history) == 201


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"X": np.ones(5)}, "X must be a 2-D array"),
        ({"y": np.ones(7)}, "y must be a 1-D array of length n = 6"),
        ({"X": np.full((6, 3), np.nan)}, "X contains NaN or inf"),
        ({"y": np.array([1, 2, np.inf, 4, 5, 6.0])}, "y contains NaN or inf"),
        ({"lam": -1.0}, "lam must be a finite number >= 0"),
        ({"solver": "cd"}, "unknown solver 'cd'; valid solvers: irls, adaprox"),
        ({"penalty": "lasso"}, "unknown penalty 'lasso'"),
        ({"penalty": "logsum", "eps": -1.0}, "parameter eps=-1.0 is invalid"),
        ({"stepsize": 0.1}, "unknown option 'stepsize'"),
        ({"w0": np.ones(4)}, "w0 must be a finite vector of length d = 3"),
        ({"solver": "gradient", "penalty": "hard_thresh"}, "needs a differentiable penalty"),
        ({"solver": "adaptive_dropout", "X": 3 * np.eye(6)[:, :3]}, "standardised columns"),
        ({"solver": "adaptive_dropout", "mask": "uniform"}, "unknown mask 'uniform'"),
    ],
)
def test_bad_input_raises_a_value_error_naming_the_problem(kwargs, message):
    rng = np.random.default_rng(0)
    args = {
        "X": standardise(rng.normal(size=(6, 3))),
        "y": rng.normal(size=6),
        "penalty": "l1",
        "lam": 0.1,
        "solver": "irls",
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        fit(args.pop("X"), args.pop("y"), **args)
