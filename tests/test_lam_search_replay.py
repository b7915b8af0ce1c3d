"""lam_search replayed against the 200-epoch curves its searches measured (docs/results/matched_sparsity/0.02)."""

import importlib

import pytest

from helpers import lam_replay
from helpers.results import result_file

TABLES = result_file("matched_0.02")


def lam_search():
    return importlib.import_module("hydra_plugins.adrop_plugins.lam_search")


def test_the_replay_takes_eta_tricks_search_as_it_ran_under_the_old_spread(monkeypatch):
    # its search ran with the first full round at 0.4-0.8 of the short runs' guess: the replay proposes the lams it
    # trained in rounds 2 and 3 (round 4 onward it trained under another rule inside a bracket) and misses in 4
    module = lam_search()
    monkeypatch.setattr(module, "FULL_OVER_SHORT", (0.4, 0.8))
    out = lam_replay.replay(module, TABLES / "eta_trick", 0.02, 4)
    assert out["landed"] is None
    assert [f"{lam:.4g}" for _, lam, _ in out["full"][:4]] == ["0.001921", "0.003842", "0.0006053", "0.0006775"]


@pytest.mark.parametrize(
    "method",
    [
        "logsum",
        "eta_trick",
        "adaprox",
        "adatikhonov",
        "adaptive_dropout",
        "vardrop_lr_ar",
        "vardrop_lr",
        "hard_concrete",
    ],
)
def test_each_method_whose_search_landed_lands_in_four_rounds_on_its_measured_curve(method):
    out = lam_replay.replay(lam_search(), TABLES / method, 0.02, 4)
    assert out["landed"] is not None and out["landed"] <= 4, out
