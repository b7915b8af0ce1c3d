"""adrop: adaptive dropout as regularisation (LeJeune, Javadi, Baraniuk, NeurIPS 2021), made usable.

    adrop.penalties    the penalty calculus: Omega, its eta-trick dual f, eta_hat; effective penalties of dropout
    adrop.cli          the `adrop` command (`adrop --help`)
"""
__version__ = "0.1.0"
