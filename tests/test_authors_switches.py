"""Switches that follow the authors' public code where it departs from the paper (dlej/adaptive-dropout), off by
default: eta-Trick's dual and extra term, AdaProx's counting rule and its prox on validation batches."""

import math

import numpy as np
import pytest
import torch

from adrop import methods

from helpers.engines import assert_stack_near_its_singles, one, train


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
    kept = authors.model.layers[0].authors_alpha >= 0.05
    assert torch.equal(authors.method.keep_mask(authors.model.layers[0], 0.05), kept)
    assert s_authors["nonzero"] >= s_paper["nonzero"]  # rho lam < lam: more weights count as kept
    assert set(a.files) == set(b.files)


def adaprox_layer(**params):
    from adrop.methods.base import SparseLinear

    cls = methods.get("adaprox")
    method = cls(cls.Params(**params), 1, 1)
    layer = SparseLinear(3, 2, method)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[0.02, -0.05, 0.3], [0.0, 0.011, -1.0]]))
    return method, layer


def test_authors_keep_rule_counts_with_alpha_from_the_weights_before_the_prox():
    """dlej/adaptive-dropout's AdaptiveProxNet: update_alphas_Adam (alpha from the stepped weights, with rho lam), then
    prox (w <- alpha w); its count reads that stored alpha. Alpha from the weights after the prox counts fewer."""
    method, layer = adaprox_layer(authors_keep_rule=True)
    lam, rho = 0.5, torch.full((2, 3), 0.4)
    before = layer.weight.detach().clone()
    method.after_step([layer], 1, lam, lambda p: rho)
    eta = before.abs() * (before.abs() + 2.0)  # the authors' LogSumPenalty(epsilon=2).eta_hat
    alpha = eta / (eta + rho * lam)
    assert torch.allclose(layer.weight, alpha * before)  # their prox: w <- alpha w
    assert torch.allclose(method.keep_probability(layer, lam), alpha)
    after = layer.weight.abs() * (layer.weight.abs() + 2.0)
    recounted = after / (after + rho * lam)  # the same rule on the weights after the prox
    assert torch.equal(alpha >= 0.05, torch.tensor([[True, True, True], [False, True, True]]))
    assert torch.equal(recounted >= 0.05, torch.tensor([[False, True, True], [False, False, True]]))
    assert torch.equal(method.keep_mask(layer, lam), alpha >= 0.05)


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
    cfgs = [
        synthetic(
            "method=adaprox",
            "lam=0.05",
            "lr=1e-2",
            "epochs=2",
            f"seed={seed}",
            "method.params.authors_validation_prox=true",
            "method.params.authors_keep_rule=true",
        )
        for seed in (0, 1)
    ]
    assert_stack_near_its_singles(cfgs, tmp_path)


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


def before_the_last_prox(run) -> dict:
    """The weights each layer had before its last prox (after the last gradient step), filled in as `run` trains:
    where Algorithm 1 takes alpha^T from."""
    seen, prox = {}, run.method.prox

    def recorded(layer, lam, rho, *eta):
        seen[id(layer)] = layer.weight.detach().clone()
        prox(layer, lam, rho, *eta)

    run.method.prox = recorded
    return seen


def kept_by_the_calculus(run, penalty, weights=None):
    """Per layer, the weights the paper's keep rule keeps, computed apart from the method: alpha = eta_hat(w) /
    (eta_hat(w) + lam) >= 0.05 with eta_hat from the penalty calculus (NumPy, float64) on the trained weights, or
    on `weights` (by id of the layer) where given."""
    from adrop import penalties

    pen, lam = penalties.get(penalty), run.runs[0].lam
    out = []
    for layer in run.model.layers:
        w = (weights[id(layer)] if weights else layer.weight)[0].detach().double().numpy()
        eta = pen.eta_hat(w)
        with np.errstate(invalid="ignore"):
            alpha = np.where(np.isinf(eta), 1.0, eta / (eta + lam))
        out.append(alpha >= 0.05)
    return out


def test_adaptive_dropout_trains_sparse_on_synthetic_data(synthetic, tmp_path):
    """Trained with lam = 0.05 it drops weights, and what weights.npz keeps is the keep rule of LogSum's eta_hat,
    computed apart, on the weights before the last prox (Algorithm 1's alpha^T); on those after it, it differs."""
    run = one(synthetic("method=adaptive_dropout", "lam=0.05", "lr=1e-2", "epochs=4"), tmp_path)
    stepped = before_the_last_prox(run)
    summary = run.fit()[0]
    assert summary["status"] == "completed" and summary["nonzero_fraction"] < 0.9
    saved = np.load(tmp_path / "weights.npz")
    for name, kept in zip(run.model.names, kept_by_the_calculus(run, "logsum", stepped)):
        np.testing.assert_array_equal(saved[f"{name}.weight"] != 0, kept)
    after = kept_by_the_calculus(run, "logsum")
    assert any(((saved[f"{n}.weight"] != 0) != k).any() for n, k in zip(run.model.names, after))


