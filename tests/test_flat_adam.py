"""FlatAdam (one flat buffer) trains every method bit for bit as torch.optim.Adam on the separate parameters."""

import pytest
import torch
import torch.nn.functional as F

from adrop import methods
from adrop.train.model import MLP
from adrop.train.optim import FlatAdam


class ReferenceAdam(torch.optim.Adam):
    """torch's Adam with the effective step AdaProx asks for, computed per parameter."""

    def effective_step(self, param):
        group, state = self.param_groups[0], self.state[param]
        v_hat = state["exp_avg_sq"] / (1 - group["betas"][1] ** float(state["step"]))
        return group["lr"] / (v_hat.sqrt() + group["eps"])


def train(method_name, flat: bool, steps=12):
    torch.manual_seed(0)
    cls = methods.get(method_name)
    method = cls(cls.Params(), steps_per_epoch=steps, epochs=1)
    model = MLP([20, 16, 8, 4], method)
    opt = FlatAdam(model.parameters(), lr=1e-2) if flat else ReferenceAdam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    for step in range(1, steps + 1):
        x, y = torch.randn(32, 20, generator=g), torch.randint(4, (32,), generator=g)
        opt.param_groups[0]["lr"] = 1e-2 * (1 - step / (2 * steps))
        method.before_step(step - 1, 1e-3)
        loss = F.cross_entropy(model(x), y) + 1e-3 * method.penalty(model.layers, 1e-3)
        opt.zero_grad()
        loss.backward()
        opt.step()
        method.after_step(model.layers, step, 1e-3, opt.effective_step)
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("name", methods.names())
def test_flat_adam_is_bitwise_torch_adam(name):
    reference, flat = train(name, flat=False), train(name, flat=True)
    assert all(torch.equal(a, b) for a, b in zip(reference, flat))


def test_parameters_are_views_of_one_buffer():
    cls = methods.get("vardrop_lr_ar")
    model = MLP([5, 3, 2], cls(cls.Params(), 1, 1))
    opt = FlatAdam(model.parameters(), lr=1e-3)
    assert sum(p.numel() for p in model.parameters()) == opt.flat.numel()
    assert all(p.untyped_storage().data_ptr() == opt.flat.untyped_storage().data_ptr() for p in model.parameters())


def test_state_dict_is_torch_adams():
    """Checkpoints keep torch.optim.Adam's format: a run written before FlatAdam stepped by itself resumes."""
    torch.manual_seed(0)
    flat_model = torch.nn.Linear(6, 3)
    opt = FlatAdam(flat_model.parameters(), lr=1e-2)
    torch_param = torch.nn.Parameter(opt.flat.detach().clone())
    reference = torch.optim.Adam([torch_param], lr=1e-2)
    for _ in range(3):
        g = torch.randn_like(opt.flat)
        opt.flat_grad.copy_(g)
        torch_param.grad = g.clone()
        opt.step()
        reference.step()
    mine, theirs = opt.state_dict(), reference.state_dict()
    assert mine["param_groups"] == theirs["param_groups"]
    for key, value in theirs["state"][0].items():
        assert value.dtype == mine["state"][0][key].dtype and torch.equal(value, mine["state"][0][key])
    resumed = FlatAdam(torch.nn.Linear(6, 3).parameters(), lr=1e-2)
    resumed.flat.copy_(opt.flat)
    resumed.load_state_dict(theirs)
    g = torch.randn_like(opt.flat)
    for o in (opt, resumed):
        o.flat_grad.copy_(g)
        o.step()
    assert torch.equal(opt.flat, resumed.flat)
