"""The group duality on linear regression, measured (docs/results/structured.md): the numbers behind
tests/test_linear_groups.py's assertions, printed.

    python scripts/reproduce/group_duality.py

On 150 samples with 14 orthonormal groups (ten of 3 columns, four of 5; two groups carry the signal, noise 0.1):
- the group lasso (lam 0.05) by group IRLS (the eta-trick, one eta per group) against skglm's GroupBCD
  (WeightedGroupL2 with weights sqrt(|g|)): relative gap of the solutions and of the objectives, groups kept;
- group adaptive dropout (Algorithm 1, one mask per group, 3000 decaying steps) against group IRLS for SCAD(3.7)
  and LogSum(2) at lam 0.05, Gaussian and Bernoulli masks, seeds 1-5: relative gap and whether the groups kept
  (alpha_g >= 0.05) agree.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from adrop import keep_rule, penalties
from adrop.linear.groups import group_adaptive_dropout, group_irls, group_objective, planted_groups

SIZES = [3] * 10 + [5] * 4


def main():
    from skglm.datafits import QuadraticGroup
    from skglm.penalties import WeightedGroupL2
    from skglm.solvers import GroupBCD
    from skglm.utils.data import grp_converter

    problem, groups = planted_groups(sizes=SIZES)
    lam, l1 = 0.05, penalties.get("l1")
    t = time.perf_counter()
    ours = group_irls(problem, l1, lam, groups)
    ours_s = time.perf_counter() - t
    indices, pointers = grp_converter(SIZES, groups.d)
    solver = GroupBCD(tol=1e-12, max_iter=10000, fit_intercept=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        theirs = solver.solve(
            problem.X,
            problem.y,
            QuadraticGroup(pointers, indices),
            WeightedGroupL2(lam, groups.weight, pointers, indices),
        )[0]
        first_s = time.perf_counter() - t
    gap = np.linalg.norm(ours - theirs) / np.linalg.norm(theirs)
    objectives = [group_objective(problem, l1, lam, groups, w) for w in (ours, theirs)]
    print(
        f"group lasso, lam {lam}: group IRLS vs skglm GroupBCD: relative gap {gap:.2e}, objectives "
        f"{objectives[0]:.12f} / {objectives[1]:.12f}, groups kept {np.count_nonzero(groups.norms(ours))} / "
        f"{np.count_nonzero(groups.norms(theirs))} of {len(SIZES)} (IRLS {ours_s:.3f} s; GroupBCD {first_s:.1f} s "
        "with numba's compilation)"
    )
    start = np.linalg.lstsq(problem.X, problem.y, rcond=None)[0]
    for name, params in (("scad", {"a": 3.7}), ("logsum", {})):
        penalty = penalties.get(name, **params)
        reference = group_irls(problem, penalty, lam, groups)
        kept = keep_rule.kept(penalty.eta_hat(groups.norms(reference)), lam * groups.weight)
        for mask in ("gaussian", "bernoulli"):
            gaps, agree = [], 0
            for seed in range(1, 6):
                w = group_adaptive_dropout(problem, penalty, lam, groups, start, max_iter=3000, mask=mask, seed=seed)
                gaps.append(np.linalg.norm(w - reference) / np.linalg.norm(reference))
                agree += np.array_equal(keep_rule.kept(penalty.eta_hat(groups.norms(w)), lam * groups.weight), kept)
            print(
                f"{penalty.label()}, lam {lam}, {mask} masks: group adaptive dropout vs group IRLS: relative gap "
                f"{np.mean(gaps):.4f} mean, {np.max(gaps):.4f} max over 5 seeds; groups kept agree in {agree} of 5 "
                f"({int(kept.sum())} of {len(SIZES)} kept)"
            )


if __name__ == "__main__":
    main()
