"""hydra/sweeper=lam_search: lam found for a target nonzero fraction per combination of the other swept settings,
every trial an ordinary run folder, search.csv, the closest run said, exit 1 where the target was not reached."""

import csv
import math

import numpy as np
import pytest

from hydra_plugins.adrop_plugins.lam_guess import FULL_OVER_SHORT, around, estimate, log_spaced, next_lams

SMALL = ("dataset=synthetic", "model=mlp", "epochs=2", "device=cpu")


def rows(folder):
    with open(folder / "search.csv") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_lam_search_brings_each_combination_within_tolerance_of_the_target(adrop, tmp_path):
    out = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_nonzero=0.5",
        *SMALL,
        "method=logsum,adaprox",
        "hydra.sweep.dir=sweep",
    )
    assert out.returncode == 0, out.stderr
    table = rows(tmp_path / "sweep")
    for method in ("logsum", "adaprox"):
        found = [r for r in table if f"method={method}" in r["combination"] and r["status"] == "completed"]
        short = [r for r in found if r["epochs"] == "1"]  # a tenth of 2 epochs is 1, at twice the lr
        full = [r for r in found if r["epochs"] == "2"]
        assert short and full and len(short) + len(full) == len(found)
        # short rounds first (two, or fewer where a short run already lands within tolerance), then full ones
        assert {r["round"] for r in short} <= {"1", "2"}
        assert max(r["round"] for r in short) < min(r["round"] for r in full)
        assert {float(r["lr"]) for r in short} == {2 * float(full[0]["lr"])}
        assert all("epochs=1,lam=" in r["folder"] and ",lr=" in r["folder"] for r in short)
        closest = min(full, key=lambda r: abs(float(r["nonzero_fraction"]) - 0.5))  # only full runs count
        assert abs(float(closest["nonzero_fraction"]) - 0.5) <= 0.05 * 0.5
        assert max(int(r["round"]) for r in found) <= 4
        said = [line for line in out.stdout.splitlines() if line.startswith("lam_search:") and method in line]
        assert len(said) == 1 and f"nonzero {float(closest['nonzero_fraction']):.4f}" in said[0]
    assert out.stdout.splitlines()[-1] == f"adrop train: {len(table)} jobs done; files in {tmp_path / 'sweep'}"


@pytest.mark.slow
def test_a_round_is_one_launch_so_the_stacked_launcher_stacks_it(adrop, tmp_path):
    import json

    out = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra/launcher=stacked",
        "hydra.launcher.max_stack=4",
        "hydra.launcher.n_jobs=1",
        "hydra.sweeper.target_nonzero=0.5",
        "hydra.sweeper.rounds=1",
        *SMALL,
        "method=logsum",
        "hydra.sweep.dir=sweep",
    )
    first = [
        json.loads((tmp_path / "sweep" / p.name / "summary.json").read_text())
        for p in (tmp_path / "sweep").iterdir()
        if (p / "summary.json").exists()
    ]
    assert len(first) == 4 and [s["stacked"] for s in first] == [4, 4, 4, 4]
    assert out.returncode == 1  # one round of a wide grid does not reach 0.5 +- 5%
    last = out.stderr.splitlines()[-1]
    assert last.startswith(
        "adrop train: error: lam_search brought 0 of 1 combinations within 0.05 of nonzero 0.5: "
        "not dataset=synthetic model=mlp epochs=2 device=cpu method=logsum (closest: lam "
    )
    # the closest run, why the search stopped, and the command that goes on from its runs
    spent = f"; its 1 round (hydra.sweeper.rounds) spent) (see {tmp_path / 'sweep'}); continue with: adrop train "
    assert spent in last
    assert last.endswith(f"method=logsum hydra.sweep.dir={tmp_path / 'sweep'} hydra.sweeper.max_runs=48")
    assert "hydra.sweeper.rounds=1" not in last.split("continue with:")[1]


@pytest.mark.slow
def test_magnitude_pruning_takes_the_target_directly(adrop, tmp_path):
    out = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_nonzero=0.3",
        *SMALL,
        "method=magnitude_pruning",
        "hydra.sweep.dir=sweep",
    )
    assert out.returncode == 0, out.stderr
    table = rows(tmp_path / "sweep")
    assert len(table) == 1 and abs(float(table[0]["nonzero_fraction"]) - 0.3) <= 0.05 * 0.3
    assert "method=magnitude_pruning: final_sparsity 0.7, nonzero 0.30" in out.stdout  # not "lam 0"
    again = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_nonzero=0.3",
        *SMALL,
        "method=magnitude_pruning",
        "hydra.sweep.dir=sweep",
    )  # the same search: finished runs, replayed
    assert again.returncode == 0 and "nothing to do" in again.stdout
    assert rows(tmp_path / "sweep") == table  # the first command's table stays as it was
    with open(tmp_path / "sweep" / "search.2.csv") as fh:
        assert list(csv.DictReader(fh)) == table  # the replay found the same


