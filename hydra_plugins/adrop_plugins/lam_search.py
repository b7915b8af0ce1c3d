"""`hydra/sweeper=lam_search`: lam chosen for a target fraction of nonzero weights, per combination of the other swept
settings (`method=logsum,hard_concrete seed=0,1` are four combinations).

Each round launches, for every combination still searching, `per_round` lam values (one launch: the stacked launcher
trains them as stacks): the first round log-spaced over `lam_range`; later rounds inside the bracket where the nonzero
fraction crosses the target (it falls as lam grows), around the point that interpolating log nonzero against log lam
linearly between the bracket's ends predicts. A combination is done when a run's nonzero fraction is within
`tolerance` (relative) of the target; at most `rounds` rounds. magnitude_pruning, whose sparsity is set directly,
takes the target directly (final_sparsity = 1 - target): one run. Every trial is an ordinary run folder (a rerun of the
command into the same sweep folder skips finished ones and replays the search). The sweep folder gets search.csv
(combination, round, lam, nonzero_fraction, val_error, test_error, status, folder); the command prints, per
combination, the run closest to the target, the runs and the training seconds it took, and exits 1 naming the
combinations not brought within tolerance (adrop.train.sweep_outcomes.SWEEP["unmet"]).
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

COLUMNS = ["combination", "round", "lam", "nonzero_fraction", "val_error", "test_error", "wall_time_s", "status",
           "folder"]


def log_spaced(low: float, high: float, n: int) -> list[float]:
    if n == 1:
        return [math.sqrt(low * high)]
    step = (math.log(high) - math.log(low)) / (n - 1)
    return [math.exp(math.log(low) + i * step) for i in range(n)]


def rounded(lam: float) -> float:
    """lam as a job's override and folder name write it (6 significant digits)."""
    return float(f"{lam:.6g}")


def next_lams(trials: list[tuple[float, float]], target: float, n: int, lam_range) -> list[float]:
    """The next round's lam values from (lam, nonzero) so far: inside the bracket where the nonzero fraction crosses
    the target (the first such pair of neighbours in lam, should the results not fall monotonically), centred on the
    log-log interpolation; beyond the range tried, a decade per value outward. Rounded as folders name them, none
    tried before, none twice."""
    done = sorted(trials)
    crossing = next(((a, b) for a, b in zip(done, done[1:]) if a[1] > target >= b[1] and a[0] < b[0]), None)
    if crossing is None and all(nz > target for _, nz in done):
        top = max(lam for lam, _ in done)
        out = [top * 10.0 ** (i + 1) for i in range(n)]
    elif crossing is None:
        bottom = min(lam for lam, _ in done)
        out = [bottom / 10.0 ** (i + 1) for i in range(n)]
    else:
        (l0, n0), (l1, n1) = crossing
        if n0 > 0 and n1 > 0 and n0 != n1:
            t = (math.log(n0) - math.log(target)) / (math.log(n0) - math.log(n1))
            guess = math.exp(math.log(l0) + t * (math.log(l1) - math.log(l0)))
        else:
            guess = math.sqrt(l0 * l1)
        # n points around the guess, over half the bracket's width in log scale, inside the bracket
        width = (math.log(l1) - math.log(l0)) / 4
        low, high = max(math.log(l0), math.log(guess) - width), min(math.log(l1), math.log(guess) + width)
        out = [math.exp(v) for v in ([math.log(guess)] if n == 1 else
                                     [low + i * (high - low) / (n - 1) for i in range(n)])]
    tried, fresh = {rounded(lam) for lam, _ in done}, []
    for lam in map(rounded, out):
        if lam not in tried and lam not in fresh:
            fresh.append(lam)
    return fresh


