"""The loader's tables as files for other tools (``python -m interplace_analysis export``).

Three tidy tables, one row per observation and one column per variable:

* ``steps``: one row per (run, step, rank): every ``ranks/*`` value, the stage's
  auxiliary loss and accuracy and the step's own columns (the loader's ``steps`` frame),
  plus the run's configuration as columns (:data:`CONFIG_COLUMNS` and every
  ``model_option_<key>``), so that one table answers "step time by strategy" without a join.
* ``configs``: one row per run, the loader's ``configs`` frame (parameters, status,
  medians over measured steps, prediction, graph statistics, derived metrics).
* ``evaluations``: one row per (run, evaluation during training): the epoch, step, test
  and validation loss and accuracy (the loader's ``evaluations`` frame), with the run's
  configuration columns as ``steps`` has them. Small (tens of rows per run) where
  ``steps`` is large: with ``configs`` it is what the ``strategies`` report's accuracy
  tables need, so the two can be kept where the HDF5 files cannot
  (:mod:`.exported`).

CSV (comma-separated, a header row, full float precision, empty cells for missing values)
or Parquet (through pyarrow, with the column types kept).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from .h5file import MODEL_OPTION_PREFIX, RANK_DATASETS
from .loader import Results
from .schema import EXPORT_FILE

FORMATS = ("csv", "parquet")
TABLES = ("steps", "configs", "evaluations")
def config_columns(results: Results) -> tuple[str, ...]:
    """Columns of a run's configuration copied onto each of its steps rows: its key, its
    parameters (those of the files' schema), status and strategy label."""
    return ("config_key", "repeat", "file", "index", "name", *results.schema.parameters(),
            "status", "strategy_label")


STEP_KEY = ("config_id", "run_id", "step", "rank")


def _option_columns(configs: pd.DataFrame) -> list[str]:
    return [c for c in configs.columns if c.startswith(MODEL_OPTION_PREFIX)]


# The steps table's own columns after STEP_KEY, in this order; one a file lacks (the CPU
# times of older files, aux_* of files without them) is empty.
STEP_COLUMNS = ("warmup", "step_time_s", "loss", "accuracy", "elapsed_s", "aux_loss",
                "aux_accuracy", *RANK_DATASETS)
BATCH_RUNS = 2000  # runs per batch written: bounds the memory whatever the file's size


def _join(parts: list[dict[str, np.ndarray]]) -> pd.DataFrame:
    """The runs' columns joined into one frame, as ``pd.concat`` of their frames would
    (columns in order of first appearance; NaN where a run lacks one), in one step."""
    names: dict[str, None] = {}
    for p in parts:
        names.update(dict.fromkeys(p))
    lengths = [len(p["run_id"]) for p in parts]
    data = {}
    for name in names:
        if all(name in p for p in parts):
            data[name] = np.concatenate([p[name] for p in parts])
        else:
            data[name] = np.concatenate([np.asarray(p[name], dtype=float) if name in p
                                         else np.full(n, np.nan) for p, n in zip(parts, lengths)])
    return pd.DataFrame(data)


def _step_batches(results: Results) -> Iterator[pd.DataFrame]:
    """The ``steps`` table in batches of about BATCH_RUNS runs, in the order of the
    configs table (file, position in the sweep, run id), then by step and rank; each
    run's groups are read when its batch is made, and no batch is kept."""
    configs = results.configs
    extra = [c for c in config_columns(results) if c in configs.columns]
    extra += _option_columns(configs)
    columns = [*STEP_KEY, *extra, *STEP_COLUMNS]
    if configs.empty:
        yield pd.DataFrame(columns=columns)
        return
    order = configs.sort_values(["file", "index", "run_id"], kind="stable")
    per_run = order[["run_id", *extra]]
    for start in range(0, len(order), BATCH_RUNS):
        chunk = per_run.iloc[start:start + BATCH_RUNS]
        parts = [results.run_step_arrays(r) for r in chunk["run_id"]]
        parts = [p for p in parts if p is not None]
        if not parts:
            continue
        steps = _join(parts).drop(columns=["config_id"])
        steps = chunk.merge(steps, on="run_id", how="inner", validate="one_to_many")
        steps.insert(0, "config_id", steps["run_id"].map(
            dict(zip(configs["run_id"], configs["config_id"]))))
        steps = steps.reindex(columns=columns)
        for c in STEP_COLUMNS:
            steps[c] = steps[c].astype(bool if c == "warmup" else float)
        yield steps.astype({"step": "int64", "rank": "int64"})


def tidy_steps(results: Results) -> pd.DataFrame:
    """The ``steps`` table: one row per (run, step, rank) with its configuration's columns
    (whole, in memory: :func:`write_tables` streams it instead)."""
    return pd.concat(list(_step_batches(results)), ignore_index=True)


def tidy_evaluations(results: Results) -> pd.DataFrame:
    """The ``evaluations`` table: the loader's evaluations with each run's configuration
    columns (those of ``steps``) after the run id, in the order of the configs table."""
    configs = results.configs
    ev = results.evaluations
    extra = [c for c in config_columns(results) if c in configs.columns and c not in ev.columns]
    extra += _option_columns(configs)
    if ev.empty or configs.empty:
        return pd.DataFrame(columns=["config_id", "run_id", *extra, *ev.columns])
    order = configs.sort_values(["file", "index", "run_id"], kind="stable")
    per_run = order[["run_id", *extra]]
    table = per_run.merge(ev, on="run_id", how="inner", validate="one_to_many")
    first = ["config_id", "run_id", *extra]
    return table[first + [c for c in table.columns if c not in first]]


def tables(results: Results) -> dict[str, pd.DataFrame]:
    return {"steps": tidy_steps(results), "configs": results.configs,
            "evaluations": tidy_evaluations(results)}


def _write_steps(results: Results, path: Path, fmt: str) -> None:
    """The steps table, batch by batch (bounded memory)."""
    if fmt == "csv":
        with open(path, "w", encoding="utf-8", newline="") as out:
            for i, batch in enumerate(_step_batches(results)):
                batch.to_csv(out, index=False, header=i == 0)
        return
    import pyarrow as pa
    import pyarrow.parquet as pq
    writer = None
    try:
        for batch in _step_batches(results):
            table = pa.Table.from_pandas(batch, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            elif table.schema != writer.schema:
                table = table.cast(writer.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


def parse_tables(text: str) -> tuple[str, ...]:
    """``--tables``: comma-separated names of :data:`TABLES`."""
    which = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in which if t not in TABLES]
    if unknown or not which:
        what = f"unknown export table {unknown[0]!r}" if unknown else "no export table chosen"
        raise ValueError(f"{what} (valid: {', '.join(TABLES)})")
    return which


def write_tables(results: Results, out: Path, fmt: str,
                 which: tuple[str, ...] = TABLES) -> list[Path]:
    """Writes ``out/<table>.<fmt>`` for each table of ``which`` (:func:`parse_tables`;
    ``steps`` streamed, run by run), and the files' configuration schema as
    ``out/schema.json`` (what ``strategies`` reads beside the tables); returns the
    tables' paths."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (valid: {', '.join(FORMATS)})")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in TABLES:
        if name not in which:
            continue
        path = out / f"{name}.{fmt}"
        if name == "steps":
            _write_steps(results, path, fmt)
        else:
            frame = results.configs if name == "configs" else tidy_evaluations(results)
            if fmt == "csv":
                frame.to_csv(path, index=False)
            else:
                frame.to_parquet(path, engine="pyarrow", index=False)
        written.append(path)
    (out / EXPORT_FILE).write_text(results.schema.to_json(), encoding="utf-8")
    return written
