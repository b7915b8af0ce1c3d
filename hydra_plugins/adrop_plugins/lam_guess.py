"""The lam search's guesses: where a run's nonzero fraction should reach the target, from (lam, nonzero) trials.

The nonzero fraction falls as lam grows. Inside a bracket (a trial above the target next to one at or below it) the
guess interpolates log nonzero against log lam; beyond the trials it steps along a slope (the trials' own, the short
runs', or NOMINAL_SLOPE). Values are rounded as run folders name them (6 significant digits), so that a rerun of a
search finds its finished runs.
"""

from __future__ import annotations

import math
from typing import Optional


def log_spaced(low: float, high: float, n: int) -> list[float]:
    if n == 1:
        return [math.sqrt(low * high)]
    step = (math.log(high) - math.log(low)) / (n - 1)
    return [math.exp(math.log(low) + i * step) for i in range(n)]


def rounded(lam: float) -> float:
    """lam as a job's override and folder name write it (6 significant digits)."""
    return float(f"{lam:.6g}")


# The full runs' lam for the target over the short runs' (lr-scaled, a tenth of the epochs), as measured on MNIST's
# LeNet-300-100 at target 0.02: 0.78-0.83 for LogSum, AdaProx, AdaTikhonov and adaptive dropout at 10 epochs
# (scripts/benchmarks/bench_lam_search.py); at 200 epochs 0.25 (eta-Trick), 0.39-0.45 (LogSum, AdaTikhonov, AdaProx,
# adaptive dropout), 0.81 (HardConcrete) and 0.92 (VarDrop+LR+AR). Not one factor, so the first full round spreads its
# lams over that range (0.8 for its top: HardConcrete's run there lands, VarDrop+LR+AR's keeps 0.0227), and the next
# goes by the full runs' own slope. Replayed on those searches' curves (docs/results/lam_search.md; the test
# tests/test_lam_search_replay.py replays each at the curves' secant slope beyond them), each lands in at most 4
# rounds, eta-Trick's in 3, LogSum's and AdaTikhonov's in 4 (3 with 0.4 at the bottom, where
# eta-Trick's misses); the middle four's round 4 then leans on their curves below the lams measured (it lands while the
# slope there is 0.75-1.3 times the measured secant's).
FULL_OVER_SHORT = (0.25, 0.8)
NOMINAL_SLOPE = -1.0  # d log nonzero / d log lam where no two trials tell: LogSum's, MNIST, 10 epochs, is -1.4
UNMOVED = 0.99  # a run keeping this much or more shows no sign that its lam prunes


def in_bracket(
    l0: float, n0: float, l1: float, n1: float, target: float, slope: Optional[float] = None
) -> tuple[float, bool]:
    """(log lam of the target between trials (l0, n0) and (l1, n1) with n0 > target >= n1, whether an end told
    nothing of the shape). Log-log interpolation; where the far end kept nothing (n1 = 0, a collapsed network, often
    far beyond), along `slope` (or NOMINAL_SLOPE) from the near end, no further than the bracket's middle in log."""
    if n0 > 0 and n1 > 0 and n0 != n1:
        t = (math.log(n0) - math.log(target)) / (math.log(n0) - math.log(n1))
        return math.log(l0) + t * (math.log(l1) - math.log(l0)), False
    middle = (math.log(l0) + math.log(l1)) / 2
    if n0 > 0 and n1 == 0:
        return min(middle, math.log(l0) + (math.log(target) - math.log(n0)) / (slope or NOMINAL_SLOPE)), True
    return middle, True


def crossing(trials: list[tuple[float, float]], target: float):
    """The first pair of neighbours in lam, ((l0, n0), (l1, n1)), whose nonzero fraction crosses the target going up
    in lam (n0 > target >= n1), or None."""
    done = sorted(trials)
    return next(((a, b) for a, b in zip(done, done[1:]) if a[1] > target >= b[1] and a[0] < b[0]), None)


def next_lams(trials: list[tuple[float, float]], target: float, n: int, lam_range) -> list[float]:
    """The next round's lam values from (lam, nonzero) so far: inside the bracket where the nonzero fraction crosses
    the target (the first such pair of neighbours in lam, should the results not fall monotonically), centred on its
    guess (in_bracket), over half the bracket's width in log scale (at most a factor 1.78 either side where an end
    kept nothing); beyond the range tried going up, along NOMINAL_SLOPE from the top run where it prunes (keeps less
    than UNMOVED), else a decade per value but not beyond lam_range (none left: []); going down, a decade per value,
    below lam_range only where the bottom run kept weights. Rounded as folders name them, none tried before, none
    twice."""
    done = sorted(trials)
    pair = crossing(done, target)
    if pair is None and all(nz > target for _, nz in done):
        top, kept = max(done)
        if kept < UNMOVED:  # it prunes: along the nominal slope from there, over a factor 1.78 either side
            guess = math.log(top) + (math.log(target) - math.log(kept)) / NOMINAL_SLOPE
            width = math.log(10.0) / 4
            out = [
                math.exp(v)
                for v in ([guess] if n == 1 else [guess - width + 2 * width * i / (n - 1) for i in range(n)])
            ]
            out = [lam for lam in out if lam > top]
        else:  # no sign that more lam would prune: a decade a value, not beyond lam_range
            out = [top * 10.0 ** (i + 1) for i in range(n)]
            out = [lam for lam in out if lam <= lam_range[1] * (1 + 1e-9)]
    elif pair is None:
        bottom, kept = min(done)
        out = [bottom / 10.0 ** (i + 1) for i in range(n)]
        if kept == 0:
            out = [lam for lam in out if lam >= lam_range[0] * (1 - 1e-9)]
    else:
        (l0, n0), (l1, n1) = pair
        guess, degenerate = in_bracket(l0, n0, l1, n1, target)
        width = (math.log(l1) - math.log(l0)) / 4
        if degenerate:
            width = min(width, math.log(10.0) / 4)
        low, high = max(math.log(l0), guess - width), min(math.log(l1), guess + width)
        out = [math.exp(v) for v in ([guess] if n == 1 else [low + i * (high - low) / (n - 1) for i in range(n)])]
    tried, fresh = {rounded(lam) for lam, _ in done}, []
    for lam in map(rounded, out):
        if lam not in tried and lam not in fresh:
            fresh.append(lam)
    return fresh