@pytest.mark.slow
def test_a_search_for_a_share_of_multiply_adds_goes_by_the_compact_networks(adrop, tmp_path):
    import json

    out = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_macs=0.8",
        "hydra.sweeper.rounds=1",
        *SMALL,
        "method=logsum",
        "structure=neuron",
        "hydra.sweep.dir=sweep",
    )
    assert out.returncode == 1  # one round of a wide grid
    table = rows(tmp_path / "sweep")
    assert len(table) == 4 and {r["epochs"] for r in table} == {"2"}  # one round: in full
    for r in table:
        cost = json.loads((tmp_path / "sweep" / r["folder"].rsplit("/", 1)[-1] / "summary.json").read_text())["cost"]
        assert float(r["macs_fraction"]) == pytest.approx(cost["compact_macs"] / cost["dense_macs"])
    closest = min(table, key=lambda r: abs(float(r["macs_fraction"]) - 0.8))  # by the multiply-adds, not nonzero
    said = [line for line in out.stdout.splitlines() if line.startswith("lam_search:")]
    assert (
        len(said) == 1
        and f"lam {float(closest['lam']):.4g}, compact multiply-adds "
        f"{float(closest['macs_fraction']):.4f} (target 0.8, NOT within tolerance)"
        in said[0]
    )
    assert "within 0.05 of compact multiply-adds 0.8: not" in out.stderr.splitlines()[-1]
    pruning = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_macs=0.5",
        *SMALL,
        "method=magnitude_pruning",
        "hydra.sweep.dir=pruning",
    )
    assert (
        pruning.returncode == 2
        and "magnitude_pruning sets its fraction of weights directly" in pruning.stderr.strip().splitlines()[-1]
    )


def test_the_answer_is_a_healthy_run_within_tolerance_where_the_closest_failed():
    from hydra_plugins.adrop_plugins.search_table import closest_full_run

    def run(folder, nonzero, val):
        return {
            "combination": "method=vardrop",
            "epochs": 200,
            "status": "completed",
            "folder": folder,
            "nonzero_fraction": nonzero,
            "val_error": val,
        }

    rows = [run("a", 0.0200, 0.80), run("b", 0.0209, 0.03), run("c", 0.0150, 0.02)]
    assert closest_full_run(rows, 0.02, 200)["folder"] == "a"  # no bound: the closest
    assert closest_full_run(rows, 0.02, 200, tolerance=0.05, max_val_error=0.5)["folder"] == "b"
    assert closest_full_run(rows[::2], 0.02, 200, tolerance=0.05, max_val_error=0.5)["folder"] == "a"  # none healthy
    assert (
        closest_full_run([run("d", 0.02, "nan"), rows[1]], 0.02, 200, tolerance=0.05, max_val_error=0.5)["folder"]
        == "b"
    )  # an error that is no number failed


def test_a_macs_search_reads_old_tables_through_their_runs_and_says_when_runs_have_no_compact_network(tmp_path):
    import json

    from hydra_plugins.adrop_plugins.search_table import read_search_tables

    earlier = tmp_path / "earlier"
    run = earlier / "run0"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(
        json.dumps({"status": "completed", "cost": {"compact_macs": 30, "dense_macs": 200}})
    )
    with open(earlier / "search.csv", "w", newline="") as fh:  # written before the macs_fraction column
        writer = csv.DictWriter(
            fh,
            fieldnames=[
                "combination",
                "round",
                "epochs",
                "lr",
                "lam",
                "nonzero_fraction",
                "val_error",
                "test_error",
                "wall_time_s",
                "status",
                "folder",
            ],
        )
        writer.writeheader()
        writer.writerow(
            {
                "combination": "method=logsum seed=0",
                "round": 1,
                "epochs": 200,
                "lr": 1e-4,
                "lam": 1e-3,
                "nonzero_fraction": 0.3,
                "val_error": 0.02,
                "status": "completed",
                "folder": str(run),
            }
        )
    s, p = lam_search().LamSearchSweeper(target_macs=0.15, reuse=[str(earlier)]), plan()
    reused = s.reused(p, read_search_tables(earlier))
    assert [t[:2] for t in p.full] == [(1e-3, 0.15)] and reused[0]["macs_fraction"] == 0.15
    p.unmeasured = True
    assert "without the compact network's multiply-adds" in s.why_no_full_run(p, [])


