"""Switches that follow the authors' public code where it departs from the paper (dlej/adaptive-dropout), off by
default: eta-Trick's dual and extra term, AdaProx's counting rule and its prox on validation batches."""
import math

import numpy as np
import pytest
import torch

from adrop import methods
from engines import one, stack, train


def eta_trick(**params):
    cls = methods.get("eta_trick")
    return cls(cls.Params(**params), 1, 1)


def test_authors_dual_doubles_the_second_term_of_the_logsum_dual():
    eta = torch.tensor([0.0, 0.5, 1.0, 10.0], dtype=torch.float64)
    paper, authors = eta_trick().dual(eta), eta_trick(authors_dual=True).dual(eta)
    root = torch.sqrt(4.0 + 4.0 * eta)
    second = (root - 2.0) ** 2 / torch.where(eta > 0, 4.0 * eta, torch.ones_like(eta))  # (r - eps)^2 / (4 eta)
    assert torch.allclose(paper, 2 * torch.log((root + 2) / 2) - second)
    assert torch.allclose(authors, 2 * torch.log((root + 2) / 2) - 2 * second)
    assert float(paper[2]) == pytest.approx(2 * math.log((math.sqrt(8) + 2) / 2) - (math.sqrt(8) - 2) ** 2 / 4)
    with pytest.raises(ValueError, match="needs penalty=logsum"):
        eta_trick(authors_dual=True, penalty="l1", penalty_params={})


def test_authors_extra_term_is_half_the_papers():
    assert eta_trick(authors_extra_term=True).c == 0.5 * eta_trick().c == 5e-4


def test_authors_keep_rule_counts_with_the_step_size_and_trains_the_same(synthetic, tmp_path):
    common = ("method=adaprox", "lam=0.05", "lr=1e-2", "epochs=3")
    paper = one(synthetic(*common), tmp_path / "paper")
    s_paper = paper.fit()[0]
    authors = one(synthetic(*common, "method.params.authors_keep_rule=true"), tmp_path / "authors")
    s_authors = authors.fit()[0]
    a, b = np.load(tmp_path / "paper" / "weights.npz"), np.load(tmp_path / "authors" / "weights.npz")
    trained = authors.model.layers[0].weight.detach()
    assert torch.equal(paper.model.layers[0].weight.detach(), trained)  # the rule counts; it does not train
    rho = authors.model.layers[0].last_step
    eta = authors.method.pen.eta_hat(trained)
    expected = (torch.where(torch.isinf(eta), 1.0, eta / (eta + rho * 0.05)) >= 0.05)
    assert torch.equal(authors.method.keep_mask(authors.model.layers[0], 0.05), expected)
    assert s_authors["nonzero"] >= s_paper["nonzero"]  # rho lam < lam: more weights count as kept
    assert set(a.files) == set(b.files)


def test_authors_validation_prox_proxes_once_per_validation_batch_after_each_epoch(synthetic, tmp_path):
    """The same epoch, then the prox ceil(validation examples / batch size) more times at the last step's sizes."""
    common = ("method=adaprox", "lam=0.05", "lr=1e-2", "epochs=1", "batch_size=64")
    paper = one(synthetic(*common), tmp_path / "paper")
    s_paper = paper.fit()[0]
    authors = one(synthetic(*common, "method.params.authors_validation_prox=true"), tmp_path / "authors")
    s_authors = authors.fit()[0]
    batches = math.ceil(len(paper.data.val) / 64)
    assert batches > 1
    with torch.no_grad():
        for _ in range(batches):
            for layer in paper.model.layers:
                w, rho = layer.weight, paper.optimizer.effective_step(layer.weight)
                eta = 2 * w.abs() + w * w  # LogSum(2)'s eta_hat
                w.mul_(eta / (eta + rho * 0.05))
    for replayed, trained in zip(paper.model.layers, authors.model.layers):
        assert torch.allclose(replayed.weight, trained.weight, rtol=1e-5, atol=1e-12)
    assert s_authors["nonzero"] < s_paper["nonzero"]


def test_a_stack_proxes_on_validation_batches_as_its_single_runs(synthetic, tmp_path):
    cfgs = [synthetic("method=adaprox", "lam=0.05", "lr=1e-2", "epochs=2", f"seed={seed}",
                      "method.params.authors_validation_prox=true", "method.params.authors_keep_rule=true")
            for seed in (0, 1)]
    singles = [train(c, tmp_path / f"single{i}") for i, c in enumerate(cfgs)]
    stacked = stack(cfgs, [tmp_path / f"stack{i}" for i in range(2)]).fit()
    for i in range(2):
        a, b = np.load(tmp_path / f"single{i}" / "weights.npz"), np.load(tmp_path / f"stack{i}" / "weights.npz")
        assert all(np.allclose(a[k], b[k], rtol=1e-4, atol=1e-6) for k in a.files)
        assert stacked[i]["nonzero"] == pytest.approx(singles[i]["nonzero"], abs=2)


