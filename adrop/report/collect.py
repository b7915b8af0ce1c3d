"""Read every run folder under one or several directories into one table (one row per run).

A run folder is one that holds summary.json, metrics.csv or .hydra/overrides.yaml. Its status is the summary's
(completed, failed, running); a folder with metrics but no summary, or a summary that says running, is reported as
running (it may also have been interrupted: rerun it to resume). Figures and tables read only files the runs wrote.

An earlier report's folder (its results.csv, and histories.csv where there is one, with no run folder under it) is
read as the runs it reported, so that runs whose folders are gone (a committed table) join new ones in one table. A run
found twice (in its folder and in a report, or in two reports) is counted once, its folder's row kept
(adrop.report.repeats).
"""

from __future__ import annotations

import json
import os
from itertools import chain
from pathlib import Path

import pandas as pd
import yaml

from adrop.report import HISTORIES_CSV, HISTORY_LAYER_COLUMNS, RESULTS_CSV, layer_columns
from adrop.report.repeats import without_repeats
from adrop.train import tasks
from adrop.train.config.differences import NOT_A_SETTING
from adrop.train.run_folder.run_files import HYDRA_DIR, LAYERS_CSV, METRICS_CSV, OVERRIDES, SUMMARY

RUN_FILES = (SUMMARY, METRICS_CSV, f"{HYDRA_DIR}/{OVERRIDES}")
# A run's setting: its overrides but those in NOT_A_SETTING (the method, lam, seed... are columns; where the data
# lives is none). The model goes into the setting only where the runs span several (with_models_told_apart):
# `model=lenet_300_100` written out and the same model chosen by default are one setting.


def run_folders(root: Path) -> list[Path]:
    root = Path(root)
    found = {p.parent for name in (SUMMARY, METRICS_CSV) for p in root.rglob(name)}
    found |= {p.parent.parent for p in root.rglob(f"{HYDRA_DIR}/{OVERRIDES}")}
    return sorted(f for f in found if not any(part.startswith("report") for part in f.relative_to(root).parts))


def overrides(folder: Path) -> dict:
    path = folder / HYDRA_DIR / OVERRIDES
    if not path.exists():
        return {}
    out = {}
    for item in yaml.safe_load(path.read_text()) or []:
        key, _, value = str(item).partition("=")
        out[key.lstrip("+~")] = value
    return out


class UnreadableRun(Exception):
    """A run folder whose files cannot be read (a truncated summary.json, a CSV cut short): reports skip it."""


UNREADABLE = (OSError, ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError, pd.errors.ParserError)


def read_run(root: Path, folder: Path) -> dict:
    """One run's row; UnreadableRun when one of its files cannot be read."""
    try:
        return _read_run(root, folder)
    except UNREADABLE as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UnreadableRun(f"{folder}: {type(err).__name__}: {reason}") from None


