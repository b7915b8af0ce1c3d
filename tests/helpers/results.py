"""The committed result files tests read, by topic: where each result's data lives is said here once, so that result
folders can move by editing this table alone."""

from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
FOLDERS = {
    "speed": DOCS / "results" / "speed",  # benchmark outputs and lam search records
    "matched_0.02": DOCS / "results_matched_0.02",  # every method at 2% nonzero, 200 epochs
    "vardrop_kl": DOCS / "results" / "vardrop_kl",  # the one engine against the previous reference
}


def result_file(topic: str, *parts: str) -> Path:
    """A committed result's folder (no parts) or file, e.g. result_file("vardrop_kl", "before.csv")."""
    return FOLDERS[topic].joinpath(*parts)