def test_one_target_a_fraction():
    with pytest.raises(ValueError, match="takes one target"):
        lam_search().LamSearchSweeper()
    with pytest.raises(ValueError, match="takes one target"):
        lam_search().LamSearchSweeper(target_nonzero=0.02, target_macs=0.1)
    with pytest.raises(ValueError, match="target_macs must be a fraction"):
        lam_search().LamSearchSweeper(target_macs=1.5)
    s = lam_search().LamSearchSweeper(target_macs=0.1)
    assert s.column == "macs_fraction" and s.measured({"cost": {"compact_macs": 30, "dense_macs": 300}}) == 0.1
    assert s.measured({"nonzero_fraction": 0.5}) is None and sweeper().measured({"nonzero_fraction": 0.5}) == 0.5


@pytest.mark.slow
def test_lam_in_the_command_is_refused_in_one_line(adrop):
    out = adrop("train", "-m", "hydra/sweeper=lam_search", "hydra.sweeper.target_nonzero=0.5", *SMALL, "lam=1,2")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        "adrop train: error: hydra/sweeper=lam_search chooses lam: leave lam out of the command"
    )


def test_the_next_round_looks_inside_the_bracket_around_the_interpolated_lam():
    trials = [(1e-3, 0.9), (1e-2, 0.6), (1e-1, 0.1)]  # the target 0.3 lies between 1e-2 and 1e-1
    lams = next_lams(trials, 0.3, 3, [1e-7, 1])
    assert all(1e-2 < lam < 1e-1 for lam in lams) and lams == sorted(lams) and len(lams) == 3
    # log-log interpolation: log(0.6/0.3) / log(0.6/0.1) = 0.387 of the way from 1e-2 to 1e-1, the middle value
    assert lams[1] == pytest.approx(10 ** (-2 + 0.3869), rel=1e-3)


def test_the_next_round_never_repeats_a_lam_as_folders_round_it():
    trials = [(1e-7, 0.99), (2.15443e-5, 0.9), (0.00464159, 0.32), (1.0, 0.01)]
    lams = next_lams(trials, 0.3, 4, [1e-7, 1])
    assert lams and all(float(f"{lam:.6g}") == lam for lam in lams)
    assert not {f"{lam:.6g}" for lam in lams} & {f"{lam:.6g}" for lam, _ in trials} and len(set(lams)) == len(lams)


def test_results_that_do_not_fall_with_lam_still_give_a_bracket_in_order():
    lams = next_lams([(1e-3, 0.2), (1e-2, 0.5), (1e-1, 0.1)], 0.3, 3, [1e-7, 1])
    assert lams and all(1e-2 < lam < 1e-1 for lam in lams)  # the pair where the fraction crosses 0.3 going up in lam


def test_beyond_the_range_tried_the_next_round_steps_a_decade_a_value_or_along_the_nominal_slope():
    assert next_lams([(1e-3, 1.0), (1e-2, 0.995)], 0.3, 2, [1e-7, 1]) == pytest.approx([1e-1, 1.0])
    guess = 1e-2 * 0.8 / 0.3  # the top run prunes: nonzero taken to fall as 1 / lam from there
    assert next_lams([(1e-3, 0.9), (1e-2, 0.8)], 0.3, 2, [1e-7, 1]) == pytest.approx(
        [float(f"{guess / 10**0.25:.6g}"), float(f"{guess * 10**0.25:.6g}")]
    )
    assert next_lams([(1e-3, 0.1)], 0.3, 2, [1e-7, 1]) == pytest.approx([1e-4, 1e-5])
    assert log_spaced(1e-7, 1.0, 4) == pytest.approx([1e-7, 10 ** (-14 / 3), 10 ** (-7 / 3), 1.0])


