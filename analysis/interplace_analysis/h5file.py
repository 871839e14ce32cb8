"""Reads one result file (docs/results-format.md, format versions 1 to 3) into plain records.

This is the only module that touches h5py. It checks the file's identity first
(``format_name``, ``format_version``) and the shapes of what it reads, so every later
step can trust its input; anything unexpected becomes a :class:`ResultFormatError`
whose message names the file (and the group) and what was wrong, never a traceback
from deep inside pandas.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

FORMAT_NAME = "interplace-results"
FORMAT_VERSION = 3  # the version ``interplace sweep`` writes
# Versions this reader understands: 2 only adds the run bookkeeping (``repeat``) that
# version 1 files may already hold; 3 adds dimension scales, units and typed attributes
# and stores lists as string arrays (normalised below, so every version gives the same
# records).
SUPPORTED_VERSIONS = (1, 2, 3)

# Attributes that are lists: string arrays in version 3, joined text before. Records hold
# the text form (separator per attribute), so frames do not depend on the version.
LIST_ATTRIBUTES = {"hosts": ",", "devices": ",", "device_names": ",", "overrides": "\n",
                   "node_local_ranks": ","}
MODEL_OPTION_PREFIX = "model_option_"

# Per step, one value ([S]); per step and rank ([S, K]). Names as in the format document.
STEP_DATASETS = ("step", "warmup", "step_time_s", "loss", "accuracy")
STEP_RANK_DATASETS = ("aux_loss", "aux_accuracy")
RANK_DATASETS = (
    "step_s", "forward_s", "backward_s", "aux_s", "optimizer_s",
    "comm_wait_s", "idle_s", "overhead_s", "bytes_sent", "peak_memory_bytes",
    # The rank's main-thread CPU time (absent in files written before it was recorded).
    "step_cpu_s", "forward_cpu_s", "backward_cpu_s", "aux_cpu_s", "optimizer_cpu_s",
)
# The test-split evaluations during training (eval_epochs; absent before they existed),
# and of the validation split where the configuration held one out (validation_fraction).
EVALUATION_DATASETS = ("epoch", "step", "loss", "accuracy", "samples",
                       "validation_loss", "validation_accuracy", "validation_samples")
TIMELINE_DATASETS = ("rank", "kind", "start_s", "end_s")
# The schedule action of each event (absent in files written before they were recorded).
TIMELINE_ACTION_DATASETS = ("action", "micro_batch", "loss_stage", "peer")
# The CPU time of each measured event (absent in older files and in prediction/timeline).
TIMELINE_OPTIONAL_DATASETS = TIMELINE_ACTION_DATASETS + ("cpu_s",)
GRAPH_ATTRIBUTES = (
    "node_count", "edge_count", "depth", "max_width",
    "mean_branching_factor", "critical_path_cost_share",
)


class ResultFormatError(Exception):
    """The input is not a readable interplace result file of a supported version."""


@dataclass
class ConfigRecord:
    """Everything one ``/configs/<id>`` group holds, as Python and numpy values."""

    file: str
    attrs: dict[str, Any]
    steps: dict[str, np.ndarray] = field(default_factory=dict)  # steps/* ([S] or [S, K])
    ranks: dict[str, np.ndarray] = field(default_factory=dict)  # ranks/* ([S, K])
    timeline: pd.DataFrame | None = None  # rank, kind, start_s, end_s; None if absent
    # The simulator's first step in the same layout (prediction/timeline); None if absent.
    predicted_timeline: pd.DataFrame | None = None
    prediction: dict[str, Any] = field(default_factory=dict)  # attributes and [K] arrays
    graph: dict[str, Any] = field(default_factory=dict)
    # The rl placer's training (placer_rl): its attributes and, read from the group, the
    # per-episode curves episode_step_time_s and best_step_time_s.
    placer_rl: dict[str, Any] = field(default_factory=dict)
    evaluations: dict[str, np.ndarray] = field(default_factory=dict)  # evaluations/* ([V])
    order: np.ndarray | None = None
    placement: np.ndarray | None = None
    run_id: str = ""  # unique among the loaded runs; set by the loader (default: the id)
    # From the file's summary table (/summary): the step statistics of the configs row
    # (frames.STEP_COLUMNS); None when the record was read from its group whole. Such a
    # record holds the attributes only; its per-step data is read when asked for.
    summary: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return str(self.attrs.get("id", ""))

    @property
    def repeat(self) -> int:
        """0-based index of this run of its configuration (attribute ``repeat``; 0 when
        absent: one run)."""
        r = self.attrs.get("repeat", 0)
        return int(r) if isinstance(r, int | float) and not isinstance(r, bool) else 0


@dataclass
class FileContents:
    path: str
    provenance: dict[str, Any]
    configs: list[ConfigRecord]


def _plain(value: Any) -> Any:
    """An attribute value as str/int/float/list (h5py gives bytes and numpy scalars)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        if value.size == 1 and value.ndim <= 1:  # a scalar, or one written as shape [1]
            return _plain(value.reshape(())[()])
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.integer | np.bool_):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def _attrs(obj: h5py.HLObject) -> dict[str, Any]:
    out = {key: _plain(obj.attrs[key]) for key in obj.attrs}
    for key, sep in LIST_ATTRIBUTES.items():
        if isinstance(out.get(key), list):
            out[key] = sep.join(str(v) for v in out[key])
    return out


