"""scripts/benchmarks/bench_authors.py: the notebook cells it reads, its refusals, and its adrop contenders on a tiny
epoch."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, ROOT, needs_mnist

SCRIPT = ROOT / "scripts" / "benchmarks" / "bench_authors.py"
sys.path.insert(0, str(SCRIPT.parent))  # the script imports bench_train beside it
spec = importlib.util.spec_from_file_location("bench_authors", SCRIPT)
bench_authors = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_authors)


def notebook(path: Path, *cells: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "cells": [{"cell_type": "markdown", "source": ["# for epoch in range"]}]
                + [{"cell_type": "code", "source": cell.splitlines(keepends=True)} for cell in cells]
            }
        )
    )
    return path


def test_cells_are_found_by_marker_and_a_loop_runs_one_pass_per_exec(tmp_path):
    path = notebook(tmp_path / "n.ipynb", "x = 1", "total = 0\nfor epoch in range(1, 100):\n    total += epoch\n")
    setup, loop = bench_authors.notebook_cells(path, "x = 1", "for epoch in range")
    assert setup == "x = 1"  # the markdown cell holding the marker is not code
    before, body = bench_authors.split_at_loop(loop)
    ns = {}
    exec(before, ns)
    for epoch in (1, 2, 3):
        ns["epoch"] = epoch
        exec(body, ns)
    assert ns["total"] == 6
    with pytest.raises(bench_authors.NotebookError, match="no cell with 'class LinearSVDO'"):
        bench_authors.notebook_cells(path, "class LinearSVDO")


def test_cuda_calls_are_no_ops_only_while_the_benchmark_runs():
    import torch

    t, cuda = torch.ones(2), torch.Tensor.cuda
    with bench_authors.cuda_calls_on_cpu():
        assert t.cuda() is t
    assert torch.Tensor.cuda is cuda


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
