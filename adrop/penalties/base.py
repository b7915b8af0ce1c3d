"""What a penalty is in adrop, and the registry that finds one by name.

A penalty Omega comes with its eta-trick dual f and the minimiser eta_hat (paper eqs. 5 and 6):

    Omega(w) = min_{eta in H} 1/2 (w^T diag(eta)^-1 w + f(eta)),      eta_hat(w) = the argmin.

All three work on float64 arrays and treat the last axis as the vector: `omega(w)` and `f(eta)` return one value per
vector, `eta_hat(w)` has the shape of w. A 0-d input is a vector of length one.

A separable penalty only states its scalar pieces on x = |w| (`_omega`, `_f`, `_eta_hat`); whichever it leaves out is
computed by the generic machinery of `duality` (Omega and eta_hat by minimising over the dual curve, f by the
Legendre-Fenchel transform). It must state `_omega` or `_f` (or override `_dual_curve`).
"""

from __future__ import annotations

import inspect
from typing import ClassVar

import numpy as np

from . import duality
from .array_ops import is_tensor, ops
from .duality import quiet

REGISTRY: dict[str, type["Penalty"]] = {}


def register(cls):
    """Class decorator: make a penalty available to `get(cls.name, ...)`."""
    REGISTRY[cls.name] = cls
    return cls


def names() -> list[str]:
    return sorted(REGISTRY)


def parameters(name: str) -> dict[str, object]:
    """The parameters of a registered penalty with their defaults."""
    sig = inspect.signature(_lookup(name).__init__)
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name: p.default for p in list(sig.parameters.values())[1:] if p.kind in named}


def _lookup(name: str) -> type["Penalty"]:
    if name not in REGISTRY:
        raise ValueError(f"unknown penalty {name!r}; valid names: {', '.join(names())}")
    return REGISTRY[name]


def get(name: str, **params) -> "Penalty":
    """The penalty `name` with the given parameters, e.g. get("logsum", eps=2.0)."""
    cls = _lookup(name)
    valid = parameters(name)
    unknown = sorted(set(params) - set(valid))
    if unknown:
        listed = ", ".join(valid) if valid else "none"
        raise ValueError(f"penalty {name!r} has no parameter {unknown[0]!r}; its parameters: {listed}")
    return cls(**params)


def as_float(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def require(ok: bool, name: str, value, rule: str) -> None:
    """Raise a ValueError naming the parameter when a rule on it fails."""
    if not ok:
        raise ValueError(f"parameter {name}={value!r} is invalid: {rule}")


def positive(name: str, value) -> float:
    require(np.isfinite(value) and value > 0, name, value, "must be > 0")
    return float(value)


class Penalty:
    """Base of every penalty; see the module docstring for the contract."""

    name: ClassVar[str] = ""
    separable: ClassVar[bool] = True
    closed_form: ClassVar[bool] = True  # Omega, f and eta_hat all in closed form
    summary: ClassVar[str] = ""

    def __init__(self, **params):
        self.params = params

    def label(self) -> str:
        inner = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        return f"{self.name}({inner})" if inner else self.name

    def __repr__(self) -> str:
        return f"<penalty {self.label()}>"

    def domain(self) -> tuple[float, float]:
        """H for one coordinate, as (lo, hi); f is inf outside it."""
        return 0.0, np.inf

    def outside(self, eta):
        """Where eta lies outside H (NaN is not: it stays NaN). f is +inf there, for every penalty, whatever its
        formula would give (a closed form read off on H may return -1, 0, -inf or NaN outside it)."""
        lo, hi = self.domain()
        return (eta < lo) | (eta > hi)

    # Separable penalties: the vector functions are sums (omega, f) or maps (eta_hat) of the scalar ones.
    def omega(self, w) -> np.ndarray:
        return self.omega_elementwise(w).sum(axis=-1)

    def f(self, eta) -> np.ndarray:
        return self.f_elementwise(eta).sum(axis=-1)

    def omega_elementwise(self, w) -> np.ndarray:
        if is_tensor(w):
            return self._closed("_omega")(w.abs())
        with quiet():
            return self._omega(np.abs(np.atleast_1d(as_float(w))))

    def f_elementwise(self, eta) -> np.ndarray:
        if is_tensor(eta):
            return ops(eta).where(self.outside(eta), np.inf, self._closed("_f")(eta))
        eta = np.atleast_1d(as_float(eta))
        out, inside = np.full(eta.shape, np.inf), ~self.outside(eta)
        if inside.any():  # only there: a numerical dual (an LF transform) costs ~0.1 s a call
            with quiet():
                out[inside] = self._f(eta[inside])
        return out

    def eta_hat(self, w) -> np.ndarray:
        if is_tensor(w):
            return self._closed("_eta_hat")(w.abs())
        x = np.abs(np.atleast_1d(as_float(w)))
        with quiet():
            return nonzero_where_w_is(x, self._eta_hat(x))

    def _closed(self, piece: str):
        """The closed-form `piece` for torch tensors (training); the numerical routes are NumPy only."""
        if getattr(type(self), piece) is getattr(Penalty, piece):
            closed = ", ".join(n for n, c in REGISTRY.items() if c.separable and c.closed_form)
            raise TypeError(
                f"penalty {self.name} has no closed-form {piece.strip('_')}: torch tensors need one "
                f"(closed forms: {closed})"
            )
        return getattr(self, piece)

    # The generic routes, public so that any closed form can be checked against them.
    def omega_via_dual(self, w):
        """(Omega(w), eta_hat(w)) elementwise by minimising 1/2 (w^2/eta + f) numerically over the dual curve."""
        with quiet():
            return duality.omega_from_dual(self._dual_curve, self._dual_bounds(), np.atleast_1d(as_float(w)))

    def f_via_transform(self, eta):
        """f(eta) elementwise by the Legendre-Fenchel transform of Omega."""
        return duality.f_from_omega(self.omega_elementwise, np.atleast_1d(as_float(eta)))

    def omega_via_eta_hat(self, w):
        """Omega(w) elementwise by Corollary 1: Omega(0) + int_0^|w| s / eta_hat(s) ds."""
        x = np.abs(np.atleast_1d(as_float(w)))
        return self.omega_elementwise(0.0) + duality.omega_from_eta_hat(self.eta_hat, x, self.knots())

    def knots(self) -> tuple[float, ...]:
        """The |w| at which eta_hat has a kink or a jump (used by Corollary 1's integral)."""
        return ()

    # The generic machinery behind whatever a subclass does not state in closed form.
    def _omega(self, x):
        return self.omega_via_dual(x)[0]

    def _eta_hat(self, x):
        return self.omega_via_dual(x)[1]

    def _f(self, eta):
        return self.f_via_transform(eta)

    def _dual_curve(self, t):
        eta = np.exp(t)
        return eta, self._f(eta)

    def _dual_bounds(self):
        return duality.log_eta_bounds(self._f, *self.domain())


def nonzero_where_w_is(x, eta):
    """eta_hat is 0 only where w is: an eta that underflowed for a tiny nonzero w (|w|^(2-p) at |w| = 1e-300, say)
    becomes the smallest positive float, so that w^2/eta stays finite."""
    return np.where((x > 0) & (eta == 0), np.nextafter(0.0, 1.0), eta)


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)
