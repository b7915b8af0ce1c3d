"""`adrop report` on a tiny multirun: two methods, one epoch, small data, and one job that fails on purpose."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from adrop.commands import report as report_command


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("sweep")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "adrop",
            "train",
            "-m",
            "dataset=synthetic",
            "model=mlp",
            "epochs=2",
            "device=cpu",
            "method=dense,logsum",
            "lam=0.01,-1",
            "hydra.sweep.dir=sweep",
        ],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ),
        timeout=300,
    )
    assert run.returncode == 2 and "2 of 4 jobs refused" in run.stderr, run.stderr  # the two lam=-1 jobs
    return cwd / "sweep"


@pytest.mark.slow
def test_report_writes_csv_table_and_figures(sweep, tmp_path, capsys):
    out = tmp_path / "report"
    assert report_command.main([str(sweep), "--out", str(out), "--paper"]) == 0
    printed = capsys.readouterr().out
    for name in report_command.FILES:
        assert (out / name).exists() and (out / name).stat().st_size > 0
        assert f"wrote {out / name}" in printed
    table = pd.read_csv(out / "results.csv")
    assert len(table) == 4
    assert {
        "method",
        "lam",
        "lr",
        "seed",
        "epochs",
        "test_error",
        "val_error",
        "nonzero_fraction",
        "nonzero_fc1",
        "nonzero_fc2",
        "status",
        "overrides",
    } <= set(table.columns)
    failed = table[table.status == "failed"]
    assert len(failed) == 2 and failed.error.str.contains("lam must be >= 0").all()
    done = table[table.status == "completed"]
    assert set(done.method) == {"dense", "logsum"} and done.test_error.between(0, 1).all()
    history = pd.read_csv(out / "histories.csv")
    assert {"run", "epoch", "val_error", "nonzero_fraction", "nonzero_fc1", "nonzero_fc2"} <= set(history.columns)
    assert sorted(history.run.unique()) == sorted(done.run) and (history.groupby("run").epoch.max() == 2).all()
    last = history[history.epoch == 2].set_index("run")
    for _, row in done.iterrows():  # the history ends where the table's row does
        assert last.loc[row.run, "nonzero_fc1"] == pytest.approx(row.nonzero_fc1)
        assert last.loc[row.run, "nonzero_fraction"] == pytest.approx(row.nonzero_fraction)
    for run, rows in history.groupby("run"):  # each layer's units kept, epoch by epoch, as its layers.csv says
        layers = pd.read_csv(sweep / run / "layers.csv")
        for name in ("fc1", "fc2"):
            assert rows[f"units_{name}"].tolist() == layers[layers.layer == name].units_out_kept.tolist()
    md = (out / "results.md").read_text()
    assert md.startswith(
        "| method | lam | lr | runs | epochs | test error | nonzero | compression | kMACs/example | fc1 | fc2 |"
    )
    assert "Not completed" in md and "failed: lam must be >= 0" in md
    assert "paper test error" in md  # logsum has a paper row; dense does not ("-")


@pytest.mark.slow
def test_report_marks_an_unfinished_run_as_running(sweep, tmp_path):
    job = next(p for p in sweep.iterdir() if p.is_dir() and "method=logsum" in p.name and "lam=0.01" in p.name)
    (job / "summary.json").unlink()  # as if the job were still training: metrics.csv but no summary yet
    assert report_command.main([str(sweep), "--out", str(tmp_path / "r")]) == 0
    table = pd.read_csv(tmp_path / "r" / "results.csv")
    row = table[table.run == job.name].iloc[0]
    assert row.status == "running" and row.epochs == 2 and 0 <= row.val_error <= 1


def test_report_errors_are_one_line(tmp_path, capsys):
    assert report_command.main([str(tmp_path / "missing")]) == 2
    assert report_command.main([str(tmp_path)]) == 2  # an empty folder: no runs
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("adrop report: error:") and "no run folders" in err[1]


def test_table_aggregates_seeds_as_mean_and_spread(tmp_path):
    import json

    for seed, err, nz in [(0, 0.020, 0.05), (1, 0.030, 0.07)]:
        folder = tmp_path / f"method=logsum,seed={seed}"
        folder.mkdir()
        (folder / "summary.json").write_text(
            json.dumps(
                {
                    "status": "completed",
                    "method": "logsum",
                    "lam": 1e-3,
                    "lr": 1e-4,
                    "seed": seed,
                    "epochs": 3,
                    "test_error": err,
                    "val_error": err,
                    "nonzero_fraction": nz,
                    "layers": {"fc1": {"fraction": nz}, "fc2": {"fraction": 2 * nz}},
                }
            )
        )
    assert report_command.main([str(tmp_path), "--out", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "results.md").read_text().splitlines()
    row = md[2].split(" | ")
    assert row[3:7] == ["2", "3", "2.50% ± 0.71", "0.060 ± 0.014"]  # mean ± sample std over the two seeds


def test_runs_that_differ_in_another_override_are_rows_of_their_own(tmp_path):
    import json

    for end, seed, err in [(0.25, 0, 0.02), (0.5, 0, 0.03), (0.5, 1, 0.04)]:
        folder = tmp_path / f"end={end},seed={seed}"
        (folder / ".hydra").mkdir(parents=True)
        (folder / ".hydra" / "overrides.yaml").write_text(
            f"- method=magnitude_pruning\n- method.params.end={end}\n- seed={seed}\n- data.root=somewhere\n"
        )
        (folder / "summary.json").write_text(
            json.dumps(
                {
                    "status": "completed",
                    "method": "magnitude_pruning",
                    "lam": 0.0,
                    "lr": 1e-3,
                    "seed": seed,
                    "epochs": 3,
                    "test_error": err,
                    "val_error": err,
                    "nonzero_fraction": 0.1,
                }
            )
        )
    assert report_command.main([str(tmp_path), "--out", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "results.md").read_text().splitlines()
    assert md[0].startswith("| method | setting | lam | lr | runs |")
    rows = sorted(line.split(" | ")[1:5] for line in md[2:4])
    assert rows == [["method.params.end=0.25", "0", "0.001", "1"], ["method.params.end=0.5", "0", "0.001", "2"]]
    from adrop.report import collect

    table = pd.read_csv(tmp_path / "r" / "results.csv")
    assert set(collect.labels(table)) == {
        "magnitude_pruning (method.params.end=0.25)",
        "magnitude_pruning (method.params.end=0.5)",
    }
    assert all((tmp_path / "r" / name).stat().st_size > 0 for name in ("figure2.png", "pareto.png", "layers.png"))


@pytest.mark.slow
def test_two_sweeps_in_one_report(sweep, tmp_path):
    import shutil

    other = tmp_path / "other_sweep"
    job = next(p for p in sweep.iterdir() if p.is_dir() and "method=dense" in p.name and "lam=0.01" in p.name)
    shutil.copytree(job, other / job.name)
    assert report_command.main([str(sweep), str(other), "--out", str(tmp_path / "r")]) == 0
    table = pd.read_csv(tmp_path / "r" / "results.csv")
    # run names are relative to the folders' common parent, so each keeps the name of its sweep
    assert len(table) == 5 and table.run.str.endswith(f"other_sweep/{job.name}").sum() == 1
    assert table.run.str.contains(f"{sweep.parent.name}/{sweep.name}/").sum() == 4


@pytest.mark.slow
def test_an_earlier_reports_runs_join_new_ones_and_read_back_as_written(sweep, tmp_path):
    import shutil

    first = tmp_path / "first"
    assert report_command.main([str(sweep), "--out", str(first)]) == 0
    # the earlier report alone reads back as it was written: its rows and its histories
    assert report_command.main([str(first), "--out", str(tmp_path / "again")]) == 0
    before, after = (pd.read_csv(f / "results.csv") for f in (first, tmp_path / "again"))
    pd.testing.assert_frame_equal(before, after, check_dtype=False)
    pd.testing.assert_frame_equal(
        *(pd.read_csv(f / "histories.csv") for f in (first, tmp_path / "again")), check_dtype=False
    )
    # a histories.csv written before it held units per layer reads back with its fractions nonzero
    old = tmp_path / "old"
    shutil.copytree(first, old)
    history = pd.read_csv(old / "histories.csv")
    history.drop(columns=[c for c in history.columns if c.startswith("units_")]).to_csv(
        old / "histories.csv", index=False
    )
    assert report_command.main([str(old), "--out", str(tmp_path / "old_again")]) == 0
    pd.testing.assert_frame_equal(
        *(pd.read_csv(f / "histories.csv") for f in (old, tmp_path / "old_again")), check_dtype=False
    )
    # beside new runs (their sweep folder), each named under its folder, the new run's history from its files
    other = tmp_path / "other_sweep"
    job = next(p for p in sweep.iterdir() if p.is_dir() and "method=dense" in p.name and "lam=0.01" in p.name)
    _another_run(job, other / job.name)
    (first / "histories.csv").unlink()  # a committed report may have none: its runs join without curves
    assert report_command.main([str(first), str(other), "--out", str(tmp_path / "both")]) == 0
    table = pd.read_csv(tmp_path / "both" / "results.csv")
    assert len(table) == 5 and table.run.str.startswith("first/").sum() == 4
    assert table.run.str.fullmatch(f"other_sweep/{job.name}").sum() == 1
    history = pd.read_csv(tmp_path / "both" / "histories.csv")
    assert history.run.unique().tolist() == [f"other_sweep/{job.name}"]
    assert "| dense | 0.01 |" in (tmp_path / "both" / "results.md").read_text().replace("0.0100", "0.01")
    # a report of the earlier one (histories kept) and new runs, written over the earlier one's folder, and new runs
    # joining it again: a name under the folder keeps it, once, and so does its curve
    shutil.rmtree(first)
    assert report_command.main([str(sweep), "--out", str(first)]) == 0
    assert report_command.main([str(first), str(other), "--out", str(tmp_path / "both2")]) == 0
    shutil.rmtree(first)
    shutil.copytree(tmp_path / "both2", first)
    newer = tmp_path / "newer_sweep"
    _another_run(job, newer / job.name, later=2.0)
    assert report_command.main([str(first), str(newer), "--out", str(tmp_path / "again2")]) == 0
    table = pd.read_csv(tmp_path / "again2" / "results.csv")
    named = pd.read_csv(first / "results.csv").run  # four under first/ already, one under other_sweep/
    expected = {run if run.startswith("first/") else f"first/{run}" for run in named} | {f"newer_sweep/{job.name}"}
    assert len(table) == 6 and set(table.run) == expected
    history, curves = (pd.Series(pd.read_csv(f / "histories.csv").run.unique()) for f in (tmp_path / "again2", first))
    assert curves.str.startswith("first/").sum() == 2 and f"other_sweep/{job.name}" in set(curves)  # the completed
    assert set(history) == {run if run.startswith("first/") else f"first/{run}" for run in curves} | {
        f"newer_sweep/{job.name}"
    }


def _another_run(job, folder, later=1.0):
    """A copy of `job` as another run of its setting would write it (its own wall time: `later` seconds longer)."""
    import shutil

    shutil.copytree(job, folder)
    summary = json.loads((folder / "summary.json").read_text())
    (folder / "summary.json").write_text(json.dumps({**summary, "wall_time_s": summary["wall_time_s"] + later}))


def _figures_as_empty_files(monkeypatch):
    """The report's figures written as empty files, not drawn: for reports whose tables are what a test is about,
    of runs whose figures other tests draw (test_report_writes_csv_table_and_figures: this sweep's)."""
    from adrop.report import figures

    def empty(*args, **kwargs):
        next(a for a in args if isinstance(a, os.PathLike)).write_bytes(b"")

    for name in ("figure2", "pareto", "layers", "units"):
        monkeypatch.setattr(figures, name, empty)


@pytest.mark.slow
def test_a_run_in_an_earlier_report_and_in_its_folder_is_counted_once(sweep, tmp_path, capsys, monkeypatch):
    import shutil

    _figures_as_empty_files(monkeypatch)  # the runs counted here are the sweep's and copies of them
    first = tmp_path / "first"
    assert report_command.main([str(sweep), "--out", str(first)]) == 0
    capsys.readouterr()
    assert report_command.main([str(first), str(sweep), "--out", str(tmp_path / "both")]) == 0
    assert "4 reported run(s) read already" in capsys.readouterr().err
    table = pd.read_csv(tmp_path / "both" / "results.csv")  # the folders' rows, read fresh
    assert len(table) == 4 and table.run.str.contains(f"{sweep.parent.name}/{sweep.name}/").all()
    # two reports holding one run count it once, and a run that is not the same (another wall time) is kept
    assert report_command.main([str(first), str(tmp_path / "both"), "--out", str(tmp_path / "twice")]) == 0
    assert len(pd.read_csv(tmp_path / "twice" / "results.csv")) == 4
    job = next(p for p in sweep.iterdir() if p.is_dir() and "method=dense" in p.name and "lam=0.01" in p.name)
    _another_run(job, tmp_path / "again" / job.name)
    assert report_command.main([str(first), str(tmp_path / "again"), "--out", str(tmp_path / "three")]) == 0
    assert len(pd.read_csv(tmp_path / "three" / "results.csv")) == 5
    # runs of one stack share a wall time: two that differ in an override alone are two runs, in a report read
    # back on its own (its rows are never matched with each other), beside their folders, and one reported beside
    # the other's folder
    stack = tmp_path / "stack"
    for name, extra in (("a", ""), ("b", "- decay_start=0.5\n"), ("c", "")):  # c: a copy of a, as two folders
        shutil.copytree(job, stack / name)
        overrides = stack / name / ".hydra" / "overrides.yaml"
        overrides.write_text(overrides.read_text() + extra)
    assert report_command.main([str(stack), "--out", str(tmp_path / "stacked")]) == 0
    assert report_command.main([str(tmp_path / "stacked"), "--out", str(tmp_path / "stacked_again")]) == 0
    assert len(pd.read_csv(tmp_path / "stacked_again" / "results.csv")) == 3
    assert report_command.main([str(tmp_path / "stacked"), str(stack), "--out", str(tmp_path / "stacked_both")]) == 0
    assert len(pd.read_csv(tmp_path / "stacked_both" / "results.csv")) == 3
    assert report_command.main([str(stack / "a"), "--out", str(tmp_path / "stacked_a")]) == 0
    assert report_command.main([str(tmp_path / "stacked_a"), str(stack / "b"), "--out", str(tmp_path / "ab")]) == 0
    assert len(pd.read_csv(tmp_path / "ab" / "results.csv")) == 2
    # two failed runs alike but for their overrides (the same error, no wall time) are two runs; these reports, of
    # failed runs alone, draw their figures
    monkeypatch.undo()
    failed = [p for p in sweep.iterdir() if p.is_dir() and "lam=-1" in p.name]
    assert report_command.main([str(failed[0]), "--out", str(tmp_path / "failed_a")]) == 0
    assert report_command.main([str(tmp_path / "failed_a"), str(failed[1]), "--out", str(tmp_path / "fab")]) == 0
    assert len(pd.read_csv(tmp_path / "fab" / "results.csv")) == 2


def test_an_old_report_without_later_columns_is_read_and_a_folder_named_twice_once(tmp_path):
    from adrop.report import collect

    old = tmp_path / "old"
    old.mkdir()
    pd.DataFrame(
        {
            "run": ["logsum/seed=0", "logsum/seed=1"],
            "status": ["completed"] * 2,
            "method": ["logsum"] * 2,
            "lam": [1e-3] * 2,
            "lr": [1e-3] * 2,
            "seed": [0, 1],
            "epochs": [200] * 2,
            "test_error": [0.02, 0.022],
            "nonzero_fraction": [0.02, 0.021],
        }
    ).to_csv(old / "results.csv", index=False)
    table = collect.results([old, tmp_path / "old" / "."])
    assert len(table) == 2 and set(collect.ROW_COLUMNS) <= set(table.columns)
    assert report_command.main([str(old), "--out", str(tmp_path / "r")]) == 0
    assert "| logsum | 0.001 | 0.001 | 2 | 200 | 2.10% ± 0.14 |" in (tmp_path / "r" / "results.md").read_text()


def test_a_run_folders_row_has_the_columns_reports_are_read_back_with(sweep):
    from adrop.report import collect

    job = next(p for p in sweep.iterdir() if p.is_dir() and "method=logsum" in p.name and "lam=0.01" in p.name)
    assert list(collect.read_run(sweep, job))[: len(collect.ROW_COLUMNS)] == collect.ROW_COLUMNS


def test_a_folder_that_is_no_report_is_one_line(tmp_path, capsys):
    (tmp_path / "results.csv").write_text("a,b\n1,2\n")
    assert report_command.main([str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip().endswith("not adrop report's results.csv (no run, status or method column)")


def test_legend_labels_name_what_tells_runs_apart():
    from adrop.report import collect

    table = pd.DataFrame(
        {
            "method": ["vardrop_lr_ar", "vardrop_lr_ar", "logsum", "logsum"],
            "lam": [1.0, 1.0, 0.1, 0.1],
            "lr": [1e-4, 1e-3, 1e-4, 1e-4],
            "setting": ["experiment=x", "experiment=x", "", ""],
        }
    )
    assert collect.labels(table).tolist() == [
        "vardrop_lr_ar (lr=0.0001)",
        "vardrop_lr_ar (lr=0.001)",
        "logsum",
        "logsum",
    ]


def test_every_label_of_a_large_report_looks_different():
    """Past tab20's 20 colours a label is told apart by its marker and line style (the docs report has 27 labels)."""
    from adrop.report.figures import _styles

    styles = _styles([f"label{i}" for i in range(45)])
    looks = {(tuple(s["color"]), s["marker"], str(s["ls"])) for s in styles.values()}
    assert len(looks) == 45
    assert len({tuple(s["color"]) for s in styles.values()}) == 20


def test_log_axes_are_labelled_at_any_range():
    """figure2's axis from 0.86 to 1 was labelled only '1': a narrow range gets plain ticks, a wide one 1-2-5."""
    import matplotlib.pyplot as plt

    from adrop.report.axes import log_ticks

    for lo, hi, at_least in [(0.86, 1.0, 3), (0.97, 1.0, 3), (0.01, 1.0, 5), (1e-4, 1.0, 5)]:
        fig, ax = plt.subplots()
        ax.set(xscale="log", xlim=(lo, hi))
        log_ticks(ax.xaxis, lo, hi)
        fig.canvas.draw()
        shown = [t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi and t.get_text()]
        plt.close(fig)
        assert len(shown) >= at_least, (lo, hi, shown)


def test_paper_points_take_their_methods_colour_and_paths_group_runs():
    from adrop.report import collect, figures, paper

    table = pd.DataFrame(
        {
            "method": ["logsum", "logsum", "vardrop_lr_ar", "fixed_mask", "fixed_mask"],
            "lam": [1e-3, 2e-3, 1 / 60000, 0.0, 0.0],
            "lr": [1e-4, 1e-4, 1e-3, 1e-3, 1e-3],
            "setting": ["", "", "", "init_from=/a/run1", "init_from=/a/run2"],
        }
    )
    groups = collect.groups(table)
    assert groups.tolist() == ["logsum (lam=0.001)", "logsum (lam=0.002)", "vardrop_lr_ar", "fixed_mask", "fixed_mask"]
    assert collect.labels(table).nunique() == 5  # the settings stay apart in the table
    styles = figures._styles(groups.unique())
    table = table.assign(group=groups, method_name=table.method)
    row = paper.table().query("method == 'logsum'").iloc[0]  # lam 1e-3: the colour of our runs at the paper's lam
    assert (figures.paper_colour(table, styles, row) == styles["logsum (lam=0.001)"]["color"]).all()
    # the paper's VarDrop+LR+AR ran at lr 1e-4; ours at 1e-3 still takes its method's colour, not grey
    row = paper.table().query("method == 'vardrop_lr_ar'").iloc[0]
    assert (figures.paper_colour(table, styles, row) == styles["vardrop_lr_ar"]["color"]).all()
    assert figures.paper_colour(table, styles, paper.table().query("method == 'adaprox'").iloc[0]) == "gray"


def test_layer_figure_has_integer_epoch_ticks(tmp_path):
    import matplotlib.pyplot as plt

    from adrop.report import figures

    table = pd.DataFrame({"run": ["a"], "method": ["logsum"], "lam": [1e-3], "lr": [1e-4], "setting": [""]})
    layers = pd.DataFrame(
        {"epoch": [1, 2, 3] * 2, "layer": ["fc1"] * 3 + ["fc2"] * 3, "nonzero_fraction": [1.0, 0.5, 0.2, 1.0, 0.8, 0.6]}
    )
    seen = {}
    real_savefig = plt.Figure.savefig

    def keep(fig, *args, **kwargs):
        fig.canvas.draw()
        seen["ticks"] = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
        return real_savefig(fig, *args, **kwargs)

    plt.Figure.savefig = keep
    try:
        figures.layers(table, {"a": (None, layers)}, tmp_path / "layers.png")
    finally:
        plt.Figure.savefig = real_savefig
    assert seen["ticks"] and all(t.lstrip("−-").isdigit() for t in seen["ticks"]), seen["ticks"]


def test_cost_accounting_counts_weights_bytes_and_multiply_adds():
    from adrop import cost

    layers = [("fc1", (300, 784), 3000, 235200), ("fc2", (300 // 3, 300), 1000, 30000), ("fc3", (10, 100), 100, 1000)]
    total = cost.network_cost(layers, [1, 1, 1])
    assert total["dense_macs"] == 266_200 and total["sparse_macs"] == 4_100
    assert total["compression"] == pytest.approx(266_200 / 4_100)
    assert total["dense_bytes"] == 4 * (266_200 + 410)
    assert total["csr_bytes"] == 8 * 4_100 + 4 * (301 + 101 + 11) + 4 * 410
    conv = cost.layer_cost((20, 1, 5, 5), 50, positions=24 * 24)  # LeNet-5's conv1: 24 x 24 output positions
    assert (conv["dense_macs"], conv["sparse_macs"]) == (500 * 576, 50 * 576)
    assert cost.layer_cost((10, 100), 0)["compression"] is None


def test_report_table_shows_compression_and_multiply_adds(tmp_path):
    from adrop.report import tables

    table = pd.DataFrame(
        {
            "run": ["a", "b"],
            "method": ["logsum", "logsum"],
            "lam": [1e-3, 1e-3],
            "lr": [1e-4, 1e-4],
            "seed": [0, 1],
            "epochs": [2, 2],
            "status": ["completed"] * 2,
            "setting": ["", ""],
            "test_error": [0.02, 0.03],
            "val_error": [0.02, 0.03],
            "nonzero_fraction": [0.02, 0.02],
            "compression": [50.0, 50.0],
            "sparse_macs": [5324.0, 5324.0],
            "error": [None, None],
        }
    )
    md = tables.markdown_table(table)
    assert md.splitlines()[0].endswith("| nonzero | compression | kMACs/example |")  # |W| / |W != 0|, as x
    assert md.splitlines()[2].endswith("| 0.020 ± 0.000 | 50x | 5.3 |")


def test_report_table_compression_is_total_over_nonzero_with_a_decimal_below_ten():
    """A run that keeps 0.73 of its weights compresses them 1/0.73 = 1.37x: the table says 1.4x, not 1x."""
    from adrop import cost
    from adrop.report import tables

    kept = cost.network_cost([("fc", (100, 100), 7300, 10000)], [1])["compression"]
    assert kept == pytest.approx(1 / 0.73)
    table = pd.DataFrame(
        {
            "run": ["a"],
            "method": ["logsum"],
            "lam": [1e-3],
            "lr": [1e-4],
            "seed": [0],
            "epochs": [2],
            "status": ["completed"],
            "setting": [""],
            "test_error": [0.03],
            "val_error": [0.03],
            "nonzero_fraction": [0.73],
            "compression": [kept],
            "sparse_macs": [7300.0],
            "error": [None],
        }
    )
    assert "| 0.730 | 1.4x | 7.3 |" in tables.markdown_table(table)
    assert [tables.compression_cell(v) for v in (1.0, 9.96, 68.4, float("nan"))] == ["1.0x", "10x", "68x", "-"]


def _finished(folder, model, architecture, error):
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "overrides.yaml").write_text("- method=logsum\n- seed=0\n")
    (folder / "summary.json").write_text(
        json.dumps(
            {
                "status": "completed",
                "method": "logsum",
                "lam": 1e-3,
                "lr": 1e-4,
                "seed": 0,
                "epochs": 200,
                "test_error": error,
                "val_error": error,
                "nonzero_fraction": 0.02,
                "model": model,
                "architecture": architecture,
            }
        )
    )


def test_runs_of_two_models_are_two_rows_and_the_paper_sits_beside_lenet300_only(tmp_path):
    """A LeNet-5 run and a LeNet-300-100 run with the same method, lam, lr and overrides (their experiments chose
    the models) are not one setting, and the paper's LeNet-300-100 numbers are not set beside the LeNet-5 run."""
    from adrop.report import collect, tables

    _finished(tmp_path / "lenet5", "lenet5", "1x28x28-c20k5-p2-c50k5-p2-800-500-10", 0.01)
    _finished(tmp_path / "lenet300", "lenet_300_100", "784-300-100-10", 0.03)
    table = collect.results([tmp_path / "lenet5", tmp_path / "lenet300"])
    md = tables.markdown_table(table, with_paper=True).splitlines()
    rows = {line.split(" | ")[1]: line for line in md[2:]}  # by setting
    assert set(rows) == {"model=lenet5", "model=lenet_300_100"}
    assert "1.00%" in rows["model=lenet5"] and "2.93%" not in rows["model=lenet5"]
    assert "3.00%" in rows["model=lenet_300_100"] and "2.93%" in rows["model=lenet_300_100"]  # the paper's LogSum
    one = collect.results(tmp_path / "lenet5")  # one model: no model in the setting, nothing changes
    assert one.setting.iloc[0] == ""
    (tmp_path / "lenet5" / ".hydra" / "overrides.yaml").write_text("- method=logsum\n- seed=0\n- model=lenet5\n")
    assert collect.results(tmp_path / "lenet5").setting.iloc[0] == ""  # the model written out: the same setting


def test_published_points_follow_the_networks_in_the_report(tmp_path, monkeypatch):
    """--paper on LeNet-5 runs alone: the Sparse VD paper's LeNet-5 points in the figure, not the paper's LeNet-300
    rows; on both networks, both."""
    from adrop.report import figures, paper

    _finished(tmp_path / "runs" / "lenet5", "lenet5", "1x28x28-c20k5-p2-c50k5-p2-800-500-10", 0.01)
    seen = []
    monkeypatch.setattr(
        figures, "pareto", lambda table, path, reference=None, published=(): seen.append((reference, list(published)))
    )
    assert report_command.main([str(tmp_path / "runs"), "--out", str(tmp_path / "r1"), "--paper"]) == 0
    assert seen[-1][0] is None and seen[-1][1] == paper.LENET5_PUBLISHED
    assert ("Sparse VD (Molchanov et al. 2017)", 0.0075, 1 / 280) in seen[-1][1]
    _finished(tmp_path / "runs" / "lenet300", "lenet_300_100", "784-300-100-10", 0.03)
    assert report_command.main([str(tmp_path / "runs"), "--out", str(tmp_path / "r2"), "--paper"]) == 0
    assert seen[-1][0] is not None and seen[-1][1] == [paper.SPARSE_VD, *paper.LENET5_PUBLISHED]
    assert report_command.main([str(tmp_path / "runs"), "--out", str(tmp_path / "r3")]) == 0
    assert seen[-1] == (None, [])


def test_runs_of_another_length_are_another_row_without_the_papers_numbers(tmp_path):
    """LogSum at the paper's lam and lr trained for 200 epochs and for 1000: two rows (not two seeds of one), the
    paper's numbers beside the 200-epoch row only, and legends that say the length."""
    from adrop.report import collect, tables

    for epochs, error in [(200, 0.03), (1000, 0.02)]:
        folder = tmp_path / f"epochs={epochs}"
        folder.mkdir()
        (folder / "summary.json").write_text(
            json.dumps(
                {
                    "status": "completed",
                    "method": "logsum",
                    "lam": 1e-3,
                    "lr": 1e-4,
                    "seed": 0,
                    "epochs": epochs,
                    "epochs_planned": epochs,
                    "test_error": error,
                    "val_error": error,
                    "nonzero_fraction": 0.02,
                    "model": "lenet_300_100",
                }
            )
        )
    table = collect.results(tmp_path)
    md = tables.markdown_table(table, with_paper=True).splitlines()
    rows = {line.split(" | ")[4]: line for line in md[2:]}  # by epochs
    assert set(rows) == {"200", "1000"}
    assert "3.00%" in rows["200"] and "2.93%" in rows["200"]  # the paper's LogSum beside its own length
    assert "2.00%" in rows["1000"] and "2.93%" not in rows["1000"]
    assert sorted(collect.labels(table)) == ["logsum (epochs=1000)", "logsum (epochs=200)"]


def test_units_kept_are_averaged_over_seeds():
    from adrop.report.tables import mean_architecture

    assert mean_architecture(["784-212-64-10", "784-210-67-10"]) == "784-211-66-10"
    assert mean_architecture(["1x28x28-c6-c14-120-38-10", "1x28x28-c8-c14-100-40-10"]) == "1x28x28-c7-c14-110-39-10"
    assert mean_architecture(["784-212-64-10", "1x28x28-c6-c14-120-38-10"]) is None
    assert mean_architecture(["784-212-64-10", None]) is None


def test_units_kept_show_where_a_per_weight_or_fine_tuned_run_lost_whole_units():
    from adrop.report import tables

    row = {
        "run": "a",
        "status": "completed",
        "method": "fixed_mask",
        "lam": 0.0,
        "lr": 1e-4,
        "seed": 0,
        "epochs": 10,
        "test_error": 0.0187,
        "val_error": 0.02,
        "nonzero_fraction": 0.54,
        "setting": "",
        "model": "lenet_300_100",
        "structure": "weight",
        "kept_architecture": "457-58-75-10",
        "dense_macs": 266200.0,
        "compact_macs": 31606.0,
    }
    md = tables.markdown_table(pd.DataFrame([row]))
    assert "| units kept | compact kMACs |" in md.splitlines()[0] and "| 457-58-75-10 | 31.6 |" in md
    whole = {**row, "kept_architecture": "784-300-100-10", "compact_macs": 266200.0}  # none lost: no such columns
    assert "units kept" not in tables.markdown_table(pd.DataFrame([whole]))


def test_heads_kept_are_counted_over_every_attention_and_averaged_over_seeds(tmp_path):
    from adrop.report import collect, tables

    for seed, kept in ((0, [4, 3]), (1, [2, 4])):
        folder = tmp_path / f"seed={seed}"
        (folder / ".hydra").mkdir(parents=True)
        (folder / ".hydra" / "overrides.yaml").write_text(f"- method=logsum\n- structure=neuron\n- seed={seed}\n")
        (folder / "summary.json").write_text(
            json.dumps(
                {
                    "status": "completed",
                    "method": "logsum",
                    "lam": 1e-3,
                    "lr": 1e-3,
                    "seed": seed,
                    "epochs": 10,
                    "test_error": 0.1,
                    "val_error": 0.1,
                    "nonzero_fraction": 0.25,
                    "structure": "neuron",
                    "heads": {"encoder.layers.0.self_attn": [kept[0], 4], "encoder.layers.1.self_attn": [kept[1], 4]},
                }
            )
        )
    table = collect.results([tmp_path])
    assert sorted(table.heads_kept) == [6, 7] and set(table.heads) == {8}
    md = tables.markdown_table(table)
    assert "| heads kept |" in md.splitlines()[0] and "| 6.5 ± 0.7 of 8 |" in md
    per_weight = table.assign(structure="weight")
    assert "| 6.5 ± 0.7 of 8 |" in tables.markdown_table(per_weight)  # per weight, heads lost all the same
    assert "heads kept" not in tables.markdown_table(per_weight.assign(heads_kept=8))  # per weight, none lost
    header, _, row = tables.markdown_table(table.assign(heads_kept=[7, None], heads=[8, None])).splitlines()[:3]
    cells = dict(zip(header.split("|"), row.split("|")))
    assert cells[" heads kept "] == " - "  # a mean over fewer runs than the row's is none


RESNET18_LAYERS = [
    "conv1",
    *[
        f"layer{s}.{b}.{part}"
        for s in range(1, 5)
        for b in range(2)
        for part in ("conv1", "conv2", *(["downsample.0"] if s > 1 and b == 0 else []))
    ],
    "fc",
]


def _layer_history(names, epochs=6, seed=0, dense=("bn1",)):
    """layers.csv as a run writes it: its sparse layers' rows, each layer's fraction nonzero and units kept falling at a
    rate of its own, then rows of modules trained densely (BatchNorm)."""
    import numpy as np

    rates = np.random.default_rng(seed).uniform(0.1, 0.8, len(names))
    epoch, layer = np.meshgrid(np.arange(1, epochs + 1), np.arange(len(names)), indexing="ij")
    fraction = np.exp(-rates[layer] * epoch)
    sparse = pd.DataFrame(
        {
            "epoch": epoch.ravel(),
            "layer": np.asarray(names)[layer.ravel()],
            "trained": "method",
            "nonzero_fraction": fraction.ravel(),
            "units_out": 64,
            "units_out_kept": np.ceil(64 * np.sqrt(fraction)).ravel(),
        }
    )
    dense_rows = pd.DataFrame(
        [
            {"epoch": e, "layer": n, "trained": "dense", "nonzero_fraction": 1.0}
            for e in range(1, epochs + 1)
            for n in dense
        ]
    )
    return pd.concat([sparse, dense_rows], ignore_index=True)


def _runs(specs):
    """A report's table and histories from (run, method, model, setting, layers, seed) specs; layers None: a run
    without a layers.csv."""
    table = pd.DataFrame(
        [
            {
                "run": run,
                "method": method,
                "lam": 1e-3,
                "lr": 1e-4,
                "seed": seed,
                "epochs": 6,
                "status": "completed",
                "setting": setting,
                "model": model,
            }
            for run, method, model, setting, _, seed in specs
        ]
    )
    histories = {
        run: (None, None if names is None else _layer_history(names, seed=seed + len(run)))
        for run, _, _, _, names, seed in specs
    }
    return table, histories


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def _legends(fig):
    return [
        *fig.legends,
        *(leg for sub in fig.subfigs for leg in sub.legends),
        *(ax.get_legend() for ax in fig.axes if ax.get_legend()),
    ]


def _assert_readable(fig, panels: int):
    """As many panels as asked, each with data; no legend over ten entries, none over a panel; titles that fit
    their panel and overlap neither each other nor any panel."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = _panels(fig)
    assert len(axes) == panels
    for ax in axes:
        assert ax.get_visible() and ax.axison and (ax.lines or ax.collections), ax.get_title()
    boxes = [ax.get_window_extent(renderer) for ax in axes]
    for legend in _legends(fig):
        assert len(legend.get_texts()) <= 10
        assert not any(legend.get_window_extent(renderer).overlaps(box) for box in boxes)
    titles = [ax.title for ax in axes] + [t for t in [fig._suptitle, *(s._suptitle for s in fig.subfigs)] if t]
    extents = [t.get_window_extent(renderer) for t in titles]
    for i, (title, extent) in enumerate(zip(titles, extents)):
        assert title.get_text().strip()
        assert not any(extent.overlaps(other) for other in extents[i + 1 :]), title.get_text()
        assert not any(extent.overlaps(box) for box in boxes), title.get_text()
    for ax, extent in zip(axes, extents):
        assert extent.width <= ax.get_window_extent(renderer).width * 1.02, ax.get_title()


@pytest.mark.slow
def test_a_deep_networks_layer_figures_are_heat_maps_of_module_paths(tmp_path):
    """21 layers (a ResNet-18): a heat map per method, layers by epochs, labelled by module path, the mean of the
    method's runs, without BatchNorm's dense rows; four panels in a grid of four, no legend."""
    import matplotlib.pyplot as plt
    import numpy as np

    from adrop.report import figures, layer_figures

    methods = ["logsum", "adaprox", "magnitude_pruning", "dense"]
    table, histories = _runs(
        [
            (f"{m}/seed={s}", m, "resnet18", "experiment=cifar10_resnet18", RESNET18_LAYERS, s)
            for m in methods
            for s in range(2)
        ]
    )
    for column in ("nonzero_fraction", layer_figures.UNITS):
        fig = layer_figures.draw(table, histories, column, "label", "colour", "title")
        _assert_readable(fig, panels=4)
        assert not _legends(fig)
        first = _panels(fig)[0]
        assert [t.get_text() for t in first.get_yticklabels()] == RESNET18_LAYERS  # forward order, top to bottom
        assert first.get_title() == "adaprox, mean of 2 runs"
        runs = [histories[f"adaprox/seed={s}"][1] for s in range(2)]
        shown = first.collections[0].get_array().reshape(len(RESNET18_LAYERS), 6)
        expected = np.mean([r[r.trained == "method"][column].to_numpy().reshape(6, -1).T for r in runs], axis=0)
        if column == layer_figures.UNITS:
            expected = expected / 64
        assert np.allclose(shown, expected)
        plt.close(fig)
    figures.layers(table, histories, tmp_path / "layers.png")
    assert (tmp_path / "layers.png").stat().st_size > 0


def test_mixed_runs_draw_one_section_per_network(tmp_path):
    """Runs of three networks and several settings with long labels: no panel holds layers of two networks, a
    shallow network's lines share one legend beside its section, titles are wrapped to their panel and overlap
    nothing, and a run without layers.csv makes no panel."""
    import matplotlib.pyplot as plt

    from adrop.report import collect, layer_figures

    lenet300, lenet5 = ["fc1", "fc2", "fc3"], ["conv1", "conv2", "fc1", "fc2"]
    long = "experiment=paper_lenet5_structured structure=neuron method.params.end={} data.train_limit=5000"
    table, histories = _runs(
        [
            *[
                (f"a/{m}{s}", m, "lenet_300_100", "", lenet300, s)
                for m in ("logsum", "vardrop_lr_ar")
                for s in range(2)
            ],
            *[(f"b/{end}", "logsum", "lenet5", long.format(end), lenet5, 0) for end in (0.25, 0.5)],
            ("c/r18", "adaprox", "resnet18", "experiment=cifar10_resnet18", RESNET18_LAYERS, 0),
            ("c/failed", "adaprox", "resnet18", "lam=-1", None, 0),
        ]
    )
    table = collect.with_models_told_apart(table)
    for column in ("nonzero_fraction", layer_figures.UNITS):
        fig = layer_figures.draw(table, histories, column, "label", "colour", "title")
        _assert_readable(fig, panels=5)
        assert [s._suptitle.get_text() for s in fig.subfigs] == [
            "lenet5: 4 layers",
            "lenet_300_100: 3 layers",
            "resnet18: 21 layers",
        ]
        sections = {"lenet5": lenet5, "lenet_300_100": lenet300}
        for sub in fig.subfigs[:2]:
            layers = sections[sub._suptitle.get_text().split(":")[0]]
            assert [t.get_text() for t in sub.legends[0].get_texts()] == layers
            for ax in sub.axes:
                assert {line.get_label() for line in ax.lines} == set(layers)
                assert "model=" not in ax.get_title()
        titles = [ax.get_title() for ax in fig.subfigs[0].axes]
        assert all(len(title.splitlines()) > 1 for title in titles)  # long settings wrapped, not cut
        assert "method.params.end=0.25" in titles[0].replace("\n", " ")
        heat = fig.subfigs[2].axes[0]
        assert [t.get_text() for t in heat.get_yticklabels()] == RESNET18_LAYERS
        plt.close(fig)


def test_units_lines_are_fractions_of_each_layers_units_on_a_linear_axis():
    """units.png's lines: each layer's units kept as a fraction of its own units (0 to 1, a linear axis), so that a
    layer of 10 units reads as well as one of 300."""
    import matplotlib.pyplot as plt

    from adrop.report import layer_figures

    table, histories = _runs([("a", "logsum", "lenet_300_100", "", ["fc1", "fc2", "fc3"], 0)])
    rows = histories["a"][1]
    rows.loc[rows.layer == "fc3", "units_out"] = 10  # a small layer: its kept units are at most 10
    rows.loc[rows.layer == "fc3", "units_out_kept"] = [10, 9, 7, 5, 3, 2]
    fig = layer_figures.draw(table, histories, layer_figures.UNITS, "label", "colour", "title")
    ax = _panels(fig)[0]
    assert ax.get_yscale() == "linear" and ax.get_ylim() == pytest.approx((0, 1.05))
    lines = {line.get_label(): line.get_ydata() for line in ax.lines}
    assert list(lines["fc3"]) == pytest.approx([1.0, 0.9, 0.7, 0.5, 0.3, 0.2])
    assert all(0 <= v <= 1 for values in lines.values() for v in values)
    plt.close(fig)


def test_layer_figures_without_histories_say_so_in_place_of_empty_panels():
    from adrop.report import layer_figures

    table, histories = _runs([("a", "logsum", "lenet5", "", None, 0)])
    fig = layer_figures.draw(table, histories, "nonzero_fraction", "label", "colour", "title")
    assert not fig.axes and "no per-layer histories" in fig.texts[0].get_text()


def _run_folder(folder, method, model, layers, seed, error, setting=""):
    """A finished run's folder as adrop train writes it: summary.json (each layer's final fraction), metrics.csv,
    layers.csv and its overrides."""
    history = _layer_history(layers, seed=seed)
    last = history[(history.epoch == 6) & (history.trained == "method")]
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "overrides.yaml").write_text(
        "".join(f"- {o}\n" for o in [f"method={method}", f"seed={seed}", *setting.split()])
    )
    (folder / "summary.json").write_text(
        json.dumps(
            {
                "status": "completed",
                "method": method,
                "lam": 1e-3,
                "lr": 1e-4,
                "seed": seed,
                "epochs": 6,
                "test_error": error,
                "val_error": error,
                "nonzero_fraction": 0.1,
                "model": model,
                "wall_time_s": 1.0 + seed,
                "layers": {r.layer: {"fraction": r.nonzero_fraction} for r in last.itertuples()},
            }
        )
    )
    pd.DataFrame({"epoch": range(1, 7), "val_error": error, "nonzero_fraction": 0.1}).to_csv(
        folder / "metrics.csv", index=False
    )
    history.to_csv(folder / "layers.csv", index=False)


@pytest.mark.slow
def test_results_md_keeps_a_readers_columns_and_results_csv_every_layer(tmp_path):
    """A ResNet-18 beside LeNet-300-100 runs: results.csv has each of the 24 layers' fraction nonzero, results.md
    the columns rows are compared by and a line saying where the layers are; LeNet-300-100 alone keeps its layers."""
    runs = tmp_path / "runs"
    for seed in range(2):
        _run_folder(runs / f"r18_{seed}", "logsum", "resnet18", RESNET18_LAYERS, seed, 0.1 + seed / 100)
        _run_folder(runs / f"l300_{seed}", "logsum", "lenet_300_100", ["fc1", "fc2", "fc3"], seed, 0.02)
    _run_folder(
        runs / "l300_path",
        "fixed_mask",
        "lenet_300_100",
        ["fc1", "fc2", "fc3"],
        0,
        0.02,
        setting="init_from=/somewhere/deep/runs/l300_0",
    )
    assert report_command.main([str(runs), "--out", str(tmp_path / "r"), "--paper"]) == 0
    table = pd.read_csv(tmp_path / "r" / "results.csv")
    assert {f"nonzero_{name}" for name in {*RESNET18_LAYERS, "fc1", "fc2", "fc3"}} <= set(table.columns)
    md = (tmp_path / "r" / "results.md").read_text().splitlines()
    header = [c.strip() for c in md[0].strip("|").split("|")]
    assert header[:7] == ["method", "setting", "lam", "lr", "runs", "epochs", "test error"]
    assert len(header) <= 23 and not {*RESNET18_LAYERS, "fc1"} & set(header)
    assert "Each layer's fraction nonzero (24 layers): results.csv (nonzero_<layer>) and layers.png." in md
    rows = {line.split(" | ")[1]: line for line in md[2:5]}
    assert set(rows) == {"model=resnet18", "model=lenet_300_100", "model=lenet_300_100 init_from=.../l300_0"}
    assert "| 2 | 6 | 10.50% ± 0.71 |" in rows["model=resnet18"]
    assert all((tmp_path / "r" / name).stat().st_size > 0 for name in ("layers.png", "units.png"))
    alone = tmp_path / "lenet300"
    (runs / "l300_0").rename(alone)
    assert report_command.main([str(alone), "--out", str(tmp_path / "r300")]) == 0
    md = (tmp_path / "r300" / "results.md").read_text()
    assert md.startswith("| method | lam | lr | runs | epochs | test error | nonzero | fc1 | fc2 | fc3 |")
    assert "Each layer's" not in md


@pytest.mark.slow
def test_a_report_of_runs_some_of_which_recorded_no_units_draws_its_figures(tmp_path):
    """The ViT's matched-sparsity report: runs whose layers.csv has no units kept (a run that collapsed) get a panel
    that says so, and the report is the committed one."""
    from helpers.results import result_file

    folder = result_file("vit_tiny", "matched_0.1")
    done = subprocess.run(
        [sys.executable, "-m", "adrop", "report", str(folder), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "r" / "units.png").exists()
    assert (tmp_path / "r" / "results.md").read_text() == (folder / "results.md").read_text()


def test_runs_steered_to_a_target_show_the_lam_they_ended_at(tmp_path):
    """results.md's lam is where a steered run began; "lam at the end" the mean of the lams its runs ended at."""
    old = tmp_path / "steered"
    old.mkdir()
    pd.DataFrame(
        {
            "run": ["logsum/seed=0", "logsum/seed=1", "adaprox/seed=0"],
            "status": ["completed"] * 3,
            "method": ["logsum", "logsum", "adaprox"],
            "lam": [1e-6] * 3,
            "lam_final": [0.004, 0.006, None],
            "lr": [1e-3] * 3,
            "seed": [0, 1, 0],
            "epochs": [10] * 3,
            "test_error": [0.1, 0.12, 0.1],
            "nonzero_fraction": [0.1, 0.1, 0.3],
        }
    ).to_csv(old / "results.csv", index=False)
    assert report_command.main([str(old), "--out", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "results.md").read_text()
    assert "| method | lam | lam at the end | lr |" in md
    assert "| logsum | 1e-06 | 0.005 | 0.001 |" in md and "| adaprox | 1e-06 | - | 0.001 |" in md
