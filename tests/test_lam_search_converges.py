"""lam_search converges or says why: once full runs bracket the target it keeps narrowing the bracket until a run
lands or its budget (max_runs) is spent, on any curve (monotone, noisy, flat, not monotone, collapsing), and a
combination it cannot bring there is named with its closest run and the command that continues it. The search's own
round_jobs, driven against made-up curves and against the curves a real search measured on scikit-learn's digits."""

import csv
import importlib
import math

import numpy as np
import pytest

from hydra_plugins.adrop_plugins.lam_guess import closest_sides, narrowed

from helpers.results import result_file

DIGITS = [result_file("speed", name) for name in ("lam_search_digits_56aa6ef.csv", "lam_search_digits_56aa6ef.2.csv")]


def lam_search():
    return importlib.import_module("hydra_plugins.adrop_plugins.lam_search")


def search(curve, target, epochs=100, short=10, **kw):
    """The sweeper's rounds against curve(lam, phase) -> nonzero fraction, as its sweep() records results: (plan,
    the sweeper, the round it landed in or None)."""
    module = lam_search()
    sweeper = module.LamSearchSweeper(target_nonzero=target, **kw)
    plan = module.Plan(["method=logsum"], False, epochs, 1e-3, short)
    for round_ in range(1, 200):
        jobs = sweeper.round_jobs(plan, round_)
        if not jobs:
            return plan, sweeper, None
        for phase, lam, _ in jobs:
            (plan.short if phase == "short" else plan.full).append((lam, curve(lam, phase), {}))
        plan.last_phase = jobs[-1][0]
        if any(sweeper.within(kept) for _, kept, _ in plan.full):
            return plan, sweeper, round_
    raise AssertionError("the search did not stop")


def smooth(lam, scale=1e-3, steepness=1.5):
    """A nonzero fraction falling smoothly from 1 to 0 around lam = scale."""
    return 1.0 / (1.0 + (lam / scale) ** steepness)


def rough(lam, amount=0.03):
    """A fixed factor per lam within 1 +- amount, as short trainings' roughness across nearby lams."""
    return 1.0 + amount * math.sin(1e3 * math.log(lam))


CURVES = {
    "monotone": lambda lam: smooth(lam),
    "steep": lambda lam: smooth(lam, steepness=6.0),
    "noisy": lambda lam: min(1.0, smooth(lam) * rough(lam)),
    # a plateau at 0.5 over a decade, then the fall through the target
    "flat": lambda lam: 0.5 if 1e-4 <= lam <= 1e-3 else smooth(lam, 1e-4) if lam < 1e-4 else 0.5 * smooth(lam, 3e-3, 4),
    # a network that collapses (keeps nothing) beyond lam 2e-2, the targets reachable before that
    "collapse": lambda lam: 0.0 if lam > 2e-2 else smooth(lam),
    "rougher": lambda lam: min(1.0, smooth(lam) * rough(lam, 0.08)),
    # concave in log-log: a slow fall, then a cliff to nothing (the interpolation keeps guessing short of it)
    "cliff": lambda lam: max(0.0, 0.6 * (1.0 - (lam / 1e-2) ** 3)),
    # not monotone: a bump up across the target inside the fall
    "bump": lambda lam: min(1.0, smooth(lam) * (1.0 + 0.6 * math.exp(-((math.log(lam / 1.5e-3)) ** 2) / 0.02))),
}


@pytest.mark.parametrize("shape", sorted(CURVES))
@pytest.mark.parametrize("target", [0.3, 0.05, 0.02])
def test_the_search_lands_on_any_curve_within_its_default_budget(shape, target):
    curve = CURVES[shape]
    # short runs keep more than full ones at the same lam, by a factor that differs with the setting
    plan, sweeper, landed = search(lambda lam, phase: curve(lam * (1.0 if phase == "full" else 0.3)), target)
    assert landed is not None, (shape, [(round(lam, 8), round(kept, 4)) for lam, kept, _ in plan.full])
    assert plan.launched <= sweeper.max_runs == 24


