"""Finding penalties by name, and bad input."""

import numpy as np
import pytest

from adrop import penalties


def test_unknown_name_lists_the_valid_names():
    with pytest.raises(ValueError, match="unknown penalty 'lasso'.*l1.*logsum.*variational_dropout"):
        penalties.get("lasso")


def test_unknown_parameter_is_named():
    with pytest.raises(ValueError, match="no parameter 'epsilon'.*eps"):
        penalties.get("logsum", epsilon=1.0)


@pytest.mark.parametrize(
    "name,params,param",
    [
        ("logsum", {"eps": 0.0}, "eps"),
        ("huber", {"eps": -1.0}, "eps"),
        ("lp", {"p": 2.0}, "p"),
        ("lpp", {"p": 0.0}, "p"),
        ("scad", {"a": 2.0}, "a"),
        ("scad", {"lam": 0.0}, "lam"),
        ("mcp", {"a": 0.0}, "a"),
        ("hard_thresh", {"k": -1}, "k"),
        ("hard_thresh", {"k": 1.5}, "k"),
        ("elastic_net", {"theta": 1.0}, "theta"),
        ("variational_dropout", {"lam": 0.0}, "lam"),
        ("hard_concrete", {"gamma": 0.1}, "gamma"),
        ("hard_concrete", {"zeta": 0.9}, "zeta"),
        ("bernoulli_l0", {"lam": -1.0}, "lam"),
        ("standout", {"w2": 0.0}, "w2"),
        ("logsum", {"eps": float("nan")}, "eps"),
    ],
)
def test_invalid_parameters_raise_value_error_naming_them(name, params, param):
    with pytest.raises(ValueError, match=f"parameter {param}="):
        penalties.get(name, **params)


def test_every_penalty_is_vectorised_over_leading_axes():
    w = np.random.default_rng(1).normal(size=(3, 4, 5))
    for name in penalties.names():
        pen = penalties.get(name)
        assert pen.omega(w).shape == (3, 4) and pen.eta_hat(w).shape == w.shape
        assert np.allclose(pen.omega(w)[1, 2], pen.omega(w[1, 2]), equal_nan=True)


def test_non_separable_penalty_refuses_elementwise_use():
    with pytest.raises(TypeError, match="not separable"):
        penalties.get("lp").omega_elementwise(np.ones(3))
