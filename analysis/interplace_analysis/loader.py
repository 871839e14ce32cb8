"""Loads one or more result files into a :class:`Results` of tidy pandas frames.

Several files (shards of one sweep, or different sweeps) load into one set of frames.

Runs. Every ``/configs`` group is one *run* of a configuration, and nothing is dropped:

* ``config_key`` names the configuration across its runs: the id the group would have
  with ``repeat = 0`` (the FNV-1a 64 of the canonical parameter string with
  ``repeat=0``, docs/results-format.md) when the group has a ``repeat`` attribute, else
  its id. Runs with the same ``config_key`` are runs of one configuration.
* ``repeat`` is the group's ``repeat`` attribute (0-based; absent: 0).
* ``run_id`` is unique among the loaded runs: the configuration id, or, when the same id
  occurs more than once (the same sweep's file given twice, two sweeps of one spec, or
  a future file with several groups of one id), ``<id>#<n>`` with n = 0, 1, ... in load
  order. Every frame carries ``run_id``; per-run look-ups take it.

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
    # By run id: the simulator's first step of the configuration, the layout of timelines.
    predicted_timelines: dict[str, pd.DataFrame] = field(default_factory=dict)
    # Test-split evaluations during training (frames.evaluation_frame); empty if none.
    evaluations: pd.DataFrame = field(default_factory=pd.DataFrame)

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
            self._measured = {rid: g for rid, g in m.groupby("run_id", sort=False)}

    def measured_curve(self, run_id: str) -> pd.DataFrame:
        """The ``curves`` rows of the measured steps of one run, by step."""
        empty = self.curves.iloc[:0] if not self.curves.empty else pd.DataFrame(
            columns=["config_id", "run_id", "step", "warmup", "step_time_s", "loss", "accuracy",
                     "elapsed_s"])
        return self._measured.get(run_id, empty)

    def measured_step_times(self, run_id: str) -> np.ndarray:
        """Step times of the measured steps of one run, in step order."""
        return self.measured_curve(run_id)["step_time_s"].dropna().to_numpy(dtype=float)

    def runs_per_configuration(self) -> pd.Series:
        """Per ``config_key``: how many ``ok`` runs with measured steps it has."""
        ok = self.ok
        return ok.groupby("config_key").size() if not ok.empty else pd.Series(dtype=int)


# The canonical parameter string's keys, in order (docs/results-format.md).
CANONICAL_KEYS = (
    "model", "order", "placer", "devices", "strategy", "pipeline", "interlock_mode",
    "micro_batches", "batch_size", "warmup_steps", "steps", "dataset",
    "eval_samples_requested", "optimizer", "learning_rate", "weight_decay", "seed", "device",
    "cost_device", "model_options", "data_dir", "repeat",
)


def _fnv1a64(text: str) -> str:
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) % 2**64
    return f"{h:016x}"


def _canonical_value(key: str, value: object) -> str:
    if value is None:
        return ""
    if key in ("learning_rate", "weight_decay") and isinstance(value, int | float):
        return f"{float(value):.17g}"
    return str(value)


def _recipe_lines(attrs: dict) -> str:
    """The training recipe's lines of the canonical string: only where they differ from
    the defaults (docs/results-format.md), so files without them keep their ids."""
    def real(key: str) -> str:
        return f"{float(attrs[key]):.17g}"
    out = ""
    schedule = str(attrs.get("lr_schedule", "constant"))
    milestones = str(attrs.get("lr_milestones", ""))
    warmup = int(attrs.get("warmup_lr_steps", 0) or 0)
    if schedule != "constant" or warmup != 0 or milestones != "":
        out += (f"lr_schedule={schedule}\nlr_milestones={milestones}\n"
                f"lr_milestone_unit={attrs.get('lr_milestone_unit', 'steps')}\n"
                f"lr_decay={real('lr_decay')}\nwarmup_lr_steps={warmup}\n")
    if float(attrs.get("epochs", 0.0) or 0.0) != 0.0:
        out += f"epochs={real('epochs')}\n"
    if str(attrs.get("eval_epochs", "")):
        out += f"eval_epochs={attrs['eval_epochs']}\n"
    if int(attrs.get("eval_epoch_samples", 0) or 0) != 0:
        out += f"eval_epoch_samples={int(attrs['eval_epoch_samples'])}\n"
    if int(attrs.get("train_samples", 0) or 0) != 0:
        out += f"train_samples={int(attrs['train_samples'])}\n"
    if str(attrs.get("augmentation", "none")) != "none":
        out += f"augmentation={attrs['augmentation']}\n"
    if int(attrs.get("aux_head_capped", 0) or 0) != 0:
        out += "aux_head_capped=1\n"
    if str(attrs.get("aux_head", "study")) == "proportional":
        out += "aux_head=proportional\n"
    if int(attrs.get("weight_decay_all", 0) or 0) != 0:
        out += "weight_decay_all=1\n"
    if int(attrs.get("threads_per_rank", 0) or 0) != 0:
        out += f"threads_per_rank={int(attrs['threads_per_rank'])}\n"
    return out


def config_key(attrs: dict) -> str:
    """The configuration a run belongs to (module docstring): its id with repeat 0."""
    if "repeat" not in attrs:
        return str(attrs.get("id", ""))
    values = {**attrs, "repeat": 0}
    text = "".join(f"{k}={_canonical_value(k, values.get(k))}\n" for k in CANONICAL_KEYS[:-1])
    return _fnv1a64(text + _recipe_lines(values) + "repeat=0\n")


def _identify_runs(records: list[ConfigRecord], notes: list[str]) -> None:
    """Sets ``config_key`` (attribute) and a unique ``run_id`` on every record."""
    count: dict[str, int] = {}
    for rec in records:
        count[rec.id] = count.get(rec.id, 0) + 1
        rec.attrs["config_key"] = config_key(rec.attrs)
    seen: dict[str, int] = {}
    for rec in records:
        if count[rec.id] > 1:
            n = seen.get(rec.id, 0)
            seen[rec.id] = n + 1
            rec.run_id = f"{rec.id}#{n}"
    repeated = sorted(cid for cid, n in count.items() if n > 1)
    if repeated:
        files = sorted({r.file for r in records if r.id in set(repeated)})
        notes.append(f"{len(repeated)} configuration id(s) occur more than once (e.g."
                     f" {repeated[0]}, {count[repeated[0]]} times; in {', '.join(files)}):"
                     " each occurrence counts as one run of its configuration")


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
    unique: list[str | Path] = []
    for p in paths:
        if any(Path(p).resolve() == Path(q).resolve() for q in unique):
            notes.append(f"{p} was given twice: read once")
            continue
        unique.append(p)
    contents = [read_result_file(p) for p in unique]
    records: list[ConfigRecord] = [rec for fc in contents for rec in fc.configs]
    _identify_runs(records, notes)

    config_rows, curves, steps, ranks, timelines, predicted = [], [], [], [], {}, {}
    evaluations = []
    for rec in records:
        config_rows.append(frames.config_row(rec))
        curve = frames.curve_frame(rec)
        if not curve.empty:
            curves.append(curve)
            sr = frames.step_rank_frame(rec, curve)
            if not sr.empty:
                steps.append(sr)
        ranks.extend(frames.rank_summary_rows(rec))
        ev = frames.evaluation_frame(rec)
        if not ev.empty:
            evaluations.append(ev)
        if rec.timeline is not None and len(rec.timeline):
            timelines[rec.run_id] = rec.timeline
        if rec.predicted_timeline is not None and len(rec.predicted_timeline):
            predicted[rec.run_id] = rec.predicted_timeline
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
        predicted_timelines=predicted,
        evaluations=(pd.concat(evaluations, ignore_index=True) if evaluations
                     else pd.DataFrame()),
    )