class LamSearchSweeper(BasicSweeper):
    def __init__(self, target_nonzero: float, tolerance: float = 0.05, rounds: int = 4, per_round: int = 4,
                 lam_range: Optional[List[float]] = None, params: Optional[Any] = None) -> None:
        super().__init__(max_batch_size=None, params=params)
        if not 0 < target_nonzero < 1:
            raise ValueError(f"hydra.sweeper.target_nonzero must be a fraction in (0, 1), got {target_nonzero}")
        if tolerance <= 0 or rounds < 1 or per_round < 1:
            raise ValueError("hydra.sweeper.tolerance must be > 0, rounds and per_round at least 1")
        lam_range = list(lam_range or [1e-7, 1.0])
        if len(lam_range) != 2 or not 0 < lam_range[0] < lam_range[1]:
            raise ValueError(f"hydra.sweeper.lam_range must be [low, high] with 0 < low < high, got {lam_range}")
        self.target, self.tolerance, self.rounds, self.per_round = target_nonzero, tolerance, rounds, per_round
        self.lam_range = lam_range

    def within(self, nonzero: float) -> bool:
        return abs(nonzero - self.target) <= self.tolerance * self.target

    def sweep(self, arguments):
        params_conf = self._parse_config()
        params_conf.extend(arguments)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        parsed = parser.parse_overrides(params_conf)
        if any(o.key_or_group == "lam" for o in parsed):
            raise ValueError("hydra/sweeper=lam_search chooses lam: leave lam out of the command")
        combos = [list(c) for c in self.split_arguments(parsed, None)[0]]
        sweep_dir = Path(self.config.hydra.sweep.dir)
        record = Record(self.config, sweep_dir)
        rows, trials = [], {i: [] for i in range(len(combos))}
        searching = list(range(len(combos)))
        direct = {i: next((o.split("=", 1)[1] for o in combo if o.lstrip("+").startswith("method=")),
                          self.config.method.name) == "magnitude_pruning" for i, combo in enumerate(combos)}
        job_idx = 0
        for round_ in range(1, self.rounds + 1):
            batch, owners = [], []
            for i in searching:
                if direct[i]:
                    lams = [None]
                elif round_ == 1:
                    lams = [rounded(lam) for lam in log_spaced(*self.lam_range, self.per_round)]
                else:
                    lams = next_lams([(t[0], t[1]) for t in trials[i]], self.target, self.per_round, self.lam_range)
                for lam in lams:
                    extra = ([f"method.params.final_sparsity={1 - self.target}"] if lam is None else
                             [f"lam={lam:.6g}"])
                    batch.append(combos[i] + extra + ["objective=[nonzero_fraction,val_error]"])
                    owners.append((i, lam))
            if not batch:
                break
            results = launched(self, batch, job_idx, record)
            job_idx += len(batch)
            for (i, lam), ret in zip(owners, results):
                folder = sweep_outcomes.folder_of(ret)
                summary = self.read_summary(folder)
                returned = ret._return_value  # (nonzero, val_error) when this job completed here; why not, else
                if not isinstance(returned, tuple):  # failed, or refused (the folder holds another run): no result
                    status = "refused" if summary.get("status") == "completed" else summary.get("status")
                    summary = {"lam": lam, "status": status, "wall_time_s": summary.get("wall_time_s")}
                nonzero = summary.get("nonzero_fraction")
                rows.append({"combination": " ".join(combos[i]), "round": round_,
                             "lam": summary.get("lam", lam), "nonzero_fraction": nonzero,
                             "val_error": summary.get("val_error"), "test_error": summary.get("test_error"),
                             "wall_time_s": summary.get("wall_time_s"), "status": summary.get("status", "failed"),
                             "folder": str(folder)})
                if summary.get("status") == "completed" and nonzero is not None:
                    trials[i].append((summary["lam"], nonzero, rows[-1]))
            for i in list(searching):  # done: within tolerance, set directly, or nothing completed to go on from
                if direct[i] or not trials[i] or any(self.within(t[1]) for t in trials[i]):
                    searching.remove(i)
            if not searching:
                break
        self.write(sweep_dir, rows)
        unmet = []
        for i, combo in enumerate(combos):
            name = " ".join(combo) or "(no other setting swept)"
            runs = [r for r in rows if r["combination"] == " ".join(combo)]
            seconds = sum(r["wall_time_s"] or 0 for r in runs)
            if not trials[i]:
                unmet.append(name)
                print(f"lam_search: {name}: no run completed ({len(runs)} runs)", flush=True)
                continue
            within = [t for t in trials[i] if self.within(t[1])]  # the closest of those within tolerance, if any
            lam, nonzero, row = min(within or trials[i], key=lambda t: abs(t[1] - self.target))
            met = self.within(nonzero)
            if not met:
                unmet.append(name)
            print(f"lam_search: {name}: lam {lam:.4g}, nonzero {nonzero:.4f} (target {self.target:g}"
                  f"{'' if met else ', NOT within tolerance'}), val error {row['val_error']:.4f}; {len(runs)} runs, "
                  f"{seconds:.1f} s of training", flush=True)
        if unmet:
            sweep_outcomes.SWEEP["unmet"] = (
                f"lam_search brought {len(combos) - len(unmet)} of {len(combos)} combinations within {self.tolerance:g} "
                f"of nonzero {self.target:g}: not {'; '.join(unmet)} (see {sweep_dir.absolute()})")
        return [rows]

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
