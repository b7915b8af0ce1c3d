"""Adam for the engine: K configurations' parameters as the rows of one (K, n) buffer, each with its own lr.

torch.optim.Adam on the CPU runs its ~7 elementwise kernels once per parameter tensor; LeNet-300-100 with a method's
extra parameters has 6 to 12 of them, each too small to amortise a kernel launch (the optimiser took ~40% of a dense
epoch). Here every parameter and its gradient are views into one buffer, so a step is a few passes over it.
"""

from __future__ import annotations

import functools
import inspect

import torch


class StackedAdam:
    """Adam for K stacked configurations, each with its own learning rate (a tensor of K, set every step).

    One flat buffer of shape (K, n), configuration-major: row k holds configuration k's parameters in the model's
    parameter order, so row k of the buffer and of Adam's moments is one configuration's whole state, saved in
    torch.optim.Adam's state_dict format over one flat parameter (config_state): a configuration's checkpoint
    resumes in any stack. Adam's arithmetic is elementwise: on a CPU torch's fused kernel per row
    (apply_fused_rows), elsewhere and under compile the same arithmetic as elementwise passes (checked against each
    other to rounding, tests/test_stacked_kernels.py)."""

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
            self.flat[:, offset : offset + size].copy_(p.detach().reshape(configs, size))
            p.data = self.flat[:, offset : offset + size].view_as(p)
            p.grad = self.flat_grad[:, offset : offset + size].view_as(p)
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
        powers = self.beta_powers**self.t
        self.correction.copy_(torch.stack([1.0 / (1 - powers[0]), 1 - powers[1]]))

    @torch.no_grad()
    def apply(self) -> None:
        """The update of the step advance() counted: tensors only, compilable (the engine's compile=true fuses it
        with the method's after_step into one pass). A step is advance() then apply().

        Eager on a CPU, torch's fused Adam kernel updates each row (configuration) in one pass with its own lr: on
        one CPU core (266,610 weights, one thread) 160 us a step against 435 us for the seven elementwise passes
        below. Not on a GPU, where a launch per row would cost more than the passes over all rows save."""
        if self.flat.device.type == "cpu" and not torch.compiler.is_compiling():
            self.apply_fused_rows()
        else:
            self.apply_elementwise()

    @torch.no_grad()
    def apply_fused_rows(self) -> None:
        beta1, beta2 = self.betas
        for k in range(self.K):
            torch._fused_adam_(
                [self.flat[k]],
                [self.flat_grad[k]],
                [self.exp_avg[k]],
                [self.exp_avg_sq[k]],
                [],
                [self.t],
                lr=self.lr[k, 0],
                beta1=beta1,
                beta2=beta2,
                weight_decay=0.0,
                eps=self.eps,
                amsgrad=False,
                maximize=False,
            )

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
        torch's Adam would give for each row; from tensors only, so a compiled after_step can call it."""
        offset, size = self.index[param]
        shape = param.shape
        v_hat = self.exp_avg_sq[:, offset : offset + size].reshape(shape) / self.correction[1]
        return self.lr.view(-1, *([1] * (len(shape) - 1))) / (v_hat.sqrt() + self.eps)

    def config_state(self, k: int) -> dict:
        """Row k as torch.optim.Adam's state_dict over one flat parameter (lr as that row's current lr)."""
        scalar = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
        state = {
            "step": torch.tensor(float(self.step_count), dtype=scalar),
            "exp_avg": self.exp_avg[k].clone(),
            "exp_avg_sq": self.exp_avg_sq[k].clone(),
        }
        group = {**adam_defaults(), "lr": float(self.lr[k]), "betas": self.betas, "eps": self.eps, "params": [0]}
        return {"state": {0: state} if self.step_count else {}, "param_groups": [group]}

    def load_config_state(self, k: int, state: dict) -> None:
        inner = state["state"].get(0) or state["state"].get("0")
        if inner is None:  # a checkpoint before the first step
            return
        self.step_count = int(inner["step"])
        self.t.fill_(self.step_count)
        self.exp_avg[k].copy_(inner["exp_avg"])
        self.exp_avg_sq[k].copy_(inner["exp_avg_sq"])


@functools.lru_cache(maxsize=1)  # read once per process; callers copy it ({**adam_defaults(), ...})
def adam_defaults() -> dict:
    """torch.optim.Adam's param_group defaults, read from its signature: making an Adam would import torch._dynamo
    (its constructor is wrapped by torch._disable_dynamo), 1.3 s of every run's start on this project's CPU."""
    parameters = inspect.signature(torch.optim.Adam.__init__).parameters
    return {
        name: p.default
        for name, p in parameters.items()
        if name not in ("self", "params") and p.default is not inspect.Parameter.empty
    }