def _option_value(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def model_options(attrs: dict[str, Any]) -> dict[str, Any]:
    """The model options of a configuration as ``{key: value}``: the ``model_option_<key>``
    attributes of version 3, else parsed from the ``model_options`` text (``k=v,...``)."""
    typed = {k[len(MODEL_OPTION_PREFIX):]: v for k, v in attrs.items()
             if k.startswith(MODEL_OPTION_PREFIX)}
    if typed:
        return typed
    text = attrs.get("model_options") or ""
    return {k: _option_value(v) for k, _, v in
            (item.partition("=") for item in str(text).split(",") if item)}


def _dataset(group: h5py.Group, name: str, where: str) -> np.ndarray:
    ds = group[name]
    if not isinstance(ds, h5py.Dataset):
        raise ResultFormatError(f"{where}/{name} is a group, expected a dataset")
    if h5py.check_string_dtype(ds.dtype) is not None:
        return np.asarray(ds.asstr()[()], dtype=object)
    return np.asarray(ds[()])


def _read_subgroup(group: h5py.Group, sub: str, names: tuple[str, ...], where: str) -> dict:
    if sub not in group:
        return {}
    g = group[sub]
    return {n: _dataset(g, n, f"{where}/{sub}") for n in names if n in g}


def _check_shapes(rec: ConfigRecord, where: str) -> None:
    """Steps are [S], per-stage data [S, K] with K = ``devices``, per-rank data [S, K x R]
    with R = ``data_parallel`` (1 when absent): anything else is corrupt."""
    lengths = {name: a.shape[0] for name, a in rec.steps.items() if a.ndim >= 1}
    if len(set(lengths.values())) > 1:
        raise ResultFormatError(f"{where}: steps/* datasets differ in length: {lengths}")
    s = next(iter(lengths.values()), None)
    k = rec.attrs.get("devices")
    replicas = int(rec.attrs.get("data_parallel", 1) or 1)
    for prefix, data in (("steps", {n: rec.steps[n] for n in STEP_RANK_DATASETS
                                    if n in rec.steps}), ("ranks", rec.ranks)):
        columns = None if k is None else int(k) * (replicas if prefix == "ranks" else 1)
        for name, a in data.items():
            expected = (s if s is not None else a.shape[0],
                        columns if columns is not None else a.shape[-1])
            if a.ndim != 2 or tuple(a.shape) != expected:
                raise ResultFormatError(
                    f"{where}: {prefix}/{name} has shape {a.shape}, expected [S, K] = {expected}")
    for name in STEP_DATASETS:
        if name in rec.steps and rec.steps[name].ndim != 1:
            raise ResultFormatError(f"{where}: steps/{name} has shape {rec.steps[name].shape},"
                                    " expected [S]")
    if rec.ranks and "step_time_s" not in rec.steps:
        raise ResultFormatError(f"{where}: ranks/* present but steps/step_time_s missing")


def _read_timeline(group: h5py.Group, where: str) -> pd.DataFrame:
    """A ``timeline`` subgroup as a frame: the required columns, and the action and CPU
    time columns where the file has them."""
    names = TIMELINE_DATASETS + TIMELINE_OPTIONAL_DATASETS
    t = _read_subgroup(group, "timeline", names, where)
    missing = [n for n in TIMELINE_DATASETS if n not in t]
    if missing:
        raise ResultFormatError(f"{where}: timeline lacks {', '.join(missing)}")
    if len({len(v) for v in t.values()}) != 1:
        raise ResultFormatError(f"{where}: timeline/* datasets differ in length")
    return pd.DataFrame({n: t[n] for n in names if n in t})


def _read_config(path: str, group: h5py.Group, gid: str) -> ConfigRecord:
    where = f"{path}: /configs/{gid}"
    rec = ConfigRecord(file=path, attrs=_attrs(group))
    rec.attrs.setdefault("id", gid)
    for key, value in model_options(rec.attrs).items():  # every version: typed options
        rec.attrs[MODEL_OPTION_PREFIX + key] = value
    rec.run_id = rec.id
    for required in ("status", "name", "model"):
        if required not in rec.attrs:
            raise ResultFormatError(f"{where}: attribute '{required}' is missing")
    rec.steps = _read_subgroup(group, "steps", STEP_DATASETS + STEP_RANK_DATASETS, where)
    rec.ranks = _read_subgroup(group, "ranks", RANK_DATASETS, where)
    if "timeline" in group:
        rec.timeline = _read_timeline(group, where)
    if "prediction" in group:
        p = group["prediction"]
        rec.prediction = _attrs(p)
        for n in ("busy_s", "idle_s", "peak_memory_bytes"):
            if n in p:
                rec.prediction[n] = _dataset(p, n, f"{where}/prediction")
        if "timeline" in p:
            rec.predicted_timeline = _read_timeline(p, f"{where}/prediction")
    rec.evaluations = _read_subgroup(group, "evaluations", EVALUATION_DATASETS, where)
    if len({len(v) for v in rec.evaluations.values()}) > 1:
        raise ResultFormatError(f"{where}: evaluations/* datasets differ in length")
    if "graph" in group:
        rec.graph = _attrs(group["graph"])
    if "placer_rl" in group:
        rl = group["placer_rl"]
        rec.placer_rl = _attrs(rl)
        for n in ("episode_step_time_s", "best_step_time_s"):
            if n in rl:
                rec.placer_rl[n] = _dataset(rl, n, f"{where}/placer_rl")
    if "order" in group:
        rec.order = _dataset(group, "order", where)
    if "placement" in group:
        rec.placement = _dataset(group, "placement", where)
    _check_shapes(rec, where)
    return rec


def _open_checked(path: str) -> tuple[h5py.File, dict[str, Any]]:
    """The open file and its root attributes, after the identity checks."""
    if not Path(path).is_file():
        raise ResultFormatError(f"{path}: no such file")
    journal = Path(f"{path}.journal")
    if journal.is_dir() and any(e.name.endswith(".h5") for e in journal.iterdir()):
        # Configurations appended to a large file, not yet folded into it
        # (docs/results-format.md, "Appends and the journal"): reading the file alone
        # would miss them.
        raise ResultFormatError(
            f"{path}: {journal} holds configurations not yet folded into the file"
            f" (a sweep still running, or killed). HINT: interplace fold {path}")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ResultFormatError(f"{path}: not an HDF5 file or unreadable ({e})") from None
    prov = _attrs(f)
    name = prov.get("format_name")
    if name != FORMAT_NAME:
        f.close()
        raise ResultFormatError(
            f"{path}: not an interplace result file (format_name is {name!r},"
            f" expected {FORMAT_NAME!r})")
    version = prov.get("format_version")
    if version not in SUPPORTED_VERSIONS:
        f.close()
        raise ResultFormatError(
            f"{path}: result format version {version!r} is not supported"
            f" (this analysis reads versions"
            f" {', '.join(map(str, SUPPORTED_VERSIONS))})")
    return f, prov


def _read_groups(path: str, f: h5py.File) -> list[ConfigRecord]:
    configs = []
    if "configs" in f:
        try:
            # By name, whatever the storage: h5py walks a group that tracks its links'
            # creation order (the writer's /configs, docs/results-format.md) in that order.
            for gid in sorted(f["configs"]):
                g = f["configs"][gid]
                if not isinstance(g, h5py.Group):
                    raise ResultFormatError(f"{path}: /configs/{gid} is not a group")
                configs.append(_read_config(path, g, gid))
        except ResultFormatError:
            raise
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise ResultFormatError(f"{path}: corrupt configuration data ({e})") from None
    return configs


def read_result_file(path: str | Path) -> FileContents:
    """Reads and validates one file whole (every group); raises :class:`ResultFormatError`
    on any problem."""
    path = str(path)
    f, prov = _open_checked(path)
    with f:
        configs = _read_groups(path, f)
    return FileContents(path=path, provenance=prov, configs=configs)


# The step statistics the summary table holds (docs/results-format.md, "/summary"), as the
# configs frame names them (frames.config_row).
SUMMARY_STEP_COLUMNS = ("measured_steps", "step_time_s", *RANK_DATASETS, "utilisation",
                        "idle_fraction", "final_step", "final_loss", "final_accuracy",
                        "has_timeline")


def _from_json(value: Any) -> Any:
    """A JSON attribute value as :func:`_plain` gives the HDF5 one: a list of one element
    is that element."""
    if isinstance(value, list) and len(value) == 1:
        return value[0]
    return value


def _shared_keys(obj: dict[str, Any]) -> dict[str, Any]:
    """A JSON object with its keys (and short text values: models, strategies, devices)
    interned: the decoder makes each row's ~100 keys anew, 5 kB a configuration, 0.5 GB
    per file of 100,000 held by the loaded records."""
    return {sys.intern(k): sys.intern(v) if isinstance(v, str) and len(v) <= 32 else v
            for k, v in obj.items()}


def _summary_attrs(obj: dict[str, Any]) -> dict[str, Any]:
    out = {k: _from_json(v) for k, v in obj.items()}
    for key, sep in LIST_ATTRIBUTES.items():
        if isinstance(out.get(key), list):
            out[key] = sep.join(str(v) for v in out[key])
    return out


def _read_summary(path: str, f: h5py.File) -> tuple[list[ConfigRecord] | None, str]:
    """The records of the summary table (attributes and step statistics, no per-step
    data), or None and why not when the file has no table that matches its groups."""
    if "summary" not in f or "configs" not in f:
        return None, ""
    s = f["summary"]
    try:
        ids = [str(x) for x in s["id"].asstr(errors="replace")[()]]
        names = set(f["configs"].keys())
        if len(ids) != len(names) or set(ids) != names:
            return None, (f"{path}: its summary table does not match its configuration groups"
                          f" ({len(ids)} rows, {len(names)} groups): read group by group")
        texts = s["attributes"].asstr(errors="replace")[()]
        columns = {c: s[c][()].tolist() for c in SUMMARY_STEP_COLUMNS if c in s}
    except (KeyError, OSError, ValueError, TypeError) as e:
        return None, f"{path}: its summary table is unreadable ({e}): read group by group"
    records = []
    for i, (gid, text) in enumerate(zip(ids, texts)):
        where = f"{path}: /summary row {i} ({gid})"
        try:
            attrs = json.loads(text, object_hook=_shared_keys)
        except ValueError as e:
            raise ResultFormatError(f"{where}: attributes are not JSON ({e})") from None
        graph = _summary_attrs(attrs.pop("graph", {}))
        prediction = _summary_attrs(attrs.pop("prediction", {}))
        placer_rl = _summary_attrs(attrs.pop("placer_rl", {}))
        rec = ConfigRecord(file=path, attrs=_summary_attrs(attrs), graph=graph,
                           prediction=prediction, placer_rl=placer_rl)
        rec.attrs.setdefault("id", gid)
        for key, value in model_options(rec.attrs).items():
            rec.attrs[MODEL_OPTION_PREFIX + key] = value
        rec.run_id = rec.id
        for required in ("status", "name", "model"):
            if required not in rec.attrs:
                raise ResultFormatError(f"{where}: attribute '{required}' is missing")
        rec.summary = {c: v[i] for c, v in columns.items()}
        rec.summary["has_timeline"] = bool(rec.summary.get("has_timeline", 0))
        records.append(rec)
    records.sort(key=lambda r: r.id)  # the groups' order (by name), as read group by group
    return records, ""


def read_result_summary(path: str | Path) -> tuple[FileContents, str]:
    """One file's configurations from its summary table in one read per column (records
    without per-step data, :attr:`ConfigRecord.summary` set); a file without a table that
    matches its groups (older files) is read group by group. Returns the contents and a
    note ("" when the table was used or the file has none)."""
    path = str(path)
    f, prov = _open_checked(path)
    with f:
        records, note = _read_summary(path, f)
        if records is None:
            records = _read_groups(path, f)
    return FileContents(path=path, provenance=prov, configs=records), note


class GroupReader:
    """Reads single configuration groups on demand, keeping each file open once."""

    def __init__(self) -> None:
        self._files: dict[str, h5py.File] = {}

    def _file(self, path: str) -> h5py.File:
        f = self._files.get(path)
        if f is None:
            f = self._files[path] = h5py.File(path, "r")
        return f

    def record(self, path: str, gid: str) -> ConfigRecord:
        """The whole record of ``/configs/<gid>`` (as :func:`read_result_file` reads it)."""
        try:
            return _read_config(path, self._file(path)["configs"][gid], gid)
        except ResultFormatError:
            raise
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise ResultFormatError(f"{path}: /configs/{gid}: corrupt ({e})") from None

    def _fast_read(self, path: str, gid: str, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Numeric datasets ``sub/name`` of the group by HDF5's low-level calls (a third
        of the high-level API's cost per dataset: what a table over 100,000 runs needs);
        absent ones left out. Raises for anything unusual (a string dataset, a group
        where a dataset should be), so that the caller takes the checked path."""
        group = h5py.h5g.open(self._file(path).id, f"configs/{gid}".encode())
        subs: dict[bytes, Any] = {}
        out = {}
        for name in names:
            sub, leaf = (part.encode() for part in name.split("/", 1))
            if sub not in subs:
                subs[sub] = h5py.h5g.open(group, sub) if group.links.exists(sub) else None
            if subs[sub] is None or not subs[sub].links.exists(leaf):
                continue
            ds = h5py.h5d.open(subs[sub], leaf)
            if ds.dtype.kind not in "biuf":
                raise TypeError(f"{name}: not numeric")
            arr = np.empty(ds.shape, dtype=ds.dtype)
            if arr.size:
                ds.read(h5py.h5s.ALL, h5py.h5s.ALL, arr)
            out[name] = arr
        return out

    def steps_record(self, path: str, gid: str, attrs: dict[str, Any],
                     curve_only: bool = False) -> ConfigRecord:
        """A record of the group's ``steps/*`` and ``ranks/*`` only (what the curves and
        the steps table need); ``curve_only``: just the datasets of a curve."""
        where = f"{path}: /configs/{gid}"
        step_names = STEP_DATASETS if curve_only else STEP_DATASETS + STEP_RANK_DATASETS
        rank_names = ("step_s",) if curve_only else RANK_DATASETS
        try:
            data = self._fast_read(path, gid, tuple(f"steps/{n}" for n in step_names)
                                   + tuple(f"ranks/{n}" for n in rank_names))
        except Exception:  # noqa: BLE001 - the checked path below says what is wrong
            data = None
        if data is not None:
            rec = ConfigRecord(file=path, attrs=attrs)
            rec.steps = {n.split("/", 1)[1]: a for n, a in data.items() if n.startswith("steps/")}
            rec.ranks = {n.split("/", 1)[1]: a for n, a in data.items() if n.startswith("ranks/")}
            _check_shapes(rec, where)
            return rec
        try:
            g = self._file(path)["configs"][gid]
            rec = ConfigRecord(file=path, attrs=attrs)
            step_names = STEP_DATASETS if curve_only else STEP_DATASETS + STEP_RANK_DATASETS
            rec.steps = _read_subgroup(g, "steps", step_names, where)
            rec.ranks = _read_subgroup(g, "ranks", ("step_s",) if curve_only else RANK_DATASETS,
                                       where)
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise ResultFormatError(f"{where}: corrupt ({e})") from None
        _check_shapes(rec, where)
        return rec

    def measured_step_times(self, path: str, gid: str) -> np.ndarray:
        """``steps/step_time_s`` of the measured steps only (two datasets read)."""
        try:
            data = self._fast_read(path, gid, ("steps/step_time_s", "steps/warmup"))
        except Exception:  # noqa: BLE001 - read it the checked way below
            data = None
        if data is not None:
            if "steps/step_time_s" not in data:
                return np.zeros(0)
            st = np.asarray(data["steps/step_time_s"], dtype=float)
            if "steps/warmup" in data:
                st = st[np.asarray(data["steps/warmup"]) == 0]
            return st
        g = self._file(path)["configs"][gid]
        if "steps" not in g or "step_time_s" not in g["steps"]:
            return np.zeros(0)
        steps = g["steps"]
        st = np.asarray(steps["step_time_s"][()], dtype=float)
        if "warmup" in steps:
            st = st[np.asarray(steps["warmup"][()]) == 0]
        return st

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()