def _read_run(root: Path, folder: Path) -> dict:
    summary = {}
    if (folder / SUMMARY).exists():
        summary = json.loads((folder / SUMMARY).read_text())
        if not isinstance(summary, dict):
            raise ValueError(f"a JSON {type(summary).__name__}, not a run's summary")
    metrics = pd.read_csv(folder / METRICS_CSV) if (folder / METRICS_CSV).exists() else None
    over = overrides(folder)
    status = summary.get("status") or ("running" if metrics is not None else "pending")
    row = {
        "run": str(folder.relative_to(root)) if folder != root else ".",
        "overrides": " ".join(f"{k}={v}" for k, v in over.items()),
        "setting": " ".join(f"{k}={v}" for k, v in sorted(over.items()) if k not in NOT_A_SETTING),
        "status": status,
        "method": summary.get("method") or over.get("method"),
        "lam": summary.get("lam"),
        "lam_final": summary.get("lam_final"),  # a run steered to a target: the lam it ended at (lam: where it began)
        "lr": summary.get("lr"),
        "seed": summary.get("seed", _int(over.get("seed"))),
        "epochs": summary.get("epochs", 0 if metrics is None else int(metrics.epoch.max())),
        "epochs_planned": summary.get("epochs_planned"),
        "test_error": summary.get("test_error"),
        "val_error": summary.get("val_error"),
        "test_error_unmasked": summary.get("test_error_unmasked"),
        **{c: summary.get(c) for c in tasks.result_columns(summary) if c not in ("test_error", "val_error")},
        "nonzero_fraction": summary.get("nonzero_fraction"),
        "wall_time_s": summary.get("wall_time_s"),
        "device": summary.get("device"),
        "code": summary.get("code"),
        "error": summary.get("error"),
        "model": summary.get("model") or over.get("model"),
        "train_limit": summary.get("train_limit"),
        "structure": summary.get("structure") or over.get("structure") or "weight",
        "kept_architecture": summary.get("kept_architecture"),
    }
    task = summary.get("task") or over.get("task") or "classification"
    if task != "classification":  # a column only where some run is of another task
        row["task"] = task
    if metrics is not None and len(metrics) and status != "completed":  # what an unfinished run has so far
        last = metrics.iloc[-1]
        for column in tasks.result_columns(metrics.columns):  # the task's val_ columns
            row[column] = float(last[column])
        row["nonzero_fraction"] = float(last.nonzero_fraction)
    heads = summary.get("heads") or {}
    if heads:  # attention heads still in use, over every attention (summary.json: per attention [kept, heads])
        row["heads_kept"], row["heads"] = (sum(v[i] for v in heads.values()) for i in (0, 1))
    for key, value in (summary.get("cost") or {}).items():  # compression, bytes, multiply-adds (adrop.cost)
        row[key] = value
    params = summary.get("parameters") or {}
    if params:  # the whole network, the parameters trained densely counted in (nonzero_fraction: the sparsified)
        row.update(
            {
                "network_parameters": params["total"],
                "network_nonzero_fraction": params["nonzero_fraction"],
                "dense_parameters": params["dense"],
                "dense_module_parameters": sum((params.get("dense_modules") or {}).values()),
            }
        )
    for name, layer in (summary.get("layers") or {}).items():
        row[f"nonzero_{name}"] = layer["fraction"]
    if not summary.get("layers") and (folder / LAYERS_CSV).exists():
        layers = pd.read_csv(folder / LAYERS_CSV)
        if "trained" in layers:  # a module trained densely is no layer of the method's
            layers = layers[layers.trained != "dense"]
        for _, r in layers[layers.epoch == layers.epoch.max()].iterrows():
            row[f"nonzero_{r.layer}"] = r.nonzero_fraction
    return row


ROW_COLUMNS = [
    "run",
    "overrides",
    "setting",
    "status",
    "method",
    "lam",
    "lam_final",
    "lr",
    "seed",
    "epochs",
    "epochs_planned",
    "test_error",
    "val_error",
    "test_error_unmasked",
    "nonzero_fraction",
    "wall_time_s",
    "device",
    "code",
    "error",
    "model",
    "train_limit",
    "structure",
    "kept_architecture",
]  # read_run's, before cost and layers
TEXT_COLUMNS = [
    "run",
    "overrides",
    "setting",
    "status",
    "method",
    "device",
    "code",
    "error",
    "model",
    "structure",
    "kept_architecture",
]


def _csv_or_none(path: Path) -> pd.DataFrame | None:
    """A run's CSV for the figures, or None where it is missing or cannot be read (the run is drawn without it)."""
    try:
        return pd.read_csv(path) if path.exists() else None
    except UNREADABLE:
        return None


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _paths(roots) -> list[Path]:
    return [Path(r) for r in ([roots] if isinstance(roots, (str, Path)) else roots)]


def base(roots) -> Path:
    """The folder that run names are relative to: the one root, or the roots' common parent."""
    roots = _paths(roots)
    if len(roots) == 1:
        return roots[0]
    return Path(os.path.commonpath([r.resolve() for r in roots]))


def is_report(root: Path) -> bool:
    """An earlier report's folder: its results.csv, and no run folder under it."""
    return (Path(root) / RESULTS_CSV).is_file() and not run_folders(root)


def _report_prefix(root: Path, names_from: Path, several: bool) -> str:
    """What a reported run's name is prefixed with: the report folder as base(roots) names folders."""
    folder = root.resolve() if several else root
    return "" if folder == names_from else f"{folder.relative_to(names_from).as_posix()}/"


