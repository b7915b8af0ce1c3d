"""Adam over one flat buffer: every parameter (and its gradient) is a view into a single tensor.

torch.optim.Adam on the CPU runs its ~7 elementwise kernels once per parameter tensor; LeNet-300-100 with a method's
extra parameters has 6 to 12 of them, each too small to amortise a kernel launch, so the optimiser took ~40% of a
dense epoch. Here the same Adam runs once on the flat tensor: the same arithmetic on every element (Adam is
elementwise), so the same result bit for bit, in a fraction of the kernel launches.

The step itself is torch's single-tensor Adam (torch/optim/adam.py, the path the CPU takes) written out without the
framework around it (hooks, argument checks, profiler records: a third of the optimiser's time at 375 steps an
epoch), with the square-root buffer allocated once. torch.optim.Adam stays the holder of the state, so checkpoints
keep its format.
"""
from __future__ import annotations

import torch
from torch import nn


class FlatAdam:
    def __init__(self, params, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        params = [p for p in params if p.requires_grad]
        first = params[0]
        total = sum(p.numel() for p in params)
        self.flat = torch.empty(total, dtype=first.dtype, device=first.device)
        self.flat_grad = torch.zeros_like(self.flat)
        self.index = {}  # parameter -> (offset, numel)
        offset = 0
        for p in params:
            n = p.numel()
            self.flat[offset:offset + n].copy_(p.detach().reshape(-1))
            p.data = self.flat[offset:offset + n].view_as(p)
            p.grad = self.flat_grad[offset:offset + n].view_as(p)  # backward accumulates into the flat gradient
            self.index[p] = (offset, n)
            offset += n
        self.param = nn.Parameter(self.flat)
        self.param.grad = self.flat_grad
        self.adam = torch.optim.Adam([self.param], lr=lr, betas=betas, eps=eps)
        self.denom = torch.empty_like(self.flat)

    @property
    def param_groups(self):
        # a property, not a copy: Adam.load_state_dict replaces the list (a stale copy lost the lr schedule on resume)
        return self.adam.param_groups

    def zero_grad(self) -> None:
        self.flat_grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        # the operations and scalars of torch.optim.adam._single_tensor_adam (amsgrad, weight decay and maximize off),
        # in its order, so the result is bitwise the same as Adam.step()
        group, state = self.adam.param_groups[0], self.adam.state[self.param]
        if not state:  # as Adam initialises it, so state_dict() is the same
            scalar = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
            state["step"] = torch.tensor(0.0, dtype=scalar)
            state["exp_avg"] = torch.zeros_like(self.flat, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(self.flat, memory_format=torch.preserve_format)
        beta1, beta2 = group["betas"]
        lr, eps, grad = group["lr"], group["eps"], self.flat_grad
        exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
        step_t += 1
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = step_t.item()
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        torch.sqrt(exp_avg_sq, out=self.denom).div_(bias_correction2_sqrt).add_(eps)
        self.flat.addcdiv_(exp_avg, self.denom, value=-step_size)

    def state_dict(self) -> dict:
        return self.adam.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.adam.load_state_dict(state)

    def effective_step(self, param) -> torch.Tensor | float:
        """Per-coordinate step of the last update for `param`: lr / (sqrt(v / (1 - beta2^t)) + eps)."""
        group = self.param_groups[0]
        state = self.adam.state.get(self.param)
        if not state:
            return group["lr"]
        offset, n = self.index[param]
        _, beta2 = group["betas"]
        v_hat = state["exp_avg_sq"][offset:offset + n].view_as(param) / (1 - beta2 ** float(state["step"]))
        return group["lr"] / (v_hat.sqrt() + group["eps"])


class StackedAdam:
    """Adam for K stacked configurations, each with its own learning rate (a tensor of K, set every step).

    One flat buffer of shape (K, n), configuration-major: row k holds configuration k's parameters in the order a
    single run's FlatAdam holds them, so row k of the buffer and of Adam's moments is exactly a single run's flat
    state (a stacked run's checkpoint resumes as a single run and back). Adam's arithmetic is elementwise, the same
    as FlatAdam's but for the last step, which scales each row by its own lr / (1 - beta1^t): one addcmul with a
    (K, 1) column instead of addcdiv with a scalar, so it rounds differently in the last bit (a fast path, checked
    against single runs by tolerance)."""

    def __init__(self, params, configs: int, betas=(0.9, 0.999), eps: float = 1e-8):
        params = [p for p in params if p.requires_grad]
        self.K = configs
        per_config = [p[0].numel() for p in params]
        n = sum(per_config)
        first = params[0]
        self.flat = torch.empty(configs, n, dtype=first.dtype, device=first.device)
        self.flat_grad = torch.zeros_like(self.flat)
        self.index, offset = {}, 0
        for p, size in zip(params, per_config):
            self.flat[:, offset:offset + size].copy_(p.detach().reshape(configs, size))
            p.data = self.flat[:, offset:offset + size].view_as(p)
            p.grad = self.flat_grad[:, offset:offset + size].view_as(p)
            self.index[p] = (offset, size)
            offset += size
        self.betas, self.eps, self.step_count = betas, eps, 0
        self.exp_avg = torch.zeros_like(self.flat)
        self.exp_avg_sq = torch.zeros_like(self.flat)
        self.denom = torch.empty_like(self.flat)
        self.lr = torch.zeros(configs, 1, dtype=first.dtype, device=first.device)
        # this step's 1 / (1 - beta1^t) and 1 - beta2^t as tensors, set by advance() from a step counter kept on the
        # device (float64, as Python computes them): the arithmetic (apply(), effective_step()) reads no Python number
        # that changes per step, so torch.compile traces it once, and no step copies from the host (a GPU never waits)
        self.correction = torch.ones(2, dtype=first.dtype, device=first.device)
        self.t = torch.zeros((), dtype=torch.float64, device=first.device)
        self.beta_powers = torch.tensor(betas, dtype=torch.float64, device=first.device)

    def set_lr(self, lrs: torch.Tensor) -> None:
        """This step's K learning rates (a tensor on the buffer's device: no host sync)."""
        self.lr.copy_(lrs.view(-1, 1))

    def zero_grad(self) -> None:
        self.flat_grad.zero_()

    def advance(self) -> None:
        """Count the step and set its bias corrections (outside any compiled region: they change every step)."""
        self.step_count += 1
        self.t += 1
        powers = self.beta_powers ** self.t
        self.correction.copy_(torch.stack([1.0 / (1 - powers[0]), 1 - powers[1]]))

    @torch.no_grad()
    def apply(self) -> None:
        """The update of the step advance() counted: tensors only, compilable (StackedRun's compile=true fuses it
        with the method's after_step into one pass). A step is advance() then apply().

        Eager on a CPU, torch's fused Adam kernel updates each row (configuration) in one pass with its own lr: on
        the 2-core CPU (266,610 weights, one thread) 160 us a step against 435 us for the seven elementwise passes
        below. Not on a GPU, where a launch per row would cost more than the passes over all rows save."""
        if self.flat.device.type == "cpu" and not torch.compiler.is_compiling():
            self.apply_fused_rows()
        else:
            self.apply_elementwise()

    @torch.no_grad()
    def apply_fused_rows(self) -> None:
        beta1, beta2 = self.betas
        for k in range(self.K):
            torch._fused_adam_([self.flat[k]], [self.flat_grad[k]], [self.exp_avg[k]], [self.exp_avg_sq[k]], [],
                               [self.t], lr=self.lr[k, 0], beta1=beta1, beta2=beta2, weight_decay=0.0, eps=self.eps,
                               amsgrad=False, maximize=False)

    @torch.no_grad()
    def apply_elementwise(self) -> None:
        beta1, beta2 = self.betas
        self.exp_avg.lerp_(self.flat_grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(self.flat_grad, self.flat_grad, value=1 - beta2)
        torch.sqrt(self.exp_avg_sq, out=self.denom).div_(self.correction[1].sqrt()).add_(self.eps)
        torch.div(self.exp_avg, self.denom, out=self.denom)  # the update direction, in place
        self.flat.addcmul_(self.denom, self.lr * self.correction[0], value=-1.0)

    @torch.no_grad()
    def freeze(self, rows) -> None:
        """Rows (configurations) that failed: weights and moments held at 0, so a NaN stays out of the arithmetic."""
        for buffer in (self.flat, self.exp_avg, self.exp_avg_sq):
            buffer[rows] = 0.0

    def effective_step(self, param) -> torch.Tensor:
        """Per coordinate (K, ...) of the step just taken: lr_k / (sqrt(v / (1 - beta2^t)) + eps), as
        FlatAdam.effective_step for each row; from tensors only, so a compiled after_step can call it."""
        offset, size = self.index[param]
        shape = param.shape
        v_hat = self.exp_avg_sq[:, offset:offset + size].reshape(shape) / self.correction[1]
        return self.lr.view(-1, *([1] * (len(shape) - 1))) / (v_hat.sqrt() + self.eps)

    def config_state(self, k: int) -> dict:
        """Row k as torch.optim.Adam's state_dict of a single run's FlatAdam (lr as that run's current lr)."""
        scalar = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
        holder = torch.optim.Adam([nn.Parameter(torch.zeros(1))], lr=float(self.lr[k]), betas=self.betas, eps=self.eps)
        state = {"step": torch.tensor(float(self.step_count), dtype=scalar),
                 "exp_avg": self.exp_avg[k].clone(), "exp_avg_sq": self.exp_avg_sq[k].clone()}
        return {"state": {0: state} if self.step_count else {}, "param_groups": holder.state_dict()["param_groups"]}

    def load_config_state(self, k: int, state: dict) -> None:
        inner = state["state"].get(0) or state["state"].get("0")
        if inner is None:  # a checkpoint before the first step
            return
        self.step_count = int(inner["step"])
        self.t.fill_(self.step_count)
        self.exp_avg[k].copy_(inner["exp_avg"])
        self.exp_avg_sq[k].copy_(inner["exp_avg_sq"])