@pytest.mark.parametrize("mask", ["bernoulli", "gaussian"])
def test_adaptive_dropout_masks_have_the_duality_moments(mask):
    """E[s] = 1 and E[s^2] = 1/alpha (so E L(s w) carries lam/2 sum w^2/eta, eq. 4); s = 0 where alpha = 0."""
    cls = methods.get("adaptive_dropout")
    method = cls(cls.Params(mask=mask), 1, 1)
    torch.manual_seed(0)
    alpha = torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0]).repeat(200_000, 1)
    s = method.mask(alpha)
    assert torch.all(s[:, 0] == 0)
    assert torch.allclose(s[:, 1:].mean(0), torch.ones(4), atol=0.02)
    assert torch.allclose((s[:, 1:] ** 2).mean(0), 1 / alpha[0, 1:], rtol=0.03)


def kept_by_the_calculus(run, penalty):
    """Per layer, the weights the paper's keep rule keeps, computed apart from the method: alpha = eta_hat(w) /
    (eta_hat(w) + lam) >= 0.05 with eta_hat from the penalty calculus (NumPy, float64) on the trained weights."""
    from adrop import penalties

    pen, lam = penalties.get(penalty), run.runs[0].lam
    out = []
    for layer in run.model.layers:
        w = layer.weight[0].detach().double().numpy()
        eta = pen.eta_hat(w)
        with np.errstate(invalid="ignore"):
            alpha = np.where(np.isinf(eta), 1.0, eta / (eta + lam))
        out.append(alpha >= 0.05)
    return out


def test_adaptive_dropout_trains_sparse_on_synthetic_data(synthetic, tmp_path):
    """Trained with lam = 0.05 it drops weights, and what weights.npz keeps is the keep rule of LogSum's eta_hat
    on the trained weights, computed apart."""
    run = one(synthetic("method=adaptive_dropout", "lam=0.05", "lr=1e-2", "epochs=4"), tmp_path)
    summary = run.fit()[0]
    assert summary["status"] == "completed" and summary["nonzero_fraction"] < 0.9
    saved = np.load(tmp_path / "weights.npz")
    for name, kept in zip(run.model.names, kept_by_the_calculus(run, "logsum")):
        np.testing.assert_array_equal(saved[f"{name}.weight"] != 0, kept)


@pytest.mark.parametrize("penalty", ["logsum", "mcp", "scad", "l1", "lpp", "elastic_net", "huber", "l0"])
def test_adaptive_dropout_trains_with_every_penalty_that_has_a_closed_form_eta_hat(penalty, synthetic, tmp_path):
    """Any penalty of the calculus whose eta_hat is a closed form becomes a dropout method by name alone (its own
    parameter defaults: nothing to unset when leaving LogSum)."""
    from adrop.methods.eta_hat_layer import _trains

    assert _trains(penalty)
    run = one(synthetic("method=adaptive_dropout", f"method.params.penalty={penalty}", "lam=0.05", "lr=1e-2",
                        "epochs=2"), tmp_path)
    assert type(run.method.pen).name == penalty
    summary = run.fit()[0]
    assert summary["status"] == "completed"
    saved = np.load(tmp_path / "weights.npz")
    assert all(np.isfinite(v).all() for v in saved.values())
    # what it keeps is that penalty's keep rule (float32 against float64: a weight at the threshold may differ)
    for name, kept in zip(run.model.names, kept_by_the_calculus(run, penalty)):
        assert np.mean((saved[f"{name}.weight"] != 0) != kept) <= 1e-3, name


@pytest.mark.parametrize("lam", [1e-3, 1.0])
def test_a_numerical_eta_hat_is_tabulated_for_training(lam):
    """The variational dropout dual has no closed-form eta_hat: a log-log table of its numerical one stands in on
    torch tensors, off the knots and beyond the grid's ends (power laws) within 1e-3 relative; eta_hat(0) = 0."""
    from adrop import penalties
    from adrop.penalties.tabulated import TabulatedEtaHat

    pen = penalties.get("variational_dropout", lam=lam)
    rng = np.random.default_rng(0)
    w = np.concatenate([-np.logspace(-10, 5, 157), [0.0], rng.uniform(-3, 3, 200)])
    got = TabulatedEtaHat(pen).eta_hat(torch.tensor(w)).numpy()
    np.testing.assert_allclose(got, pen.eta_hat(w), rtol=1e-3, atol=0)
    assert got[157] == 0.0


def test_adaptive_dropout_trains_with_the_variational_dropout_dual(synthetic, tmp_path):
    run = one(synthetic("method=adaptive_dropout", "method.params.penalty=variational_dropout",
                        "+method.params.penalty_params.lam=0.05", "lam=0.05", "lr=1e-2", "epochs=2"), tmp_path)
    assert run.method.pen.name == "variational_dropout"
    summary = run.fit()[0]
    assert summary["status"] == "completed" and summary["nonzero_fraction"] < 1


