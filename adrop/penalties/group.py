"""The penalty of a whole group of weights, c Omega(||w_g||_2) with c = sqrt(|g|): structure=neuron's penalty
(adrop.methods) and the linear lab's (adrop.linear.groups), as a penalty of the group's norm r = ||w_g||.

Its eta-trick follows from the weight's: c Omega(r) = min over eta of c (r^2 / (2 eta) + f(eta) / 2), and with
e = eta / c, min over e of r^2 / (2 e) + c f(c e) / 2. So the group penalty has

    eta_hat_G(r) = eta_hat(r) / c,        f_G(e) = c f(c e),

and a group's keep probability e / (e + lam) is eta_hat(r) / (eta_hat(r) + lam c): the one adrop train uses.
"""

from __future__ import annotations

import math

import numpy as np


class GroupPenalty:
    """`penalty` (a separable adrop.penalties one) applied to the norm of a group of `size` weights, weighted
    sqrt(size). Evaluated at r >= 0, the group's norm."""

    separable = True

    def __init__(self, penalty, size: int):
        if int(size) != size or size < 1:
            raise ValueError(f"a group has a whole number >= 1 of weights, got {size}")
        if not penalty.separable:
            raise ValueError(f"{penalty.name} is not separable: a group penalty needs a penalty of one number")
        self.penalty, self.size, self.c = penalty, int(size), math.sqrt(size)
        self.name, self.params = penalty.name, {**penalty.params, "group_size": self.size}

    def label(self) -> str:
        return f"{self.penalty.label()} of ||w_g||, |g|={self.size}"

    def omega_elementwise(self, r):
        return self.c * self.penalty.omega_elementwise(r)

    def omega(self, r):
        return self.omega_elementwise(r).sum(axis=-1)

    def eta_hat(self, r):
        return self.penalty.eta_hat(r) / self.c

    def f_elementwise(self, e):
        return self.c * self.penalty.f_elementwise(self.c * np.asarray(e, float))

    def f(self, e):
        return self.f_elementwise(e).sum(axis=-1)