def test_the_full_rounds_interpolate_inside_a_bracket_and_extrapolate_along_a_slope():
    log_lam, slope = estimate([(1e-3, 0.4), (1e-2, 0.1)], 0.2)
    assert slope == pytest.approx(-math.log(4) / math.log(10))
    assert math.exp(log_lam) == pytest.approx(10 ** (-3 + 0.5), rel=1e-9)  # 0.2 lies halfway in log between
    # two full runs close together, both above the target: the short runs' slope (the prior) carries the guess
    log_lam, slope = estimate([(1e-3, 0.4), (1.1e-3, 0.39)], 0.2, prior_slope=-1.0)
    assert slope == -1.0 and math.exp(log_lam) == pytest.approx(1.1e-3 * 0.39 / 0.2, rel=1e-9)
    # far enough apart, their own slope; never more than two decades out
    log_lam, slope = estimate([(1e-4, 0.9), (1e-3, 0.8)], 0.2, prior_slope=-1.0)
    assert slope == pytest.approx(math.log(0.8 / 0.9) / math.log(10)) and math.exp(log_lam) == pytest.approx(1e-1)
    assert estimate([(1e-4, 1.0), (1e-3, 1.0)], 0.2) == (None, None)  # nothing falls: nothing to go by


def test_a_full_round_lays_its_windows_side_by_side_around_its_guess_and_repeats_no_lam():
    assert around(math.log(1e-3), 0.05, 2, set()) == [float(f"{1e-3 * math.exp(v):.6g}") for v in (-0.05, 0.05)]
    assert around(math.log(1e-3), 0.1, 3, {0.001}) == [float(f"{1e-3 * math.exp(v):.6g}") for v in (-0.2, 0.2)]


def test_a_bracket_whose_far_end_kept_nothing_is_searched_near_its_other_end():
    # LogSum's first short round on MNIST: 0.041 at lam 4.6e-3, a collapsed network (0) at lam 1
    lams = next_lams([(2.15443e-5, 0.99), (0.00464159, 0.041), (1.0, 0.0)], 0.02, 4, [1e-7, 1])
    guess = 0.00464159 * 0.041 / 0.02  # along the nominal slope -1 from the end that kept weights
    assert lams == pytest.approx([guess / 10**0.25 * 10 ** (i / 6) for i in range(4)], rel=1e-5)
    assert estimate([(0.00464159, 0.041), (1.0, 0.0)], 0.02, prior_slope=-2.0)[0] == pytest.approx(
        math.log(0.00464159) + math.log(0.041 / 0.02) / 2
    )


def test_the_search_leaves_lam_range_only_where_the_runs_respond():
    # eta-Trick at 10 epochs keeps every weight whatever lam: nothing beyond the range's top, so the search stops
    assert next_lams([(1e-3, 1.0), (1.0, 0.995)], 0.3, 2, [1e-7, 1]) == []
    assert next_lams([(1e-3, 1.0), (1e-1, 1.0)], 0.3, 2, [1e-7, 1]) == [1.0]
    assert min(next_lams([(1e-3, 0.9), (1.0, 0.8)], 0.3, 2, [1e-7, 1])) > 1.0  # it prunes: go on
    assert next_lams([(1e-6, 0.0)], 0.3, 2, [1e-7, 1]) == pytest.approx([1e-7])
    assert next_lams([(1e-6, 0.1)], 0.3, 2, [1e-7, 1]) == pytest.approx([1e-7, 1e-8])


# -- a round's jobs, from made-up results (no training) ---------------------------------------------------------


def lam_search():
    """The plugin module as it is now: Hydra's plugin scan re-executes plugin modules (and BasicSweeper's), so a
    class imported before a scan in this process would no longer be a subclass of the BasicSweeper its __init__
    names."""
    import importlib

    return importlib.import_module("hydra_plugins.adrop_plugins.lam_search")


def sweeper(rounds=4, target=0.02, **kw):
    return lam_search().LamSearchSweeper(target_nonzero=target, rounds=rounds, **kw)


def plan(epochs=200, short=20, **kw):
    return lam_search().Plan(["method=logsum", "seed=0"], False, epochs, 1e-4, short, **kw)


def value(overrides, key):
    return next(o.split("=", 1)[1] for o in overrides if o.startswith(key + "="))


@pytest.mark.parametrize("rounds", [2, 3, 4, 5])
def test_at_most_two_rounds_are_short_and_at_least_the_last_is_full(rounds):
    s, p = sweeper(rounds), plan()
    assert s.short_rounds == min(2, rounds - 1)
    first = s.round_jobs(p, 1)
    assert [phase for phase, _, _ in first] == ["short"] * s.per_round
    assert all(value(o, "epochs") == "20" and float(value(o, "lr")) == pytest.approx(1e-3) for _, _, o in first)
    p.short = [(1e-4, 0.1, {}), (1e-3, 0.01, {})]  # the target bracketed
    assert {phase for phase, _, _ in s.round_jobs(p, s.short_rounds + 1)} == {"full"}
    if s.short_rounds == 2:
        assert {phase for phase, _, _ in s.round_jobs(p, 2)} == {"short"}


