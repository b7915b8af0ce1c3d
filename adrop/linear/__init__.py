"""The linear-regression lab, where the duality of adaptive dropout and regularisation is exact.

problem.py            L(w) = 1/(2n)||y - Xw||^2, validation, standardise()
data.py               make_sparse_regression(): synthetic sparse data with standardised columns
tikhonov_solve.py     the exact fixed-eta ridge solve (the inner step of the eta-trick)
solvers.py            irls, adaprox, gradient
adaptive_dropout.py   the stochastic adaptive dropout method (plain and Algorithm 1)
dropout_tikhonov.py   Monte Carlo check that dropout is Tikhonov regularisation (eq. 4)
fit.py                fit(X, y, penalty=..., lam=..., solver=...)
"""

from .data import SparseRegression, make_sparse_regression
from .fit import SOLVERS, FitResult, fit
from .problem import Problem, standardise

__all__ = ["FitResult", "Problem", "SOLVERS", "SparseRegression", "fit", "make_sparse_regression", "standardise"]
