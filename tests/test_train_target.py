"""`adrop train target_nonzero=...`: a run ends at the fraction of weights (or multiply-adds) asked for, lam steered
by the library's controller (adrop.target); metrics.csv follows lam, summary.json records the target and the lam it
ended at; a run resumes exactly; a stack steers each configuration; what cannot be steered is refused in one line."""

import json

import numpy as np
import pandas as pd
import pytest

from helpers.engines import stack, train


@pytest.mark.parametrize("method", ["logsum", "adaprox", "adaptive_dropout"])
def test_a_run_ends_at_its_target_and_records_lams_path(synthetic, tmp_path, method):
    summary = train(synthetic(f"method={method}", "target_nonzero=0.2", "epochs=3", "lr=1e-2"), tmp_path)
    assert summary["status"] == "completed"
    assert summary["nonzero_fraction"] == pytest.approx(0.2, rel=0.05)
    assert summary["target_nonzero"] == 0.2 and summary["target_cost"] == "weights"
    metrics = pd.read_csv(tmp_path / "metrics.csv")
    assert list(metrics.columns)[-1] == "lam" and metrics["lam"].iloc[-1] == pytest.approx(summary["lam_final"])
    assert metrics["nonzero_fraction"].iloc[0] > metrics["nonzero_fraction"].iloc[-1]  # the reference falls


def test_a_steered_lam_is_the_penalty_s_weight_whatever_lam_it_starts_from(synthetic, tmp_path):
    summary = train(synthetic("method=logsum", "lam=0", "target_nonzero=0.3", "epochs=2", "lr=1e-2"), tmp_path)
    metrics = pd.read_csv(tmp_path / "metrics.csv")
    assert (metrics["penalty_term"] > 0).all() and summary["lam_final"] > 0
    assert summary["nonzero_fraction"] == pytest.approx(0.3, rel=0.05)


def test_a_target_of_multiply_adds(synthetic, tmp_path):
    summary = train(
        synthetic(
            "dataset=digits", "method=adaprox", "model=conv_small", "target_nonzero=0.3", "target_cost=macs", "epochs=2"
        ),
        tmp_path,
    )
    cost = summary["cost"]
    assert cost["sparse_macs"] / cost["dense_macs"] == pytest.approx(0.3, rel=0.05)


def test_a_steered_run_resumes_exactly(synthetic, tmp_path):
    overrides = ("method=adaptive_dropout", "target_nonzero=0.25", "epochs=3", "lr=1e-2")
    straight = train(synthetic(*overrides), tmp_path / "a")
    train(synthetic(*overrides), tmp_path / "b", stop_after=1)
    resumed = train(synthetic(*overrides), tmp_path / "b")
    a, b = np.load(tmp_path / "a" / "weights.npz"), np.load(tmp_path / "b" / "weights.npz")
    assert all(np.array_equal(a[k], b[k]) for k in a.files)
    assert resumed["lam_final"] == straight["lam_final"] and resumed["test_error"] == straight["test_error"]


def test_a_stack_steers_each_configuration(synthetic, tmp_path):
    cfgs = [synthetic("method=logsum", "target_nonzero=0.3", "epochs=2", f"seed={i}") for i in range(2)]
    summaries = stack(cfgs, [tmp_path / f"k{i}" for i in range(2)]).fit()
    for s in summaries:
        assert s["nonzero_fraction"] == pytest.approx(0.3, rel=0.05)
    assert summaries[0]["lam_final"] != summaries[1]["lam_final"]


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["method=vardrop_lr", "target_nonzero=0.1"], "follows lam only through training"),
        (["method=magnitude_pruning", "target_nonzero=0.1"], "method.params.final_sparsity=0.9"),
        (["method=logsum", "target_nonzero=0"], "target_nonzero must be a fraction in (0, 1)"),
        (["method=logsum", "target_nonzero=0.1", "target_cost=flops"], "target_cost must be one of weights, macs"),
    ],
)
def test_what_cannot_be_steered_is_refused_in_one_line(adrop, overrides, words):
    done = adrop("train", "dataset=synthetic", "model=mlp", "progress=never", *overrides)
    assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_run_without_a_target_writes_what_it_wrote(synthetic, tmp_path):
    summary = train(synthetic("method=logsum", "epochs=1"), tmp_path)
    assert "lam_final" not in summary and "target_nonzero" not in summary
    assert "lam" not in pd.read_csv(tmp_path / "metrics.csv").columns
    assert "target_nonzero" not in json.loads((tmp_path / "summary.json").read_text())["identity"]
