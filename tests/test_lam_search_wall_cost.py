"""scripts/reproduce/lam_search_wall_cost.py, run as the lam_search page runs it: a search's busiest worker's epochs
per round, scaled by the epoch ratio."""

import csv
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test starts the script
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "reproduce" / "lam_search_wall_cost.py"


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


def cost(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=120)


def row(out: subprocess.CompletedProcess) -> str:
    """The printed row of the one table given, without its table column."""
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1].rsplit("|", 2)[0] + "|"


def test_each_round_costs_its_busiest_worker(tmp_path):
    # two short rounds of 4 runs of 20 epochs on 2 workers (40 epochs each), then full rounds of 2 and of 3 runs
    table = write(tmp_path / "logsum.csv", rows([(1, 4, 20), (2, 4, 20), (3, 2, 200), (4, 3, 200)]))
    bench = write(tmp_path / "bench.csv", [{"method": "logsum", "epoch_ratio": "1.5"}])
    assert row(cost(table, "--bench", bench)) == "| logsum | 4 | 13 (8) | 680 (3.40 full runs) | 1.50 | 5.10 |"
    one = row(cost(table, "--bench", bench, "--workers", "1"))  # 80 + 80 + 400 + 600
    assert one == "| logsum | 4 | 13 (8) | 1160 (5.80 full runs) | 1.50 | 8.70 |"


def test_a_search_that_stopped_after_its_short_round_costs_a_fraction_of_a_run(tmp_path):
    table = write(tmp_path / "logsum.csv", rows([(1, 4, 20)]))  # the full length is the combination's
    bench = write(tmp_path / "bench.csv", [{"method": "logsum", "epoch_ratio": "1.0"}])
    assert row(cost(table, "--bench", bench)) == "| logsum | 1 | 4 (4) | 40 (0.20 full runs) | 1.00 | 0.20 |"


def test_a_round_of_mixed_lengths_and_a_table_of_several_methods_are_refused(tmp_path):
    bench = write(tmp_path / "bench.csv", [{"method": "logsum", "epoch_ratio": "1.0"}])
    mixed = rows([(1, 2, 20)])
    mixed[1]["epochs"] = "200"
    out = cost(write(tmp_path / "mixed.csv", mixed), "--bench", bench)
    assert out.returncode == 2 and "mixed.csv: round 1 trains runs of different lengths ([20, 200])" in out.stderr
    both = write(tmp_path / "both.csv", rows([(1, 1, 20)]) + rows([(1, 1, 20)], method="adaprox"))
    out = cost(both, "--bench", bench)
    assert out.returncode == 2 and "both.csv: a table of 2 combinations (give one per table)" in out.stderr


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
    bench = write(tmp_path / "bench.csv", [{"method": "logsum", "epoch_ratio": "1.0"}])
    # per command and round: 40, 40, 400 (3 runs on 2 workers), then the second command's 400
    expected = "| logsum | 3 | 14 (8) | 880 (4.40 full runs) | 1.00 | 4.40 |"
    assert row(cost(folder, "--bench", bench)) == expected
    write(folder / "search.3.csv", again[:8] + rows([(0, 2, 200)]))  # runs reused from elsewhere
    assert row(cost(folder, "--bench", bench)) == expected  # trained by another search: no cost here


def test_the_range_over_benchmarks_and_what_is_missing(tmp_path):
    bench = write(
        tmp_path / "bench.csv", [{"method": "logsum", "epoch_ratio": "1.4"}, {"method": "eta_trick", "epoch_ratio": ""}]
    )
    again = write(tmp_path / "again.csv", [{"method": "logsum", "epoch_ratio": "1.0"}])
    logsum = write(tmp_path / "logsum.csv", rows([(1, 4, 20), (2, 4, 20), (3, 2, 200)]))
    eta = write(tmp_path / "eta_trick.csv", rows([(1, 4, 20)], method="eta_trick"))
    out = cost(logsum, eta, "--bench", bench, "--bench", again)
    assert out.returncode == 0, out.stderr
    assert "| logsum | 3 | 10 (8) | 280 (1.40 full runs) | 1.00-1.40 | 1.40-1.96 |" in out.stdout
    assert "| eta_trick | 1 | 4 (4) | 40 (0.20 full runs) | - | - |" in out.stdout  # no ratio measured for it
    broken = write(tmp_path / "broken.csv", [{"round": "1", "epochs": "20"}])
    out = cost(broken, "--bench", bench)
    assert out.returncode == 2
    assert (
        out.stderr.strip()
        == f"lam_search_wall_cost: {broken}: not a search table (no combination, folder, status column)"
    )
    assert cost(logsum, "--bench", bench, "--workers", "0").returncode == 2
