"""results.csv, histories.csv and the markdown table in the layout of the paper's Tables 4 and 5.

Completed runs are grouped by (method, lam, lr, setting), the setting being the run's other overrides apart from the
seed (adrop.train.config.differences.NOT_A_SETTING); with several seeds a cell reads mean ± standard deviation.
results.csv keeps every column; results.md only those a reader compares rows by, so that it stays readable for any
network and any mix of runs (at most 23 columns):
- always: method, lam, lr, runs (the seeds averaged), epochs, test error, nonzero (the sparsified weights' fraction);
- "nonzero, whole network" when any run's network has modules that train densely (embeddings, recurrent cells,
  norms): every parameter counted, biases included (summary.json's parameters; results.csv: network_parameters,
  network_nonzero_fraction, dense_parameters);
- setting, when the runs have more than one (a path in it, init_from=..., cut to its last folder where the rows stay
  apart); "train examples" when any run trained on part of the training set (data.train_limit); "test error
  unmasked" when any run recorded it; compression and kMACs/example when the runs recorded their cost;
- units kept (the mean kept architecture) and the compact network's multiply-adds when any run trained whole units
  (structure=neuron) or lost some all the same; heads kept (of all attentions' heads, "-" where a run of the row does
  not say) when any run trained by heads or lost one;
- each layer's fraction nonzero when the runs have at most MAX_LAYER_COLUMNS layers in all (LeNet-300-100, LeNet-5);
  a deeper network's, or a mix of networks with more, are in results.csv (nonzero_<layer>) and layers.png, and a line
  below the table says so;
- with --paper, the paper's test error, nonzero and per-layer fractions beside its own rows.
Runs that are not completed are listed below the table with their status (and, for failed ones, the error).
"""

from __future__ import annotations

import math

import pandas as pd

from adrop import markdown
from adrop.train import tasks

from . import HISTORY_LAYER_COLUMNS, paper
from . import layer_columns as per_layer
from .collect import short_paths

LAYER_COLUMNS_PREFIX = "nonzero_"
MAX_LAYER_COLUMNS = 6  # LeNet-5 and LeNet-300-100 together; past this, per-layer columns go to results.csv only


def layer_columns(table: pd.DataFrame) -> list[str]:
    return sorted(per_layer(table.columns, LAYER_COLUMNS_PREFIX))


