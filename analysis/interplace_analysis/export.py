"""The loader's tables as files for other tools (``python -m interplace_analysis export``).

Two tidy tables, one row per observation and one column per variable:

* ``steps``: one row per (run, step, rank): every ``ranks/*`` value, the stage's
  auxiliary loss and accuracy and the step's own columns (the loader's ``steps`` frame),
  plus the run's configuration as columns (:data:`CONFIG_COLUMNS` and every
  ``model_option_<key>``), so that one table answers "step time by strategy" without a join.
* ``configs``: one row per run, the loader's ``configs`` frame (parameters, status,
  medians over measured steps, prediction, graph statistics, derived metrics).

CSV (comma-separated, a header row, full float precision, empty cells for missing values)
or Parquet (through pyarrow, with the column types kept).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .frames import PARAMETERS
from .h5file import MODEL_OPTION_PREFIX
from .loader import Results

FORMATS = ("csv", "parquet")
# Columns of a run's configuration copied onto each of its steps rows.
CONFIG_COLUMNS = ("config_key", "repeat", "file", "index", "name", *PARAMETERS, "status",
                  "strategy_label")
STEP_KEY = ("config_id", "run_id", "step", "rank")


def _option_columns(configs: pd.DataFrame) -> list[str]:
    return [c for c in configs.columns if c.startswith(MODEL_OPTION_PREFIX)]


def tidy_steps(results: Results) -> pd.DataFrame:
    """The ``steps`` table: one row per (run, step, rank) with its configuration's columns."""
    configs = results.configs
    extra = [c for c in CONFIG_COLUMNS if c in configs.columns] + _option_columns(configs)
    if results.steps.empty:
        return pd.DataFrame(columns=[*STEP_KEY, *extra])
    per_run = configs[["run_id", *extra]]
    steps = results.steps.merge(per_run, on="run_id", how="left", validate="many_to_one")
    # In the order of the configs table (file, then position in the sweep), then by step.
    steps = steps.sort_values(["file", "index", "run_id", "step", "rank"], kind="stable")
    first = [c for c in STEP_KEY if c in steps.columns]
    return steps[first + extra + [c for c in steps.columns if c not in first + extra]] \
        .reset_index(drop=True)


def tables(results: Results) -> dict[str, pd.DataFrame]:
    return {"steps": tidy_steps(results), "configs": results.configs}


def write_tables(results: Results, out: Path, fmt: str) -> list[Path]:
    """Writes ``out/steps.<fmt>`` and ``out/configs.<fmt>``; returns the paths."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (valid: {', '.join(FORMATS)})")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in tables(results).items():
        path = out / f"{name}.{fmt}"
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, engine="pyarrow", index=False)
        written.append(path)
    return written
