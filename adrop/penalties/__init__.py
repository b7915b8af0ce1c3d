"""The penalty calculus: penalties Omega, their eta-trick duals f, and the minimisers eta_hat.

    from adrop import penalties
    pen = penalties.get("logsum", eps=2.0)
    pen.omega(w), pen.f(eta), pen.eta_hat(w)

Closed forms of the paper's appendix table live in `closed_form`; the effective penalties of dropout methods
(Table 2, Sec. 4) in one module each; the generic dual machinery in `duality`; quadrature in `quadrature`.
"""

from . import bernoulli_l0, closed_form, hard_concrete, standout, variational_dropout  # noqa: F401  (register)
from .base import REGISTRY, Penalty, get, names, parameters

__all__ = ["Penalty", "REGISTRY", "get", "names", "parameters"]
