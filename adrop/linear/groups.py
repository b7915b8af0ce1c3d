"""Groups in the linear lab, where the group form of the duality (structure=neuron's argument) is exact.

With groups whose columns are orthonormal in the sample, X_g^T X_g / n = I (`orthonormalise_groups`), dropout with
one mask s_g per group (E s_g = 1, E s_g^2 = 1 / alpha_g) gives, the cross terms vanishing between groups,

    E_s L(w with each w_g scaled by s_g) = L(w) + 1/2 sum_g (1 / alpha_g - 1) ||w_g||^2,

a group-diagonal Tikhonov term. With alpha_g = eta_g / (eta_g + lam c_g) it is lam/2 sum_g c_g ||w_g||^2 / eta_g, and
minimising over eta (the eta-trick, one eta per group) gives lam sum_g c_g Omega(||w_g||): group adaptive dropout is
the dual of the group penalty. c_g = sqrt(|g|) (the group lasso's weights, and adrop train's structure=neuron).
Without orthonormal groups the Tikhonov term is w_g^T (X_g^T X_g / n) w_g / eta_g, a penalty of that norm instead.

    Groups                  a partition of the columns: index arrays, weights c_g
    orthonormalise_groups   X with each group's columns made orthonormal (X_g (X_g^T X_g / n)^(-1/2))
    group_irls              the eta-trick by alternating minimisation, eta_g = eta_hat(||w_g||) then the exact
                            Tikhonov solve: the group-penalised ERM solution
    group_adaptive_dropout  Algorithm 1 with one mask per group (additive noise, then the group Tikhonov prox)
    group_objective         L(w) + lam sum_g c_g Omega(||w_g||)
    planted_groups          a small problem with orthonormal groups, two of them carrying the signal
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from .adaptive_dropout import keep_probability, sample_mask
from .tikhonov_solve import TikhonovSolver


@dataclass
class Groups:
    """A partition of the d columns: `index[g]` the columns of group g, `weight[g]` its c_g (default sqrt(|g|))."""

    index: list[np.ndarray]
    weight: np.ndarray

    @classmethod
    def contiguous(cls, sizes, weight=None) -> "Groups":
        bounds = np.cumsum([0, *sizes])
        index = [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        return cls(index, np.sqrt(np.asarray(sizes, float)) if weight is None else np.asarray(weight, float))

    def __post_init__(self):
        columns = np.sort(np.concatenate(self.index))
        if not np.array_equal(columns, np.arange(columns.size)):
            raise ValueError("groups must partition the columns 0..d-1, each column in exactly one group")
        if len(self.weight) != len(self.index) or np.any(self.weight <= 0):
            raise ValueError("one positive weight per group")

    @property
    def d(self) -> int:
        return sum(len(i) for i in self.index)

    @property
    def of_column(self) -> np.ndarray:
        """The group of each column."""
        out = np.empty(self.d, int)
        for g, i in enumerate(self.index):
            out[i] = g
        return out

    def norms(self, w) -> np.ndarray:
        return np.sqrt(np.bincount(self.of_column, weights=np.asarray(w, float) ** 2, minlength=len(self.index)))

    def spread(self, per_group) -> np.ndarray:
        """A value per group as one per column."""
        return np.asarray(per_group)[self.of_column]


def planted_groups(n: int = 150, sizes=(3,) * 10 + (5,) * 4, noise: float = 0.1, seed: int = 0):
    """(Problem, Groups): Gaussian columns made orthonormal per group, y from the first group's columns (weights 1,
    -0.5, 0.8) and those of the first group of five (columns 30-34, 0.7 each), plus Gaussian noise: what
    tests/test_linear_groups.py and scripts/reproduce/group_duality.py use."""
    from .problem import Problem

    rng = np.random.default_rng(seed)
    groups = Groups.contiguous(list(sizes))
    X = orthonormalise_groups(rng.standard_normal((n, groups.d)), groups)
    w_true = np.zeros(groups.d)
    w_true[:3], w_true[30:35] = [1.0, -0.5, 0.8], 0.7
    return Problem(X, X @ w_true + noise * rng.standard_normal(n)), groups


def orthonormalise_groups(X, groups: Groups) -> np.ndarray:
    """X with X_g^T X_g / n = I for every group (a group of dependent columns is refused)."""
    X = np.array(X, dtype=np.float64)
    n = X.shape[0]
    for g, cols in enumerate(groups.index):
        vals, vecs = linalg.eigh(X[:, cols].T @ X[:, cols] / n)
        if vals.min() <= 1e-12 * max(vals.max(), 1e-300):
            raise ValueError(f"group {g}'s columns are linearly dependent: they cannot be made orthonormal")
        X[:, cols] = X[:, cols] @ (vecs / np.sqrt(vals)) @ vecs.T
    return X


def group_objective(problem, penalty, lam, groups: Groups, w) -> float:
    return problem.loss(w) + lam * float(np.sum(groups.weight * penalty.omega_elementwise(groups.norms(w))))


def group_irls(problem, penalty, lam, groups: Groups, w0=None, max_iter=5000, tol=1e-10, prune=1e-9):
    """Alternate eta_g = eta_hat(||w_g||) and the exact solve of L(w) + lam/2 sum_g c_g ||w_g||^2 / eta_g; a group
    whose norm falls below `prune` times the largest is set to 0 (eta_hat(0) = 0 keeps it there, as the exact
    iteration would in the limit). Stops when max|w_t - w_(t-1)| <= tol max|w_t|."""
    solver = TikhonovSolver(problem, lam)
    w = solver.solve(np.ones(problem.d)) if w0 is None else np.array(w0, float)
    for _ in range(max_iter):
        norms = groups.norms(w)
        norms = np.where(norms > prune * norms.max(initial=0.0), norms, 0.0)
        new = solver.solve(groups.spread(penalty.eta_hat(norms) / groups.weight))
        change = np.abs(new - w).max() / max(np.abs(new).max(), 1e-300)
        w = new
        if change <= tol:
            break
    return w


def group_adaptive_dropout(
    problem, penalty, lam, groups: Groups, w0, max_iter=20000, step=None, decay=None, mask="gaussian", seed=0
):
    """Algorithm 1 with one mask per group: s_g ~ Mask(alpha_g), alpha_g = eta_hat(||w_g||) / (eta_hat(||w_g||) +
    lam c_g); a gradient step on L at w + (s - 1) w; then the group Tikhonov prox w_g <- w_g eta_g / (eta_g +
    rho lam c_g) with eta_g at the stepped point. Steps rho_t = step / (1 + t / decay)."""
    rng = np.random.default_rng(seed)
    rho0 = step or 0.5 / problem.lipschitz
    decay = decay or max(max_iter / 20, 1.0)
    X, y, n = problem.X, problem.y, problem.n
    w = np.array(w0, float)
    for t in range(max_iter):
        rho = rho0 / (1.0 + t / decay)
        alpha = keep_probability(penalty.eta_hat(groups.norms(w)), lam * groups.weight)
        s = groups.spread(sample_mask(alpha, mask, rng))
        v = w - rho * X.T @ (X @ (s * w) - y) / n
        eta = penalty.eta_hat(groups.norms(v))
        w = v * groups.spread(np.where(np.isinf(eta), 1.0, eta / (eta + rho * lam * groups.weight)))
    return w
