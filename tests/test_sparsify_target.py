"""A target sparsity in one run (adrop.sparsify(..., target=)): a user's plain loop ends at the fraction of the weights
or of the multiply-adds asked for, lam's path is kept and resumes, magnitude pruning takes it as its final sparsity,
and what a target cannot steer is refused in one line."""

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import adrop
from adrop.sparsifier import SparsifyError, SparsityWarning
from adrop.target import LamController

STEPS = 150


def digits():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return torch.tensor(x / 16.0, dtype=torch.float32), torch.tensor(y)


def train(model, sp, optimizer, x, y, steps, start=0):
    for step in range(start, steps):
        batch = torch.randint(0, len(x), (64,))
        loss = F.cross_entropy(model(x[batch]), y[batch]) + sp.penalty()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 10))


@pytest.mark.parametrize("method", ["logsum", "adaprox", "adatikhonov", "adaptive_dropout"])
def test_a_users_loop_ends_at_its_target(method):
    x, y = digits()
    model = mlp()
    sp = adrop.sparsify(model, method=method, target=0.1, total_steps=STEPS)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SparsityWarning)  # a missed target would warn
        train(model, sp, optimizer, x, y, STEPS)
    stats = sp.stats()
    kept = stats.nonzero.sum() / stats.total.sum()
    assert kept == pytest.approx(0.1, rel=0.05)
    assert sp.kept_fraction() == pytest.approx(kept)
    steps, lams, fractions, references = zip(*sp.target.path)
    assert steps[-1] == STEPS and references[-1] == pytest.approx(0.1) and references[0] > 0.95
    assert stats.attrs["lam"] == sp.lam == lams[-1] and len(set(lams)) > STEPS // 2  # lam was steered
    for step, fraction, reference in zip(steps, fractions, references):  # it follows the reference on its way
        assert fraction == pytest.approx(reference, abs=0.05), step


@pytest.mark.parametrize("method", ["logsum", "adatikhonov"])
def test_whole_units_end_at_their_target_to_within_a_unit(method):
    x, y = digits()
    model = mlp()  # units of 48 and 10 weights: the kept fraction moves in steps of up to 48 / 3552
    sp = adrop.sparsify(model, method=method, structure="neuron", target=0.3, total_steps=STEPS)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SparsityWarning)
        train(model, sp, optimizer, x, y, STEPS)
    stats = sp.stats()
    assert stats.nonzero.sum() / stats.total.sum() == pytest.approx(0.3, abs=48 / 3552)


def test_a_target_of_multiply_adds_counts_each_layers_positions():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 10))
    sp = adrop.sparsify(model, method="adaprox", target=0.2, target_cost="macs", total_steps=60)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(optimizer)
    x, y = digits()
    images = x.view(-1, 1, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SparsityWarning)
        train(model, sp, optimizer, images, y, 60)
    stats = sp.stats()
    macs = stats.sparse_macs.sum() / stats.dense_macs.sum()
    assert macs == pytest.approx(0.2, rel=0.05)
    weights = stats.nonzero.sum() / stats.total.sum()
    assert abs(weights - 0.2) > 0.02  # the conv's weights act 36 times each: weights and multiply-adds differ


def test_a_steered_run_resumes_bitwise_with_its_path():
    x, y = digits()

    def prepared():
        model = mlp()
        sp = adrop.sparsify(model, method="adaptive_dropout", target=0.2, total_steps=40)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        sp.attach(optimizer)
        return model, sp, optimizer

    torch.manual_seed(1)
    straight, sp, optimizer = prepared()
    train(straight, sp, optimizer, x, y, 40)

    torch.manual_seed(1)
    first, sp1, optimizer1 = prepared()
    train(first, sp1, optimizer1, x, y, 20)
    saved = {"model": first.state_dict(), "optimizer": optimizer1.state_dict(), "sparsifier": sp1.state_dict()}
    resumed, sp2, optimizer2 = prepared()
    resumed.load_state_dict(saved["model"])
    optimizer2.load_state_dict(saved["optimizer"])
    sp2.load_state_dict(saved["sparsifier"])
    train(resumed, sp2, optimizer2, x, y, 40, start=20)
    assert sp2.lam == sp.lam and sp2.target.path == sp.target.path
    for a, b in zip(straight.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(a, b)


def test_magnitude_pruning_takes_the_target_as_its_final_sparsity():
    model = mlp()
    sp = adrop.sparsify(model, method="magnitude_pruning", target=0.25, total_steps=20, frequency=2)
    assert sp.target is None and sp.method.params.final_sparsity == pytest.approx(0.75)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(optimizer)
    x, y = digits()
    train(model, sp, optimizer, x, y, 20)
    stats = sp.stats()
    assert stats.nonzero.sum() / stats.total.sum() == pytest.approx(0.25, abs=0.01)


@pytest.mark.parametrize(
    "method, options, words",
    [
        ("hard_concrete", {}, "follows lam only through training"),
        ("vardrop_lr", {}, "follows lam only through training"),
        ("eta_trick", {}, "follows lam only through training"),
        ("dense", {}, "has no lam to steer"),
        ("logsum", {"target": 1.5}, "in (0, 1)"),
        ("logsum", {"total_steps": None}, "needs total_steps"),
        ("logsum", {"target_cost": "flops"}, "target_cost must be one of weights, macs"),
        ("magnitude_pruning", {"final_sparsity": 0.5}, "not both"),
    ],
)
def test_what_a_target_cannot_steer_is_refused_in_one_line(method, options, words):
    settings = {"target": 0.1, "total_steps": 10, **options}
    with pytest.raises(SparsifyError) as err:
        adrop.sparsify(mlp(), method=method, **settings)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_run_that_ends_away_from_its_target_says_so():
    controller = LamController(0.1, total_steps=10)
    controller.record(10, 0.5, 0.3)
    assert controller.missed(0.3) == "target 0.1 of the weights not reached: 0.3 kept at the end of 10 steps (lam 0.5)"
    assert controller.missed(0.104) is None


@pytest.mark.parametrize("method", ["logsum", "adaptive_dropout"])
def test_a_bfloat16_model_ends_at_its_target(method):
    x, y = digits()
    model = mlp().to(torch.bfloat16)
    sp = adrop.sparsify(model, method=method, target=0.1, total_steps=STEPS)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SparsityWarning)
        for _ in range(STEPS):
            batch = torch.randint(0, len(x), (64,))
            loss = F.cross_entropy(model(x[batch].bfloat16()).float(), y[batch]) + sp.penalty()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    stats = sp.stats()
    assert stats.nonzero.sum() / stats.total.sum() == pytest.approx(0.1, rel=0.05)
