"""The paper's LeNet-300-100 results (its Appendix C, Tables 4 and 5), and the published LeNet-300-100 and LeNet-5
points of the sparsification literature, for comparison in reports.

Caveat: for the non-VarDrop methods the authors' evaluation did not apply the sparsity
mask, so their test errors are those of unmasked networks while their sparsity counts alpha < 0.05.
"""

from __future__ import annotations

import pandas as pd

LAYERS = ("fc1", "fc2", "fc3")  # 784x300, 300x100, 100x10
EPOCHS = 200  # the length of the paper's trainings (its Appendix C)
MODELS = ("lenet_300_100", "")  # the runs the paper's rows compare with ("": a summary that does not name its model)
ROWS = [  # method, lam, lr, test error, nonzero fraction, per layer
    ("vardrop_lr_ar", 1 / 60000, 1e-4, 0.0321, 0.024, (0.020, 0.035, 0.502)),
    ("vardrop_lr", 1 / 60000, 1e-3, 0.0141, 0.088, (0.072, 0.189, 0.999)),
    ("vardrop", 1 / 60000, 1e-3, 0.0154, 0.595, (0.568, 0.788, 1.000)),
    ("eta_trick", 1e-3, 1e-3, 0.0216, 0.051, (0.054, 0.026, 0.206)),
    ("adaprox", 1e-3, 1e-4, 0.0294, 0.028, (0.026, 0.024, 0.399)),
    ("adatikhonov", 1e-3, 1e-4, 0.0288, 0.018, (0.016, 0.025, 0.460)),
    ("logsum", 1e-3, 1e-4, 0.0293, 0.019, (0.016, 0.025, 0.479)),
]
SPARSE_VD = ("Sparse VD (Molchanov et al. 2017)", 0.0192, 0.0147)  # test error, nonzero fraction

# LeNet-5-Caffe on MNIST, the Sparse VD paper's Table 1 (Molchanov et al. 2017): test error, |W| / |W != 0| as a
# fraction nonzero (1 / compression)
LENET5 = ("lenet5",)
LENET5_PUBLISHED = [
    ("Sparse VD (Molchanov et al. 2017)", 0.0075, 1 / 280),
    ("Pruning (Han et al. 2015)", 0.0077, 1 / 12),
    ("Dynamic Network Surgery (Guo et al. 2016)", 0.0091, 1 / 111),
    ("Soft weight sharing (Ullrich et al. 2017)", 0.0097, 1 / 200),
]


def published(models) -> list[tuple[str, float, float]]:
    """The literature's points for the networks among `models` (model names; "" for a run that does not say)."""
    models = set(models)
    return ([SPARSE_VD] if models & set(MODELS) else []) + (LENET5_PUBLISHED if models & set(LENET5) else [])


def table() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "method": m,
                "lam": lam,
                "lr": lr,
                "test_error": err,
                "nonzero_fraction": nz,
                **{f"nonzero_{name}": v for name, v in zip(LAYERS, layers)},
            }
            for m, lam, lr, err, nz, layers in ROWS
        ]
    )