def names_here(runs: pd.Series, prefix: str) -> dict[str, str]:
    """An earlier report's run names -> their names here: under `prefix`, except those under it already (a report
    made from its own folder and others names its runs under that folder: read back once more, they keep that name
    rather than take it twice); every name under `prefix` where keeping some would make two alike."""
    runs = runs.astype(str)
    kept = runs.where(runs.str.startswith(prefix), prefix + runs) if prefix else runs
    if not kept.is_unique:
        kept = prefix + runs
    return dict(zip(runs, kept))


def reported_runs(root: Path, prefix: str) -> list[dict]:
    """An earlier report's rows, each run named as names_here has it."""
    try:
        table = pd.read_csv(root / RESULTS_CSV)
    except UNREADABLE as err:
        raise ValueError(f"{root / RESULTS_CSV}: {type(err).__name__}: {str(err).splitlines()[0]}") from None
    if not {"run", "status", "method"} <= set(table.columns):
        raise ValueError(f"{root / RESULTS_CSV}: not adrop report's results.csv (no run, status or method column)")
    table = table.assign(run=table.run.astype(str).map(names_here(table.run, prefix)))
    if "structure" in table:  # a run that did not say trained by weight, as read_run has it
        table = table.assign(structure=table.structure.fillna("weight"))
    return [{k: (None if pd.isna(v) else v) for k, v in row.items()} for row in table.to_dict("records")]


def reported_histories(root: Path, prefix: str) -> dict[str, tuple[pd.DataFrame, pd.DataFrame | None]]:
    """An earlier report's histories.csv as (metrics, layers) per run named as in reported_runs ({} without one)."""
    history = _csv_or_none(root / HISTORIES_CSV)
    if history is None or "run" not in history or "epoch" not in history:
        return {}
    try:
        names = names_here(pd.read_csv(root / RESULTS_CSV, usecols=["run"]).run, prefix)
    except UNREADABLE:  # reported_runs says what is wrong with results.csv
        names = {}
    out = {}
    columns = {p: layer_columns(history.columns, p) for p in HISTORY_LAYER_COLUMNS}
    for run, rows in history.groupby("run", sort=False):
        metrics = rows.drop(columns=["run", *chain.from_iterable(columns.values())]).reset_index(drop=True)
        longs = []  # one (epoch, layer)-indexed column per prefix, the layers in histories.csv's order
        for p, column in HISTORY_LAYER_COLUMNS.items():
            if columns[p]:
                long = rows[["epoch", *columns[p]]].melt(id_vars="epoch", var_name="layer", value_name=column)
                long["layer"] = long.layer.str.removeprefix(p)
                longs.append(long.set_index(["epoch", "layer"]))
        layers = pd.concat(longs, axis=1, sort=False).dropna(how="all").reset_index() if longs else None
        out[names.get(str(run), prefix + str(run))] = (metrics, layers if layers is not None and len(layers) else None)
    return out


def results(roots) -> pd.DataFrame:
    """Every run under `roots` (a folder or a list of folders; an earlier report's folder: the runs it reported),
    its name relative to base(roots)."""
    roots = list({r.resolve(): r for r in _paths(roots)}.values())  # a folder named twice is read once
    several = len(roots) > 1
    reports = [r for r in roots if is_report(r)]
    folders = sorted({f for r in roots if r not in reports for f in run_folders(r.resolve() if several else r)})
    if not folders and not reports:
        raise FileNotFoundError(
            f"no run folders under {', '.join(map(str, roots))} "
            f"(looked for {', '.join(RUN_FILES)}, or an earlier report's {RESULTS_CSV})"
        )
    names_from = base(roots)
    reported, found, skipped = [], [], []
    for report in reports:
        reported.append(reported_runs(report, _report_prefix(report, names_from, several)))
    for folder in folders:
        try:
            found.append(read_run(names_from, folder))
        except UnreadableRun as err:
            skipped.append(str(err))
    once, repeated = without_repeats(reported, found)
    rows = once + found
    if not rows:
        raise FileNotFoundError(f"no readable run under {', '.join(map(str, roots))} ({'; '.join(skipped)})")
    table = pd.DataFrame(rows)
    # every column a run's row has, also where only reports older than one of them were read
    table = table.reindex(columns=list(dict.fromkeys([*ROW_COLUMNS, *table.columns])))
    table = table.astype({c: object for c in TEXT_COLUMNS})  # text, also where a column came back empty
    table = with_models_told_apart(table)
    table.attrs["skipped"] = skipped  # what could not be read, and why: the report names them
    table.attrs["repeated"] = repeated  # reported runs read once already: the report says how many
    return table