def test_once_bracketed_each_round_at_least_halves_the_bracket():
    trials = [(1e-3, 0.46), (2e-3, 0.03)]  # a steep fall: the interpolation alone would creep along one end
    lams = narrowed(trials, 0.3, 2, set())
    assert len(lams) == 2 and all(1e-3 < lam < 2e-3 for lam in lams)
    assert float(f"{math.sqrt(2e-6):.6g}") in lams  # the bracket's middle in log lam, whatever the curve
    one = narrowed(trials, 0.3, 1, set())
    assert len(one) == 1 and 1e-3 * 2**0.25 <= one[0] <= 1e-3 * 2**0.75


def test_the_closest_runs_on_both_sides_bracket_a_curve_that_is_not_monotone():
    trials = [(1e-4, 0.9), (1e-3, 0.2), (2e-3, 0.35), (4e-3, 0.1)]  # 2e-3 kept more than 1e-3
    assert closest_sides(trials, 0.3) == ((2e-3, 0.35), (1e-3, 0.2))
    lams = narrowed(trials, 0.3, 2, set())
    assert lams and all(1e-3 < lam < 2e-3 for lam in lams)
    assert closest_sides([(1e-3, 0.5)], 0.3) is None


def test_a_target_inside_a_jump_of_the_curve_stops_the_search_and_says_so():
    jump = lambda lam, phase: 0.4 if lam < 2e-3 else 0.1  # noqa: E731 - nothing between 0.4 and 0.1
    plan, sweeper, landed = search(jump, 0.3)
    assert landed is None and plan.jumps and plan.launched < sweeper.max_runs
    why, more = sweeper.why_missed(plan)
    assert "jumps from 0.4000" in why and "to 0.1000" in why and not more


def test_a_spent_budget_is_named_with_the_closest_run_and_the_command_that_continues(tmp_path, monkeypatch):
    plan, sweeper, landed = search(lambda lam, phase: CURVES["noisy"](lam), 0.3, max_runs=6)
    assert landed is None and plan.spent and plan.launched == 6
    why, more = sweeper.why_missed(plan)
    assert why == "its 6 runs (hydra.sweeper.max_runs) spent" and more
    monkeypatch.setattr(
        "sys.argv",
        [
            "adrop train",
            "-m",
            "hydra/sweeper=lam_search",
            "method=logsum",
            "hydra.sweeper.max_runs=6",
            "hydra.sweep.dir=old",
        ],
    )
    assert sweeper.continuing(tmp_path) == (
        f"adrop train -m hydra/sweeper=lam_search method=logsum hydra.sweep.dir={tmp_path} hydra.sweeper.max_runs=12"
    )


def measured_curves(method):
    """A method's curves from the digits search's tables (100 epochs at lr 0.01, short runs 10 epochs at lr 0.1):
    phase -> (log lam, log nonzero) of its completed runs, and the least lam that kept nothing."""
    rows = [
        r
        for path in DIGITS
        for r in csv.DictReader(path.open())
        if r["combination"].endswith(f"method={method}") and r["status"] == "completed"
    ]
    out = {}
    for phase, epochs in (("full", "100"), ("short", "10")):
        points = {}
        for r in rows:
            if r["epochs"] == epochs:
                points.setdefault(float(r["lam"]), float(r["nonzero_fraction"]))
        nothing = min([lam for lam, kept in points.items() if kept <= 0], default=math.inf)
        kept = sorted((lam, nz) for lam, nz in points.items() if nz > 0)
        out[phase] = (np.log([lam for lam, _ in kept]), np.log([nz for _, nz in kept]), nothing)
    return out


def read_off(curve, lam):
    """log-log between measured runs; beyond them along the secant of all of them."""
    x, y, nothing = curve
    if lam >= nothing:
        return 0.0
    t = math.log(lam)
    if x[0] <= t <= x[-1]:
        return float(np.exp(np.interp(t, x, y)))
    slope = (y[-1] - y[0]) / (x[-1] - x[0])
    end = 0 if t < x[0] else -1
    return float(min(1.0, np.exp(y[end] + slope * (t - x[end]))))


@pytest.mark.parametrize("method", ["logsum", "adatikhonov"])
def test_digits_searches_that_missed_in_four_rounds_land_in_one_command(method):
    # the two methods a 4-round search missed on digits (target 0.1), on the curves their searches measured
    curves = measured_curves(method)
    plan, sweeper, landed = search(lambda lam, phase: read_off(curves[phase], lam), 0.1)
    assert landed is not None and plan.launched <= sweeper.max_runs, plan.full
