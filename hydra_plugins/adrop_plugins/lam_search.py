"""`hydra/sweeper=lam_search`: lam chosen for a target fraction of nonzero weights, per combination of the other swept
settings (`method=logsum,hard_concrete seed=0,1` are four combinations).

Each round launches, for every combination still searching, its lam values together (one launch: the stacked launcher
trains them as stacks). The first rounds are short: `short_epochs` of the epochs (at least one) at the learning rate
scaled up by as much, so that Adam's weights travel as far as in the full run (a short run at the full run's lr keeps
far more weights: LogSum at 1 epoch against 10, two decades of lam apart; with the lr scaled, a factor 1.4). Short
rounds launch `per_round` lam values: log-spaced over `lam_range` first, then inside the bracket where the nonzero
fraction crosses the target (it falls as lam grows), around the point that interpolating log nonzero against log lam
linearly between the bracket's ends predicts. The last rounds (two of the default four) train in full, `per_full_round`
lam values each: around 0.8 of the lam the short runs predict (FULL_OVER_SHORT, measured), then the lam the full runs
so far predict (interpolated inside their bracket; beyond it, extrapolated along the short runs' slope, or the full
runs' own where they lie far enough apart, at most a factor 3 beyond them). Only a full run counts: a combination is
done when one's nonzero fraction is within `tolerance` (relative) of the target; at most `rounds` rounds.
`short_epochs=1` trains every round in full, `per_round` values each. magnitude_pruning, whose sparsity is set
directly, takes the target directly (final_sparsity = 1 - target): one run. A combination whose runs keep every
weight at every lam up to lam_range's top stops there and is named: a method that cannot prune in so few steps
(eta-Trick, VarDrop and HardConcrete within 10 epochs) gains nothing from more lam. Every trial is an ordinary run
folder (a rerun of the command into the same sweep folder skips finished ones and replays the search). The sweep
folder gets search.csv (combination, round, epochs, lr, lam, nonzero_fraction, val_error, test_error, wall_time_s,
status, folder); the command prints, per combination, the full run closest to the target, the runs and the training
seconds it took, and exits 1 naming the combinations not brought within tolerance
(adrop.train.sweep_outcomes.SWEEP["unmet"]).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any, List, Optional

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser

from adrop.outputs import create_new
from adrop.train import sweep_outcomes

from .sweeper import Record, launched

COLUMNS = ["combination", "round", "epochs", "lr", "lam", "nonzero_fraction", "val_error", "test_error", "wall_time_s",
           "status", "folder"]


def log_spaced(low: float, high: float, n: int) -> list[float]:
    if n == 1:
        return [math.sqrt(low * high)]
    step = (math.log(high) - math.log(low)) / (n - 1)
    return [math.exp(math.log(low) + i * step) for i in range(n)]


def rounded(lam: float) -> float:
    """lam as a job's override and folder name write it (6 significant digits)."""
    return float(f"{lam:.6g}")


# The full runs' lam for the target over the short runs' (lr-scaled, a tenth of the epochs): about 0.8 for LogSum,
# AdaProx, AdaTikhonov and adaptive dropout (MNIST, LeNet-300-100, 10 epochs, target 0.02: scripts/bench_lam_search.py)
FULL_OVER_SHORT = 0.8
NOMINAL_SLOPE = -1.0  # d log nonzero / d log lam where no two trials tell: LogSum's, MNIST, 10 epochs, is -1.4
UNMOVED = 0.99  # a run keeping this much or more shows no sign that its lam prunes


def in_bracket(l0: float, n0: float, l1: float, n1: float, target: float,
               slope: Optional[float] = None) -> tuple[float, bool]:
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


