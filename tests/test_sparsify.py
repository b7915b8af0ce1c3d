"""adrop as a library (adrop.sparsify): every method in a plain PyTorch loop with Adam, AdamW and SGD, any loss (a
regression on scikit-learn's diabetes data), gradient accumulation; eval mode is the keep rule, strip gives plain
modules with the same outputs, stats() the numbers layers.csv holds, state_dict resumes exactly; bad calls are one
exception each and leave the model as it was."""

import copy
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import adrop
from adrop import methods
from adrop.methods.base import SparseLayer
from adrop.methods.sparse_parameter import SparseParameter
from adrop.sparsifier import SparsifyError, default_lam

EVERY = [m for m in methods.names() if m != "fixed_mask"]  # fixed_mask fine-tunes another run's kept weights
LAM = {"logsum": 1e-2, "adaprox": 1e-2, "adatikhonov": 1e-2, "adaptive_dropout": 1e-2, "eta_trick": 1e-2}
OPTIMIZERS = {
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2),
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
}


def net(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))


def blobs(n=512, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 20, generator=g)
    return x, x[:, :4].argmax(1)


def options(method):
    return {"total_steps": 60} if method == "magnitude_pruning" else {}


def train(model, sp, optimizer, x, y, steps=60, accumulate=1, loss_fn=F.cross_entropy):
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        optimizer.zero_grad()
        for _ in range(accumulate):
            b = torch.randint(0, len(x), (64,), generator=g)
            loss = loss_fn(model(x[b]), y[b]) + sp.penalty()
            (loss / accumulate).backward()
        optimizer.step()
    return float(loss.detach())


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("method", EVERY)
def test_every_method_trains_in_a_plain_loop_with_adam_adamw_and_sgd(method, optimizer):
    x, y = blobs()
    model = net()
    sp = adrop.sparsify(model, method=method, lam=LAM.get(method, default_lam(method)), **options(method))
    opt = OPTIMIZERS[optimizer](model.parameters())
    if method == "hard_concrete" and optimizer == "sgd":  # its gates would not move: refused, with why
        with pytest.raises(SparsifyError, match="train it with Adam or AdamW"):
            sp.attach(opt)
        return
    sp.attach(opt)
    loss = train(model, sp, opt, x, y)
    assert np.isfinite(loss) and sp.steps == (60 if sp.needs_steps else 0)  # a method needing no hook: none
    model.eval()
    with torch.no_grad():
        before = model(x)
    stats = sp.stats()
    assert list(stats.layer) == ["0", "2"] and (stats.nonzero <= stats.total).all()
    assert {"units_in_kept", "units_out_kept", "compression", "sparse_macs"} <= set(stats.columns)
    assert stats.sparse_macs.tolist() == stats.nonzero.tolist()  # a Linear on vectors acts once per example
    plain = adrop.strip(model)
    assert plain is model and [type(m) for m in model] == [nn.Linear, nn.ReLU, nn.Linear]
    assert set(model.state_dict()) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    with torch.no_grad():
        assert torch.equal(model(x), before)  # eval mode was the stripped network: keep rule, gates folded in
    assert [int((m.weight != 0).sum()) for m in (model[0], model[2])] == stats.nonzero.tolist()
    slow = ("dense", "eta_trick", "vardrop", "vardrop_lr", "hard_concrete")  # these prune later than 60 steps
    if method not in slow and optimizer != "sgd":  # (SGD's steps at these lams and lr are others)
        assert stats.nonzero.sum() < stats.total.sum(), stats


def test_a_regression_with_sgd_and_momentum_on_diabetes():
    from sklearn.datasets import load_diabetes

    data = load_diabetes()
    x = torch.tensor((data.data - data.data.mean(0)) / data.data.std(0), dtype=torch.float32)
    y = torch.tensor((data.target - data.target.mean()) / data.target.std(), dtype=torch.float32)[:, None]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))
    sp = adrop.sparsify(model, method="logsum", lam=3e-3)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    sp.attach(opt)
    with torch.no_grad():
        first = float(F.mse_loss(model(x), y))
    train(model, sp, opt, x, y, steps=400, loss_fn=F.mse_loss)
    model.eval()
    with torch.no_grad():
        mse = float(F.mse_loss(model(x), y))
    assert mse < 0.6 * first  # it learns: diabetes' linear fit explains about half the variance
    assert sp.stats().nonzero.sum() < sp.stats().total.sum()  # and prunes


