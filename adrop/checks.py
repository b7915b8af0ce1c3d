"""The checks of the arguments that `adrop.sparsify` and `adrop train` share: one set, so that the library and the
runner refuse the same values with the same line. Each returns the problem in one line, or None."""

from __future__ import annotations

import math


def lam_problem(lam) -> str | None:
    """lam, the penalty's weight per example: a finite number >= 0 (a negative lam rewards dense weights and they
    grow without bound; NaN and inf train nothing meaningful)."""
    try:
        value = float(lam)
    except (TypeError, ValueError):
        return f"lam must be a number >= 0, got {lam!r}"
    if not (value >= 0 and math.isfinite(value)):
        return f"lam must be >= 0, got {lam}"
    return None


def lam_scale_problem(scales: dict, lam: float, method: str) -> str | None:
    """lam_scale's multipliers: finite and positive, and only where lam > 0 (they multiply lam)."""
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in scales.values()):
        return f"lam_scale's multipliers must be positive, got {dict(scales)}"
    if scales and not lam > 0:
        return f"lam_scale multiplies lam, and method={method} trains with lam 0 here: it would change nothing"
    return None