def next_lams(trials: list[tuple[float, float]], target: float, n: int, lam_range) -> list[float]:
    """The next round's lam values from (lam, nonzero) so far: inside the bracket where the nonzero fraction crosses
    the target (the first such pair of neighbours in lam, should the results not fall monotonically), centred on its
    guess (in_bracket), over half the bracket's width in log scale (at most a factor 1.78 either side where an end
    kept nothing); beyond the range tried going up, along NOMINAL_SLOPE from the top run where it prunes (keeps less
    than UNMOVED), else a decade per value but not beyond lam_range (none left: []); going down, a decade per value,
    below lam_range only where the bottom run kept weights. Rounded as folders name them, none tried before, none
    twice."""
    done = sorted(trials)
    crossing = next(((a, b) for a, b in zip(done, done[1:]) if a[1] > target >= b[1] and a[0] < b[0]), None)
    if crossing is None and all(nz > target for _, nz in done):
        top, kept = max(done)
        if kept < UNMOVED:  # it prunes: along the nominal slope from there, over a factor 1.78 either side
            guess = math.log(top) + (math.log(target) - math.log(kept)) / NOMINAL_SLOPE
            width = math.log(10.0) / 4
            out = [math.exp(v) for v in ([guess] if n == 1 else
                                         [guess - width + 2 * width * i / (n - 1) for i in range(n)])]
            out = [lam for lam in out if lam > top]
        else:  # no sign that more lam would prune: a decade a value, not beyond lam_range
            out = [top * 10.0 ** (i + 1) for i in range(n)]
            out = [lam for lam in out if lam <= lam_range[1] * (1 + 1e-9)]
    elif crossing is None:
        bottom, kept = min(done)
        out = [bottom / 10.0 ** (i + 1) for i in range(n)]
        if kept == 0:
            out = [lam for lam in out if lam >= lam_range[0] * (1 - 1e-9)]
    else:
        (l0, n0), (l1, n1) = crossing
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


def estimate(trials: list[tuple[float, float]], target: float, prior_slope: Optional[float] = None,
             own_slope_span: float = math.log(3.0), max_step: float = math.log(100.0)):
    """(log lam where the nonzero fraction should reach the target, the slope used), from (lam, nonzero) trials:
    log-log interpolation inside the bracket; beyond it, extrapolation from the trial nearest the target along the
    slope of the two nearest trials where they lie at least own_slope_span apart in log lam, else along prior_slope
    (or theirs, if there is no prior), at most max_step out in log lam. (None, None) where no falling slope is known
    (every trial keeps everything, or none)."""
    done = sorted(trials)
    cross = next(((a, b) for a, b in zip(done, done[1:]) if a[1] > target >= b[1] and a[0] < b[0]), None)
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
    """n lam values whose tolerance windows (a run lands within tolerance of the target over a window of
    2 half_window in log lam) lie side by side, centred on the guess: n = 2 puts the guess where the two meet, so
    that they cover the guess +- 2 half_window. Rounded as folders name them, none in `tried`, none twice."""
    out = []
    for i in range(n):
        lam = rounded(math.exp(log_guess + half_window * (2 * i - (n - 1))))
        if lam not in tried and lam not in out:
            out.append(lam)
    return out


def without(combo: list[str], keys: tuple[str, ...]) -> list[str]:
    return [o for o in combo if o.split("=", 1)[0].lstrip("+~") not in keys]


class Plan:
    """One combination's search: its full epochs and lr, the short rounds' epochs and lr (None: no short rounds), its
    short and full trials as (lam, nonzero, row)."""

    def __init__(self, combo: list[str], direct: bool, epochs: int, lr: float, short_epochs: Optional[int]):
        self.combo, self.direct, self.epochs, self.lr = combo, direct, epochs, lr
        self.short_epochs = short_epochs
        self.short_lr = lr * epochs / short_epochs if short_epochs else None
        self.short, self.full = [], []

    def slope(self, target: float) -> Optional[float]:
        """The short runs' d log nonzero / d log lam near the target: the shape the full rounds go by."""
        return estimate([t[:2] for t in self.short], target)[1]


