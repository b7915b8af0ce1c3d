"""`hydra/sweeper=lam_search`: lam chosen for a target fraction of nonzero weights (`target_nonzero`), or of the dense
network's multiply-adds that the compact network keeps (`target_macs`: whole units gone, as with structure=neuron),
per combination of the other swept settings (`method=logsum,hard_concrete seed=0,1` are four combinations). Below,
"nonzero fraction" stands for whichever is searched: both fall as lam grows.

Each round launches, for every combination still searching, its lam values together (one launch: the stacked launcher
trains them as stacks). The first rounds are short: `short_epochs` of the epochs (at least one) at the learning rate
scaled up by as much, so that Adam's weights travel as far as in the full run (a short run at the full run's lr keeps
far more weights: LogSum at 1 epoch against 10, two decades of lam apart; with the lr scaled, a factor 1.4), and a
penalty warm-up counted in epochs (penalty_warmup) scaled as the epochs are. Short rounds launch `per_round` lam values:
log-spaced over `lam_range` first, then inside the bracket where the nonzero fraction crosses the target (it falls as
lam grows), around the point that interpolating log nonzero against log lam linearly between the bracket's ends
predicts. At most two rounds are short and at least the last one trains in full (two of the default four; also from the
first round whose short runs all failed), `per_full_round` lam values each: first spread over 0.25-0.8 of the lam the
short runs predict (FULL_OVER_SHORT, measured: the factor differs with the epochs), then the lam the full runs so far
predict, two tolerance windows around it: inside their bracket interpolated, the windows overlapping by half; beyond it
side by side, extrapolated along the full runs' own slope where they lie a factor 1.7 apart or more, else the short
runs', at most a factor 3 beyond them; where that guess was tried already, inside the full runs' bracket as the short
rounds search theirs. Once a round inside a bracket of full runs has not landed (the curve steeper, rougher or less
monotone than the windows assume), each further round narrows the bracket between the closest runs on either side
(lam_guess.narrowed: the interpolation's guess and the bracket's middle, so it at least halves), until a run lands, the
bracket shrinks to lams that round alike (the curve jumps across the target: said), or the budget is spent. Only a
full run counts: a combination is done when one's nonzero fraction is within `tolerance` (relative) of the target.
The budget is `max_runs` runs per combination, short and full alike (`rounds`, null by default, caps rounds too).
`short_epochs=1` trains every round in full, `per_round` values each.
magnitude_pruning, whose sparsity is set directly, takes a target_nonzero directly (final_sparsity = 1 - target): one
run (a target_macs it refuses). A combination whose runs keep every weight at every lam up to lam_range's top stops
there and is named: a method that cannot prune in so few steps (eta-Trick, VarDrop and HardConcrete within 10 epochs)
gains nothing from more lam. Every trial is an ordinary run folder (a rerun of the command into the same sweep folder
skips finished ones and replays the search). The sweep folder gets search.csv (SEARCH_CSV: combination, round, epochs,
lr, lam, nonzero_fraction, macs_fraction, val_error, test_error, wall_time_s, status, folder). A trial whose network
collapsed (adrop.train.loop.collapse: a lam far too large) counts as keeping nothing, status "collapsed": an end of the
bracket, never the answer, and no failure of the command. The command prints, per
combination, the full run closest to the target, the runs and the training seconds it took (or why it found none), and
exits 1 naming in its last line the combinations not brought within tolerance, each with its closest full run and
why the search stopped, and, where more runs would go on, the command that continues it (the same into the same sweep
folder with twice the budget: finished runs are replayed, not trained again;
adrop.train.run_folder.sweep_outcomes.SWEEP["unmet"]).

`then_seeds` (default none): each combination brought within tolerance is trained again with these seeds at its
answer (its run's own overrides, the seed changed), into the sweep folder: a matched-sparsity table's runs in one
command (`hydra.sweeper.then_seeds=[1,2]` beside the search's seed 0). A combination not brought there trains none.

`max_val_error` (default none): a full run within tolerance whose validation error is above it is no answer: the network
failed at that sparsity (VarDrop's weight noise at a large lam leaves a network at chance). The combination stops there,
as any within tolerance (more lams at the same sparsity would fail alike), and is named among those not met, with its
error; the command exits 1, so nothing that trusts the answer (further seeds) trains at that lam.

`reuse`: earlier lam_search sweep folders whose completed runs of the same combination (the same overrides but where the
data lives and how progress shows, at this search's full or short epochs and lr) are trials here, not trained again: a
search for another target starts from what one for a nearby target learnt (from its full runs, no short rounds), and a
search under a changed rule, into a new folder, keeps the old folder's runs (its own folder it refuses: a rerun there
replays them anyway). They are round 0 of search.csv, their folders where they are, and count in no cost. A reused run
within tolerance is the answer at once. Overrides compare as written (`+key=v` is not `key=v`); magnitude pruning, set
directly, reuses nothing.
"""

