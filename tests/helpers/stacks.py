"""Stacks, compiled engines and a user's loop against the reference: how far float32 rounding lets their weights
part (assert_follows), the noise of the noisy methods held fixed (HeldNoise), configurations that differ per stack
member (three)."""

import numpy as np
import torch

import adrop.methods.base as method_base


class HeldNoise(method_base.Noise):
    """The noise of a noisy method held fixed: Gaussian draws 0, uniform draws 0.5 (a HardConcrete gate at its
    median)."""

    def gaussian_like(self, t):
        return torch.zeros_like(t)

    def uniform_like(self, t):
        return torch.full_like(t, 0.5)


def three(make, method, extra=()):
    """Three configurations of `method` that differ in seed, lam and lr."""
    cfgs = []
    for i, lr in enumerate((1e-2, 2e-2, 5e-3)):
        lam = make(f"method={method}").method.lam * (1 + i)
        cfgs.append(
            make(f"method={method}", f"seed={i}", f"lam={lam}", f"lr={lr}", "epochs=1", "batch_size=256", *extra)
        )
    return cfgs


def relative_gap(a, b):
    return max(float(np.abs(a[k] - b[k]).max() / max(np.abs(a[k]).max(), 1e-30)) for k in a.files)


FLOAT32_ROUNDOFF = 2.0**-24
FLIPS = 1e-3  # at most this fraction of an array's coordinates may part ways (below)


def assert_follows(a, b, steps: int, longest_product: int, lr_sum: float):
    """weights.npz `b` follows `a` as float32 rounding allows, over `steps` Adam steps whose longest dot product has
    `longest_product` terms and whose learning rates add up to `lr_sum` (a tolerance derived, not tuned to a build):

    - every coordinate but a few is within steps x sqrt(longest_product) x 2^-24 x 4 of `a`, relative to the array's
      largest value: a product rounds within about sqrt(n) units of its last place, and the gaps add up over steps;
    - the few others (at most FLIPS of an array) are coordinates whose gradient is close to 0, where rounding decides
      its sign and Adam's normalised step (about lr either way) follows it: they differ by at most 2 x 3 x lr_sum."""
    tolerance = 4 * steps * np.sqrt(longest_product) * FLOAT32_ROUNDOFF
    for key in a.files:
        scale = max(float(np.abs(a[key]).max()), 1e-30)
        gap = np.abs(a[key] - b[key])
        parted = gap / scale > tolerance
        assert parted.mean() <= FLIPS, (key, int(parted.sum()), float(gap.max() / scale), tolerance)
        assert gap.max() <= max(tolerance * scale, 6 * lr_sum), (key, float(gap.max()), lr_sum)


def assert_same_weights(folders, others, tolerance):
    """Each pair of runs' weights.npz within `tolerance`, relative to the largest weight of each array."""
    for a, b in zip(folders, others):
        gap = relative_gap(np.load(a / "weights.npz"), np.load(b / "weights.npz"))
        assert gap < tolerance, (a.name, b.name, gap)


def with_compile(cfgs):
    """Copies of the configurations with compile=true."""
    out = [c.copy() for c in cfgs]
    for c in out:
        c.compile = True
    return out