class LamSearchSweeper(BasicSweeper):
    def __init__(self, target_nonzero: float, tolerance: float = 0.05, rounds: int = 4, per_round: int = 4,
                 per_full_round: int = 2, short_epochs: float = 0.1, lam_range: Optional[List[float]] = None,
                 params: Optional[Any] = None) -> None:
        super().__init__(max_batch_size=None, params=params)
        if not 0 < target_nonzero < 1:
            raise ValueError(f"hydra.sweeper.target_nonzero must be a fraction in (0, 1), got {target_nonzero}")
        if tolerance <= 0 or rounds < 1 or per_round < 1 or per_full_round < 1:
            raise ValueError("hydra.sweeper.tolerance must be > 0, rounds, per_round and per_full_round at least 1")
        if not 0 < short_epochs <= 1:
            raise ValueError(f"hydra.sweeper.short_epochs must be a fraction in (0, 1], got {short_epochs}")
        lam_range = list(lam_range or [1e-7, 1.0])
        if len(lam_range) != 2 or not 0 < lam_range[0] < lam_range[1]:
            raise ValueError(f"hydra.sweeper.lam_range must be [low, high] with 0 < low < high, got {lam_range}")
        self.target, self.tolerance, self.rounds, self.per_round = target_nonzero, tolerance, rounds, per_round
        self.per_full_round, self.short_fraction, self.lam_range = per_full_round, short_epochs, lam_range
        # two full rounds where there are four or more; one where there are two or three; none in a single round
        self.short_rounds = min(2, rounds - 2) if rounds >= 4 else rounds - 1

    def within(self, nonzero: float) -> bool:
        return abs(nonzero - self.target) <= self.tolerance * self.target

    def plan(self, combo: list[str]) -> Plan:
        """The combination's method, epochs and learning rate as its jobs will compose them."""
        config = self.hydra_context.config_loader.load_sweep_config(self.config, list(combo))
        epochs, lr = int(config.epochs), float(config.lr if config.lr is not None else config.method.lr)
        short = max(1, round(epochs * self.short_fraction))
        return Plan(combo, config.method.name == "magnitude_pruning", epochs, lr,
                    short if short < epochs and self.short_rounds > 0 else None)

    def round_jobs(self, plan: Plan, round_: int) -> list[tuple[str, Optional[float], list[str]]]:
        """This round's jobs of one combination: (phase, lam, overrides)."""
        if plan.direct:
            return [("full", None, plan.combo + [f"method.params.final_sparsity={1 - self.target}"])]
        short = plan.short_epochs is not None and round_ <= self.short_rounds and not any(
            self.within(t[1]) for t in plan.short)
        if short or plan.short_epochs is None:  # a short round, or every round in full as short ones would be
            trials = plan.short if short else plan.full
            lams = ([rounded(lam) for lam in log_spaced(*self.lam_range, self.per_round)] if not trials else
                    next_lams([t[:2] for t in trials], self.target, self.per_round, self.lam_range))
            extra = [f"epochs={plan.short_epochs}", f"lr={plan.short_lr:.6g}"] if short else []
            base = without(plan.combo, ("epochs", "lr")) + extra if short else plan.combo
            return [("short" if short else "full", lam, base + [f"lam={lam:.6g}"]) for lam in lams]
        prior = plan.slope(self.target)
        # from full runs, at most a factor 3 beyond them: the curve steepens toward a network that keeps nothing
        guess, slope = estimate([t[:2] for t in (plan.full or plan.short)], self.target, prior,
                                max_step=math.log(3.0) if plan.full else math.log(100.0))
        tried = {rounded(t[0]) for t in plan.full}
        if guess is None:  # nothing to go by: the short rounds' way on the full trials
            lams = next_lams([t[:2] for t in plan.full or plan.short], self.target, self.per_full_round,
                             self.lam_range)
            lams = [lam for lam in lams if lam not in tried]
        else:
            if not plan.full:  # full runs keep fewer weights than their lr-scaled short runs at the same lam
                guess += math.log(FULL_OVER_SHORT)
            # windows side by side around the guess: a run lands within tolerance over 2 log(1 + tol) / |slope|
            lams = around(guess, math.log(1 + self.tolerance) / abs(slope or NOMINAL_SLOPE), self.per_full_round,
                          tried)
        return [("full", lam, plan.combo + [f"lam={lam:.6g}"]) for lam in lams]

    def sweep(self, arguments):
        params_conf = self._parse_config()
        params_conf.extend(arguments)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        parsed = parser.parse_overrides(params_conf)
        if any(o.key_or_group == "lam" for o in parsed):
            raise ValueError("hydra/sweeper=lam_search chooses lam: leave lam out of the command")
        plans = [self.plan(list(c)) for c in self.split_arguments(parsed, None)[0]]
        sweep_dir = Path(self.config.hydra.sweep.dir)
        record = Record(self.config, sweep_dir)
        rows, searching, job_idx = [], list(range(len(plans))), 0
        for round_ in range(1, self.rounds + 1):
            batch, owners = [], []
            for i in list(searching):
                jobs = self.round_jobs(plans[i], round_)
                if not jobs:  # every lam worth trying inside lam_range was tried
                    searching.remove(i)
                for phase, lam, overrides in jobs:
                    batch.append(overrides + ["objective=[nonzero_fraction,val_error]"])
                    owners.append((i, phase, lam))
            if not batch:
                break
            results = launched(self, batch, job_idx, record)
            job_idx += len(batch)
            for (i, phase, lam), ret in zip(owners, results):
                plan, folder = plans[i], sweep_outcomes.folder_of(ret)
                summary = self.read_summary(folder)
                returned = ret._return_value  # (nonzero, val_error) when this job completed here; why not, else
                if not isinstance(returned, tuple):  # failed, or refused (the folder holds another run): no result
                    status = "refused" if summary.get("status") == "completed" else summary.get("status")
                    summary = {"lam": lam, "status": status, "wall_time_s": summary.get("wall_time_s")}
                nonzero = summary.get("nonzero_fraction")
                short = phase == "short"
                rows.append({"combination": " ".join(plan.combo), "round": round_,
                             "epochs": plan.short_epochs if short else plan.epochs,
                             "lr": plan.short_lr if short else plan.lr, "lam": summary.get("lam", lam),
                             "nonzero_fraction": nonzero, "val_error": summary.get("val_error"),
                             "test_error": summary.get("test_error"), "wall_time_s": summary.get("wall_time_s"),
                             "status": summary.get("status", "failed"), "folder": str(folder)})
                if summary.get("status") == "completed" and nonzero is not None:
                    (plan.short if short else plan.full).append((summary["lam"], nonzero, rows[-1]))
            for i in list(searching):  # done: within tolerance, set directly, or nothing completed to go on from
                plan = plans[i]
                if plan.direct or not (plan.short or plan.full) or any(self.within(t[1]) for t in plan.full):
                    searching.remove(i)
            if not searching:
                break
        self.write(sweep_dir, rows)
        self.conclude(plans, rows, sweep_dir)
        return [rows]

    def conclude(self, plans: list[Plan], rows: list[dict], sweep_dir: Path) -> None:
        """Per combination, the full run closest to the target and what the search cost; the unmet ones named."""
        unmet = []
        for plan in plans:
            name = " ".join(plan.combo) or "(no other setting swept)"
            runs = [r for r in rows if r["combination"] == " ".join(plan.combo)]
            seconds = sum(r["wall_time_s"] or 0 for r in runs)
            cost = (f"{len(runs)} runs ({len(runs) - len([r for r in runs if r['epochs'] == plan.epochs])} short), "
                    f"{seconds:.1f} s of training")
            if not plan.full:
                unmet.append(name)
                tried = plan.short or plan.full
                why = ("no full run completed" if not tried or any(t[1] <= self.target for t in tried) else
                       f"no lam in lam_range {self.lam_range} brought a run below nonzero "
                       f"{min(t[1] for t in tried):.4f} (widen hydra.sweeper.lam_range, or train longer)")
                print(f"lam_search: {name}: {why}; {cost}", flush=True)
                continue
            within = [t for t in plan.full if self.within(t[1])]  # the closest of those within tolerance, if any
            lam, nonzero, row = min(within or plan.full, key=lambda t: abs(t[1] - self.target))
            met = self.within(nonzero)
            if not met:
                unmet.append(name)
            chosen = f"final_sparsity {1 - self.target:g}" if plan.direct else f"lam {lam:.4g}"
            print(f"lam_search: {name}: {chosen}, nonzero {nonzero:.4f} (target {self.target:g}"
                  f"{'' if met else ', NOT within tolerance'}), val error {row['val_error']:.4f}; {cost}", flush=True)
        if unmet:
            sweep_outcomes.SWEEP["unmet"] = (
                f"lam_search brought {len(plans) - len(unmet)} of {len(plans)} combinations within {self.tolerance:g} "
                f"of nonzero {self.target:g}: not {'; '.join(unmet)} (see {sweep_dir.absolute()})")

    @staticmethod
    def read_summary(folder: Path) -> dict:
        try:
            return json.loads((folder / "summary.json").read_text())
        except (OSError, ValueError):
            return {}

    @staticmethod
    def write(sweep_dir: Path, rows: list[dict]) -> None:
        _, table = create_new(sweep_dir, "search.csv")  # another command's table into the same folder stays
        with table as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
