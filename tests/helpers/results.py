"""The committed result files tests read, by topic: where each result's data lives is said here once, so that result
folders can move by editing this table alone."""

from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
RESULTS = DOCS / "results"  # the page docs/results/<topic>.md keeps its data in docs/results/<topic>/
FOLDERS = {
    "speed": RESULTS / "lam_search",  # lam search records: benchmark outputs and search tables (lam_search.md)
    "matched_0.02": RESULTS / "matched_sparsity" / "0.02",  # every method at 2% nonzero, 200 epochs
    "vardrop_kl": RESULTS / "authors_speed" / "vardrop_kl",  # VarDrop's KL gradient written out, before and after
    "vit_tiny": RESULTS / "vit_tiny",  # a ViT by weights and by heads, runs that kept nothing among them
}


def result_file(topic: str, *parts: str) -> Path:
    """A committed result's folder (no parts) or file, e.g. result_file("vardrop_kl", "before.csv")."""
    return FOLDERS[topic].joinpath(*parts)
