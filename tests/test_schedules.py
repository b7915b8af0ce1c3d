"""The schedules are pure functions of the step (adrop.train.config.schedules)."""

import pytest

from adrop.train.config.schedules import lam_at, lr_at


def test_linear_decay_to_zero_and_constant():
    assert [lr_at(s, 100, 1e-3) for s in (0, 50, 100, 150)] == [1e-3, 5e-4, 0.0, 0.0]
    assert lr_at(73, 100, 2e-3, "constant") == 2e-3


def test_linear_per_epoch_is_the_authors_decay():
    """lr (1 - e/E) through epoch e, constant within it, the last epoch at lr/E (4 epochs of 10 steps)."""
    values = [lr_at(s, 40, 1.0, "linear_per_epoch", steps_per_epoch=10) for s in (0, 9, 10, 25, 39, 40)]
    assert values == [1.0, 1.0, 0.75, 0.5, 0.25, 0.0]


def test_flat_then_linear():
    """Molchanov et al.: flat for the first half, then linear to 0."""
    values = [lr_at(s, 100, 1.0, decay_start=0.5) for s in (0, 25, 50, 75, 100)]
    assert values[:3] == [1.0, 1.0, 1.0] and values[3] == pytest.approx(0.5) and values[4] == 0.0


def test_penalty_warmup_ramp():
    assert [lam_at(s, 2.0, (10, 30)) for s in (0, 9, 10, 20, 30, 99)] == [0.0, 0.0, 0.0, 1.0, 2.0, 2.0]
    assert lam_at(0, 2.0) == 2.0  # no warm-up: the full lam from the first step
