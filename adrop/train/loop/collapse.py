"""Whether a trained network collapsed: its output no longer depends on its input, so it answers every example
alike (a method or a lam that emptied a layer, or kept units that no longer connect). Such a run fails instead of
completing.

The rule: the logits of the network with its final effective weights, in eval mode, for the first validation batch
and for a batch of zeros agree to within TOLERANCE for every example. It holds for any network: a chain with a layer
that keeps no weight (or no unit joining its neighbours' kept units) always fails it, every path crossing every layer;
a ResNet whose empty block is bypassed by its skip connection still depends on its input and passes. A network
whose units are all inactive on both batches fails it too: it answers that batch alike, which is collapse as well.
The message names every sparse layer that keeps no weight (which of them cut the paths depends on the network).

Under lam_search a collapsed trial is a lam beyond the target's: the search takes it as keeping nothing and the job's
line says so, on stdout, not as an error (`searched`, `probe_line`).
"""

from __future__ import annotations

import torch

from adrop import collapse as library
from adrop.collapse import TOLERANCE

BATCH = 256  # validation examples compared: enough that an input-dependent network differs on one
# the message's advice: what makes the method sparser (lam for the rest)
ADVICE = {
    "magnitude_pruning": "lower method.params.final_sparsity (or raise method.params.min_kept)",
    "fixed_mask": "start from a run that kept a path (init_from)",
    "random_pruning": "raise method.params.keep",
    "dense": "lower lr",
}


@torch.no_grad()
def collapsed(network, state: dict, x: torch.Tensor, method: str) -> str | None:
    """Why the network (adrop.train.nets.network's, unstacked) with these tensors (one configuration's effective
    weights) collapsed, in one line, or None where its output depends on the inputs x (adrop.collapse.message)."""
    x = x[:BATCH]
    depends = not torch.allclose(
        network.predict(x, state), network.predict(torch.zeros_like(x), state), rtol=0, atol=TOLERANCE
    )
    empty = [] if depends else [name for name in network.names if not state[network.key[name]].any()]
    return library.message(empty, ADVICE.get(method, "lower lam"), depends)


def searched(sweeper) -> bool:
    """Whether a job's sweeper (its hydra.sweeper config) is lam_search, for which a collapsed network is a bracket's
    end, not a failure."""
    return str(sweeper.get("_target_", "")).endswith(".LamSearchSweeper")


def probe_line(folder_name: str, summary: dict) -> str:
    """A lam_search trial's line for its collapsed network."""
    return f"{folder_name}: {summary['error'].split(';')[0]} (lam_search takes it as keeping nothing)"
