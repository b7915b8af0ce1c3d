"""`adrop report --matched` (adrop.report.matched): which runs make a method's row, and its statistics, from
committed CSVs."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from adrop.commands import report
from adrop.report import matched as matched_table


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a report without --out goes into outputs/reports/ here


def main(args: list) -> int:
    return report.main(["--matched", *args])


def method_folder(root: Path, method: str, full_runs: dict, seeds: dict, elsewhere=()) -> Path:
    """search.csv with two short runs and the given full runs of seed 0 (lam: (nonzero, test error)); results.csv
    with every search run and the given seeds' runs (seed: test error) at the lam of seed 0's closest run."""
    folder = root / method
    folder.mkdir()
    search, results = [], []
    for epochs, lam, nonzero, error in [(20, 1e-4, 0.3, 0.02), (20, 1e-2, 0.01, 0.05)] + [
        (200, lam, nz, err) for lam, (nz, err) in full_runs.items()
    ]:
        name = f"epochs={epochs},lam={lam},method={method},seed=0"
        search.append(
            {
                "combination": f"method={method}",
                "round": 1 if epochs == 20 else 3,
                "epochs": epochs,
                "lr": 1e-3,
                "lam": lam,
                "nonzero_fraction": nonzero,
                "val_error": error,
                "test_error": error,
                "wall_time_s": 10.0 * epochs,
                "status": "completed",
                "folder": f"/elsewhere/search/{name}",
            }
        )
        results.append(
            {
                "run": f"search/{name}",
                "status": "completed",
                "method": method,
                "lam": lam,
                "seed": 0,
                "epochs": epochs,
                "test_error": error,
                "nonzero_fraction": nonzero,
            }
        )
    lam = min(full_runs, key=lambda lam: abs(full_runs[lam][0] - 0.02), default=None)
    for seed, error in seeds.items():
        results.append(
            {
                "run": f"seeds/lam={lam},method={method},seed={seed}",
                "status": "completed",
                "method": method,
                "lam": lam,
                "seed": seed,
                "epochs": 200,
                "test_error": error,
                "nonzero_fraction": 0.0205,
            }
        )
    for seed, other_lam, error in elsewhere:  # other seeds' runs at another lam (an earlier try)
        results.append(
            {
                "run": f"seeds/lam={other_lam},method={method},seed={seed}",
                "status": "completed",
                "method": method,
                "lam": other_lam,
                "seed": seed,
                "epochs": 200,
                "test_error": error,
                "nonzero_fraction": 0.03,
            }
        )
    results.append(
        {
            "run": f"seeds/lam={lam},method={method},seed=3",
            "status": "failed",
            "method": method,
            "lam": lam,
            "seed": 3,
            "epochs": 200,
            "test_error": np.nan,
            "nonzero_fraction": np.nan,
        }
    )
    pd.DataFrame(search).to_csv(folder / "search.csv", index=False)
    pd.DataFrame(results).to_csv(folder / "results.csv", index=False)
    return folder


def test_a_methods_row_is_seed_0s_closest_full_run_and_the_other_seeds(tmp_path, capsys):
    a = method_folder(
        tmp_path,
        "logsum",
        {1e-3: (0.025, 0.030), 2e-3: (0.0199, 0.031)},
        {1: 0.029, 2: 0.033},
        elsewhere=[(1, 1e-3, 0.05), (2, 1e-3, 0.05)],
    )
    b = method_folder(tmp_path, "adaprox", {3e-3: (0.0201, 0.026)}, {1: 0.027, 2: 0.025})
    row = matched_table.row(a, target=0.02, tolerance=0.05, full=200)
    assert row["lam"] == 2e-3 and row["seeds"] == 3  # seed 3 failed: left out
    errors = [0.031, 0.029, 0.033]
    assert row["test_error"] == pytest.approx(np.mean(errors))
    assert row["test_error_std"] == pytest.approx(np.std(errors, ddof=1))
    low, high = stats.t.interval(0.95, 2, loc=np.mean(errors), scale=np.std(errors, ddof=1) / np.sqrt(3))
    assert (row["ci95_low"], row["ci95_high"]) == pytest.approx((low, high))
    assert row["within_tolerance"] == 3 and row["search_runs"] == 4 and row["search_short_runs"] == 2
    assert row["search_cost_full_runs"] == pytest.approx((20 + 20 + 200 + 200) / 200)
    out = tmp_path / "table"
    assert main([str(a), str(b), "--target", "0.02", "--out", str(out)]) == 0
    table = pd.read_csv(out / "matched.csv")
    assert list(table.method) == ["adaprox", "logsum"]  # least error first
    assert np.isnan(table.p_vs_best[0])
    assert table.p_vs_best[1] == pytest.approx(stats.ttest_ind(errors, [0.026, 0.027, 0.025], equal_var=False).pvalue)
    assert "| adaprox | 0.003 | 3 | 2.60% ± 0.10 |" in capsys.readouterr().out
    assert main([str(a), "--target", "0.02", "--out", str(out)]) == 2  # never over a file


def test_a_method_that_missed_the_target_or_failed_there_is_named_below_the_table(tmp_path, capsys):
    a = method_folder(tmp_path, "logsum", {2e-3: (0.0199, 0.031)}, {1: 0.029, 2: 0.033})
    missed = method_folder(tmp_path, "vardrop", {3e-3: (0.0097, 0.7356)}, {})
    failed = method_folder(tmp_path, "hard_concrete", {1e-4: (0.0201, 0.88)}, {})
    results = pd.read_csv(failed / "results.csv").assign(val_error=lambda t: t.test_error)
    results.to_csv(failed / "results.csv", index=False)
    out = tmp_path / "table"
    assert main([str(a), str(missed), str(failed), "--target", "0.02", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(" | ")[0] for line in printed if line.startswith("| ")][1:] == ["| logsum"]  # header first
    assert (
        "- vardrop: not reached (not within 5%); the search's closest full run kept 0.0097 at lam 0.003, "
        "test error 73.56%; search: 3, 3 (2), 1.20" in printed
    )
    assert any(line.startswith("- hard_concrete: not reached (val error 88.00% above 50%)") for line in printed)
    assert list(pd.read_csv(out / "matched.csv").reached) == [True, False, False]
    assert main([str(a), str(failed), "--target", "0.02", "--max-val-error", "0.9"]) == 0
    assert "| hard_concrete |" in capsys.readouterr().out
    assert main([str(missed), "--target", "0.02"]) == 2
    assert "no method reached the target" in capsys.readouterr().err


def test_a_folder_without_a_full_run_is_one_line(tmp_path, capsys):
    a = method_folder(tmp_path, "logsum", {}, {})
    assert main([str(a), "--target", "0.02"]) == 2
    assert "no completed full run (200 epochs)" in capsys.readouterr().err


def test_two_runs_of_one_seed_at_its_lam_are_refused_and_magnitude_pruning_needs_no_lam(tmp_path, capsys):
    a = method_folder(tmp_path, "logsum", {2e-3: (0.02, 0.03)}, {1: 0.029, 2: 0.033})
    results = pd.read_csv(a / "results.csv")
    twice = results[results.seed == 1].assign(run=lambda t: t.run.str.replace("seeds/", "seeds/again/seeds/"))
    pd.concat([results, twice]).to_csv(a / "results.csv", index=False)
    assert main([str(a), "--target", "0.02"]) == 2
    assert "two runs of seed 1" in capsys.readouterr().err
    mp = method_folder(tmp_path, "magnitude_pruning", {0.0: (0.02, 0.03)}, {1: 0.029, 2: 0.031})
    results = pd.read_csv(mp / "results.csv")
    results.loc[results.run.str.startswith("seeds/"), "lam"] = 1e-4  # whatever its lam, it is not what sets it
    results.to_csv(mp / "results.csv", index=False)
    row = matched_table.row(mp, target=0.02, tolerance=0.05, full=200)
    assert row["seeds"] == 3 and row["lam"] == "-"


def second_command(folder: Path, replayed: pd.DataFrame) -> None:
    """search.2.csv: the runs a second command replayed, and one more full run (lam 2e-3, 0.0201) it trained."""
    more = pd.DataFrame(
        [
            {
                **replayed.iloc[-1].to_dict(),
                "round": 4,
                "lam": 2e-3,
                "nonzero_fraction": 0.0201,
                "folder": "/elsewhere/search/epochs=200,lam=0.002,method=logsum,seed=0",
            }
        ]
    )
    pd.concat([replayed, more]).to_csv(folder / "search.2.csv", index=False)
    results = pd.read_csv(folder / "results.csv")
    results.loc[len(results)] = {
        **results[results.run.str.startswith("search/epochs=200")].iloc[0].to_dict(),
        "run": "search/epochs=200,lam=0.002,method=logsum,seed=0",
        "lam": 2e-3,
        "test_error": 0.028,
        "nonzero_fraction": 0.0201,
    }
    results.to_csv(folder / "results.csv", index=False)


def test_a_second_search_table_joins_the_first_a_run_once(tmp_path):
    a = method_folder(tmp_path, "logsum", {1e-3: (0.025, 0.030)}, {1: 0.029, 2: 0.033})
    second_command(a, pd.read_csv(a / "search.csv"))  # a second command replays the first's runs
    row = matched_table.row(a, target=0.02, tolerance=0.05, full=200)
    assert row["search_runs"] == 4 and row["search_rounds"] == 4  # 3 runs of the first table, 1 more
    assert row["errors"].startswith("0.0280")  # seed 0 is the second command's run, closer to the target


def test_the_cost_is_the_last_commands_search_and_what_earlier_commands_spent_beside_it(tmp_path, capsys):
    a = method_folder(tmp_path, "logsum", {1e-3: (0.025, 0.030), 3e-3: (0.012, 0.040)}, {1: 0.029, 2: 0.033})
    search = pd.read_csv(a / "search.csv")
    # a second command, its rule changed, replays the short runs and the full run at 1e-3, not the one at 3e-3
    second_command(a, search[search.lam != 3e-3])
    row = matched_table.row(a, target=0.02, tolerance=0.05, full=200)
    assert (row["search_runs"], row["search_short_runs"], row["search_cost_full_runs"]) == (4, 2, pytest.approx(2.2))
    assert (row["spent_runs"], row["spent_cost_full_runs"], row["spent_commands"]) == (5, pytest.approx(3.2), 2)
    assert row["search_wall_s"] == pytest.approx(10.0 * (20 + 20 + 200 + 200))
    assert main([str(a), "--target", "0.02"]) == 0
    assert "| 4, 4 (2), 2.20; 2 commands spent 5 runs, 3.20 |" in capsys.readouterr().out


def test_runs_reused_from_another_search_cost_nothing_and_are_counted(tmp_path, capsys):
    a = method_folder(tmp_path, "logsum", {1e-3: (0.02, 0.030)}, {1: 0.029, 2: 0.033})
    search = pd.read_csv(a / "search.csv")
    reused = search[search.epochs == 200].assign(
        round=0, lam=5e-4, nonzero_fraction=0.04, folder="/another/search/epochs=200,lam=0.0005"
    )
    pd.concat([reused, search]).to_csv(a / "search.csv", index=False)
    row = matched_table.row(a, target=0.02, tolerance=0.05, full=200)
    assert (row["search_runs"], row["search_cost_full_runs"], row["reused_runs"]) == (3, pytest.approx(1.2), 1)
    assert row["spent_runs"] == 3 and row["search_rounds"] == 3
    assert main([str(a), "--target", "0.02"]) == 0
    assert "| 3, 3 (2), 1.20; 1 reused |" in capsys.readouterr().out


def test_a_search_whose_runs_were_all_reused_costs_nothing(tmp_path, capsys):
    a = method_folder(tmp_path, "logsum", {1e-3: (0.02, 0.030)}, {1: 0.029, 2: 0.033})
    search = pd.read_csv(a / "search.csv")
    search.assign(round=0).to_csv(a / "search.2.csv", index=False)  # a second search, in another folder, reused them
    (a / "search.csv").unlink()
    (a / "search.2.csv").rename(a / "search.csv")
    row = matched_table.row(a, target=0.02, tolerance=0.05, full=200)
    assert (row["search_rounds"], row["search_runs"], row["search_cost_full_runs"], row["reused_runs"]) == (0, 0, 0, 3)


def test_matched_takes_its_target_and_its_options_only_with_it(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    assert "--matched needs --target" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        report.main([str(tmp_path), "--target", "0.02"])  # without --matched
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--target", "0.02", "--compare"])
