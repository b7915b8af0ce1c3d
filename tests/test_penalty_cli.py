"""`adrop penalty` and the `adrop` dispatcher."""

import subprocess
import sys

import pandas as pd
import pytest

from adrop import cli
from adrop.commands import penalty as penalty_command


def test_plot_writes_png_pdf_and_a_pandas_table(tmp_path, capsys):
    out = tmp_path / "fig"
    assert penalty_command.main(["--plot", "--out", str(out)]) == 0
    for name in ("figure1.png", "figure1.pdf", "penalties.csv"):
        assert (out / name).stat().st_size > 1000
    table = pd.read_csv(out / "penalties.csv")
    assert {"panel", "method", "params", "x", "omega"} <= set(table.columns)
    assert set(table.panel) == {"separable", "k_sparse"} and "variational_dropout" in set(table.method)
    assert "figure1.png" in capsys.readouterr().out


def test_plot_never_overwrites(tmp_path, capsys):
    assert penalty_command.main(["--plot", "--method", "l1", "--out", str(tmp_path)]) == 0
    before = (tmp_path / "penalties.csv").read_bytes()
    assert penalty_command.main(["--plot", "--method", "l1", "--out", str(tmp_path)]) == 2
    assert "never overwrites" in capsys.readouterr().err and (tmp_path / "penalties.csv").read_bytes() == before


def test_table_prints_values_with_parameters(capsys):
    assert penalty_command.main(["--method", "logsum,mcp", "--eps", "1", "--w", "0,1"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert ["logsum(eps=1)", "1", "0.693147", "2"] in lines  # log(1 + 1), eta_hat = |w|(|w| + 1)
    assert ["mcp(a=1,", "lam=1)", "1", "0.5", "inf"] in lines


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--method", "nope"], "unknown penalty 'nope'; valid names:"),
        (["--method", "logsum", "--eps", "-1"], "parameter eps=-1.0 is invalid"),
        (["--method", "l1", "--eps", "1"], "--eps applies to none of: l1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert penalty_command.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_console_entry_point_fails_cleanly_without_traceback():
    run = subprocess.run([sys.executable, "-m", "adrop", "penalty", "--method", "nope"], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr and "valid names" in run.stderr


def test_dispatcher_lists_subcommands_and_rejects_unknown(capsys):
    assert cli.main(["--help"]) == 0 and "penalty" in capsys.readouterr().out
    assert cli.main(["frobnicate"]) == 2 and "valid commands: penalty" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--w", "nan"], "argument --w: expected finite numbers, got nan"),
        (["--w", "0,1,inf"], "argument --w: expected finite numbers, got inf"),
        (["--method", "l1", "--vector", "1,nan"], "argument --vector: expected finite numbers"),
        (["--method", "l1", "--eta=-inf"], "argument --eta: expected finite numbers or inf, got -inf"),
        (["--method", "l1", "--eta", "nan"], "argument --eta: expected finite numbers or inf, got nan"),
        (["--method", "logsum", "--eps", "nan"], "argument --eps: expected a finite number"),
        (["--weight", "inf", "--plot"], "argument --weight: expected a finite number"),
    ],
)
def test_nan_and_inf_inputs_are_refused_with_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        penalty_command.main(argv)
    assert stop.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # argparse's usage, then its one-line message
    assert last.startswith("adrop penalty: error: ") and message in last


def test_eta_inf_is_a_value_of_the_calculus(capsys):
    assert penalty_command.main(["--method", "l1,l0", "--eta", "0,inf"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert ["l1", "inf", "inf"] in rows and ["l0", "inf", "2"] in rows


def test_fit_logsum_turns_figure1s_reading_into_numbers(capsys):
    from adrop import penalties
    from adrop.penalties.figure1 import fit_logsum

    fit = fit_logsum(penalties.get("variational_dropout"))
    assert fit["paper_gap"] == pytest.approx(0.32, abs=0.005)  # the paper's Figure 1 gap: up to 0.32 over |w| <= 3
    assert fit["gap"] < 0.15 * fit["paper_gap"] and 2.0 < fit["eps"] < 4.0  # measured: 0.037 against 0.321
    exact = fit_logsum(penalties.get("logsum", eps=1.5), weight=0.7)  # a LogSum is its own best fit
    assert exact["eps"] == pytest.approx(1.5, rel=1e-3) and exact["scale"] == pytest.approx(0.7, rel=1e-3)
    assert penalty_command.main(["--method", "variational_dropout", "--fit-logsum"]) == 0
    assert "nearest scaled LogSum is" in capsys.readouterr().out


def test_plot_draws_a_groups_penalty_against_its_norm(tmp_path):
    """--group-size N: the curves are sqrt(N) Omega(||w_g||) against the group's norm (structure=neuron's penalty)."""
    out = tmp_path / "group"
    assert penalty_command.main(["--plot", "--method", "l1,logsum", "--group-size", "4", "--out", str(out)]) == 0
    assert (out / "figure1.png").stat().st_size > 1000
    table = pd.read_csv(out / "penalties.csv").query("panel == 'separable'")
    l1 = table[table.method == "l1"]
    assert len(l1) > 10 and (l1.omega.to_numpy() == pytest.approx(2 * l1.x.abs().to_numpy()))  # sqrt(4) |w_g|
    single = tmp_path / "single"
    assert penalty_command.main(["--plot", "--method", "logsum", "--out", str(single)]) == 0
    one, four = (
        pd.read_csv(f / "penalties.csv").query("method == 'logsum' and panel == 'separable'") for f in (single, out)
    )
    assert len(one) > 10 and four.x.tolist() == one.x.tolist()
    assert four.omega.to_numpy() == pytest.approx(2 * one.omega.to_numpy())
