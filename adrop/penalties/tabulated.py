"""eta_hat on torch tensors for a penalty whose eta_hat is numerical (the variational dropout dual), so that
training can use it (adaptive dropout with keep probability eta_hat / (eta_hat + lam), AdaProx's prox).

The penalty's own numerical route (float64) fills a table of log eta_hat against log |w| once, 40 knots a decade over
|w| in [1e-8, 1e4]; a call interpolates linearly in log-log space, i.e. a power law between knots, and beyond the
ends the end segments' power laws (eta_hat ~ c |w|^k near 0 and at infinity for the penalties this accepts). One
searchsorted per call. eta_hat(0) = 0, as the calculus has it (a zero weight is dropped). Accepted: separable
penalties whose eta_hat is finite, positive and nondecreasing on the grid; hard thresholds (0 or inf) are not.
"""

from __future__ import annotations

import numpy as np
import torch

GRID = np.logspace(-8, 4, 12 * 40 + 1)


class TabulatedEtaHat:
    def __init__(self, penalty):
        if not penalty.separable:
            raise ValueError(f"penalty {penalty.name!r} is not separable: no eta_hat(|w|) to tabulate")
        eta = np.asarray(penalty.eta_hat(GRID), dtype=np.float64)
        if not (np.all(np.isfinite(eta)) and np.all(eta > 0) and np.all(np.diff(eta) >= 0)):
            raise ValueError(
                f"penalty {penalty.name!r}: its eta_hat is not finite, positive and nondecreasing on "
                "|w| in [1e-8, 1e4], so it cannot be tabulated for training"
            )
        self.penalty, self.name = penalty, penalty.name
        log_w, log_eta = np.log(GRID), np.log(eta)
        slope = np.diff(log_eta) / np.diff(log_w)
        self._table = (log_w[:-1], log_eta[:-1], slope)  # segment i: from knot i, with its slope
        self._cache: dict = {}

    def tables(self, like: torch.Tensor):
        key = (like.dtype, like.device)
        if key not in self._cache:
            self._cache[key] = tuple(torch.as_tensor(t, dtype=like.dtype, device=like.device) for t in self._table)
        return self._cache[key]

    def eta_hat(self, w: torch.Tensor) -> torch.Tensor:
        x = w.abs()
        log_w, log_eta, slope = self.tables(x)
        lx = torch.log(torch.where(x > 0, x, torch.ones_like(x)))
        i = (torch.searchsorted(log_w, lx.reshape(-1), right=True) - 1).clamp(0, len(log_w) - 1).reshape(x.shape)
        eta = torch.exp(log_eta[i] + slope[i] * (lx - log_w[i]))
        return torch.where(x > 0, eta, torch.zeros_like(eta))
