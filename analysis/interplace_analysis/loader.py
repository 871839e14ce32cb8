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

import functools
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from . import frames, stats
from . import schema as schemas
from .h5file import (FORMAT_NAME, FORMAT_VERSION, ConfigRecord, GroupReader,
                     ResultFormatError, read_result_summary)

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "ResultFormatError", "Results", "load_results"]


class _RunMap(Mapping):
    """Per run id, a frame read from the run's group when first asked for (the timelines):
    ``get``, ``[]`` and ``in`` touch that run only; iterating reads every run."""

    def __init__(self, results: Results, make) -> None:
        self._results = results
        self._make = make  # record -> frame or None
        self._cache: dict[str, pd.DataFrame | None] = {}

    def _frame(self, run_id: str) -> pd.DataFrame | None:
        if run_id not in self._cache:
            if run_id not in self._results._records:
                return None
            self._cache[run_id] = self._make(self._results.record(run_id))
        return self._cache[run_id]

    def __getitem__(self, run_id: str) -> pd.DataFrame:
        frame = self._frame(run_id)
        if frame is None:
            raise KeyError(run_id)
        return frame

    def __contains__(self, run_id: object) -> bool:
        return isinstance(run_id, str) and self._frame(run_id) is not None

    def __iter__(self) -> Iterator[str]:
        return iter([r for r in self._results._records if self._frame(r) is not None])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _timeline(rec: ConfigRecord) -> pd.DataFrame | None:
    return rec.timeline if rec.timeline is not None and len(rec.timeline) else None


def _predicted_timeline(rec: ConfigRecord) -> pd.DataFrame | None:
    t = rec.predicted_timeline
    return t if t is not None and len(t) else None