def test_adaptive_dropout_draws_each_mask_from_alpha_before_the_last_prox():
    """Algorithm 1: step t + 1's mask s ~ Mask(alpha^t), alpha^t from eta_hat of the weights after step t's gradient
    step and before its prox; alpha^0 from the initial weights. A uniform draw held between the two alphas tells which
    one the mask used."""
    from adrop.methods import base
    from adrop.methods.base import SparseLinear

    cls = methods.get("adaptive_dropout")
    method = cls(cls.Params(), 1, 1)
    layer = SparseLinear(2, 1, method)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[0.02, 0.5]]))
    lam, rho = 0.5, torch.full((1, 2), 0.4)
    logsum = lambda w: w.abs() * (w.abs() + 2.0)  # noqa: E731
    before = layer.weight.detach().clone()
    method.before_step(0, lam)
    assert torch.allclose(method.mask_probability(layer), logsum(before) / (logsum(before) + lam))  # alpha^0
    method.after_step([layer], 1, lam, lambda p: rho)
    alpha = logsum(before) / (logsum(before) + lam)  # from the stepped weights (no gradient step here: w^0)
    after = logsum(layer.weight.detach()) / (logsum(layer.weight.detach()) + lam)
    assert torch.allclose(layer.weight, before * logsum(before) / (logsum(before) + rho * lam))  # the prox
    assert torch.allclose(layer.alpha, alpha) and after[0, 0] < alpha[0, 0]
    u = float((alpha[0, 0] + after[0, 0]) / 2)

    class Held(base.Noise):
        def uniform_like(self, t):
            return torch.full_like(t, u)

    saved, base.noise = base.noise, Held()
    try:
        import adrop.methods.adaptive_dropout as module

        module.noise, kept = base.noise, None
        method.before_step(1, lam)
        kept = method.mask(method.mask_probability(layer))
    finally:
        base.noise = module.noise = saved
    assert kept[0, 0] > 0  # u < alpha^1 (before the prox): kept; alpha after the prox would have dropped it


@pytest.mark.parametrize("penalty", ["logsum", "mcp", "scad", "l1", "lpp", "elastic_net", "huber", "l0"])
def test_adaptive_dropout_trains_with_every_penalty_that_has_a_closed_form_eta_hat(penalty, synthetic, tmp_path):
    """Any penalty of the calculus whose eta_hat is a closed form becomes a dropout method by name alone (its own
    parameter defaults: nothing to unset when leaving LogSum)."""
    from adrop.methods.eta_hat_layer import _trains

    assert _trains(penalty)
    run = one(
        synthetic("method=adaptive_dropout", f"method.params.penalty={penalty}", "lam=0.03", "lr=1e-2", "epochs=2"),
        tmp_path,
    )
    assert type(run.method.pen).name == penalty
    stepped = before_the_last_prox(run)
    summary = run.fit()[0]
    assert summary["status"] == "completed"
    saved = np.load(tmp_path / "weights.npz")
    assert all(np.isfinite(v).all() for v in saved.values())
    # what it keeps is that penalty's keep rule (float32 against float64: a weight at the threshold may differ)
    for name, kept in zip(run.model.names, kept_by_the_calculus(run, penalty, stepped)):
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
    run = one(
        synthetic(
            "method=adaptive_dropout",
            "method.params.penalty=variational_dropout",
            "+method.params.penalty_params.lam=0.02",
            "lam=0.02",
            "lr=1e-2",
            "epochs=2",
        ),
        tmp_path,
    )
    assert run.method.pen.name == "variational_dropout"
    summary = run.fit()[0]
    assert summary["status"] == "completed" and summary["nonzero_fraction"] < 1


@pytest.mark.parametrize("penalty", ["lp", "hard_thresh", "standout", "bernoulli_l0"])
def test_a_penalty_without_a_usable_eta_hat_is_refused_at_start_in_one_line(penalty, synthetic, tmp_path):
    from adrop.train.errors import TrainError

    with pytest.raises(
        TrainError,
        match=f"penalty '{penalty}' has no eta_hat that training can use .*"
        "penalties that train: .*logsum.*variational_dropout",
    ):
        one(synthetic("method=adaptive_dropout", f"method.params.penalty={penalty}"), tmp_path)