def test_gradient_accumulation_steps_the_schedule_once_per_optimizer_step():
    x, y = blobs()
    model = net()
    sp = adrop.sparsify(model, method="magnitude_pruning", total_steps=40, final_sparsity=0.5, frequency=5)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(opt)
    train(model, sp, opt, x, y, steps=40, accumulate=4)
    assert sp.steps == 40
    assert sp.stats().nonzero_fraction.mean() == pytest.approx(0.5, abs=0.02)  # the schedule's end, reached once


def test_the_state_dict_resumes_exactly():
    x, y = blobs()

    def run(split):
        model = net()
        sp = adrop.sparsify(model, method="adaprox", lam=1e-2)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        sp.attach(opt)
        torch.manual_seed(5)
        train(model, sp, opt, x, y, steps=10)
        if split:  # a checkpoint, reloaded into fresh objects
            saved = copy.deepcopy((model.state_dict(), opt.state_dict(), sp.state_dict()))
            model = net(seed=1)
            sp = adrop.sparsify(model, method="adaprox", lam=1.0)
            opt = torch.optim.Adam(model.parameters(), lr=1e-2)
            model.load_state_dict(saved[0])
            opt.load_state_dict(saved[1])
            sp.load_state_dict(saved[2])
            sp.attach(opt)
        torch.manual_seed(6)
        train(model, sp, opt, x, y, steps=10)
        return [p.detach().clone() for p in model.parameters()], sp.steps

    (a, steps_a), (b, steps_b) = run(False), run(True)
    assert steps_a == steps_b == 20 and all(torch.equal(p, q) for p, q in zip(a, b))


def test_exclude_and_lam_scale_by_module_path():
    model = net()
    sp = adrop.sparsify(model, method="logsum", lam=1e-3, exclude=["2"], lam_scale={"0": 3.0})
    assert sp.names == ["0"] and type(model[2]) is nn.Linear and sp.layers[0].lam_scale == 3.0
    plain = adrop.sparsify(net(), method="logsum", lam=1e-3, exclude=["2"])  # the same weights, lam_scale 1
    assert float(sp.penalty()) == pytest.approx(3.0 * float(plain.penalty()), rel=1e-6) and float(plain.penalty()) > 0


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: adrop.sparsify(m, method="logsun"), "unknown method 'logsun'; valid methods: "),
        (
            lambda m: adrop.sparsify(m, method="logsum", lam=1e-3, epsilon=1),
            "method 'logsum' has no parameter 'epsilon'",
        ),
        (
            lambda m: adrop.sparsify(m, lam=1e-3, exclude=["0", "2"]),
            "has no nn.Linear or nn.Conv2d for a method to sparsify",
        ),
        (
            lambda m: adrop.sparsify(m, lam=1e-3, exclude=["head"]),
            "exclude='head' names no module or tensor of Sequential",
        ),
        (
            lambda m: adrop.sparsify(m, lam=1e-3, lam_scale={"3": 2.0}),
            "lam_scale names 3, not a sparsified layer; they are: 0, 2",
        ),
        (lambda m: adrop.sparsify(m, method="magnitude_pruning"), "give total_steps"),
        (lambda m: adrop.sparsify(nn.Sequential(nn.ReLU()), lam=1e-3), "has no nn.Linear or nn.Conv2d"),
        (
            lambda m: adrop.sparsify(nn.utils.parametrizations.weight_norm(m[2]) and m, lam=1e-3),
            "2 (ParametrizedLinear) has a parametrization (weight_norm, spectral_norm, ...): adrop trains a layer's "
            "own weight; exclude it (exclude=['2'])",
        ),
    ],
)
def test_a_bad_call_is_one_exception_and_leaves_the_model_as_it_was(call, message):
    model = net()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(SparsifyError, match=re.escape(message)):
        call(model)
    assert type(model[0]) is nn.Linear and type(model[1]) is nn.ReLU  # nothing converted, the first layer neither
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items() if k in before)


