"""What a sparse network costs, per layer and in total, as the Sparse VD and L0 papers count it.

    compression   |W| / |W != 0|: how many times fewer weights (null when a layer keeps none)
    dense_bytes   the float32 layer: weights and bias (where it has one)
    csr_bytes     the same layer with its weight matrix in compressed sparse row form (float32 values, int32 column
                  indices and row pointers; a conv kernel as out x (in kh kw) rows), and the bias
    dense_macs    multiply-adds of one example's forward pass through the layer, dense
    sparse_macs   the same counting only nonzero weights (a conv weight acts once per output position); both null
                  for a weight that does no product (an embedding's rows are looked up, a class token added)

Computed from the shapes and nonzero counts that evaluation reports, so they describe exactly weights.npz.
"""

from __future__ import annotations

import math

FLOAT, INDEX = 4, 4  # bytes: float32 values, int32 indices (scipy.sparse's index type at these sizes)
COLUMNS = ["compression", "dense_bytes", "csr_bytes", "dense_macs", "sparse_macs"]


def layer_cost(shape, nonzero: int, positions: int | None = 1, bias: bool = True) -> dict:
    rows, total = shape[0], math.prod(shape)
    biases = rows if bias else 0
    return {
        "compression": total / nonzero if nonzero else None,
        "dense_bytes": FLOAT * (total + biases),
        "csr_bytes": (FLOAT + INDEX) * nonzero + INDEX * (rows + 1) + FLOAT * biases,
        "dense_macs": None if positions is None else total * positions,
        "sparse_macs": None if positions is None else nonzero * positions,
    }


def network_cost(layers, positions, biases=None) -> dict:
    """Totals over layers [(name, shape, nonzero, total)], with `positions` per layer (1 for Linear) and whether each
    has a bias (all, by default); multiply-adds over the layers that do products."""
    biases = [True] * len(layers) if biases is None else biases
    costs = [layer_cost(shape, nz, p, b) for (_, shape, nz, _), p, b in zip(layers, positions, biases)]
    nonzero, total = sum(l[2] for l in layers), sum(l[3] for l in layers)
    out = {key: sum(c[key] for c in costs if c[key] is not None) for key in COLUMNS[1:]}
    return {"compression": total / nonzero if nonzero else None, **out}
