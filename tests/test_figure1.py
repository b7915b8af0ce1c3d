"""Figure 1's data: both panels, and the right one against the separable formula."""

import numpy as np

from adrop import penalties
from adrop.penalties import figure1


def test_k_sparse_vectors_have_unit_norm_and_k_nonzeros():
    v = figure1.k_sparse(32)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0) and np.array_equal(np.count_nonzero(v, axis=1), np.arange(1, 33))


def test_curves_table_and_k_sparse_panel_match_the_separable_formula():
    table = figure1.curves(w_max=2.0, points=21)
    assert list(table.columns) == figure1.COLUMNS
    for spec in figure1.PAPER:
        pen = spec.penalty()
        ks = table[(table.panel == "k_sparse") & (table.method == spec.method)].sort_values("x")
        k = ks.x.to_numpy()
        zero = pen.omega_elementwise(0.0)[0]
        formula = k * pen.omega_elementwise(1 / np.sqrt(k)) + (32 - k) * zero - 32 * zero
        assert np.allclose(ks.omega, spec.weight * formula, rtol=1e-9, atol=1e-12), spec.method
        sep = table[(table.panel == "separable") & (table.method == spec.method)]
        assert sep.omega.iloc[0] == 0.0  # shifted so that Omega(0) = 0
    ht = table[table.method == "hard_thresh"].sort_values("x")
    assert np.all(ht.omega[ht.x <= 16] == 0) and np.all(np.isinf(ht.omega[ht.x > 16]))


def test_logsum_is_drawn_at_lam_2_beside_variational_dropout():
    spec = next(s for s in figure1.PAPER if s.method == "logsum")
    assert spec.weight == 2.0 and spec.params == {"eps": 2.0}
    # both have slope 1 at the origin: VD ~ |w|/sqrt(lam), 2 log(1 + |w|/2) ~ |w|
    vd = penalties.get("variational_dropout")
    assert np.isclose(vd.omega_elementwise(1e-6)[0] / 1e-6, 1.0, rtol=1e-4)