def test_evaluate_unmasked_records_the_errors_of_the_network_without_the_keep_rule(synthetic, tmp_path):
    from adrop.report import collect, tables
    from adrop.train.loop import evaluate

    run = one(
        synthetic("method=adaprox", "lam=0.05", "lr=1e-2", "epochs=3", "evaluate_unmasked=true"), tmp_path / "run"
    )
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
    run = one(
        synthetic(
            f"method={method}",
            "epochs=2",
            "evaluate_unmasked=true",
            *(
                ["method.params.final_sparsity=0.5", "method.params.frequency=1"]
                if method == "magnitude_pruning"
                else ["method.params.init_drop=0.92", "lr=3e-2"]
            ),
        ),
        tmp_path / "run",
    )
    summary = run.fit()[0]
    assert summary["nonzero"] < summary["total"]
    assert summary["test_error_unmasked"] == summary["test_error"]
    assert summary["val_error_unmasked"] == summary["val_error"]


@pytest.mark.slow
def test_recount_keep_rule_turns_the_authors_count_into_the_papers(synthetic, tmp_path):
    """scripts/tools/recount_keep_rule.py on a run counted with the authors' rule gives the paper-rule run's own numbers
    (the same training), and on the paper-rule run its own numbers back."""
    import subprocess
    import sys
    from pathlib import Path

    from adrop.train.run_folder import run_files

    common = ("method=adaprox", "lam=0.05", "lr=1e-2", "epochs=3")
    summaries = {}
    for name, extra in (("paper", ()), ("authors", ("method.params.authors_keep_rule=true",))):
        cfg = synthetic(*common, *extra)
        summaries[name] = train(cfg, tmp_path / name)
        run_files.write_config(tmp_path / name, cfg, {}, [])  # what the command writes: how a reader finds the data
    s_paper, s_authors = summaries["paper"], summaries["authors"]
    assert s_authors["nonzero"] > s_paper["nonzero"]  # else the recount below would prove nothing
    script = Path(__file__).resolve().parents[1] / "scripts" / "tools" / "recount_keep_rule.py"
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "authors"), str(tmp_path / "paper")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    rows = [line.split() for line in out[1:]]
    assert [(float(r[1]), float(r[2])) for r in rows] == [
        (round(s_authors["nonzero_fraction"], 4), round(s_authors["test_error"], 4)),
        (round(s_paper["nonzero_fraction"], 4), round(s_paper["test_error"], 4)),
    ]
    for r in rows:  # the paper's count and error, for both
        assert (float(r[3]), float(r[4])) == (round(s_paper["nonzero_fraction"], 4), round(s_paper["test_error"], 4))


def method_and_layer(name, weight, **params):
    from adrop.methods.base import SparseLinear

    cls = methods.get(name)
    method = cls(cls.Params(**params), 1, 1)
    layer = SparseLinear(weight.shape[1], weight.shape[0], method)
    with torch.no_grad():
        layer.weight.copy_(weight)
    return method, layer


def test_authors_alpha_clamp_is_adaptive_tikhonov_nets_penalty():
    """dlej/adaptive-dropout's AdaptiveTikhonovNet: alpha = eta / (eta + lam) clamped to >= 1e-3, eta_lamda =
    alpha / (1 - alpha), penalty sum w^2 / eta_lamda / 2 (lam times adrop's R); alpha starts at 1: no first penalty."""
    w = torch.tensor([[1e-5, 0.003, 0.2, -1.5]], dtype=torch.float64)
    lam = 0.1
    method, layer = method_and_layer("adatikhonov", w.float(), authors_alpha_clamp=True)
    layer.double()
    with torch.no_grad():
        layer.weight.copy_(w)
    eta = w.abs() * (w.abs() + 2.0)
    alpha = torch.clamp(eta / (eta + lam), min=1e-3)
    authors = torch.sum(w**2 / (alpha / (1 - alpha))) / 2
    method.before_step(0, lam)
    assert float(method.layer_penalty(layer, lam).detach()) == 0.0
    method.before_step(1, lam)
    penalty = lam * method.layer_penalty(layer, lam)
    assert float(penalty.detach()) == pytest.approx(float(authors), rel=1e-9)
    penalty.backward()
    assert float(layer.weight.grad[0, 0]) == pytest.approx(float(2 * w[0, 0] * (1 - alpha[0, 0]) / alpha[0, 0] / 2))
    paper, player = method_and_layer("adatikhonov", w.float())
    player.double()
    with torch.no_grad():
        player.weight.copy_(w)
    (lam * paper.layer_penalty(player, lam)).backward()
    assert float(player.weight.grad[0, 0]) == pytest.approx(float(lam * w[0, 0] / eta[0, 0]))  # lam / 2, about
    assert float(player.weight.grad[0, 0]) > 4 * float(layer.weight.grad[0, 0])  # alpha 2e-4 clamped to 1e-3
    with pytest.raises(ValueError, match="needs structure=weight"):
        methods.get("adatikhonov")(methods.get("adatikhonov").Params(authors_alpha_clamp=True), 1, 1, "neuron")