def falling_slope(a: tuple[float, float], b: tuple[float, float]) -> Optional[float]:
    """d log nonzero / d log lam between two trials (lam, nonzero): None unless both keep weights and it falls."""
    (la, na), (lb, nb) = a, b
    if na > 0 and nb > 0 and la != lb:
        slope = (math.log(nb) - math.log(na)) / (math.log(lb) - math.log(la))
        if slope < -0.05:
            return slope
    return None


def estimate(
    trials: list[tuple[float, float]],
    target: float,
    prior_slope: Optional[float] = None,
    own_slope_span: float = math.log(1.7),
    max_step: float = math.log(100.0),
):
    """(log lam where the nonzero fraction should reach the target, the slope used), from (lam, nonzero) trials:
    log-log interpolation inside the bracket; beyond it, extrapolation from the trial nearest the target along the
    slope of the two nearest trials where they lie at least own_slope_span apart in log lam, else along prior_slope
    (or theirs, if there is no prior), at most max_step out in log lam. (None, None) where no falling slope is known
    (every trial keeps everything, or none)."""
    done = sorted(trials)
    cross = crossing(done, target)
    if cross is not None:
        (l0, n0), (l1, n1) = cross
        guess, degenerate = in_bracket(l0, n0, l1, n1, target, prior_slope)
        return guess, prior_slope if degenerate else falling_slope(*cross)
    near = sorted((t for t in done if t[1] > 0), key=lambda t: abs(math.log(t[1] / target)))[:2]
    own = falling_slope(*sorted(near)) if len(near) == 2 else None
    far_apart = len(near) == 2 and abs(math.log(near[0][0] / near[1][0])) >= own_slope_span
    slope = (own if far_apart else None) or prior_slope or own
    if not near or slope is None:
        return None, None
    lam, nonzero = near[0]
    step = max(-max_step, min(max_step, (math.log(target) - math.log(nonzero)) / slope))
    return math.log(lam) + step, slope


def around(log_guess: float, half_window: float, n: int, tried) -> list[float]:
    """n lam values 2 half_window apart in log lam, centred on the guess. With half_window the tolerance's (a run lands
    within tolerance of the target over a window of 2 half_window in log lam) their windows lie side by side: n = 2
    puts the guess where the two meet, so that they cover the guess +- 2 half_window; a smaller half_window overlaps
    them. Rounded as folders name them, none in `tried`, none twice."""
    out = []
    for i in range(n):
        lam = rounded(math.exp(log_guess + half_window * (2 * i - (n - 1))))
        if lam not in tried and lam not in out:
            out.append(lam)
    return out


def closest_sides(trials: list[tuple[float, float]], target: float):
    """The runs nearest the target on either side: ((lam, nonzero) of the run above it keeping least, (lam, nonzero)
    of the run at or below it keeping most), or None unless both exist. On a curve that falls with lam they are the
    neighbours that bracket the target; on a noisy or non-monotone one (short runs) they are still the two best
    answers, whatever their order in lam."""
    above = [t for t in trials if t[1] > target]
    below = [t for t in trials if t[1] <= target]
    if not above or not below:
        return None
    return min(above, key=lambda t: (t[1], t[0])), max(below, key=lambda t: (t[1], -t[0]))


def narrowed(trials: list[tuple[float, float]], target: float, n: int, tried) -> list[float]:
    """The next lams inside a bracket that a round already searched without landing: interpolation with a bisection
    safeguard. Between the closest runs on either side (closest_sides): the log-log interpolation's guess
    (in_bracket; the middle where the runs fall the wrong way in lam) and the bracket's middle in log lam, so that
    whatever the curve's shape the bracket at least halves each round (n = 1: the point between the two, at least
    a quarter off either end); n > 2 adds points evenly inside. Rounded as folders name them, none in `tried`, none
    twice: [] when the bracket has shrunk to lams that round alike (the curve jumps across the target there)."""
    sides = closest_sides(trials, target)
    if sides is None:
        return []
    (la, na), (lb, nb) = sides
    xa, xb = math.log(la), math.log(lb)
    middle = (xa + xb) / 2
    guess = in_bracket(la, na, lb, nb, target)[0] if la < lb else middle
    if n == 1:
        points = [(guess + middle) / 2]
    else:
        points = [guess, middle] + [xa + (xb - xa) * (i + 1) / (n - 1) for i in range(n - 2)]
    out = []
    for lam in (rounded(math.exp(v)) for v in points):
        if lam not in tried and lam not in out and min(la, lb) < lam < max(la, lb):
            out.append(lam)
    return out