class Results:
    """The frames described in :mod:`.frames`, plus per-file provenance and notes.

    ``configs``, ``files``, ``missing`` and ``notes`` are built when loading (from each
    file's summary table where it has one). Per-step data is read when first asked for:
    per run by :meth:`measured_step_times`, :meth:`measured_curve`, :meth:`run_steps`,
    :meth:`record` and the ``timelines``/``predicted_timelines`` mappings (only that run's
    group), or for every run by the ``steps``, ``curves``, ``rank_summary`` and
    ``evaluations`` frames (every group; what a table over all steps needs)."""

    def __init__(self, configs: pd.DataFrame, files: pd.DataFrame, missing: pd.DataFrame,
                 notes: list[str], records: list[ConfigRecord],
                 schema: schemas.Schema = schemas.LEGACY_SCHEMA) -> None:
        self.configs = configs
        # The configuration schema of the files (their root attribute `schema`; schema.py).
        self.schema = schema
        self.files = files
        self.missing = missing
        self.notes = notes
        self._records = {r.run_id: r for r in records}
        self._reader = GroupReader()
        self._step_times: dict[str, np.ndarray] = {}
        self._within_run: dict[tuple[str, int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._frames: dict[str, pd.DataFrame] = {}
        self.timelines: Mapping[str, pd.DataFrame] = _RunMap(self, _timeline)
        self.predicted_timelines: Mapping[str, pd.DataFrame] = _RunMap(self, _predicted_timeline)

    # -- per run ---------------------------------------------------------------------------
    def record(self, run_id: str) -> ConfigRecord:
        """The run's whole record (its group read now when the summary table gave it)."""
        rec = self._records[run_id]
        if rec.summary is None:
            return rec
        full = self._reader.record(rec.file, rec.id)
        full.attrs.update(rec.attrs)  # config_key, the typed model options
        full.run_id = rec.run_id
        return full

    def measured_step_times(self, run_id: str) -> np.ndarray:
        """Step times of the measured steps of one run, in step order."""
        times = self._step_times.get(run_id)
        if times is None:
            rec = self._records.get(run_id)
            if rec is None:
                times = np.zeros(0)
            elif rec.summary is None:
                st = np.asarray(rec.steps.get("step_time_s", np.zeros(0)), dtype=float)
                times = st[frames.measured_mask(rec)] if len(st) else st
            else:
                times = self._reader.measured_step_times(rec.file, rec.id)
            times = times[~np.isnan(times)]
            self._step_times[run_id] = times
        return times

    def lazy_step_times(self, run_ids, seed: int) -> stats.LazySteps:
        """:meth:`measured_step_times` of each run, read only when a statistic asks for
        it (the single-run fallback of :mod:`.stats`), with each run's within-run
        replicates drawn once for the analysis seed ``seed`` (:meth:`within_run_scale`)."""
        return stats.LazySteps(self.measured_step_times, list(run_ids),
                               functools.partial(self.within_run_scale, seed=seed))

    def within_run_scale(self, run_id: str, n_resamples: int, seed: int) -> np.ndarray:
        """The run's :func:`.stats.within_run_scale` replicates, drawn on first use and
        kept: seeded by the analysis seed, the run's id and its steps (two files that
        share a configuration id but not its measurement draw independently), so every
        table and figure shows the same within-run interval for one run, and a report
        draws each run once rather than once per comparison."""
        key = (run_id, n_resamples, seed)
        kept = self._within_run.get(key)
        if kept is None:
            steps = self.measured_step_times(run_id)
            rng = np.random.default_rng(stats.seed_for(
                "within-run", run_id, stats.steps_fingerprint(steps), base=seed))
            scale = stats.within_run_scale(steps, rng, n_resamples)
            # Kept as codes into its distinct values (a median of S steps takes at most
            # S (S + 1) / 2 values): 4.5 kB a run instead of 16 (0.45 GB at 100,000 runs).
            values, codes = np.unique(scale, return_inverse=True)
            kept = self._within_run[key] = (values, codes.astype(
                np.uint16 if values.size <= np.iinfo(np.uint16).max else np.uint32))
        values, codes = kept
        return values[codes]

    def _steps_record(self, run_id: str, curve_only: bool = False) -> ConfigRecord:
        rec = self._records[run_id]
        if rec.summary is None:
            return rec
        out = self._reader.steps_record(rec.file, rec.id, rec.attrs, curve_only)
        out.run_id = rec.run_id
        return out

    def measured_curve(self, run_id: str) -> pd.DataFrame:
        """The ``curves`` rows of the measured steps of one run, by step."""
        curve = frames.curve_frame(self._steps_record(run_id, curve_only=True)) \
            if run_id in self._records else pd.DataFrame()
        if curve.empty:
            return pd.DataFrame(columns=["config_id", "run_id", "step", "warmup", "step_time_s",
                                         "loss", "accuracy", "elapsed_s"])
        return curve[~curve["warmup"]].sort_values("step")

    def curve_arrays(self, run_id: str) -> dict[str, np.ndarray]:
        """:meth:`measured_curve` as arrays (``step``, ``loss``, ``accuracy``,
        ``elapsed_s``), the same values without a DataFrame: what a table over many runs
        (the strategies table) reads per run."""
        names = ("step", "loss", "accuracy", "elapsed_s")
        rec = self._steps_record(run_id, curve_only=True) if run_id in self._records else None
        if rec is None or "step_time_s" not in rec.steps:
            return {k: np.zeros(0) for k in names}
        n = len(rec.steps["step_time_s"])
        mask = frames.measured_mask(rec)
        out = {"step": np.asarray(rec.steps.get("step", np.arange(n))).astype(int),
               "loss": np.asarray(rec.steps.get("loss", np.full(n, np.nan)), dtype=float),
               "accuracy": np.asarray(rec.steps.get("accuracy", np.full(n, np.nan)),
                                      dtype=float),
               "elapsed_s": frames.elapsed_times(rec, mask)}
        if run_id not in self._step_times:  # what measured_step_times would read
            st = np.asarray(rec.steps["step_time_s"], dtype=float)[mask]
            self._step_times[run_id] = st[~np.isnan(st)]
        order = np.argsort(out["step"][mask], kind="stable")
        return {k: v[mask][order] for k, v in out.items()}

    def run_steps(self, run_id: str) -> pd.DataFrame:
        """The ``steps`` rows of one run (one per step and rank)."""
        if run_id not in self._records:
            return pd.DataFrame()
        rec = self._steps_record(run_id)
        curve = frames.curve_frame(rec)
        return frames.step_rank_frame(rec, curve) if not curve.empty else pd.DataFrame()

    def run_step_arrays(self, run_id: str) -> dict[str, np.ndarray] | None:
        """:meth:`run_steps` as columns of arrays (None where it is empty)."""
        if run_id not in self._records:
            return None
        return frames.step_rank_arrays(self._steps_record(run_id))

    def records(self) -> Iterator[ConfigRecord]:
        """Every run's whole record, one at a time, in the order of ``configs``."""
        for run_id in self.configs["run_id"] if not self.configs.empty else []:
            yield self.record(run_id)

    # -- every run -------------------------------------------------------------------------
    def _all(self, name: str) -> pd.DataFrame:
        if name not in self._frames:
            curves, steps, ranks, evaluations = [], [], [], []
            for rec in self.records():
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
            self._frames.update(
                curves=pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(),
                steps=pd.concat(steps, ignore_index=True) if steps else pd.DataFrame(),
                rank_summary=pd.DataFrame(ranks),
                evaluations=(pd.concat(evaluations, ignore_index=True) if evaluations
                             else pd.DataFrame()))
        return self._frames[name]

    @property
    def steps(self) -> pd.DataFrame:
        return self._all("steps")

    @property
    def curves(self) -> pd.DataFrame:
        return self._all("curves")

    @property
    def rank_summary(self) -> pd.DataFrame:
        return self._all("rank_summary")

    @property
    def evaluations(self) -> pd.DataFrame:
        return self._all("evaluations")

    @property
    def ok(self) -> pd.DataFrame:
        """Configurations that ran and have a measured step time."""
        c = self.configs
        if c.empty:
            return c
        return c[(c["status"] == "ok") & (c["measured_steps"] > 0) & c["step_time_s"].notna()]

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
    if int(attrs.get("virtual_stages", 1) or 1) != 1:  # interleaved 1F1B's V
        out += f"virtual_stages={int(attrs['virtual_stages'])}\n"
    if int(attrs.get("data_parallel", 1) or 1) != 1:  # data-parallel replicas R
        out += f"data_parallel={int(attrs['data_parallel'])}\n"
    return out


def config_key(attrs: dict) -> str:
    """The configuration a run belongs to (module docstring): its id with repeat 0, as the
    writer stores it (``config_key``), recomputed for files from before that attribute."""
    stored = attrs.get("config_key")
    if stored:
        return str(stored)
    return canonical_config_key(attrs)


def canonical_config_key(attrs: dict) -> str:
    """The id with repeat 0 recomputed from the parameters (docs/results-format.md), for
    files written before the writer stored ``config_key`` (2026-12-03). Those files hold
    none of the keys added since, so this rule stays as it is when the writer's schema
    (runs/src/runtime/config_fields.cpp) gains a key."""
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
    contents = []
    for p in unique:
        fc, note = read_result_summary(p)
        contents.append(fc)
        if note:
            notes.append(note)
    records: list[ConfigRecord] = [rec for fc in contents for rec in fc.configs]
    _identify_runs(records, notes)
    schema = schemas.merged([schemas.of_provenance(fc.provenance) for fc in contents])
    configs = pd.DataFrame([frames.config_row(rec, schema) for rec in records])
    if not configs.empty:
        configs = configs.sort_values(["file", "index"], kind="stable").reset_index(drop=True)
    else:
        notes.append("the files hold no configurations")
    file_rows = [{"path": fc.path, "configurations": len(fc.configs),
                  **{k: v for k, v in fc.provenance.items() if k != schemas.SCHEMA_ATTRIBUTE}}
                 for fc in contents]
    return Results(configs=configs, files=pd.DataFrame(file_rows),
                   missing=_missing_indices(contents, records, notes), notes=notes,
                   records=records, schema=schema)
