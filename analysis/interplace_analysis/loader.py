"""Loads one or more result files into a :class:`Results` of tidy pandas frames.

Several files (shards of one sweep, or different sweeps) load into one set of frames.
A configuration id present in two files is kept once (the first) and noted: ``interplace
merge`` refuses such inputs, but a report over overlapping files should still work.

Configurations that never made it into any file are found from the ``index``
attribute (the position in the spec's expansion): a gap in the indices of one spec is
a configuration that did not finish (a killed job, an unmerged shard). Gaps at the
*end* of the expansion cannot be seen, since the format records no total count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import frames
from .h5file import (FORMAT_NAME, FORMAT_VERSION, ConfigRecord, ResultFormatError,
                     read_result_file)

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "ResultFormatError", "Results", "load_results"]


@dataclass
class Results:
    """The frames described in :mod:`.frames`, plus per-file provenance and notes."""

    configs: pd.DataFrame
    steps: pd.DataFrame
    curves: pd.DataFrame
    rank_summary: pd.DataFrame
    timelines: dict[str, pd.DataFrame]
    files: pd.DataFrame  # one row per file: its root attributes
    missing: pd.DataFrame  # configurations absent from the files (index gaps)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> pd.DataFrame:
        """Configurations that ran and have a measured step time."""
        c = self.configs
        if c.empty:
            return c
        return c[(c["status"] == "ok") & (c["measured_steps"] > 0) & c["step_time_s"].notna()]

    _measured: dict[str, pd.DataFrame] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        # Split once: tables ask per configuration, and filtering the whole frame each
        # time would make a report quadratic in the number of configurations.
        if not self.curves.empty:
            m = self.curves[~self.curves["warmup"]].sort_values(["config_id", "step"])
            self._measured = {cid: g for cid, g in m.groupby("config_id", sort=False)}

    def measured_curve(self, config_id: str) -> pd.DataFrame:
        """The ``curves`` rows of the measured steps of one configuration, by step."""
        empty = self.curves.iloc[:0] if not self.curves.empty else pd.DataFrame(
            columns=["config_id", "step", "warmup", "step_time_s", "loss", "accuracy",
                     "elapsed_s"])
        return self._measured.get(config_id, empty)

    def measured_step_times(self, config_id: str) -> np.ndarray:
        """Step times of the measured steps of one configuration, in step order."""
        return self.measured_curve(config_id)["step_time_s"].dropna().to_numpy(dtype=float)


def _missing_indices(files: list, records: list[ConfigRecord], notes: list[str]) -> pd.DataFrame:
    """Index gaps per spec; only when every shard of that spec is present."""
    rows = []
    by_spec: dict[str, list] = {}
    for f in files:
        by_spec.setdefault(str(f.provenance.get("spec_text", "")), []).append(f)
    for spec, fs in by_spec.items():
        shards = {str(f.provenance.get("shard", "0/1")) for f in fs}
        complete = bool(shards & {"0/1", "merged"})
        if not complete:
            try:
                n = {int(s.split("/")[1]) for s in shards}
                got = {int(s.split("/")[0]) for s in shards}
                complete = len(n) == 1 and got == set(range(n.pop()))
            except (ValueError, IndexError):
                complete = False
            if not complete:
                notes.append(f"only shards {sorted(shards)} of a sweep are present: configurations"
                             " of the other shards cannot be listed as missing")
                continue
        paths = {f.path for f in fs}
        indices = {int(r.attrs["index"]) for r in records
                   if r.file in paths and isinstance(r.attrs.get("index"), int)
                   and r.attrs["index"] >= 0}
        if not indices:
            continue
        for i in sorted(set(range(max(indices) + 1)) - indices):
            rows.append({"config_id": "", "index": i, "name": f"(index {i} of the sweep)",
                         "status": "missing",
                         "reason": "absent from the file(s): not finished (job killed?) or its"
                                   " shard not merged; rerun with --resume",
                         "file": ", ".join(sorted(paths))})
    return pd.DataFrame(rows, columns=["config_id", "index", "name", "status", "reason", "file"])


def load_results(paths: list[str | Path] | str | Path) -> Results:
    """Reads every file (raising :class:`ResultFormatError` for a bad one) into frames."""
    if isinstance(paths, str | Path):
        paths = [paths]
    if not paths:
        raise ResultFormatError("no result files given")
    notes: list[str] = []
    contents = [read_result_file(p) for p in paths]
    seen: dict[str, str] = {}
    records: list[ConfigRecord] = []
    for fc in contents:
        for rec in fc.configs:
            if rec.id in seen:
                notes.append(f"configuration {rec.id} ({rec.attrs.get('name', '')}) is in both"
                             f" {seen[rec.id]} and {fc.path}; the first is used")
                continue
            seen[rec.id] = fc.path
            records.append(rec)

    config_rows, curves, steps, ranks, timelines = [], [], [], [], {}
    for rec in records:
        config_rows.append(frames.config_row(rec))
        curve = frames.curve_frame(rec)
        if not curve.empty:
            curves.append(curve)
            sr = frames.step_rank_frame(rec, curve)
            if not sr.empty:
                steps.append(sr)
        ranks.extend(frames.rank_summary_rows(rec))
        if rec.timeline is not None and len(rec.timeline):
            timelines[rec.id] = rec.timeline
    configs = pd.DataFrame(config_rows)
    if not configs.empty:
        configs = configs.sort_values(["file", "index"], kind="stable").reset_index(drop=True)
    else:
        notes.append("the files hold no configurations")
    file_rows = [{"path": fc.path, "configurations": len(fc.configs), **fc.provenance}
                 for fc in contents]
    return Results(
        configs=configs,
        steps=pd.concat(steps, ignore_index=True) if steps else pd.DataFrame(),
        curves=pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(),
        rank_summary=pd.DataFrame(ranks),
        timelines=timelines,
        files=pd.DataFrame(file_rows),
        missing=_missing_indices(contents, records, notes),
        notes=notes,
    )
