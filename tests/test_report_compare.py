"""`adrop report --compare OLD NEW` (adrop.report.compare): Welch's and the paired t-test per method and metric."""

import math

import pandas as pd
import pytest

from adrop.commands import report as report_command
from adrop.report.compare import compare

from helpers.results import result_file


def runs(method, seeds, test_errors, nonzero=0.5):
    return pd.DataFrame(
        {
            "method": method,
            "seed": seeds,
            "status": "completed",
            "test_error": test_errors,
            "val_error": test_errors,
            "nonzero_fraction": nonzero,
        }
    )


def test_welch_over_all_runs_and_the_paired_test_over_shared_seeds():
    from scipy import stats

    old = runs("logsum", [0, 1, 2, 3], [0.020, 0.022, 0.019, 0.024])
    new = runs("logsum", [1, 2, 3, 4], [0.023, 0.021, 0.026, 0.030])
    row = compare(old, new).set_index("metric").loc["test_error"]
    assert row.runs_old == row.runs_new == 4 and row.pairs == 3
    assert row.welch_p == pytest.approx(stats.ttest_ind(new.test_error, old.test_error, equal_var=False).pvalue)
    assert row.paired_p == pytest.approx(stats.ttest_rel([0.023, 0.021, 0.026], [0.022, 0.019, 0.024]).pvalue)
    flat = compare(old, new).set_index("metric").loc["nonzero_fraction"]
    assert math.isnan(flat.welch_p) and math.isnan(flat.paired_p)  # no spread on either side: no test
    assert compare(old, runs("adaprox", [0], [0.02])).empty  # no method on both sides
    same = compare(old, old).set_index("metric").loc["test_error"]
    assert same.paired_p == 1.0 and same.welch_p == pytest.approx(1.0)  # not one pair differs
    two_lams = pd.concat([old, old.assign(test_error=old.test_error + 0.1)])  # two settings per seed
    swapped = compare(two_lams, two_lams.iloc[::-1]).set_index("metric").loc["test_error"]
    assert swapped.pairs == 0 and math.isnan(swapped.paired_p)  # which run pairs with which is unknown: none


def test_the_command_writes_comparison_csv_and_never_over_one(tmp_path, capsys):
    pages = result_file("vardrop_kl")
    args = ["--compare", str(pages / "before.csv"), str(pages / "after.csv"), "--out", str(tmp_path / "cmp")]
    assert report_command.main(args) == 0
    table = pd.read_csv(tmp_path / "cmp" / "comparison.csv").set_index(["method", "metric"])
    committed = pd.read_csv(pages / "comparison.csv").set_index(["method", "metric"])
    assert table.welch_p.round(4).equals(committed.welch_p.round(4))  # what the results page quotes
    assert table.loc[("vardrop_lr_ar", "nonzero_fraction"), "pairs"] == 3
    assert "paired_p" in capsys.readouterr().out
    assert report_command.main(args) == 2  # comparison.csv is there: refused
    assert "never overwrites" in capsys.readouterr().err
    assert report_command.main(["--compare", str(pages / "before.csv")]) == 2
    said = capsys.readouterr().err.strip()
    assert said == "adrop report: error: --compare takes two sets of runs, OLD and NEW, got 1"


def test_options_of_another_report_are_refused(capsys):
    pages = result_file("vardrop_kl")
    for argv, said in [
        (["--compare", "--paper", "a", "b"], "--paper belongs to the report of runs"),
        ([str(pages), "--margin", "0.01"], "--margin and --pool belong to --equivalence"),
    ]:
        with pytest.raises(SystemExit) as stop:
            report_command.main(argv)
        assert stop.value.code == 2 and said in capsys.readouterr().err