import itertools
import math
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from adrop.train.config.differences import NOT_A_RESULT
from adrop.train.run_folder import run_files, sweep_outcomes

from .lam_guess import (
    FULL_OVER_SHORT,
    NOMINAL_SLOPE,
    around,
    closest_sides,
    crossing,
    estimate,
    in_bracket,
    log_spaced,
    narrowed,
    next_lams,
    rounded,
)
from .search_table import (
    MEASURES,
    SEARCH_CSV,
    closest_full_run,
    columns,
    failed,
    read_search_tables,
    write_search_table,
)
from .sweeper import Record, launched


def without(combo: list[str], keys: tuple[str, ...]) -> list[str]:
    return [o for o in combo if o.split("=", 1)[0].lstrip("+~") not in keys]


def same_runs(combination: str, combo: list[str]) -> bool:
    """Whether an earlier search's combination (its search.csv's text) trains what `combo` does."""
    return set(without(combination.split(), NOT_A_RESULT)) == set(without(combo, NOT_A_RESULT))


class Plan:
    """One combination's search: its full epochs and lr, the short rounds' epochs and lr (None: no short rounds), its
    short and full trials as (lam, nonzero, row)."""

    def __init__(
        self,
        combo: list[str],
        direct: bool,
        epochs: int,
        lr: float,
        short_epochs: Optional[int],
        penalty_warmup=(0.0, 0.0),
    ):
        self.combo, self.direct, self.epochs, self.lr = combo, direct, epochs, lr
        self.short_epochs = short_epochs
        self.short_lr = lr * epochs / short_epochs if short_epochs else None
        # a warm-up counted in epochs takes the same share of a short run as of the full one
        self.short_warmup = [e * short_epochs / epochs for e in penalty_warmup] if short_epochs else None
        self.warmup = any(e > 0 for e in penalty_warmup)
        self.short, self.full = [], []
        self.short_over = False  # a short round completed no run (diverged at the scaled lr?): full rounds from now
        self.unmeasured = False  # a run completed without the searched measure: nothing to search by
        self.last_phase = None
        self.launched = 0  # this search's runs of the combination so far, short and full (what max_runs counts)
        self.bracket_rounds = 0  # full rounds proposed inside a bracket of full runs
        self.spent = False  # the budget (max_runs) ran out while the search went on
        self.jumps = False  # the bracket shrank to lams that round alike without a run landing

    def short_overrides(self) -> list[str]:
        """What a short run changes: its epochs, its lr, and a warm-up of the penalty scaled as its epochs are."""
        out = [f"epochs={self.short_epochs}", f"lr={self.short_lr:.6g}"]
        if self.warmup:
            out.append("penalty_warmup=[" + ",".join(f"{e:.6g}" for e in self.short_warmup) + "]")
        return out

    def slope(self, target: float) -> Optional[float]:
        """The short runs' d log nonzero / d log lam near the target: the shape the full rounds go by."""
        return estimate([t[:2] for t in self.short], target)[1]