def test_a_short_run_within_tolerance_sends_the_next_round_to_full_runs_spread_below_its_guess():
    s, p = sweeper(), plan()
    p.short = [(1e-4, 0.1, {}), (1e-3, 0.02, {})]
    jobs = s.round_jobs(p, 2)
    assert {phase for phase, _, _ in jobs} == {"full"} and len(jobs) == s.per_full_round
    guess = math.exp(estimate([(1e-4, 0.1), (1e-3, 0.02)], 0.02)[0])
    low, high = (lam for _, lam, _ in jobs)
    assert (low, high) == pytest.approx((guess * FULL_OVER_SHORT[0], guess * FULL_OVER_SHORT[1]), rel=1e-4)
    assert all(value(o, "epochs") == "200" if "epochs=" in " ".join(o) else True for _, _, o in jobs)
    p.full = [(low, 0.04, {}), (high, 0.025, {})]  # later full rounds go by the full runs' own slope
    slope = math.log(0.025 / 0.04) / math.log(high / low)
    later = [lam for _, lam, _ in s.round_jobs(p, 3)]
    assert later and min(later) > high
    assert math.sqrt(min(later) * max(later)) == pytest.approx(high * (0.02 / 0.025) ** (1 / slope), rel=1e-4)
    # an extrapolation: the two windows side by side, each lam a whole half window from the guess
    assert max(later) / min(later) == pytest.approx(math.exp(2 * math.log(1.05) / abs(slope)), rel=1e-4)


def test_the_full_rounds_reach_logsums_200_epoch_point_where_one_factor_missed():
    # LogSum, LeNet-300-100, 200 epochs, target 0.02: the short rounds of a search (20 epochs at lr 1e-3), and its
    # full runs' nonzero fraction against lam (seed 0: search.csv and the equivalence runs, log-log between them).
    # At 0.8 of the short runs' guess (one factor) the full runs kept 0.011-0.012, and the next round missed too.
    s, p = sweeper(target=0.02), plan()
    p.short = [
        (1e-07, 0.998, {}),
        (2.15443e-05, 0.831, {}),
        (0.00464159, 0.0106, {}),
        (1.0, 0.0, {}),
        (0.000555339, 0.0990, {}),
        (0.00112701, 0.0459, {}),
        (0.00228716, 0.0212, {}),
    ]
    measured = [
        (1.0e-3, 0.01941),
        (1.03117e-3, 0.01875),
        (1.13935e-3, 0.01742),
        (1.84941e-3, 0.01186),
        (2.04343e-3, 0.01089),
    ]
    x, y = np.log([lam for lam, _ in measured]), np.log([nz for _, nz in measured])

    def full_run(lam):  # inside the measured points, and beyond them along LogSum's slope there (about -0.8)
        slope = (y[-1] - y[0]) / (x[-1] - x[0])
        return float(np.exp(np.interp(math.log(lam), x, y) + slope * min(0.0, math.log(lam) - x[0])))

    for round_ in (3, 4):  # the two full rounds of the default four
        p.full += [(lam, full_run(lam), {}) for _, lam, _ in s.round_jobs(p, round_)]
        if any(s.within(nz) for _, nz, _ in p.full):
            break
    assert any(s.within(nz) for _, nz, _ in p.full)


@pytest.mark.parametrize(
    "short, measured",
    [
        # adaptive dropout (Bernoulli, additive), LeNet-300-100, 200 epochs, seed 0: its search's short runs, and its
        # full runs (the first full round's two, then the two its last round tried, side by side around its guess)
        (
            [
                (1e-07, 0.9895),
                (2.15443e-05, 0.6954),
                (0.00464159, 0.01073),
                (1.0, 0.0),
                (0.000543218, 0.1037),
                (0.00111055, 0.04545),
                (0.0022704, 0.02044),
            ],
            [(0.000930329, 0.02222), (0.000990118, 0.02142), (0.00110262, 0.01890), (0.00186066, 0.01185)],
        ),
        # AdaProx, the same setting
        (
            [
                (1e-07, 0.9881),
                (2.15443e-05, 0.6763),
                (0.00464159, 0.01019),
                (1.0, 0.0),
                (0.000510921, 0.09761),
                (0.00106608, 0.04314),
                (0.00222448, 0.02124),
            ],
            [(0.000945039, 0.02116), (0.000953387, 0.02122), (0.0010698, 0.01903), (0.00189008, 0.01176)],
        ),
    ],
)
def test_inside_a_bracket_of_full_runs_the_last_round_lands_near_its_guess(short, measured):
    # Side by side, both windows' lams landed 5-7% from the target: at the tolerance's edges, where the nonzero
    # fraction's roughness decides. Overlapping by half, log-log between the measured runs, both land within.
    s, p = sweeper(target=0.02), plan()
    p.short = [(lam, nz, {}) for lam, nz in short]
    x, y = np.log([lam for lam, _ in measured]), np.log([nz for _, nz in measured])
    p.full = [(lam, nz, {}) for lam, nz in (measured[0], measured[-1])]  # its first full round: the bracket
    assert not any(s.within(nz) for _, nz, _ in p.full)
    last = [lam for _, lam, _ in s.round_jobs(p, 4)]
    landed = np.exp(np.interp(np.log(last), x, y))
    assert len(last) == 2 and all(abs(nz / 0.02 - 1) <= 0.05 for nz in landed), landed


