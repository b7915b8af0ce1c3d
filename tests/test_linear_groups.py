"""The group duality in the linear lab (adrop.linear.groups): group dropout is group Tikhonov, group adaptive dropout
lands on the group-penalised solution, the group lasso agrees with skglm's, and the group penalty's eta-trick."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from adrop import keep_rule, penalties
from adrop.linear import Problem
from adrop.linear.groups import (
    Groups,
    group_adaptive_dropout,
    group_irls,
    group_objective,
    orthonormalise_groups,
    planted_groups,
)
from adrop.penalties.group import GroupPenalty

SIZES = [3] * 10 + [5] * 4


@pytest.fixture(scope="module")
def grouped():
    """150 samples, 14 orthonormal groups (sizes 3 and 5), two of them carrying the signal."""
    return planted_groups(sizes=SIZES)


def kept_groups(penalty, lam, groups, w):
    return keep_rule.kept(penalty.eta_hat(groups.norms(w)), lam * groups.weight)


def test_groups_are_made_orthonormal(grouped):
    problem, groups = grouped
    for cols in groups.index:
        gram = problem.X[:, cols].T @ problem.X[:, cols] / problem.n
        np.testing.assert_allclose(gram, np.eye(len(cols)), atol=1e-12)
    X = np.ones((10, 4))
    with pytest.raises(ValueError, match="linearly dependent"):
        orthonormalise_groups(X, Groups.contiguous([2, 2]))


def test_group_dropout_is_group_tikhonov_exactly(grouped):
    """Every Bernoulli mask of four groups enumerated: E_s L(w, each w_g scaled by s_g) = L(w) + lam/2 sum_g c_g
    ||w_g||^2 / eta_g, with alpha_g = eta_g / (eta_g + lam c_g)."""
    rng = np.random.default_rng(1)
    groups = Groups.contiguous([2, 3, 1, 4])
    X = orthonormalise_groups(rng.standard_normal((40, groups.d)), groups)
    problem, w = Problem(X, rng.standard_normal(40)), rng.standard_normal(groups.d)
    lam, eta = 0.3, np.array([0.5, 2.0, 0.1, 1.0])
    alpha = eta / (eta + lam * groups.weight)
    expected = 0.0
    for keep in itertools.product([0, 1], repeat=4):
        keep = np.array(keep)
        p = np.prod(np.where(keep, alpha, 1 - alpha))
        expected += p * problem.loss(groups.spread(keep / alpha) * w)
    tikhonov = problem.loss(w) + lam / 2 * np.sum(groups.weight * groups.norms(w) ** 2 / eta)
    assert np.isclose(expected, tikhonov, rtol=1e-12)


# numba's note that a product would be faster on contiguous arrays
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:'@' is faster on contiguous arrays")
def test_the_group_lasso_agrees_with_skglm(grouped):
    """Omega = |.| makes the group penalty the group lasso, lam sum_g sqrt(|g|) ||w_g||: IRLS on the eta-trick and
    skglm's GroupBCD (WeightedGroupL2) reach the same solution and objective. skglm comes with the test extra; the
    other tests of the file run without it."""
    pytest.importorskip("skglm")
    from skglm.datafits import QuadraticGroup
    from skglm.penalties import WeightedGroupL2
    from skglm.solvers import GroupBCD
    from skglm.utils.data import grp_converter

    problem, groups = grouped
    lam, l1 = 0.05, penalties.get("l1")
    ours = group_irls(problem, l1, lam, groups)
    indices, pointers = grp_converter(SIZES, groups.d)
    theirs = GroupBCD(tol=1e-12, max_iter=10000, fit_intercept=False).solve(
        problem.X, problem.y, QuadraticGroup(pointers, indices), WeightedGroupL2(lam, groups.weight, pointers, indices)
    )[0]
    assert np.linalg.norm(ours - theirs) <= 1e-8 * np.linalg.norm(theirs)
    assert np.array_equal(groups.norms(ours) > 0, groups.norms(theirs) > 0)
    assert 0 < np.count_nonzero(groups.norms(ours)) < len(SIZES)
    assert np.isclose(
        group_objective(problem, l1, lam, groups, ours), group_objective(problem, l1, lam, groups, theirs), rtol=1e-12
    )


@pytest.mark.parametrize("name, params", [("scad", {"a": 3.7}), ("logsum", {})])
@pytest.mark.parametrize("mask", ["gaussian", "bernoulli"])
def test_group_adaptive_dropout_lands_on_the_group_penalised_solution(grouped, name, params, mask):
    """Theorem 1 with groups: Algorithm 1 with one mask per group, decaying steps, ends near the solution of
    L + lam sum_g sqrt(|g|) Omega(||w_g||), keeping the same groups."""
    problem, groups = grouped
    penalty, lam = penalties.get(name, **params), 0.05
    reference = group_irls(problem, penalty, lam, groups)
    start = np.linalg.lstsq(problem.X, problem.y, rcond=None)[0]
    w = group_adaptive_dropout(problem, penalty, lam, groups, start, max_iter=3000, mask=mask, seed=1)
    assert np.linalg.norm(w - reference) < 2e-2 * np.linalg.norm(reference)
    assert np.array_equal(kept_groups(penalty, lam, groups, w), kept_groups(penalty, lam, groups, reference))
    assert 0 < kept_groups(penalty, lam, groups, reference).sum() < len(SIZES)


@pytest.mark.parametrize("name", ["logsum", "scad", "l1", "mcp"])
def test_the_group_penalty_is_its_eta_trick(name):
    """sqrt(|g|) Omega(r) = min over e of r^2 / (2 e) + f_G(e) / 2, attained at e = eta_hat_G(r)."""
    group = GroupPenalty(penalties.get(name), 9)
    for r in (0.3, 1.0, 2.5):
        e = float(group.eta_hat(np.array([r]))[0])
        attained = r * r / (2 * e) + float(group.f_elementwise(np.array([e]))[0]) / 2
        assert np.isclose(attained, float(group.omega_elementwise(np.array([r]))[0]), rtol=1e-9)
        objective = lambda x: r * r / (2 * np.exp(x)) + float(group.f_elementwise(np.array([np.exp(x)]))[0]) / 2
        best = minimize_scalar(objective, bounds=(-12, 8), method="bounded", options={"xatol": 1e-10})
        assert attained <= best.fun + 1e-9


def test_adrop_penalty_evaluates_a_group(adrop):
    result = adrop("penalty", "--method", "l1", "--w", "0,1", "--group-size", "4")
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if line.strip().startswith("l1")]
    assert [float(r[-2]) for r in rows] == [0.0, 2.0]  # sqrt(4) * ||w_g||
    result = adrop("penalty", "--plot", "--group-size", "4")
    assert result.returncode == 2 and "needs --method" in result.stderr