def histories_table(histories: dict) -> pd.DataFrame:
    """histories.csv: one row per run and epoch, the run's metrics.csv with each layer's fraction nonzero and units
    kept from its layers.csv (nonzero_<layer>, units_<layer>), so that every curve of the figures is a file pandas
    can load."""
    frames = []
    for run, (metrics, layers) in histories.items():
        if metrics is None or metrics.empty:
            continue
        frame = metrics.copy()
        for prefix, column in HISTORY_LAYER_COLUMNS.items():
            if layers is None or column not in layers or layers[column].isna().all():
                continue
            wide = layers.pivot_table(index="epoch", columns="layer", values=column, aggfunc="first", sort=False)
            wide.columns = [prefix + str(c) for c in wide.columns]
            frame = frame.merge(wide, left_on="epoch", right_index=True, how="left")
        frame.insert(0, "run", run)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["run", "epoch"])


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (method, lam, lr, setting, model, epochs) over completed runs: count, mean and std of the figures.
    Runs of another length are another row (VarDrop at 1000 epochs is not a fourth seed of VarDrop at 200)."""
    done = table[table.status == "completed"]
    if "setting" not in done:
        done = done.assign(setting="")
    done = done.assign(setting=done.setting.fillna(""))
    if done.empty:
        return pd.DataFrame()
    costs = [c for c in ("compression", "sparse_macs") if c in done and done[c].notna().any()]
    units = lost_units(done)
    if units and "compact_macs" in done:
        costs.append("compact_macs")
    unmasked = (
        ["test_error_unmasked"] if "test_error_unmasked" in done and done.test_error_unmasked.notna().any() else []
    )
    # the whole network's nonzero fraction where modules other than the sparse layers train densely (a GRU, norms)
    network = (
        ["network_nonzero_fraction"]
        if "dense_module_parameters" in done and (pd.to_numeric(done.dense_module_parameters) > 0).any()
        else []
    )
    present = [c for c in tasks.result_columns(done.columns) if pd.to_numeric(done[c], errors="coerce").notna().any()]
    # the tasks' metrics the runs have (a classifier's error always, where no run has another task's)
    results = (
        present
        if set(present) - {"test_error", "val_error"}
        else [c for c in tasks.result_columns(done.columns) if c in ("test_error", "val_error")]
    )
    tests = [c for c in results if c.startswith("test_")]
    # heads kept: where any run trained by heads or lost some all the same (a per-weight run that emptied a head)
    heads = (
        ["heads_kept", "heads"]
        if "heads_kept" in done
        and done.heads_kept.notna().any()
        and (units or (pd.to_numeric(done.heads_kept) < pd.to_numeric(done.heads)).any())
        else []
    )
    steered = ["lam_final"] if "lam_final" in done and pd.to_numeric(done.lam_final).notna().any() else []
    figures = [
        *steered,
        *tests,
        *unmasked,
        *(c for c in results if c not in tests),
        "nonzero_fraction",
        *network,
        *costs,
        *heads,
        *layer_columns(done),
    ]
    done = done.assign(
        model=done.model.fillna("") if "model" in done else "",
        train_limit=done.train_limit.fillna(0) if "train_limit" in done else 0,
    )  # 0: all examples
    grouped = done.groupby(["method", "lam", "lr", "setting", "model", "epochs", "train_limit"], dropna=False)
    out = grouped[figures].agg(["mean", "std"])
    out.columns = [f"{a}_{b}" for a, b in out.columns]
    if units:  # units kept: every row, for comparison
        out["kept_architecture"] = grouped.kept_architecture.agg(mean_architecture)
    if heads:  # how many of a row's runs say their heads (a mean over fewer than all is no row's)
        out["heads_runs"] = grouped.heads_kept.count()
    out.insert(0, "runs", grouped.size())
    out.insert(1, "seeds", grouped.seed.apply(lambda s: ",".join(str(int(v)) for v in sorted(s.dropna()))))
    return out.reset_index()


def lost_units(done: pd.DataFrame) -> bool:
    """Whether any run trained whole units (structure=neuron) or ended with some lost all the same (its compact
    network smaller than the dense one: a fine-tuned structured run, a per-weight run at high sparsity)."""
    if "structure" in done and (done.structure == "neuron").any():
        return True
    if {"compact_macs", "dense_macs"} <= set(done.columns):
        return bool((pd.to_numeric(done.compact_macs) < pd.to_numeric(done.dense_macs)).any())
    return False


def mean_architecture(architectures) -> str | None:
    """The mean over seeds of kept architectures such as 784-212-64-10 or 1x28x28-c6-c14-120-38-10, each count
    rounded (None if a run has none, or they have different shapes)."""
    parsed = [str(a).split("-") for a in architectures if isinstance(a, str)]
    if not parsed or len(parsed) != len(list(architectures)) or len({len(p) for p in parsed}) != 1:
        return None
    out = []
    for parts in zip(*parsed):
        if "x" in parts[0]:  # an image input: channels x height x width
            channels = [float(p.split("x")[0]) for p in parts]
            out.append("x".join([f"{sum(channels) / len(channels):.0f}", *parts[0].split("x")[1:]]))
            continue
        prefix = "c" if parts[0].startswith("c") else ""
        values = [float(p.removeprefix("c")) for p in parts]
        out.append(f"{prefix}{sum(values) / len(values):.0f}")
    return "-".join(out)


def setting_cells(settings: pd.Series) -> dict[str, str]:
    """Each setting as its cell: path values (init_from=a/b/c) cut to their last folder, where that keeps the
    settings apart."""
    unique = settings.unique()
    short = {s: short_paths(s) for s in unique}
    return short if len(set(short.values())) == len(unique) else {s: s for s in unique}


def compression_cell(value) -> str:
    """|W| / |W != 0| (adrop.cost) as the papers write it, 68x, with one decimal below 10x: a run that keeps 0.73 of
    its weights compresses them 1.4x, not 1x."""
    if pd.isna(value):
        return "-"
    return f"{value:.1f}x" if value < 9.95 else f"{value:.0f}x"


def _cell(mean, std, percent=False, digits=3):
    if pd.isna(mean):
        return "-"
    scale, unit = (100.0, "%") if percent else (1.0, "")
    text = f"{mean * scale:.2f}{unit}" if percent else f"{mean:.{digits}f}"
    if not pd.isna(std):
        text += f" ± {std * scale:.2f}" if percent else f" ± {std:.{digits}f}"
    return text


def markdown_table(table: pd.DataFrame, with_paper: bool = False) -> str:
    agg = summary(table)
    lines = []
    if not agg.empty:
        layers = [
            c.removesuffix("_mean")
            for c in agg.columns
            if c.startswith(LAYER_COLUMNS_PREFIX) and c.endswith("_mean") and not c.startswith("nonzero_fraction")
        ]
        layer_count = len(layers)
        if layer_count > MAX_LAYER_COLUMNS:
            layers = []
        rows = []
        ref = paper.table().set_index("method") if with_paper else None
        several_settings = agg.setting.nunique() > 1
        settings = setting_cells(agg.setting)
        limited = bool((agg.train_limit > 0).any())  # runs on part of the training set say so, always
        for _, r in agg.iterrows():
            row = {
                "method": r.method,
                **({"setting": settings[r.setting] or "-"} if several_settings else {}),
                "lam": f"{r.lam:.3g}",
                **(
                    {"lam at the end": "-" if pd.isna(r.lam_final_mean) else f"{r.lam_final_mean:.3g}"}
                    if "lam_final_mean" in agg
                    else {}
                ),
                "lr": f"{r.lr:.3g}",
                "runs": int(r.runs),
                "epochs": int(r.epochs),
                **({"train examples": f"{int(r.train_limit):,}" if r.train_limit else "all"} if limited else {}),
                **{
                    label(c): _cell(r[f"{c}_mean"], r[f"{c}_std"], percent=c == "test_error")
                    for c in agg.columns.str.removesuffix("_mean")
                    if c.startswith("test_") and f"{c}_mean" in agg and not c.endswith("_unmasked")
                },
                **(
                    {"test error unmasked": _cell(r.test_error_unmasked_mean, r.test_error_unmasked_std, percent=True)}
                    if "test_error_unmasked_mean" in agg
                    else {}
                ),
                "nonzero": _cell(r.nonzero_fraction_mean, r.nonzero_fraction_std),
                **(
                    {"nonzero, whole network": _cell(r.network_nonzero_fraction_mean, r.network_nonzero_fraction_std)}
                    if "network_nonzero_fraction_mean" in agg
                    else {}
                ),
            }
            if "compression_mean" in agg:  # as the Sparse VD and L0 papers' tables: |W| / |W != 0| and the FLOPs
                row["compression"] = compression_cell(r.compression_mean)
                row["kMACs/example"] = "-" if pd.isna(r.sparse_macs_mean) else f"{r.sparse_macs_mean / 1e3:.1f}"
            if "kept_architecture" in agg:  # the structured literature's view: the units left (mean over seeds)
                row["units kept"] = r.kept_architecture if isinstance(r.kept_architecture, str) else "-"
                if "compact_macs_mean" in agg:
                    row["compact kMACs"] = "-" if pd.isna(r.compact_macs_mean) else f"{r.compact_macs_mean / 1e3:.1f}"
            if "heads_kept_mean" in agg:  # of every attention's heads
                kept = _cell(r.heads_kept_mean, r.heads_kept_std, digits=1)
                row["heads kept"] = (
                    "-" if pd.isna(r.heads_kept_mean) or r.heads_runs < r.runs else f"{kept} of {r.heads_mean:.0f}"
                )
            for c in layers:
                row[c.removeprefix(LAYER_COLUMNS_PREFIX)] = _cell(r[f"{c}_mean"], r[f"{c}_std"])
            if with_paper:
                known = (
                    ref is not None
                    and r.method in ref.index  # the paper's row only for the paper's lam and lr
                    and r.model in paper.MODELS  # and its network (runs from before the summary said: unknown)
                    and int(r.epochs) == paper.EPOCHS  # and its length
                    and math.isclose(r.lam, ref.loc[r.method, "lam"], rel_tol=1e-6)
                    and math.isclose(r.lr, ref.loc[r.method, "lr"], rel_tol=1e-6)
                )
                row["paper test error"] = f"{ref.loc[r.method, 'test_error'] * 100:.2f}%" if known else "-"
                row["paper nonzero"] = f"{ref.loc[r.method, 'nonzero_fraction']:.3f}" if known else "-"
                row["paper per layer"] = (
                    " / ".join(f"{ref.loc[r.method, f'nonzero_{l}']:.3f}" for l in paper.LAYERS) if known else "-"
                )
            rows.append(row)
        lines.append(markdown.table(pd.DataFrame(rows)))
        if layer_count > MAX_LAYER_COLUMNS:
            lines.append(
                f"\nEach layer's fraction nonzero ({layer_count} layers): results.csv "
                f"({LAYER_COLUMNS_PREFIX}<layer>) and layers.png.\n"
            )
    else:
        lines.append("No completed runs yet.\n")
    rest = table[table.status != "completed"]
    if len(rest):
        lines.append("\nNot completed:\n")
        for _, r in rest.iterrows():
            val = next((c for c in tasks.result_columns(r.index) if c.startswith("val_") and pd.notna(r[c])), None)
            so_far = (
                f" (so far: {int(r.epochs)} epochs, {label(val)} {r[val]:.4f}, nonzero {r.nonzero_fraction:.4f})"
                if val and pd.notna(r.nonzero_fraction)
                else ""
            )
            error = f": {r.error}" if isinstance(r.error, str) and r.error else ""
            lines.append(f"- `{r.run}`: {r.status}{error}{so_far}\n")
    return "".join(lines)


def label(column: str) -> str:
    """A result column's heading: "test error", "test RMSE", "test perplexity"."""
    split, _, metric = column.partition("_")
    for task in tasks.TASKS.values():
        if metric in task.metrics:
            return f"{split} {task().label(metric)}"
    return column.replace("_", " ")