def test_a_guess_already_tried_falls_back_to_the_bracket_of_the_full_runs():
    # a very steep curve: the first full round's upper run kept nothing, the lower one everything
    s, p = sweeper(target=0.05), plan()
    p.short = [
        (1e-07, 1, {}),
        (2.15443e-05, 1, {}),
        (0.00464159, 0, {}),
        (1, 0, {}),
        (0.000177828, 1, {}),
        (0.000261016, 1, {}),
        (0.000383119, 1, {}),
        (0.000562341, 1, {}),
    ]
    low, high = (lam for _, lam, _ in s.round_jobs(p, 3))
    p.full = [(low, 1.0, {}), (high, 0.0, {})]
    lams = [lam for _, lam, _ in s.round_jobs(p, 4)]
    assert lams and all(low < lam < high for lam in lams)


def test_short_runs_that_all_failed_give_way_to_full_rounds_over_lam_range():
    s, p = sweeper(), plan()
    p.short_over = True  # the first short round completed nothing
    jobs = s.round_jobs(p, 2)
    assert {phase for phase, _, _ in jobs} == {"full"}
    assert [lam for _, lam, _ in jobs] == pytest.approx(log_spaced(1e-7, 1.0, s.per_full_round))


def test_a_penalty_warm_up_in_epochs_is_scaled_with_the_short_runs_epochs():
    s = sweeper()
    jobs = s.round_jobs(plan(penalty_warmup=[5, 20]), 1)
    assert all(value(o, "penalty_warmup") == "[0.5,2]" for _, _, o in jobs)
    assert all("penalty_warmup=" not in " ".join(o) for _, _, o in s.round_jobs(plan(), 1))  # none to scale


def test_a_run_erring_above_max_val_error_is_no_answer():
    assert not sweeper().failed({"val_error": 0.9})  # no bound by default
    s = sweeper(max_val_error=0.5)
    assert s.failed({"val_error": 0.83}) and not s.failed({"val_error": 0.03}) and not s.failed({"val_error": ""})
    with pytest.raises(ValueError, match="max_val_error must be > 0"):
        sweeper(max_val_error=0)


def test_a_combination_without_a_full_run_is_told_why():
    s, p = sweeper(), plan()
    p.short = [(1e-3, 0.5, {}), (1.0, 0.3, {})]
    assert "no lam in lam_range" in s.why_no_full_run(p, [])
    p.short = [(1e-6, 0.0, {}), (1e-3, 0.0, {})]
    assert "kept no weight, down to lam 1e-06" in s.why_no_full_run(p, [])
    full_rows = [{"epochs": 200, "status": "failed"}, {"epochs": 200, "status": "failed"}]
    assert s.why_no_full_run(p, full_rows).startswith("no full run completed (2 launched: failed")
    p.short = [(1e-4, 0.1, {}), (1e-3, 0.01, {})]
    assert "raise hydra.sweeper.rounds" in s.why_no_full_run(p, [{"epochs": 20, "status": "completed"}])


