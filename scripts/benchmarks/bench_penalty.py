"""Benchmark: how long Figure 1 takes, and what tabulating the expensive 1-D integral buys.

    python scripts/benchmarks/bench_penalty.py

Prints (1) the wall time of `adrop penalty --plot`'s work (curves for both panels, then drawing), cold (the Dawson
table built) and warm, and (2) side by side in this one run: variational dropout's Omega at the same points with f
from the cached table versus f by adaptive quadrature (scipy.integrate.quad) at every evaluation, and their ratio.
"""

from __future__ import annotations

import os
import platform
import time
import warnings

import numpy as np
from scipy.integrate import quad
from scipy.special import dawsn


def seconds(fn, repeat=1):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    t0 = time.perf_counter()
    from adrop import penalties
    from adrop.penalties import figure1, variational_dropout

    import_s = time.perf_counter() - t0

    cold = seconds(figure1.curves)
    warm = seconds(figure1.curves, repeat=3)
    table = figure1.curves()
    draw = seconds(lambda: figure1.draw(table).savefig(os.devnull, format="png", dpi=150))

    vd = penalties.get("variational_dropout")
    x = np.linspace(0.05, 3.0, 8)

    def quad_f(eta):  # the untabulated route: one adaptive quadrature per evaluation of f
        flat = [
            quad(lambda t: dawsn(np.sqrt(t / 2)) / np.sqrt(t / 2), 0, e, limit=200)[0] if np.isfinite(e) else np.inf
            for e in np.ravel(eta)
        ]
        return np.reshape(flat, np.shape(eta))

    class QuadVD(variational_dropout.VariationalDropout):
        def _f(self, eta):
            return quad_f(eta / self.lam)

    slow = QuadVD()
    warnings.filterwarnings("ignore", message="The maximum number of subdivisions")  # quad at eta ~ 1e300
    t_table = seconds(lambda: vd.omega_elementwise(x), repeat=3)
    t_quad = seconds(lambda: slow.omega_elementwise(x))
    agree = np.max(np.abs(vd.omega_elementwise(x) - slow.omega_elementwise(x)))

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    print(f"import adrop.penalties            {import_s:8.3f} s")
    print(f"Figure 1 curves, cold (tables)    {cold:8.3f} s   ({len(table)} rows, {table.method.nunique()} methods)")
    print(f"Figure 1 curves, warm             {warm:8.3f} s")
    print(f"Figure 1 drawing (PNG)            {draw:8.3f} s")
    print(f"Figure 1 total, cold              {import_s + cold + draw:8.3f} s")
    print(f"VD Omega at {x.size} points, tabulated  {t_table:8.4f} s")
    print(f"VD Omega at {x.size} points, quad       {t_quad:8.4f} s")
    print(f"speed-up of the table: {t_quad / t_table:.0f}x  (max |difference| {agree:.1e})")


if __name__ == "__main__":
    main()
