"""scripts/studies/lam_search_wall_cost.py: a search's busiest worker's epochs per round, scaled by the epoch ratio."""

import csv
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "studies" / "lam_search_wall_cost.py"
spec = importlib.util.spec_from_file_location("lam_search_wall_cost", SCRIPT)
wall = importlib.util.module_from_spec(spec)
spec.loader.exec_module(wall)


def rows(rounds: list[tuple[int, int, int]], method="logsum", status="completed") -> list[dict]:
    """(round, runs, epochs) -> search.csv rows of a 200-epoch search, each run its own folder."""
    out = []
    for number, runs, epochs in rounds:
        for i in range(runs):
            out.append(
                {
                    "combination": f"seed=0 method={method} epochs=200",
                    "round": str(number),
                    "epochs": str(epochs),
                    "lr": "0.001",
                    "lam": str(10.0 ** -(i + 1)),
                    "nonzero_fraction": "0.1",
                    "val_error": "0.02",
                    "test_error": "0.02",
                    "wall_time_s": "1.0",
                    "status": status,
                    "folder": f"/sweep/{method}/r{number}/run{i}",
                }
            )
    return out


def write(path: Path, table: list[dict]) -> Path:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    return path


def test_each_round_costs_its_busiest_worker():
    # two short rounds of 4 runs of 20 epochs on 2 workers (40 epochs each), then full rounds of 2 and of 3 runs
    table = rows([(1, 4, 20), (2, 4, 20), (3, 2, 200), (4, 3, 200)])
    assert wall.busiest_worker_epochs(table, workers=2) == {(0, 1): 40, (0, 2): 40, (0, 3): 200, (0, 4): 400}
    cost = wall.wall_cost(table, epoch_ratio=1.5, workers=2)
    assert cost["method"] == "logsum" and cost["rounds"] == 4 and cost["runs"] == 13 and cost["short_runs"] == 8
    assert cost["busiest_epochs"] == 680 and cost["single_runs"] == pytest.approx(680 / 200 * 1.5, abs=0.005)
    assert wall.busiest_worker_epochs(table, workers=1)[(0, 1)] == 80


def test_a_search_that_stopped_after_its_short_round_costs_a_fraction_of_a_run():
    cost = wall.wall_cost(rows([(1, 4, 20)]), epoch_ratio=1.0, workers=2)  # the full length is the combination's
    assert cost["full_epochs"] == 200 and cost["short_runs"] == 4 and cost["single_runs"] == 0.2


def test_a_round_of_mixed_lengths_and_a_table_of_several_methods_are_refused():
    table = rows([(1, 2, 20)])
    table[1]["epochs"] = "200"
    with pytest.raises(ValueError, match="different lengths"):
        wall.busiest_worker_epochs(table, workers=2)
    with pytest.raises(ValueError, match="2 combinations"):
        wall.combination_of(rows([(1, 1, 20)]) + rows([(1, 1, 20)], method="adaprox"))


def test_a_folders_tables_count_each_run_once_in_the_command_that_trained_it(tmp_path):
    folder = tmp_path / "logsum"
    folder.mkdir()
    first = rows([(1, 4, 20), (2, 4, 20), (3, 3, 200)])
    write(folder / "search.csv", first)
    # a later command replays rounds 1-3 and trains 3 new runs in its round 3; a refused row trained nothing
    again = (
        first
        + [{**r, "folder": r["folder"] + "-new"} for r in first[8:]]
        + [{**first[0], "folder": "/elsewhere", "status": "refused"}]
    )
    write(folder / "search.2.csv", again)
    table = wall.read_table(folder)
    assert len(table) == 14
    write(folder / "search.3.csv", again[:8] + rows([(0, 2, 200)], method="logsum"))  # runs reused from elsewhere
    assert len(wall.read_table(folder)) == 14  # trained by another search: no cost here
    assert wall.busiest_worker_epochs(table, workers=2) == {(0, 1): 40, (0, 2): 40, (0, 3): 400, (1, 3): 400}


def test_cli_prints_the_range_over_benchmarks_and_says_what_is_missing(tmp_path, capsys):
    bench = write(
        tmp_path / "bench.csv", [{"method": "logsum", "epoch_ratio": "1.4"}, {"method": "eta_trick", "epoch_ratio": ""}]
    )
    again = write(tmp_path / "again.csv", [{"method": "logsum", "epoch_ratio": "1.0"}])
    logsum = write(tmp_path / "logsum.csv", rows([(1, 4, 20), (2, 4, 20), (3, 2, 200)]))
    eta = write(tmp_path / "eta_trick.csv", rows([(1, 4, 20)], method="eta_trick"))
    assert wall.main([str(logsum), str(eta), "--bench", str(bench), "--bench", str(again)]) == 0
    printed = capsys.readouterr().out
    assert "| logsum | 3 | 10 (8) | 280 (1.40 full runs) | 1.00-1.40 | 1.40-1.96 |" in printed
    assert "| eta_trick | 1 | 4 (4) | 40 (0.20 full runs) | - | - |" in printed  # no ratio measured for it
    broken = write(tmp_path / "broken.csv", [{"round": "1", "epochs": "20"}])
    assert wall.main([str(broken), "--bench", str(bench)]) == 2
    assert "broken.csv: not a search table (no combination, folder, status column)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        wall.main([str(logsum), "--bench", str(bench), "--workers", "0"])