def test_the_searchs_answer_is_the_completed_full_run_closest_to_the_target_over_every_table(tmp_path):
    from hydra_plugins.adrop_plugins.search_table import COLUMNS, closest_full_run, read_search_tables

    def table(name, runs):  # runs: (folder, epochs, lam, nonzero, status)
        with open(tmp_path / name, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            for folder, epochs, lam, nonzero, status in runs:
                writer.writerow(
                    {
                        "combination": "method=logsum",
                        "round": 1,
                        "epochs": epochs,
                        "lam": lam,
                        "nonzero_fraction": nonzero,
                        "status": status,
                        "folder": folder,
                    }
                )

    table(
        "search.csv",
        [("a", 2, 1e-3, 0.0200, "completed"), ("b", 20, 1e-3, 0.030, "completed"), ("c", 20, 2e-3, "", "failed")],
    )
    table("search.2.csv", [("b", 20, 1e-3, 0.030, "completed"), ("c", 20, 2e-3, 0.0197, "completed")])
    table("search.10.csv", [("d", 20, 3e-3, 0.0202, "interrupted"), ("c", 20, 2e-3, 0.0199, "completed")])
    runs = read_search_tables(tmp_path)
    assert sorted(r["folder"] for r in runs) == ["a", "b", "c", "d"]  # a run once, as the latest table has it
    best = closest_full_run(runs, 0.02, 20)  # the short run "a" and the unfinished "d" do not count
    assert (best["folder"], float(best["nonzero_fraction"])) == ("c", 0.0199)
    assert closest_full_run(runs, 0.02, 200) is None
    with pytest.raises(ValueError, match="several combinations"):
        closest_full_run(runs + [{**runs[0], "combination": "method=adaprox"}], 0.02, 20)


def test_a_search_reuses_an_earlier_searchs_runs_of_its_combination_and_goes_straight_to_full_rounds(tmp_path):
    from hydra_plugins.adrop_plugins.search_table import COLUMNS

    earlier = tmp_path / "earlier"
    earlier.mkdir()
    combo = "method=logsum seed=0 data.root=/elsewhere progress=never"  # where the data lives is no difference
    runs = [
        (combo, 20, 1e-3, 1e-3, 0.1),
        (combo, 20, 1e-3, 1e-2, 0.01),
        (combo, 200, 1e-4, 1e-3, 0.03),
        (combo, 200, 1e-4, 2e-3, 0.022),
        (combo, 200, 1e-4, 3e-3, "", "failed"),
        ("method=logsum seed=1", 200, 1e-4, 4e-3, 0.02),  # another combination
        (combo, 100, 1e-4, 5e-3, 0.02),
    ]  # another length
    with open(earlier / "search.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        for i, (combination, epochs, lr, lam, nonzero, *status) in enumerate(runs):
            writer.writerow(
                {
                    "combination": combination,
                    "round": 1,
                    "epochs": epochs,
                    "lr": lr,
                    "lam": lam,
                    "nonzero_fraction": nonzero,
                    "val_error": 0.03,
                    "test_error": 0.03,
                    "wall_time_s": 9.0,
                    "status": (status or ["completed"])[0],
                    "folder": f"{earlier}/run{i}",
                }
            )
    from hydra_plugins.adrop_plugins.search_table import read_search_tables

    s, p = sweeper(target=0.02, reuse=[str(earlier)]), plan()
    tables = read_search_tables(earlier)
    rows = s.reused(p, tables)
    assert [(r["round"], r["epochs"], r["lam"]) for r in rows] == [
        (0, 20, 1e-3),
        (0, 20, 1e-2),
        (0, 200, 1e-3),
        (0, 200, 2e-3),
    ]
    assert [t[:2] for t in p.short] == [(1e-3, 0.1), (1e-2, 0.01)] and [t[:2] for t in p.full] == [
        (1e-3, 0.03),
        (2e-3, 0.022),
    ]
    jobs = s.round_jobs(p, 1)  # full runs known: no short round, on along the full runs' own slope
    slope = math.log(0.022 / 0.03) / math.log(2)
    assert {phase for phase, _, _ in jobs} == {"full"} and len(jobs) == 2
    lams = [lam for _, lam, _ in jobs]
    assert math.sqrt(lams[0] * lams[1]) == pytest.approx(2e-3 * (0.02 / 0.022) ** (1 / slope), rel=1e-4)
    assert s.reused(plan(), tables) and not sweeper(reuse=[str(earlier)]).reused(
        lam_search().Plan(["method=logsum", "seed=0"], True, 200, 1e-4, 20), tables
    )  # nothing reused where set
    with pytest.raises(ValueError, match="holds no lam_search table"):
        sweeper(reuse=[str(tmp_path)])


@pytest.mark.slow
def test_a_search_for_another_target_reuses_the_first_searchs_runs(adrop, tmp_path):
    first = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_nonzero=0.5",
        *SMALL,
        "method=logsum",
        "hydra.sweep.dir=first",
    )
    assert first.returncode == 0, first.stderr
    again = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_nonzero=0.5",
        *SMALL,
        "method=logsum",
        "hydra.sweeper.reuse=[first]",
        "hydra.sweep.dir=again",
    )
    assert again.returncode == 0, again.stderr  # the first search's answer is within tolerance: nothing trained
    table = rows(tmp_path / "again")
    assert (
        table
        and {r["round"] for r in table} == {"0"}
        and all(r["folder"].startswith(str(tmp_path / "first")) for r in table)
    )
    said = [line for line in again.stdout.splitlines() if line.startswith("lam_search:")]
    assert len(said) == 1 and f"0 runs (0 short), 0.0 s of training; {len(table)} runs reused" in said[0]
    strict = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_nonzero=0.5",
        *SMALL,
        "method=logsum",
        "hydra.sweeper.reuse=[first]",
        "hydra.sweeper.max_val_error=1e-6",
        "hydra.sweep.dir=strict",
    )  # the same answer, but its error is above the bound: no answer
    assert strict.returncode == 1 and {r["round"] for r in rows(tmp_path / "strict")} == {"0"}  # nothing trained
    assert "above max_val_error 1e-06: NOT an answer" in strict.stdout
    assert strict.stderr.splitlines()[-1].startswith("adrop train: error: lam_search brought 0 of 1 combinations")
    assert "above max_val_error 1e-06 at lam " in strict.stderr.splitlines()[-1]
    own = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_nonzero=0.5",
        *SMALL,
        "method=logsum",
        "hydra.sweeper.reuse=[first]",
        "hydra.sweep.dir=first",
    )
    assert own.returncode == 2 and "reuse names this search's own folder" in own.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "first" / "multirun.2.yaml").exists()  # refused before it recorded anything
    other = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_nonzero=0.4",
        *SMALL,
        "method=logsum",
        "hydra.sweeper.reuse=[first]",
        "hydra.sweep.dir=other",
    )
    assert other.returncode == 0, other.stderr
    table = rows(tmp_path / "other")
    own = [r for r in table if r["round"] != "0"]
    assert own and all(r["epochs"] == "2" for r in own)  # straight to full rounds
    assert max(int(r["round"]) for r in own) <= 3
    # beyond lam 5 this network collapses (constant logits): trials that keep nothing, not failures of the command
    collapsed = [r for r in own if r["status"] == "collapsed"]
    assert collapsed and all(float(r["lam"]) > 5 for r in collapsed) and "error" not in other.stderr
    assert "the network collapsed: layer" in other.stdout and "(lam_search takes it as keeping nothing)" in other.stdout


