"""The engine's Adam (StackedAdam: every configuration's parameters as a row of one buffer) is torch's Adam: every
method trains with it as with torch.optim.Adam on the separate parameters, to float32 rounding (it is torch's fused
kernel per row on a CPU, not torch's single-tensor loop), and its checkpoints are torch.optim.Adam's state_dict."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from adrop import methods
from adrop.train.loop.optim import StackedAdam
from adrop.train.nets.builtin import MLP
from adrop.train.nets.network import Network

from helpers.stacks import assert_follows

STEPS, LR, LAM, BATCH = 12, 1e-2, 1e-3, 32


class ReferenceAdam(torch.optim.Adam):
    """torch's Adam with the effective step AdaProx asks for, computed per parameter."""

    def effective_step(self, param):
        group, state = self.param_groups[0], self.state[param]
        v_hat = state["exp_avg_sq"] / (1 - group["betas"][1] ** float(state["step"]))
        return group["lr"] / (v_hat.sqrt() + group["eps"])


def lr_at(step):
    return LR * (1 - step / (2 * STEPS))


def train(method_name, ours: bool):
    """STEPS steps of one configuration (a stack of one, as the engine trains it) on random batches."""
    torch.manual_seed(0)
    cls = methods.get(method_name)
    method = cls(cls.Params(), steps_per_epoch=STEPS, epochs=1)
    model = Network(MLP([16, 8], [20], 4), method, [20], 4, configs=1)
    method.start(model.layers)  # random_pruning draws its mask (from the seed above)
    opt = StackedAdam(model.parameters(), 1) if ours else ReferenceAdam(model.parameters(), lr=LR)
    g = torch.Generator().manual_seed(1)
    for step in range(1, STEPS + 1):
        x, y = torch.randn(1, BATCH, 20, generator=g), torch.randint(4, (1, BATCH), generator=g)
        if ours:
            opt.set_lr(torch.tensor([lr_at(step)]))
        else:
            opt.param_groups[0]["lr"] = lr_at(step)
        method.before_step(step - 1, LAM)
        loss = F.cross_entropy(model(x)[0], y[0]) + LAM * method.penalty(model.layers, LAM).sum()
        opt.zero_grad()
        loss.backward()
        method.before_update(model.layers)
        if ours:
            opt.advance()
            opt.apply()
        else:
            opt.step()
        method.after_step(model.layers, step, LAM, opt.effective_step)
    return {name: p.detach().numpy().copy() for name, p in model.net.named_parameters()}


class Arrays(dict):
    files = property(lambda self: list(self))


@pytest.mark.parametrize("name", [m for m in methods.names() if m != "fixed_mask"])  # needs a run to start from
def test_the_engines_adam_trains_every_method_as_torchs_adam(name):
    reference, ours = Arrays(train(name, ours=False)), Arrays(train(name, ours=True))
    assert_follows(reference, ours, STEPS, longest_product=BATCH, lr_sum=sum(map(lr_at, range(1, STEPS + 1))))
    if name != "dense":  # the same comparison fails for another method's trajectory
        with pytest.raises(AssertionError):
            assert_follows(
                Arrays(train("dense", ours=True)),
                ours,
                STEPS,
                longest_product=BATCH,
                lr_sum=sum(map(lr_at, range(1, STEPS + 1))),
            )


def test_parameters_are_views_of_one_buffer():
    cls = methods.get("vardrop_lr_ar")
    model = Network(MLP([3], [5], 2), cls(cls.Params(), 1, 1), [5], 2, configs=2)
    opt = StackedAdam(model.parameters(), 2)
    assert sum(p.numel() for p in model.parameters()) == opt.flat.numel()
    assert all(p.untyped_storage().data_ptr() == opt.flat.untyped_storage().data_ptr() for p in model.parameters())


def test_a_rows_state_is_torch_adams_and_resumes_there():
    """config_state(k) is torch.optim.Adam's state_dict of one flat parameter; loaded into torch's Adam, the next
    step is the one StackedAdam takes, to rounding."""
    torch.manual_seed(0)
    opt = StackedAdam([torch.nn.Parameter(torch.randn(2, 7))], 2)
    opt.set_lr(torch.tensor([1e-2, 3e-2]))
    for _ in range(3):
        opt.flat_grad.copy_(torch.randn_like(opt.flat))
        opt.advance()
        opt.apply()
    state = opt.config_state(1)
    param = torch.nn.Parameter(opt.flat[1].detach().clone())
    theirs = torch.optim.Adam([param], lr=3e-2)
    ours, torchs = state["param_groups"][0], theirs.state_dict()["param_groups"][0]
    assert ours.keys() == torchs.keys()  # every key of torch's Adam's group, and the same values but lr (float32 here)
    assert {k: v for k, v in ours.items() if k != "lr"} == {k: v for k, v in torchs.items() if k != "lr"}
    theirs.load_state_dict(state)
    assert theirs.state_dict()["param_groups"][0]["lr"] == pytest.approx(3e-2)
    g = torch.randn(2, 7)
    param.grad = g[1].clone()
    theirs.step()
    opt.flat_grad.copy_(g)
    opt.advance()
    opt.apply()
    np.testing.assert_allclose(param.detach().numpy(), opt.flat[1].numpy(), rtol=1e-6, atol=1e-7)
