"""scripts/benchmarks/bench_authors.py, run as a user runs it: its refusals of checkouts that are not the code it
reads, and its adrop contenders on a tiny epoch."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, ROOT, needs_mnist

SCRIPT = ROOT / "scripts" / "benchmarks" / "bench_authors.py"


def notebook(path: Path, *cells: str) -> Path:
    """A notebook whose first cell is markdown naming Sparse VD's layer, then these code cells."""
    path.write_text(
        json.dumps(
            {
                "cells": [{"cell_type": "markdown", "source": ["# class LinearSVDO"]}]
                + [{"cell_type": "code", "source": cell.splitlines(keepends=True)} for cell in cells]
            }
        )
    )
    return path


def run(*args, cwd):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.slow
def test_a_checkout_without_the_notebook_is_refused_in_one_line(tmp_path):
    out = run("--authors-dir", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"bench_authors: {tmp_path} holds no experiments/Sparse MNIST.ipynb: give a checkout of dlej/adaptive-dropout"
    ]


@pytest.mark.slow
def test_adrop_contenders_time_an_epoch_each(tmp_path):
    needs_mnist()
    out = run("--data", str(DATA), "--train-limit", "256", "--rounds", "1", "--folder", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = {line.split()[1]: line.split() for line in out.stdout.splitlines() if line.startswith("adrop ")}
    assert set(rows) == {"dense", "logsum", "vardrop_lr_ar"}
    assert all(float(r[2]) > 0 for r in rows.values()) and float(rows["dense"][3]) == 1.0
    assert "threads 1" in out.stdout and "256 examples trained and 12,000 evaluated" in out.stdout


@pytest.mark.slow
def test_a_notebook_without_the_cells_it_reads_is_refused_in_one_line_before_any_data(tmp_path):
    svdo = tmp_path / "sparse-vd-pytorch"
    svdo.mkdir()
    cells = ["from logger import Logger\nfrom torch.nn import Parameter", "x = 1"]
    notebook(svdo / "svdo-solution.ipynb", *cells)
    out = run("--data", str(tmp_path / "no_data"), "--svdo-dir", str(svdo), cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    # the markdown cell holding the marker is not code
    assert out.stderr.strip().splitlines() == ["bench_authors: svdo-solution.ipynb has no cell with 'class LinearSVDO'"]
    cells += ["class LinearSVDO: pass", "class SGVLB: pass", "logger = Logger('x')"]
    notebook(svdo / "svdo-solution.ipynb", *cells, "def train():\n    for epoch in range(3):\n        pass")
    out = run("--data", str(tmp_path / "no_data"), "--svdo-dir", str(svdo), cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "bench_authors: the epoch loop's cell holds no for loop at its top level"
    ]
    notebook(svdo / "svdo-solution.ipynb", *cells[:3], "class SGVLB(", cells[4], "for epoch in range(3):\n    pass")
    out = run("--data", str(tmp_path / "no_data"), "--svdo-dir", str(svdo), cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "bench_authors: svdo-solution.ipynb, the cell with 'class SGVLB' does not compile: "
        "'(' was never closed (line 1)"
    ]
    (svdo / "svdo-solution.ipynb").write_text("not json")
    out = run("--data", str(tmp_path / "no_data"), "--svdo-dir", str(svdo), cwd=tmp_path)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith("bench_authors: svdo-solution.ipynb is not a notebook this benchmark reads")
