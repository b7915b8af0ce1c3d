"""`adrop report`: runs and sweeps turned into the paper's tables and figures.

collect.py   read every run folder under a directory (summary.json, metrics.csv, layers.csv, .hydra/)
tables.py    results.csv and the markdown table in the layout of the paper's Tables 4 and 5
figures.py   Figure 2 (validation error against fraction nonzero over training), the Pareto view, per-layer
paper.py     the paper's published LeNet-300-100 numbers, for comparison
"""

# A report's files (an earlier report's results.csv and histories.csv are read back as the runs it reported)
RESULTS_CSV, HISTORIES_CSV = "results.csv", "histories.csv"
FILES = [RESULTS_CSV, HISTORIES_CSV, "results.md", "figure2.png", "pareto.png", "layers.png", "units.png"]
# histories.csv's per-layer columns: their prefix (<prefix><layer>) -> the layers.csv column they hold (units: those
# a layer keeps, a conv layer's filters)
HISTORY_LAYER_COLUMNS = {"nonzero_": "nonzero_fraction", "units_": "units_out_kept"}


def layer_columns(columns, prefix: str = "nonzero_") -> list[str]:
    """The per-layer columns <prefix><layer> among `columns`, in their order (nonzero_fraction is the network's)."""
    return [c for c in columns if c.startswith(prefix) and c != "nonzero_fraction"]