def test_a_method_that_works_around_steps_refuses_a_step_it_did_not_see():
    x, y = blobs()
    model = net()
    sp = adrop.sparsify(model, method="adaprox", lam=1e-2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)  # not attached
    F.cross_entropy(model(x[:8]), y[:8]).backward()
    with pytest.raises(SparsifyError, match=r"call sp.attach\(optimizer\) before training"):
        opt.step()
    sp.attach(opt)
    model(x[:8])  # attached: fine from now on
    with torch.no_grad():
        model[0].weight.add_(1.0)  # a change no step of the attached optimizer made
    sp.detach()
    with pytest.raises(SparsifyError, match=r"changed without it: call sp.attach\(optimizer\) before training"):
        model(x[:8])


def test_an_optimizer_adrop_cannot_read_is_refused_when_attached():
    model = net()
    sp = adrop.sparsify(model, method="adaprox", lam=1e-3)
    with pytest.raises(SparsifyError, match="reads from Adam, AdamW and SGD, not Adagrad"):
        sp.attach(torch.optim.Adagrad(model.parameters()))
    other = net()
    adrop.sparsify(other, method="logsum", lam=1e-3).attach(torch.optim.Adagrad(other.parameters()))  # needs none


def test_a_conv_net_is_sparsified_and_stripped_to_conv2d_with_its_settings():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, padding_mode="reflect"), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 3)
    )
    sp = adrop.sparsify(model, method="hard_concrete", lam=1e-3)
    x = torch.randn(16, 1, 8, 8)
    model(x)  # a forward pass shows how often each layer acts
    stats = sp.stats()
    assert stats.dense_macs.tolist() == [36 * 64, 256 * 3]
    model.eval()
    with torch.no_grad():
        before = model(x)
    adrop.strip(model)
    conv = model[0]
    assert type(conv) is nn.Conv2d and conv.padding == (1, 1) and conv.padding_mode == "reflect"
    with torch.no_grad():
        assert torch.allclose(model(x), before, atol=1e-6)


def test_compact_gives_the_smaller_dense_network_of_a_chain():
    x, y = blobs()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))
    sp = adrop.sparsify(
        model, method="magnitude_pruning", structure="neuron", total_steps=200, final_sparsity=0.6, scope="layer"
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(opt)
    train(model, sp, opt, x, y, steps=200)
    model.eval()
    small = sp.compact()
    widths = [m.out_features for m in small if isinstance(m, nn.Linear)]
    assert widths[-1] == 4 and 0 < widths[0] < 64 and 0 < widths[1] < 32, widths  # units gone, a path kept
    with torch.no_grad():
        assert torch.allclose(small(x), model(x), atol=1e-5)
    # another model: its plain copy (no attention to make smaller here), the model left as it was
    tanh = nn.Sequential(nn.Linear(20, 8), nn.Tanh(), nn.Linear(8, 4))
    sp = adrop.sparsify(tanh, lam=1e-3)
    plain = sp.compact()
    assert not any(isinstance(m, (SparseLayer, SparseParameter)) for m in plain.modules())
    with torch.no_grad():
        assert torch.equal(plain(x[:, :20]), tanh.eval()(x[:, :20]))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="mixed precision needs CUDA")
def test_mixed_precision_on_cuda_with_a_grad_scaler():
    x, y = (t.cuda() for t in blobs())
    model = net().cuda()
    sp = adrop.sparsify(model, method="adaprox", lam=1e-2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sp.attach(opt)
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(30):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(x), y) + sp.penalty()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)  # a skipped step (inf gradients) runs none of the method's post-step work
        scaler.update()
    assert torch.isfinite(loss) and 0 < sp.steps <= 30
    assert sp.stats().nonzero.sum() < sp.stats().total.sum()