@dataclass
class LamSearchConf:
    """Ask for a sparsity, get lam: for each combination of the other swept settings, rounds of lam values (each round
    one launch: with hydra/launcher=stacked, stacks) until a run's nonzero fraction (or its compact network's share of
    the multiply-adds, target_macs) is within tolerance of the target; writes search.csv into the sweep folder and
    exits 1 naming the combinations it could not bring within tolerance,
    adrop train -m hydra/sweeper=lam_search hydra.sweeper.target_nonzero=0.02 method=logsum,hard_concrete seed=0,1."""

    _target_: str = "hydra_plugins.adrop_plugins.lam_search.LamSearchSweeper"
    target_nonzero: Optional[float] = None  # the fraction of weights to keep; or
    target_macs: Optional[float] = None  # the fraction of the dense network's multiply-adds its compact network
    #                                      keeps (one target)
    tolerance: float = 0.05  # relative: |kept - target| <= tolerance * target (kept: the fraction searched)
    max_runs: int = 24  # the budget: runs per combination, short and full alike (a short run costs short_epochs of one)
    rounds: Optional[int] = None  # a cap on rounds as well (null: none; the budget decides)
    per_round: int = 4  # lam values per combination and short round (a stack's worth)
    per_full_round: int = 2  # lam values per combination and full round
    short_epochs: float = 0.1  # the short rounds' fraction of the epochs, at the lr scaled up by as much; 1: all full
    lam_range: List[float] = field(default_factory=lambda: [1.0e-7, 1.0])  # where the first round looks, log-spaced
    reuse: List[str] = field(default_factory=list)  # earlier lam_search sweep folders: their runs of the same
    #                                                 combination are trials here
    max_val_error: Optional[float] = None  # a run within tolerance erring more on validation is no answer (a failed
    #                                        network)
    then_seeds: List[int] = field(default_factory=list)  # then each answer trained again with these seeds (its
    #                                                      overrides, the seed changed): [1,2]
    params: Optional[Dict[str, str]] = None  # the sweep's parameters, as Hydra's basic sweeper takes them


ConfigStore.instance().store(group="hydra/sweeper", name="lam_search", node=LamSearchConf, provider="adrop")