@pytest.mark.parametrize("penalty", ["lp", "hard_thresh", "standout", "bernoulli_l0"])
def test_a_penalty_without_a_usable_eta_hat_is_refused_at_start_in_one_line(penalty, synthetic, tmp_path):
    from adrop.train.settings import TrainError

    with pytest.raises(TrainError, match=f"penalty '{penalty}' has no eta_hat that training can use .*"
                                         "penalties that train: .*logsum.*variational_dropout"):
        one(synthetic("method=adaptive_dropout", f"method.params.penalty={penalty}"), tmp_path)


def test_evaluate_unmasked_records_the_errors_of_the_network_without_the_keep_rule(synthetic, tmp_path):
    from adrop.report import collect, tables
    from adrop.train import evaluate

    run = one(synthetic("method=adaprox", "lam=0.05", "lr=1e-2", "epochs=3", "evaluate_unmasked=true"),
              tmp_path / "run")
    summary = run.fit()[0]
    raw = {key: t[0] for key, t in run.model.state_dict().items()}
    masked = run.weights(0, evaluate.effective(run.model, run.method, run.lam))
    assert summary["nonzero"] < summary["total"]  # the keep rule removed weights that the unmasked network keeps
    assert not all(torch.equal(raw[f"{n}.weight"], masked[f"{n}.weight"]) for n in run.model.names)
    assert summary["test_error_unmasked"] == evaluate.error(run.single.predict, raw, run.data.test)
    assert summary["val_error_unmasked"] == evaluate.error(run.single.predict, raw, run.data.val)
    assert summary["test_error"] == evaluate.error(run.single.predict, masked, run.data.test)  # the headline: masked
    assert summary["identity"]["evaluate_unmasked"] is True
    md = tables.markdown_table(collect.results([tmp_path / "run"]))  # the report says which error is which
    header, _, row = md.splitlines()[:3]
    cells = dict(zip([c.strip() for c in header.split("|")], [c.strip() for c in row.split("|")]))
    assert cells["test error unmasked"] == f"{summary['test_error_unmasked'] * 100:.2f}%"
    assert cells["test error"] == f"{summary['test_error'] * 100:.2f}%"
    default = train(synthetic("method=eta_trick", "lam=0.05", "lr=1e-2", "epochs=1"), tmp_path / "default")
    assert "test_error_unmasked" not in default and "evaluate_unmasked" not in default["identity"]


@pytest.mark.parametrize("method", ["magnitude_pruning", "hard_concrete"])
def test_unmasked_keeps_the_masks_and_gates_a_method_trains_with(synthetic, tmp_path, method):
    run = one(synthetic(f"method={method}", "epochs=2", "evaluate_unmasked=true",
                        *(["method.params.final_sparsity=0.5", "method.params.frequency=1"]
                          if method == "magnitude_pruning" else ["method.params.init_drop=0.95"])), tmp_path / "run")
    summary = run.fit()[0]
    assert summary["nonzero"] < summary["total"]
    assert summary["test_error_unmasked"] == summary["test_error"]
    assert summary["val_error_unmasked"] == summary["val_error"]


@pytest.mark.slow
def test_recount_keep_rule_turns_the_authors_count_into_the_papers(synthetic, tmp_path):
    """scripts/recount_keep_rule.py on a run counted with the authors' rule gives the paper-rule run's own numbers
    (the same training), and on the paper-rule run its own numbers back."""
    import subprocess
    import sys
    from pathlib import Path

    from adrop.train import run_files

    common = ("method=adaprox", "lam=0.05", "lr=1e-2", "epochs=3")
    summaries = {}
    for name, extra in (("paper", ()), ("authors", ("method.params.authors_keep_rule=true",))):
        cfg = synthetic(*common, *extra)
        summaries[name] = train(cfg, tmp_path / name)
        run_files.write_config(tmp_path / name, cfg, {}, [])  # what the command writes: how a reader finds the data
    s_paper, s_authors = summaries["paper"], summaries["authors"]
    assert s_authors["nonzero"] > s_paper["nonzero"]  # else the recount below would prove nothing
    script = Path(__file__).resolve().parents[1] / "scripts" / "recount_keep_rule.py"
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "authors"), str(tmp_path / "paper")],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    rows = [line.split() for line in out[1:]]
    assert [(float(r[1]), float(r[2])) for r in rows] == [
        (round(s_authors["nonzero_fraction"], 4), round(s_authors["test_error"], 4)),
        (round(s_paper["nonzero_fraction"], 4), round(s_paper["test_error"], 4))]
    for r in rows:  # the paper's count and error, for both
        assert (float(r[3]), float(r[4])) == (round(s_paper["nonzero_fraction"], 4), round(s_paper["test_error"], 4))
