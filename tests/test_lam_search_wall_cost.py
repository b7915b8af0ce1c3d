"""scripts/lam_search_wall_cost.py: a search's busiest worker's epochs per round, scaled by the epoch ratio."""
import csv
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "lam_search_wall_cost.py"
spec = importlib.util.spec_from_file_location("lam_search_wall_cost", SCRIPT)
wall = importlib.util.module_from_spec(spec)
spec.loader.exec_module(wall)

COLUMNS = ["combination", "round", "epochs", "lr", "lam", "nonzero_fraction", "val_error", "test_error", "wall_time_s",
           "status", "folder"]


def rows(rounds: list[tuple[int, int, int]], method="logsum") -> list[dict]:
    """(round, runs, epochs) -> search.csv rows, each run its own folder."""
    out = []
    for number, runs, epochs in rounds:
        for i in range(runs):
            out.append({"combination": f"seed=0 method={method} epochs=200", "round": str(number),
                        "epochs": str(epochs), "lr": "0.001", "lam": str(10.0 ** -(i + 1)), "nonzero_fraction": "0.1",
                        "val_error": "0.02", "test_error": "0.02", "wall_time_s": "1.0", "status": "completed",
                        "folder": f"/sweep/r{number}/run{i}"})
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
    assert wall.worker_path(table, workers=2) == {1: 40, 2: 40, 3: 200, 4: 400}
    cost = wall.wall_cost(table, epoch_ratio=1.5, workers=2)
    assert cost["method"] == "logsum" and cost["rounds"] == 4 and cost["runs"] == 13 and cost["short_runs"] == 8
    assert cost["path_epochs"] == 680 and cost["single_runs"] == pytest.approx(680 / 200 * 1.5, abs=0.005)
    assert wall.worker_path(table, workers=1)[1] == 80


def test_a_round_of_mixed_lengths_and_a_table_of_several_methods_are_refused():
    table = rows([(1, 2, 20)])
    table[1]["epochs"] = "200"
    with pytest.raises(ValueError, match="different lengths"):
        wall.worker_path(table, workers=2)
    with pytest.raises(ValueError, match="2 combinations"):
        wall.method_of(rows([(1, 1, 20)]) + rows([(1, 1, 20)], method="adaprox"))


def test_cli_reads_folders_and_files_and_names_a_missing_ratio(tmp_path, capsys):
    bench = write(tmp_path / "bench.csv", [{"method": "logsum", "epoch_ratio": "1.4"},
                                           {"method": "eta_trick", "epoch_ratio": ""}])
    again = write(tmp_path / "again.csv", [{"method": "logsum", "epoch_ratio": "1.0"}])
    folder = tmp_path / "logsum"
    folder.mkdir()
    first = rows([(1, 4, 20), (2, 4, 20), (3, 2, 200)])
    write(folder / "search.csv", first)
    write(folder / "search.2.csv", first[8:])  # a later command replays round 3: counted once
    assert wall.main([str(folder), "--bench", str(bench)]) == 0
    printed = capsys.readouterr().out
    assert "| logsum | 3 | 10 (8) | 280 (1.40 full runs) | 1.40 | 1.96 |" in printed
    assert wall.main([str(folder), "--bench", str(bench), "--bench", str(again)]) == 0
    assert "| logsum | 3 | 10 (8) | 280 (1.40 full runs) | 1.00-1.40 | 1.40-1.96 |" in capsys.readouterr().out
    other = write(tmp_path / "eta_trick.csv", rows([(1, 4, 20)], method="eta_trick"))
    assert wall.main([str(other), "--bench", str(bench)]) == 2
    assert "no benchmark table has an epoch_ratio for eta_trick" in capsys.readouterr().err
