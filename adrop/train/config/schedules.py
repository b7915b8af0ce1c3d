"""The learning-rate and penalty-weight schedules, as pure functions of the step (one run's settings in, a float
out), so that a stack of configurations evaluates each one's own and tests pin them down.

    lr_at       linear: lr decays linearly to 0 over training (the paper); with decay_start = d, flat for the first
                fraction d, then linear to 0 (Molchanov et al.: d = 0.5); constant: lr throughout;
                linear_per_epoch: lr (1 - e/E) through epoch e = 0..E-1, the last epoch at lr/E (the authors' code:
                it decays per epoch, not per step to 0)
    lam_at      lam times the penalty term's weight: 0 before warm-up step a, a linear ramp to 1 at step b, then 1
"""

from __future__ import annotations

SCHEDULES = ("linear", "constant", "linear_per_epoch")


def lr_at(
    step: int, total_steps: int, lr: float, schedule: str = "linear", decay_start: float = 0.0, steps_per_epoch: int = 1
) -> float:
    if schedule == "constant":
        return lr
    if schedule == "linear_per_epoch":
        return lr * max(0.0, 1.0 - (step // steps_per_epoch) / (total_steps // steps_per_epoch))
    left = max(0.0, 1.0 - step / total_steps)  # fraction of training left
    if decay_start:
        return lr * min(1.0, left / (1.0 - decay_start))
    return lr * left


def lam_at(step: int, lam: float, warmup_steps: tuple[float, float] = (0.0, 0.0)) -> float:
    a, b = warmup_steps
    if step >= b:
        return lam
    return 0.0 if step < a else lam * ((step - a) / (b - a))