@pytest.mark.slow
def test_a_search_whose_full_runs_all_collapsed_says_so_in_its_last_line(adrop, tmp_path):
    out = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_nonzero=0.4",
        "hydra.sweeper.lam_range=[6,50]",
        "hydra.sweeper.max_runs=4",
        "hydra.sweeper.short_epochs=1",
        *SMALL,
        "method=logsum",
        "hydra.sweep.dir=sweep",
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert {r["status"] for r in rows(tmp_path / "sweep")} == {"collapsed"}
    assert (
        out.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "(every full run's network collapsed (4, the lowest lam 6): the target lies below; search again with a "
            f"lower lam_range (see search.csv)) (see {tmp_path / 'sweep'})"
        )
    )


@pytest.mark.slow
def test_then_seeds_trains_each_answer_again_with_its_lam(adrop, tmp_path):
    out = adrop(
        "train",
        "-m",
        "hydra/sweeper=lam_search",
        "hydra.sweeper.target_nonzero=0.5",
        "hydra.sweeper.then_seeds=[1,2]",
        *SMALL,
        "method=logsum,magnitude_pruning",
        "hydra.sweep.dir=s",
    )
    assert out.returncode == 0, out.stderr
    import json

    from hydra_plugins.adrop_plugins.search_table import closest_full_run

    table = rows(tmp_path / "s")
    answers = {
        m: closest_full_run([r for r in table if r["combination"].endswith(f"method={m}")], 0.5, 2)
        for m in ("logsum", "magnitude_pruning")
    }

    for method in ("logsum", "magnitude_pruning"):
        seeds = sorted(tmp_path.glob(f"s/*method={method}*seed=*"))
        assert [p.name[-6:] for p in seeds] == ["seed=1", "seed=2"]
        for folder in seeds:
            summary = json.loads((folder / "summary.json").read_text())
            assert summary["status"] == "completed"
            assert summary["lam"] == pytest.approx(float(answers[method]["lam"]), rel=1e-5)
