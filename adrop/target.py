"""A target sparsity in one run: lam set during training so that the run ends at the fraction of the weights (or of
the multiply-adds) asked for.

Through the duality, lam is the price of the penalty, the multiplier of a constraint on it; holding a constraint on
the kept fraction instead of a fixed lam is the idea of constrained sparse training (Gallego-Posada et al., NeurIPS
2022, by dual ascent on the multiplier of L0 gates). For the methods whose keep rule reads lam directly (eta_hat's:
a group is kept while lam_g <= eta_hat(||w_g||) (1 / 0.05 - 1)), the multiplier need not be searched: after each
optimizer step, lam is set to the largest value at which the keep rule keeps the reference fraction of the weights
as they are (`bind`): the constraint's price for the current weights. It has no lag to wind up, and as the penalty
shrinks the dropped weights further, the price falls back by itself. The reference falls from 1 to the target over
the first `reach` of training along Zhu and Gupta's cubic (the gradual pruning schedule) and then holds, so that the
weights are shrunk at training's pace and settle before the learning rate ends.

Dual ascent on lam, tried first for every method (log lam stepped by the averaged log(kept / reference), rate
limited), winds up where a method's sparsity answers lam only through training (HardConcrete's gates, VarDrop's log
alpha, the eta-trick's eta): lam climbs for as long as the gates have not moved and then empties the network. Those
methods are refused a target (adrop.sparsifier.steered); their lam is found by lam_search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

COSTS = ("weights", "macs")
START_LAM = 1e-6  # where a steered lam starts unless given: a penalty too weak to matter at the first step


def refusal(method: str) -> str | None:
    """Why `method` cannot be given a target (one line), or None: it needs a keep rule that reads lam."""
    from adrop import methods
    from adrop.methods.base import Method

    cls = methods.get(method)
    if cls.critical_lam is not Method.critical_lam:
        return None
    if method == "magnitude_pruning":
        return "magnitude_pruning prunes to its own schedule: give its final_sparsity (1 - the kept fraction)"
    if cls.layer_penalty is Method.layer_penalty and cls.penalty is Method.penalty:
        return f"method {method!r} has no lam to steer to a target"
    return (
        f"method {method!r} cannot be given a target: its sparsity follows lam only through training (its gates, "
        "log alpha or eta are trained parameters), and a lam steered by the kept fraction runs away before they "
        "answer; set lam (adrop train's lam_search finds the lam for a sparsity)"
    )


TOLERANCE = 0.05  # a run that ends further than this (relative) from its target says so


def critical_lams(method, layers, positions=None) -> list[tuple[torch.Tensor, float]]:
    """Per layer, each group's critical lam (Method.critical_lam) and what one group counts for: its weights, or with
    `positions` (how often each layer's weights act per example: a target of multiply-adds) its multiply-adds (0 for
    a layer that does no product). What `bind` reads, for the library's Sparsifier and the runner's engine alike."""
    if positions is None:
        return [(method.critical_lam(layer), layer.group_size) for layer in layers]
    return [(method.critical_lam(layer), layer.group_size * (p or 0)) for layer, p in zip(layers, positions)]


def kept_groups(reference: float, groups: int, count: float) -> int:
    """How many of `groups` groups of `count` weights each keep at least the `reference` fraction: the fewest k with
    k * count >= reference * groups * count (in float64, as a cumulative sum compares), at least 1."""
    target = reference * (groups * count)
    k = min(max(math.ceil(target / count), 1), groups)
    while k > 1 and (k - 1) * count >= target:
        k -= 1
    while k < groups and k * count < target:
        k += 1
    return k


@dataclass
class LamController:
    """lam's path to a kept `fraction` by `total_steps` (see the module's docstring)."""

    fraction: float
    total_steps: int
    cost: str = "weights"
    reach: float = 0.6  # the reference reaches the target at this fraction of training, then holds
    path: list = field(default_factory=list)  # (step, lam, kept, reference) at each step

    def __post_init__(self):
        if not (isinstance(self.fraction, (int, float)) and 0 < self.fraction < 1):
            raise ValueError(f"target must be a fraction of the weights in (0, 1), got {self.fraction!r}")
        if self.cost not in COSTS:
            raise ValueError(f"target_cost must be one of {', '.join(COSTS)}, got {self.cost!r}")
        if not self.total_steps or self.total_steps < 1:
            raise ValueError(
                "a target needs total_steps (the optimizer steps of the run): lam is steered to reach it in time"
            )

    def reference(self, step: int) -> float:
        """The kept fraction asked for at this step: 1 at the start, the target from reach * total_steps on."""
        t = min(step / max(self.reach * self.total_steps, 1.0), 1.0)
        return self.fraction + (1.0 - self.fraction) * (1.0 - t) ** 3

    def bind(self, step: int, lam: float, critical: list[tuple[torch.Tensor, float]]) -> float:
        """The lam for this step: the largest at which the keep rule keeps the reference's fraction of the weights
        as they are. critical: per layer, each group's critical lam (Method.critical_lam) and what one group counts
        for (its weights, or its multiply-adds)."""
        reference = self.reference(step)
        sizes = {n for _, n in critical}
        if len(sizes) == 1:  # every group counts alike (per weight): the k-th largest, where the tensors are
            values = torch.cat([c.detach().flatten().float() for c, _ in critical])
            k = kept_groups(reference, len(values), float(sizes.pop()))
            value = float(torch.kthvalue(values, len(values) - k + 1).values)
        else:
            values = torch.cat([c.detach().flatten().double().cpu() for c, _ in critical])
            counts = torch.cat([torch.full((c.numel(),), float(n), dtype=torch.float64) for c, n in critical])
            order = values.argsort(descending=True)
            cumulative = counts[order].cumsum(0)
            index = int(torch.searchsorted(cumulative, reference * float(cumulative[-1])))
            value = float(values[order][min(index, len(values) - 1)])
        if math.isfinite(value) and value > 0:  # else every group is kept for sure, or the fraction is past the zeros
            lam = value * (1.0 - 1e-6)  # just under: the group at the boundary is kept
        return lam

    def record(self, step: int, lam: float, kept: float) -> None:
        self.path.append((step, lam, kept, self.reference(step)))

    def missed(self, kept: float) -> str | None:
        """Where the run ended further than TOLERANCE from its target, the line that says so; else None."""
        if abs(kept / self.fraction - 1.0) <= TOLERANCE:
            return None
        lam = self.path[-1][1] if self.path else float("nan")
        return (
            f"target {self.fraction:.4g} of the {self.cost} not reached: {kept:.4g} kept at the end of "
            f"{self.total_steps} steps (lam {lam:.3g})"
        )

    def state_dict(self) -> dict:
        return {"path": [list(row) for row in self.path]}

    def load_state_dict(self, state: dict) -> None:
        self.path = [tuple(row) for row in state.get("path", [])]
