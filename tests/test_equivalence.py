"""adrop report --equivalence (adrop.report.equivalence): the two one-sided tests, the Jaccard overlap, and the
command on a tiny sweep."""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from adrop.report import equivalence


def test_tost_is_two_one_sided_t_tests_and_the_90_percent_interval():
    rng = np.random.default_rng(0)
    d = rng.normal(0.0002, 0.001, size=10)
    out = equivalence.tost(d, margin=0.002)
    se = d.std(ddof=1) / np.sqrt(10)
    t_lower, t_upper = (d.mean() + 0.002) / se, (d.mean() - 0.002) / se
    assert out["p_lower"] == pytest.approx(stats.t.sf(t_lower, 9))
    assert out["p_upper"] == pytest.approx(stats.t.cdf(t_upper, 9))
    half90 = stats.t.ppf(0.95, 9) * se
    assert (out["ci90_low"], out["ci90_high"]) == pytest.approx((d.mean() - half90, d.mean() + half90))
    # equivalence at level 0.05 is the 90% interval inside the margin
    assert out["equivalent"] and -0.002 < out["ci90_low"] and out["ci90_high"] < 0.002
    assert out["smallest_margin"] == pytest.approx(max(abs(out["ci90_low"]), abs(out["ci90_high"])))
    assert not equivalence.tost(d, margin=out["smallest_margin"] * 0.99)["equivalent"]
    assert not equivalence.tost(d + 0.003, margin=0.002)["equivalent"]  # shifted beyond the margin


def test_jaccard_counts_the_kept_entries_of_both():
    a = np.array([[1.0, 0.0, 2.0, 0.0]])
    b = np.array([[3.0, 4.0, 0.0, 0.0]])
    out = equivalence.jaccard(a, b)
    assert out["jaccard"] == pytest.approx(1 / 3) and (out["kept_reference"], out["kept_other"]) == (2, 2)
    assert out["jaccard_if_independent"] == pytest.approx(0.25 / 0.75)
    assert equivalence.jaccard(a, a)["jaccard"] == 1.0


def test_pool_joins_earlier_seeds_and_refuses_one_seed_twice(tmp_path):
    def rows(seeds, difference):
        d = pd.DataFrame(
            {
                "group": "ad",
                "reference": "logsum",
                "seed": seeds,
                "test_error_reference": 0.02,
                "test_error_other": 0.02 + np.asarray(difference),
                "nonzero_reference": 0.02,
                "nonzero_other": 0.02,
                "difference": difference,
            }
        )
        o = pd.DataFrame(
            {
                "group": "ad",
                "reference": "logsum",
                "seed": seeds,
                "layer": "fc1.weight",
                "kept_reference": 10,
                "kept_other": 11,
                "jaccard": 0.4,
                "jaccard_if_independent": 0.01,
            }
        )
        return d, o

    earlier = tmp_path / "seeds0-1"
    earlier.mkdir()
    d, o = rows([0, 1], [0.001, -0.002])
    d.to_csv(earlier / "differences.csv", index=False)
    o.to_csv(earlier / "jaccard.csv", index=False)
    differences, overlaps = equivalence.pool(*rows([3, 2], [0.0015, 0.001]), [earlier])
    assert list(differences.seed) == [0, 1, 2, 3] and list(overlaps.seed) == [0, 1, 2, 3]
    summary = equivalence.summarise(differences, margin=0.001)
    assert summary.n[0] == 4
    assert summary.p_tost[0] == pytest.approx(equivalence.tost([0.001, -0.002, 0.001, 0.0015], 0.001)["p_tost"])
    with pytest.raises(ValueError, match="seed 1 of 'ad'"):
        equivalence.pool(*rows([1, 2], [0.0, 0.0]), [earlier])
    other_reference = rows([2], [0.0])[0].assign(reference="logsum (lam=0.01)"), rows([2], [0.0])[1]
    with pytest.raises(ValueError, match="its reference 'logsum' is not the runs' 'logsum \\(lam=0.01\\)'"):
        equivalence.pool(*other_reference, [earlier])
    with pytest.raises(ValueError, match="its group 'ad' is none of the runs'"):
        equivalence.pool(rows([2], [0.0])[0].assign(group="ad (mask=gaussian)"), rows([2], [0.0])[1], [earlier])
    table = equivalence.markdown(differences, summary, overlaps)
    assert "| ad | 4 | " in table and "| +0.04 ± 0.16 |" in table and "| 0.400 ± 0.000 |" in table
    with pytest.raises(ValueError, match="two or more seeds"):
        equivalence.summarise(rows([5], [0.0])[0], margin=0.001)


@pytest.mark.slow
def test_the_command_pairs_runs_by_seed_and_writes_its_tables(tmp_path):
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
            "method=logsum,adaptive_dropout",
            "lam=0.01",
            "seed=0,1,2",
            "hydra.sweep.dir=sweep",
        ],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ),
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    out = tmp_path / "eq"
    assert (
        equivalence.main([str(tmp_path / "sweep"), "--reference", "logsum", "--margin", "0.5", "--out", str(out)]) == 0
    )
    differences = pd.read_csv(out / "differences.csv")
    assert list(differences.seed) == [0, 1, 2] and (differences.group == "adaptive_dropout").all()
    assert np.allclose(differences.difference, differences.test_error_other - differences.test_error_reference)
    summary = pd.read_csv(out / "tost.csv")
    assert len(summary) == 1 and summary.n[0] == 3 and bool(summary.equivalent[0])  # errors differ by far less than 0.5
    overlaps = pd.read_csv(out / "jaccard.csv")
    assert set(overlaps.layer) >= {"fc1.weight"} and overlaps.jaccard.between(0, 1).all()
    assert len(overlaps) == 3 * overlaps.layer.nunique()
    assert equivalence.main([str(tmp_path / "sweep"), "--reference", "logsum", "--out", str(out)]) == 2  # taken
    assert equivalence.main([str(tmp_path / "sweep"), "--reference", "logsum", "--pool", str(out)]) == 2  # seeds twice
    assert equivalence.main([str(tmp_path / "sweep"), "--reference", "vardrop"]) == 2  # no such group
    # the same through the command: adrop report --equivalence
    from adrop.commands import report as report_command

    again = tmp_path / "eq_command"
    assert (
        report_command.main(
            [str(tmp_path / "sweep"), "--equivalence", "logsum", "--margin", "0.5", "--out", str(again)]
        )
        == 0
    )
    assert pd.read_csv(again / "tost.csv").equals(summary)
    assert report_command.main([str(tmp_path / "sweep"), "--equivalence", "vardrop", "--out", str(tmp_path / "x")]) == 2
