"""The engine's own kernels: the batched linear product's backward pass and StackedAdam's fused CPU step.
Both replace plain arithmetic: checked against the plain arithmetic they replace (autograd of baddbmm; Adam's
elementwise passes), not bitwise."""

import torch

from adrop.methods.batched_linear import batched_linear
from adrop.train.loop.optim import StackedAdam


def test_the_batched_product_has_baddbmms_gradients_and_the_weights_layout():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 7, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.randn(3, 4, 7, dtype=torch.float64, generator=g, requires_grad=True)
    b = torch.randn(3, 4, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(batched_linear, (x, w, b))
    assert torch.autograd.gradcheck(lambda x, w: batched_linear(x, w), (x, w))
    out = torch.randn(3, 5, 4, dtype=torch.float64, generator=g)
    ours = torch.autograd.grad((batched_linear(x, w, b) * out).sum(), (x, w, b))
    plain = torch.autograd.grad((torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2)) * out).sum(), (x, w, b))
    for a, p in zip(ours, plain):
        torch.testing.assert_close(a, p)
    assert ours[1].is_contiguous() and not plain[1].is_contiguous()  # why the product is ours


def test_the_batched_product_skips_the_inputs_gradient_when_none_is_asked():
    x = torch.randn(2, 5, 7)
    w = torch.randn(2, 4, 7, requires_grad=True)
    batched_linear(x, w).sum().backward()
    assert x.grad is None and w.grad.shape == w.shape


def adam_pair(K=3, n=(4, 50)):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(K, *n)), torch.nn.Parameter(torch.randn(K, n[0]))]
    copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
    return StackedAdam(params, K), StackedAdam(copies, K)


def test_the_fused_rows_step_as_adams_elementwise_passes_each_with_its_own_lr():
    fused, plain = adam_pair()
    start = fused.flat.clone()
    g = torch.Generator().manual_seed(1)
    for step in range(20):
        grad = torch.randn(fused.flat.shape, generator=g) * 10.0 ** (-step % 4)
        lrs = torch.tensor([1e-2, 3e-3, 0.0]) * (1 - step / 40)
        for opt in (fused, plain):
            opt.flat_grad.copy_(grad)
            opt.set_lr(lrs)
            opt.advance()
        fused.apply_fused_rows()
        plain.apply_elementwise()
    moved = (plain.flat - start).abs().amax(1, keepdim=True)
    assert float(((fused.flat - plain.flat).abs() / moved.clamp_min(1e-30))[:2].max()) < 1e-5
    torch.testing.assert_close(fused.exp_avg, plain.exp_avg)
    torch.testing.assert_close(fused.exp_avg_sq, plain.exp_avg_sq)
    assert torch.equal(fused.flat[2], start[2])  # lr 0: the row stays


def test_apply_takes_the_fused_rows_on_a_cpu(monkeypatch):
    fused, _ = adam_pair()
    taken = []
    monkeypatch.setattr(fused, "apply_fused_rows", lambda: taken.append("fused"))
    monkeypatch.setattr(fused, "apply_elementwise", lambda: taken.append("elementwise"))
    fused.advance()
    fused.apply()
    assert taken == ["fused"]
