"""adrop: adaptive dropout as regularisation (LeJeune, Javadi, Baraniuk, NeurIPS 2021), made usable.

adrop.sparsify     any method in your own training loop: adrop.sparsify(model, method=...), adrop.strip
                   (adrop/sparsifier.py)
adrop.penalties    the penalty calculus: Omega, its eta-trick dual f, eta_hat; effective penalties of dropout
adrop.cli          the `adrop` command (`adrop --help`)
"""

__version__ = "0.1.0"

__all__ = ["sparsify", "strip", "Sparsifier", "SparsifyError"]


def __getattr__(name):
    """adrop.sparsify, adrop.strip, ...: imported on first use, so that `adrop --help` does not import torch."""
    if name in __all__:
        import importlib

        value = getattr(importlib.import_module("adrop.sparsifier"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'adrop' has no attribute {name!r}")