def test_authors_clamp_of_vardrop_lr_clamps_log_sigma_in_the_noise_only():
    """dlej/adaptive-dropout's LinearSVDO: log_sigma = clamp(log_alpha / 2 + log(1e-16 + |W|), -10, 10) in the
    noise's variance; the KL and the keep rule see the raw log alpha, which keeps its gradient beyond 10."""
    from adrop.penalties.variational_dropout import kl_approx_log

    w = torch.tensor([[0.5, 1e-3, 2.0]])
    method, layer = method_and_layer("vardrop_lr", w, authors_clamp=True)
    with torch.no_grad():
        layer.log_alpha_param.copy_(torch.tensor([[12.0, -3.0, 25.0]]))
    log_sigma = torch.clamp(layer.log_alpha_param / 2 + torch.log(1e-16 + w.abs()), -10, 10)
    assert torch.allclose(method.variance_weight(layer), torch.exp(2 * log_sigma))
    assert torch.equal(method.log_alpha(layer), layer.log_alpha_param)
    penalty = method.layer_penalty(layer, 1.0)
    k1, k2, k3 = 0.63576, 1.8732, 1.48695  # the authors' kl_reg
    la = layer.log_alpha_param.detach()
    authors_kl = -torch.sum(k1 * torch.sigmoid(k2 + k3 * la) - 0.5 * torch.log1p(torch.exp(-la)))
    # adrop's KL is 0 at alpha -> inf
    assert float(penalty.detach()) == pytest.approx(float(authors_kl) + 3 * k1, rel=1e-5)
    penalty.backward()
    assert layer.log_alpha_param.grad[0, 0] != 0  # beyond 10, still moving
    paper, player = method_and_layer("vardrop_lr", w)
    with torch.no_grad():
        player.log_alpha_param.copy_(layer.log_alpha_param.detach())
    paper.layer_penalty(player, 1.0).backward()
    assert player.log_alpha_param.grad[0, 0] == 0  # clamped: no gradient there
    assert not torch.allclose(paper.variance_weight(player), method.variance_weight(layer))
    assert float(kl_approx_log(-torch.tensor(10.0))) != float(kl_approx_log(-torch.tensor(12.0)))


def test_authors_clamp_of_plain_vardrop_clamps_nothing():
    method, layer = method_and_layer("vardrop", torch.ones(1, 2), authors_clamp=True)
    with torch.no_grad():
        layer.log_alpha_param.copy_(torch.tensor([[-14.0, 11.0]]))
    assert torch.equal(method.log_alpha(layer), layer.log_alpha_param)
    paper, player = method_and_layer("vardrop", torch.ones(1, 2))
    with torch.no_grad():
        player.log_alpha_param.copy_(layer.log_alpha_param)
    assert torch.equal(paper.log_alpha(player), torch.tensor([[-10.0, 10.0]]))


@pytest.mark.parametrize("name", ["vardrop_lr_ar", "vardrop_lr", "vardrop"])
def test_authors_init_draws_weights_as_linear_svdo_each_from_its_configurations_seed(name, synthetic):
    from adrop.train.nets import network

    cfg = synthetic(f"method={name}", "method.params.authors_init=true")
    cls = methods.get(name)

    def built(seed, **params):
        torch.manual_seed(seed)
        return network.build(cfg, (20,), 2, cls(cls.Params(**params), 1, 1))

    a, b, c = built(0, authors_init=True), built(0, authors_init=True), built(1, authors_init=True)
    for la, lb, lc in zip(a.layers, b.layers, c.layers):
        assert torch.equal(la.weight, lb.weight) and not torch.equal(la.weight, lc.weight)
        assert float(la.weight.detach().std()) == pytest.approx(0.02, rel=0.15)
        assert torch.count_nonzero(la.bias) == 0
    default = built(0)
    assert float(default.layers[0].weight.detach().std()) > 0.05  # the network's own initialisation
