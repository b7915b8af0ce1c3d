"""The paper's LeNet-300-100 results (its Appendix C, Tables 4 and 5), for comparison in reports.

Caveat from ../shared/REFERENCE.md: for the non-VarDrop methods the authors' evaluation did not apply the sparsity
mask, so their test errors are those of unmasked networks while their sparsity counts alpha < 0.05.
"""
from __future__ import annotations

import pandas as pd

LAYERS = ("fc1", "fc2", "fc3")  # 784x300, 300x100, 100x10
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


def table() -> pd.DataFrame:
    return pd.DataFrame([{"method": m, "lam": lam, "lr": lr, "test_error": err, "nonzero_fraction": nz,
                          **{f"nonzero_{name}": v for name, v in zip(LAYERS, layers)}}
                         for m, lam, lr, err, nz, layers in ROWS])