class LamSearchSweeper(BasicSweeper):
    def __init__(
        self,
        target_nonzero: Optional[float] = None,
        target_macs: Optional[float] = None,
        tolerance: float = 0.05,
        rounds: Optional[int] = None,
        max_runs: int = 24,
        per_round: int = 4,
        per_full_round: int = 2,
        short_epochs: float = 0.1,
        lam_range: Optional[List[float]] = None,
        reuse: Optional[List[str]] = None,
        max_val_error: Optional[float] = None,
        then_seeds: Optional[List[int]] = None,
        params: Optional[Any] = None,
    ) -> None:
        super().__init__(max_batch_size=None, params=params)
        targets = {
            name: value for name, value in (("nonzero", target_nonzero), ("macs", target_macs)) if value is not None
        }
        if len(targets) != 1:
            raise ValueError(
                "hydra/sweeper=lam_search takes one target: hydra.sweeper.target_nonzero (the fraction of "
                "weights kept) or hydra.sweeper.target_macs (of the dense network's multiply-adds)"
            )
        ((self.measure, target),) = targets.items()
        if not 0 < target < 1:
            raise ValueError(f"hydra.sweeper.target_{self.measure} must be a fraction in (0, 1), got {target}")
        self.column = MEASURES[self.measure]
        if tolerance <= 0 or (rounds is not None and rounds < 1) or max_runs < 1 or per_round < 1 or per_full_round < 1:
            raise ValueError(
                "hydra.sweeper.tolerance must be > 0, rounds (or null), max_runs, per_round and "
                "per_full_round at least 1"
            )
        if not 0 < short_epochs <= 1:
            raise ValueError(f"hydra.sweeper.short_epochs must be a fraction in (0, 1], got {short_epochs}")
        lam_range = list(lam_range or [1e-7, 1.0])
        if len(lam_range) != 2 or not 0 < lam_range[0] < lam_range[1]:
            raise ValueError(f"hydra.sweeper.lam_range must be [low, high] with 0 < low < high, got {lam_range}")
        self.target, self.tolerance, self.rounds, self.per_round = target, tolerance, rounds, per_round
        self.max_runs = max_runs
        self.per_full_round, self.short_fraction, self.lam_range = per_full_round, short_epochs, lam_range
        if max_val_error is not None and not 0 < max_val_error:
            raise ValueError(
                f"hydra.sweeper.max_val_error must be > 0 (a classifier's: a fraction), got {max_val_error}"
            )
        self.max_val_error = max_val_error
        self.then_seeds = [int(s) for s in (then_seeds or [])]
        if any(s < 0 for s in self.then_seeds) or len(set(self.then_seeds)) != len(self.then_seeds):
            raise ValueError(f"hydra.sweeper.then_seeds must be distinct seeds >= 0, got {list(then_seeds)}")
        self.task_metric("classification")
        self.reuse = [Path(folder) for folder in (reuse or [])]
        for folder in self.reuse:
            if not any(folder.glob("search*.csv")):
                raise ValueError(f"hydra.sweeper.reuse: {folder} holds no lam_search table ({SEARCH_CSV})")
        # at most two short rounds, and at least one full one where there are two rounds or more
        self.short_rounds = 2 if rounds is None else min(2, rounds - 1)

    def task_metric(self, task: str) -> None:
        """The runs' task: its first metric is what search.csv records of each run (val_error and test_error for a
        classifier, val_rmse and test_rmse for a regression) and what max_val_error bounds."""
        from adrop.train.tasks import get

        self.metric = get(task).metrics[0]
        self.val, self.test = f"val_{self.metric}", f"test_{self.metric}"

    def within(self, kept: float) -> bool:
        """Whether a run's measure (its nonzero fraction, or its compact network's share of multiply-adds) is within
        tolerance of the target."""
        return abs(kept - self.target) <= self.tolerance * self.target

    def measured(self, summary: dict) -> Optional[float]:
        """The searched measure of a run's summary.json: its nonzero fraction, or its compact network's multiply-adds
        over the dense network's; None where it has none."""
        return summary.get("nonzero_fraction") if self.measure == "nonzero" else macs_fraction(summary)

    def plan(self, combo: list[str]) -> Plan:
        """The combination's method, epochs and learning rate as its jobs will compose them."""
        config = self.hydra_context.config_loader.load_sweep_config(self.config, list(combo))
        epochs, lr = int(config.epochs), float(config.lr if config.lr is not None else config.method.lr)
        short = max(1, round(epochs * self.short_fraction))
        direct = config.method.name == "magnitude_pruning"
        if direct and self.measure != "nonzero":
            raise ValueError(
                "method=magnitude_pruning sets its fraction of weights directly (final_sparsity), not "
                "its multiply-adds: use hydra.sweeper.target_nonzero, or sweep "
                "method.params.final_sparsity"
            )
        return Plan(
            combo,
            direct,
            epochs,
            lr,
            short if short < epochs and self.short_rounds > 0 else None,
            list(config.penalty_warmup),
        )

    def round_jobs(self, plan: Plan, round_: int) -> list[tuple[str, Optional[float], list[str]]]:
        """This round's jobs of one combination: (phase, lam, overrides), as many as its budget (max_runs) leaves."""
        jobs = self.proposed(plan, round_)
        left = self.max_runs - plan.launched
        if len(jobs) > left:
            plan.spent = True
            jobs = jobs[: max(left, 0)]
        plan.launched += len(jobs)
        return jobs

    def proposed(self, plan: Plan, round_: int) -> list[tuple[str, Optional[float], list[str]]]:
        """The jobs this round would launch for one combination, whatever its budget."""
        if plan.direct:
            return [("full", None, plan.combo + [f"method.params.final_sparsity={1 - self.target}"])]
        short = (
            plan.short_epochs is not None
            and round_ <= self.short_rounds
            and not plan.short_over
            and not any(self.within(t[1]) for t in plan.short)
            and not plan.full
        )  # reused full runs: no more
        if short or plan.short_epochs is None:  # a short round, or every round in full as short ones would be
            trials = plan.short if short else plan.full
            lams = (
                [rounded(lam) for lam in log_spaced(*self.lam_range, self.per_round)]
                if not trials
                else next_lams([t[:2] for t in trials], self.target, self.per_round, self.lam_range)
            )
            if short:
                base = without(plan.combo, ("epochs", "lr", "penalty_warmup")) + plan.short_overrides()
            return [
                ("short" if short else "full", lam, (base if short else plan.combo) + [f"lam={lam:.6g}"])
                for lam in lams
            ]
        if not plan.full and not plan.short:  # the short runs all failed: the first full round over lam_range
            lams = [rounded(lam) for lam in log_spaced(*self.lam_range, self.per_full_round)]
            return [("full", lam, plan.combo + [f"lam={lam:.6g}"]) for lam in lams]
        prior = plan.slope(self.target)
        # from full runs, at most a factor 3 beyond them: the curve steepens toward a network that keeps nothing
        guess, slope = estimate(
            [t[:2] for t in (plan.full or plan.short)],
            self.target,
            prior,
            max_step=math.log(3.0) if plan.full else math.log(100.0),
        )
        tried = {rounded(t[0]) for t in plan.full}
        pair = crossing([t[:2] for t in plan.full], self.target)
        sides = closest_sides([t[:2] for t in plan.full], self.target)
        if sides is not None:
            plan.bracket_rounds += 1
        if sides is not None and plan.bracket_rounds > 1:
            # a bracket of full runs already searched once without landing (the curve is not what the windows
            # assumed: steeper, rougher or not monotone): keep narrowing it, interpolation with a bisection
            # safeguard, until a run lands or the budget is spent
            lams = narrowed([t[:2] for t in plan.full], self.target, self.per_full_round, tried)
            plan.jumps = not lams
            return [("full", lam, plan.combo + [f"lam={lam:.6g}"]) for lam in lams]
        if pair is not None and in_bracket(*pair[0], *pair[1], self.target)[1]:
            guess = None  # a bracket whose far end kept nothing: its guess was this bracket's own window; search inside
        if guess is None:  # nothing to go by: the short rounds' way on the full trials
            lams = next_lams([t[:2] for t in plan.full or plan.short], self.target, self.per_full_round, self.lam_range)
            lams = [lam for lam in lams if lam not in tried]
        elif not plan.full:  # full runs keep fewer weights than their lr-scaled short runs at the same lam, by a
            # factor that differs with the epochs: lams spread over its measured range, whose slope the next round uses
            low, high = (guess + math.log(f) for f in FULL_OVER_SHORT)
            lams = [rounded(lam) for lam in log_spaced(math.exp(low), math.exp(high), self.per_full_round)]
            lams = [lam for i, lam in enumerate(lams) if lam not in tried and lam not in lams[:i]]
        else:
            # two tolerance windows around the guess (a run lands within tolerance over 2 log(1 + tol) / |slope|):
            # beyond the full runs, where the guess is an extrapolation, side by side; inside a bracket of them, where
            # it interpolates, overlapping by half, so that each run lands about half the tolerance from the target.
            # Fitted to two 200-epoch searches (AdaProx, adaptive dropout) whose brackets spanned a factor 2 and whose
            # runs side by side landed 4.8-7% either side of it, the guess right: the curve's roughness (1-2% across
            # nearby lams, 3% across seeds) decided. Where the interpolation errs far more (eta-Trick's, 40% across a
            # factor 2.8), neither placement lands.
            half_window = math.log(1 + self.tolerance) / abs(slope or NOMINAL_SLOPE)
            lams = around(guess, half_window / 2 if pair is not None else half_window, self.per_full_round, tried)
            if not lams and plan.full:  # the guess's windows were tried (a bracket whose far end kept nothing):
                lams = next_lams([t[:2] for t in plan.full], self.target, self.per_full_round, self.lam_range)
        return [("full", lam, plan.combo + [f"lam={lam:.6g}"]) for lam in lams]

    def sweep(self, arguments):
        params_conf = self._parse_config()
        params_conf.extend(arguments)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        parsed = parser.parse_overrides(params_conf)
        if any(o.key_or_group == "lam" for o in parsed):
            raise ValueError("hydra/sweeper=lam_search chooses lam: leave lam out of the command")
        plans = [self.plan(list(c)) for c in self.split_arguments(parsed, None)[0]]
        self.task_metric(str(self.config.get("task") or "classification"))
        sweep_dir = Path(self.config.hydra.sweep.dir)
        if any(folder.resolve() == sweep_dir.resolve() for folder in self.reuse):
            raise ValueError(
                "hydra.sweeper.reuse names this search's own folder, whose runs a rerun replays anyway: "
                "to keep them under a changed rule, search into a new folder with reuse=[this one]"
            )
        record = Record(self.config, sweep_dir)
        earlier = [row for folder in self.reuse for row in read_search_tables(folder)]  # each table read once
        rows = [row for plan in plans for row in self.reused(plan, earlier)]
        searching, job_idx = [i for i, plan in enumerate(plans) if not any(self.within(t[1]) for t in plan.full)], 0
        for round_ in range(1, self.rounds + 1) if self.rounds is not None else itertools.count(1):
            batch, owners = [], []
            for i in list(searching):
                jobs = self.round_jobs(plans[i], round_)
                if not jobs:  # every lam worth trying inside lam_range was tried
                    searching.remove(i)
                for phase, lam, overrides in jobs:
                    batch.append(overrides + ["objective=[nonzero_fraction,val_error]"])  # val_error: the task's
                    owners.append((i, phase, lam))
            if not batch:
                break
            results = launched(self, batch, job_idx, record)
            job_idx += len(batch)
            for (i, phase, lam), ret in zip(owners, results):
                plan, folder = plans[i], sweep_outcomes.folder_of(ret)
                summary = read_summary(folder)
                returned = ret._return_value  # (nonzero, val_error) when this job completed here; why not, else
                # its own run failed as collapsed (not a job refused over a folder holding another collapsed run)
                collapsed = (
                    isinstance(returned, str) and returned.startswith("failed:") and summary.get("collapsed") is True
                )
                if collapsed:  # a lam too large: its network keeps nothing of use, a bracket's end all the same
                    summary = {**summary, "status": "collapsed"}
                    sweep_outcomes.SWEEP.setdefault("collapsed", set()).add(os.path.abspath(folder))
                elif not isinstance(returned, tuple):  # failed, or refused (the folder holds another run): no result
                    status = "refused" if summary.get("status") == "completed" else summary.get("status")
                    summary = {"lam": lam, "status": status, "wall_time_s": summary.get("wall_time_s")}
                kept = 0.0 if collapsed else self.measured(summary)
                short = phase == "short"
                rows.append(
                    {
                        "combination": " ".join(plan.combo),
                        "round": round_,
                        "epochs": plan.short_epochs if short else plan.epochs,
                        "lr": plan.short_lr if short else plan.lr,
                        "lam": summary.get("lam", lam),
                        "nonzero_fraction": summary.get("nonzero_fraction"),
                        "macs_fraction": macs_fraction(summary),
                        self.val: summary.get(self.val),
                        self.test: summary.get(self.test),
                        "wall_time_s": summary.get("wall_time_s"),
                        "status": summary.get("status") or "failed",
                        "folder": str(folder),
                    }
                )
                if summary.get("status") in ("completed", "collapsed") and kept is not None:
                    (plan.short if short else plan.full).append((summary["lam"], kept, rows[-1]))
                elif summary.get("status") == "completed":  # no compact network's multiply-adds (not a chain)
                    plan.unmeasured = True
                plan.last_phase = phase
            for i in list(searching):
                plan = plans[i]
                if plan.last_phase == "short" and not plan.short:
                    plan.short_over = True
                # done: within tolerance, set directly, or a full round completed nothing to go on from
                if (
                    plan.direct
                    or plan.unmeasured
                    or any(self.within(t[1]) for t in plan.full)
                    or (plan.last_phase == "full" and not (plan.short or plan.full))
                ):
                    searching.remove(i)
            if not searching:
                break
        write_search_table(sweep_dir, rows, columns(self.metric))
        answers = self.conclude(plans, rows, sweep_dir)
        if self.then_seeds and answers:
            self.train_seeds(answers, job_idx, record)
        return [rows]

    def train_seeds(self, answers: list[tuple[str, dict]], job_idx: int, record) -> None:
        """then_seeds: each combination's answer trained again with these seeds, at its lam (its run's own overrides
        but the seed), into the sweep folder: the matched-sparsity runs of a table, in one command."""
        batch = []
        for name, row in answers:
            given = OmegaConf.load(Path(row["folder"]) / run_files.HYDRA_DIR / run_files.OVERRIDES)
            kept = [o for o in map(str, given) if not o.lstrip("+~").startswith(("seed=", "objective="))]
            own = next((int(o.split("=", 1)[1]) for o in map(str, given) if o.lstrip("+").startswith("seed=")), 0)
            batch += [kept + [f"seed={seed}"] for seed in self.then_seeds if seed != own]  # its own: trained
            print(f"lam_search: {name}: seeds {', '.join(map(str, self.then_seeds))} at its answer", flush=True)
        launched(self, batch, job_idx, record)

    def reused(self, plan: Plan, earlier: list[dict]) -> list[dict]:
        """Of the reuse folders' runs (`earlier`, their search tables' rows), the completed ones of the plan's
        combination at its full or short epochs and lr, added to its trials; their rows, round 0."""
        if plan.direct:
            return []
        out = []
        for row in earlier:
            if row["status"] not in ("completed", "collapsed") or not same_runs(row["combination"], plan.combo):
                continue
            kept = 0.0 if row["status"] == "collapsed" else row.get(self.column)  # as the search took it
            if kept in (None, "") and self.measure == "macs":  # a table from before the column: the run's summary
                kept = macs_fraction(read_summary(Path(row["folder"])))
            if kept in (None, ""):
                continue
            epochs, lr, lam, kept = int(row["epochs"]), float(row["lr"]), float(row["lam"]), float(kept)
            if epochs == plan.epochs and math.isclose(lr, plan.lr, rel_tol=1e-6):
                trials = plan.full
            elif plan.short_epochs and epochs == plan.short_epochs and math.isclose(lr, plan.short_lr, rel_tol=1e-6):
                trials = plan.short
            else:
                continue
            if any(rounded(t[0]) == rounded(lam) for t in trials):  # the same run, in two reused tables
                continue
            numbers = {
                k: float(row[k]) if row.get(k) not in (None, "") else None
                for k in ("nonzero_fraction", "macs_fraction", self.val, self.test, "wall_time_s")
            }
            out.append(
                {
                    **{k: row.get(k) for k in columns(self.metric)},
                    **numbers,
                    "combination": " ".join(plan.combo),
                    "round": 0,
                    "epochs": epochs,
                    "lr": lr,
                    "lam": lam,
                }
            )
            out[-1][self.column] = numbers[self.column] if row["status"] == "collapsed" else kept
            trials.append((lam, kept, out[-1]))
        return out

    def conclude(self, plans: list[Plan], rows: list[dict], sweep_dir: Path) -> list[tuple[str, dict]]:
        """Per combination, the full run closest to the target and what the search cost; the unmet ones named. The
        answers: (combination, its search.csv row) of those brought within tolerance."""
        unmet, budget, answers = [], False, []
        for plan in plans:
            name = " ".join(plan.combo) or "(no other setting swept)"
            every = [r for r in rows if r["combination"] == " ".join(plan.combo)]
            runs = [r for r in every if r["round"] != 0]  # this search's own; round 0 was reused
            seconds = sum(float(r["wall_time_s"] or 0) for r in runs)
            cost = (
                f"{len(runs)} runs ({len(runs) - len([r for r in runs if r['epochs'] == plan.epochs])} short), "
                f"{seconds:.1f} s of training"
                + (f"; {len(every) - len(runs)} runs reused" if len(every) > len(runs) else "")
            )
            if not [t for t in plan.full if t[2].get("status") != "collapsed"]:  # none completed
                why = self.why_no_full_run(plan, runs)
                unmet.append(f"{name} ({why})")
                budget |= why.endswith(("max_runs)", "rounds)"))
                print(f"lam_search: {name}: {why}; {cost}", flush=True)
                continue
            row = closest_full_run(
                every, self.target, plan.epochs, self.column, self.tolerance, self.max_val_error, self.val
            )
            lam, kept = row["lam"], row[self.column]
            at_chance = self.failed(row)
            met = self.within(float(kept)) and not at_chance
            if not met and at_chance:
                unmet.append(
                    f"{name} (val {self.metric} {float(row[self.val]):.4f} above max_val_error "
                    f"{self.max_val_error:g} at lam {lam:.4g})"
                )
            elif not met:
                why, more = self.why_missed(plan)
                budget |= more
                unmet.append(f"{name} (closest: lam {lam:.4g}, {self.label} {float(kept):.4f}; {why})")
            if met:
                answers.append((name, row))
            chosen = f"final_sparsity {1 - self.target:g}" if plan.direct else f"lam {lam:.4g}"
            val = "-" if row[self.val] in (None, "") else f"{float(row[self.val]):.4f}"
            print(
                f"lam_search: {name}: {chosen}, {self.label} {float(kept):.4f} (target {self.target:g}"
                f"{'' if self.within(float(kept)) else ', NOT within tolerance'}), val {self.metric} {val}"
                f"{f', above max_val_error {self.max_val_error:g}: NOT an answer' if at_chance else ''}; {cost}",
                flush=True,
            )
        if unmet:
            go_on = f"; continue with: {self.continuing(sweep_dir)}" if budget else ""
            sweep_outcomes.SWEEP["unmet"] = (
                f"lam_search brought {len(plans) - len(unmet)} of {len(plans)} combinations within {self.tolerance:g} "
                f"of {self.label} {self.target:g}: not {'; '.join(unmet)} (see {sweep_dir.absolute()}){go_on}"
            )
        return answers

    def why_missed(self, plan: Plan) -> tuple[str, bool]:
        """Why a combination with full runs has none within tolerance, and whether more runs would go on."""
        sides = closest_sides([t[:2] for t in plan.full], self.target)
        if plan.jumps and sides is not None:
            (la, na), (lb, nb) = sides
            return (
                f"{self.label} jumps from {na:.4f} at lam {la:.6g} to {nb:.4f} at lam {lb:.6g}, with no lam "
                f"between them: no run lands within tolerance there (a wider hydra.sweeper.tolerance would take "
                f"one)"
            ), False
        if plan.spent:
            return f"its {self.max_runs} runs (hydra.sweeper.max_runs) spent", True
        if self.rounds is not None and plan.last_phase is not None:
            return f"its {self.rounds} round{'s' if self.rounds > 1 else ''} (hydra.sweeper.rounds) spent", True
        return "no lam left to try inside lam_range (widen hydra.sweeper.lam_range)", False

    def continuing(self, sweep_dir: Path) -> str:
        """The command that goes on where this one stopped: the same, into the same sweep folder (whose finished
        runs it replays, training none again), with twice the budget and no cap on rounds."""
        dropped = ("hydra.sweep.dir=", "hydra.sweeper.max_runs=", "hydra.sweeper.rounds=")
        argv = [a for a in sys.argv[1:] if not a.lstrip("+~").startswith(dropped)]
        return shlex.join(
            [
                "adrop",
                "train",
                *argv,
                f"hydra.sweep.dir={sweep_dir.absolute()}",
                f"hydra.sweeper.max_runs={2 * self.max_runs}",
            ]
        )

    @property
    def label(self) -> str:
        """The measure searched, as the command's lines name it."""
        return "nonzero" if self.measure == "nonzero" else "compact multiply-adds"

    def failed(self, row: dict) -> bool:
        """Whether a run's validation error is above max_val_error (a network that failed at its sparsity)."""
        return failed(row, self.max_val_error, self.val)

    def why_no_full_run(self, plan: Plan, runs: list[dict]) -> str:
        """Why a combination has no completed full run, from how its runs ended."""
        if plan.unmeasured:
            return (
                "its runs completed without the compact network's multiply-adds (cost.compact_macs, which "
                "adrop counts for chains of layers: model=mlp, lenet_300_100, lenet5 and the like); search "
                "target_nonzero"
            )
        full = [r for r in runs if r["epochs"] == plan.epochs]
        if full and all(r["status"] == "collapsed" for r in full):
            lowest = min(float(r["lam"]) for r in full)
            return (
                f"every full run's network collapsed ({len(full)}, the lowest lam {lowest:.4g}): the target lies "
                f"below; search again with a lower lam_range (see {SEARCH_CSV})"
            )
        if full:
            ended = sorted({str(r["status"]) for r in full})
            return f"no full run completed ({len(full)} launched: {', '.join(ended)}; see {SEARCH_CSV})"
        if not plan.short:
            return f"no run completed (see {SEARCH_CSV})"
        kept = [t[1] for t in plan.short]
        if min(kept) > self.target:
            epochs = f"{plan.short_epochs} epoch{'s' if plan.short_epochs > 1 else ''}"
            return (
                f"no lam in lam_range {self.lam_range} brought a run below {self.label} {min(kept):.4f} in "
                f"{epochs} at lr {plan.short_lr:.3g}: the method cannot prune in so few steps "
                f"(train longer or at a larger lr), or widen hydra.sweeper.lam_range"
            )
        if max(kept) <= 0:
            nothing = "no weight" if self.measure == "nonzero" else "no multiply-add"
            return (
                f"every run kept {nothing}, down to lam {min(t[0] for t in plan.short):.4g} "
                f"(lower hydra.sweeper.lam_range's bottom)"
            )
        return "the short rounds bracketed the target but no full round was left " + (
            "(its budget spent: raise hydra.sweeper.max_runs)"
            if plan.spent
            else "(its rounds spent: raise hydra.sweeper.rounds)"
        )


def macs_fraction(summary: dict) -> Optional[float]:
    """A run's compact network's multiply-adds over the dense network's (search.csv's macs_fraction); None where its
    summary has no cost."""
    cost = summary.get("cost") or {}
    return (
        cost["compact_macs"] / cost["dense_macs"]
        if cost.get("compact_macs") is not None and cost.get("dense_macs")
        else None
    )


def read_summary(folder: Path) -> dict:
    """A run's summary.json, or {} where it is missing or cannot be read."""
    try:
        return run_files.read_summary(folder) or {}
    except (OSError, ValueError):
        return {}
