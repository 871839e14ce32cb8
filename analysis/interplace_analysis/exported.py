"""Runs read back from exported tables: what the ``strategies`` report's accuracy tables
need, kept where the HDF5 files cannot be.

A study that spans machines or sessions keeps, per batch of runs, the two small tables of
``python -m interplace_analysis export FILE... --format csv --tables configs,evaluations
--out DIR`` (a few kB per run, where the HDF5 file of a 20-epoch run is megabytes of step
timings). ``strategies`` accepts such a directory wherever it accepts an HDF5 file; the
runs it reads from it count in the accuracy, selection, paired-difference and
time-to-target tables and the accuracy curves (everything computed from a run's final and
per-epoch evaluations), and the report leaves out the tables that need each step's
timings (measured time, per-rank time, pass-through), saying so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import schema as schemas
from .h5file import ResultFormatError
from .loader import Results

# What the accuracy tables read from each table (the rest of the columns is kept as is).
CONFIG_COLUMNS = ("run_id", "config_key", "model", "strategy_label", "seed", "status",
                  "eval_accuracy", "eval_loss", "eval_samples")
EVALUATION_COLUMNS = ("run_id", "strategy_label", "seed", "epoch", "step", "loss", "accuracy",
                      "validation_loss", "validation_accuracy")


@dataclass
class RunTables:
    """Finished runs as two frames: ``runs`` (one row per run, the loader's ``configs``
    columns, status ``ok`` only) and ``evaluations`` (the loader's ``evaluations``
    columns), with the source of each run in ``runs['source']``; ``schema``: the
    configuration schema of the interplace that wrote them (schema.py)."""
    runs: pd.DataFrame
    evaluations: pd.DataFrame
    schema: schemas.Schema = schemas.LEGACY_SCHEMA


def is_export_directory(path: str | Path) -> bool:
    return Path(path).is_dir()


def _read_csv(path: Path, required: tuple[str, ...]) -> pd.DataFrame:
    if not path.is_file():
        raise ResultFormatError(
            f"{path.parent}: no {path.name} (an exported directory holds configs.csv and"
            " evaluations.csv)\nHINT: python -m interplace_analysis export FILE... --format csv"
            f" --tables configs,evaluations --out {path.parent}")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ResultFormatError(f"{path}: not a CSV table ({e})") from e
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ResultFormatError(f"{path}: missing column(s) {', '.join(missing)}"
                                " (not a table written by `interplace_analysis export`?)")
    return frame


def read_export_directory(directory: str | Path) -> RunTables:
    """``configs.csv`` and ``evaluations.csv`` of an export directory, and the schema of
    ``schema.json`` where the export wrote one (the legacy schema where not); run ids are
    prefixed with the directory so that two directories never share one."""
    d = Path(directory)
    schema = (schemas.from_json((d / schemas.EXPORT_FILE).read_text(encoding="utf-8"))
              if (d / schemas.EXPORT_FILE).is_file() else schemas.LEGACY_SCHEMA)
    configs = _read_csv(d / "configs.csv", CONFIG_COLUMNS)
    evaluations = _read_csv(d / "evaluations.csv", EVALUATION_COLUMNS)
    unknown = sorted(set(evaluations["run_id"]) - set(configs["run_id"]))
    if unknown:
        raise ResultFormatError(f"{d}: evaluations.csv names run(s) configs.csv lacks"
                                f" (e.g. {unknown[0]})")
    prefix = f"{d}:"
    configs = configs.assign(run_id=prefix + configs["run_id"].astype(str), source=str(d))
    evaluations = evaluations.assign(run_id=prefix + evaluations["run_id"].astype(str))
    return RunTables(configs[configs["status"] == "ok"].reset_index(drop=True), evaluations,
                     schema)


def from_results(results: Results) -> RunTables:
    runs = results.ok.copy()
    if not runs.empty:
        runs["source"] = runs["file"].astype(str)
    return RunTables(runs, results.evaluations, results.schema)


def combine(parts: list[RunTables]) -> RunTables:
    """The runs of every part; a configuration (``config_key``: its parameters, seed
    included) that finished in two parts is refused, as the paired comparisons take one
    run per seed."""
    runs_parts = [p.runs for p in parts if not p.runs.empty]
    runs = pd.concat(runs_parts, ignore_index=True) if runs_parts else pd.DataFrame()
    evs = [p.evaluations for p in parts if not p.evaluations.empty]
    evaluations = pd.concat(evs, ignore_index=True) if evs else pd.DataFrame()
    if not runs.empty:
        twice = runs[runs.duplicated("config_key", keep=False)]
        if not twice.empty:
            first = twice.iloc[0]
            sources = sorted(set(twice[twice["config_key"] == first["config_key"]]["source"]))
            raise ResultFormatError(
                f"the configuration of {first['strategy_label']}, seed {first['seed']}"
                f" ({first['model']}) finished in more than one input ({', '.join(sources)}):"
                " a paired comparison takes one run per seed\nHINT: give each run once")
    return RunTables(runs, evaluations, schemas.merged([p.schema for p in parts]))