def with_models_told_apart(table: pd.DataFrame) -> pd.DataFrame:
    """Runs of different models are never one setting: where the runs span several models, a run whose overrides do
    not name its model (an experiment chose it) gets `model=<name>` in its setting, so that a LeNet-5 run and a
    LeNet-300-100 run of the same method, lam and lr are rows (and legend entries) of their own."""
    if table.model.dropna().nunique() < 2:
        return table
    named = table.setting.fillna("").str.contains(r"(?:^| )model=", regex=True)
    add = table.model.notna() & ~named
    setting = table.setting.fillna("").where(
        ~add, ("model=" + table.model.fillna("") + " " + table.setting.fillna("")).str.strip()
    )
    return table.assign(setting=setting)


def labels(table: pd.DataFrame) -> pd.Series:
    """A name per run for legends: the method, with what tells its runs apart (lam, lr, length, setting) where they
    differ."""
    table = table.assign(setting=table.setting.fillna("") if "setting" in table else "")
    if "epochs_planned" in table:  # a run's length is what it was set to train, finished or not
        table = table.assign(length=table.epochs_planned.fillna(table.epochs))
    else:
        table = table.assign(length=table.epochs if "epochs" in table else None)
    out = table.method.copy()
    for method, rows in table.groupby("method"):
        parts = [
            (key, rows[key].map(lambda v: f"{v:.4g}" if isinstance(v, float) else str(v)))
            for key in ("lam", "lr")
            if rows[key].nunique(dropna=False) > 1
        ]
        if rows.length.nunique(dropna=False) > 1:
            parts.append(("epochs", rows.length.map(lambda v: "?" if pd.isna(v) else str(int(v)))))
        if rows.setting.nunique() > 1:
            short = rows.setting.map(short_paths)
            parts.append(("", short if short.nunique() == rows.setting.nunique() else rows.setting))
        if parts:
            text = [
                " ".join((f"{k}={v}" if k else v) for (k, _), v in zip(parts, values) if v)
                for values in zip(*(col for _, col in parts))
            ]
            out.loc[rows.index] = [f"{method} ({t})" for t in text]
    return out


def groups(table: pd.DataFrame) -> pd.Series:
    """A legend entry per run that groups runs by method and setting: the label without path values (init_from=...),
    so that fine-tuning runs started from many folders share one entry instead of listing every path."""
    table = table.assign(setting=table.setting.fillna("") if "setting" in table else "")
    return labels(table.assign(setting=table.setting.map(_without_paths)))


def _without_paths(setting: str) -> str:
    return " ".join(item for item in setting.split(" ") if "/" not in item.partition("=")[2])


def short_paths(setting: str) -> str:
    """A setting with every path value (init_from=a/b/c) cut to its last folder, for legends."""

    def cut(item):
        key, eq, value = item.partition("=")
        value = value.strip("'\"").rstrip("/")
        return f"{key}=.../{value.rsplit('/', 1)[1]}" if eq and "/" in value else item

    return " ".join(cut(item) for item in setting.split(" "))


def histories(roots, table: pd.DataFrame) -> dict[str, tuple[pd.DataFrame | None, pd.DataFrame | None]]:
    """run -> (metrics.csv, layers.csv) as DataFrames (None where missing); a reported run's from its report's
    histories.csv."""
    roots = _paths(roots)
    out, names_from, reported = {}, base(roots), {}
    for report in filter(is_report, roots):
        reported.update(reported_histories(report, _report_prefix(report, names_from, len(roots) > 1)))
    for run in table.run:
        folder = names_from / run
        out[run] = reported.get(run) or (_csv_or_none(folder / METRICS_CSV), _csv_or_none(folder / LAYERS_CSV))
    return out
