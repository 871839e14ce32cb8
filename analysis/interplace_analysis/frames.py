"""Tidy pandas tables built from the records of :mod:`.h5file`.

Four frames, each with ``config_id`` as the key that joins them:

* ``configs``: one row per configuration: its parameters, status and reason, the
  medians over *measured* steps (warm-up excluded), final loss/accuracy, evaluation,
  the simulator's prediction, graph statistics and derived metrics (see
  :func:`config_row`).
* ``steps``: one row per (configuration, step, rank) with every ``ranks/*`` value and
  the step's loss and accuracy (repeated on each rank's row), for ad-hoc analysis.
* ``curves``: one row per (configuration, step): step time, loss, accuracy and the
  elapsed measured wall time at the end of the step (:func:`elapsed_times`; what loss
  curves and the equal-wall-time comparison need).
* ``rank_summary``: one row per (configuration, rank) with per-rank medians.
* ``evaluations``: one row per (configuration, evaluation during training): the epoch,
  step, test loss and accuracy and the samples evaluated, and the same of the validation
  split where one was held out (:func:`evaluation_frame`).

Medians, not means: a step time distribution has a long right tail (a page fault, a
late message), and the median is what a steady-state pipeline delivers.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from . import stats
from .h5file import GRAPH_ATTRIBUTES, MODEL_OPTION_PREFIX, RANK_DATASETS, ConfigRecord
from .schema import E2E, LEGACY_SCHEMA, Schema

OK_ATTRIBUTES = (
    "measured_wall_s", "samples_per_s", "eval_loss", "eval_accuracy", "eval_samples",
    "parameter_count", "reach", "global_only_reason",
)
COMPUTE_KINDS = ("forward_s", "backward_s", "aux_s", "optimizer_s")


def strategy_label(strategy: str, pipeline: str, interlock_mode: str,
                   virtual_stages: int = 1) -> str:
    """One name per distinct backprop schedule: ``global/gpipe``, ``e2e``, ``pairwise+sum``,
    ``global/interleaved-1f1b/v2`` (interleaved 1F1B with V = 2 chunks per device), ...

    The pipeline only matters for the global strategy and the interlock mode only for
    strategies with a reach between 0 and K-1, so the label carries them only there; V
    only where it is not 1.
    """
    strategy = strategy or "global"
    if strategy == "global" and pipeline == E2E:
        # One unpipelined pass (M = 1): the interlocking-backpropagation study's
        # end-to-end baseline, its own label beside global/gpipe and global/1f1b.
        return E2E
    if strategy == "global":
        v = f"/v{virtual_stages}" if virtual_stages and int(virtual_stages) != 1 else ""
        return f"global/{pipeline}{v}" if pipeline else "global"
    if strategy != "local" and interlock_mode == "sum":
        return f"{strategy}+sum"
    return strategy


def is_global_label(label: str) -> bool:
    """Whether a strategy label is the global strategy's (``global/...`` or ``e2e``)."""
    return label == E2E or label.startswith("global")


def _virtual_stages(attrs) -> int:
    """The configuration's V (interleaved 1F1B's chunks per device; 1 when absent)."""
    v = attrs.get("virtual_stages", 1)
    return 1 if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)


def _nan() -> float:
    return float("nan")


_median = stats.median  # the package's one median


def _mean_over_ranks(v: np.ndarray) -> np.ndarray:
    """Per step, the mean over ranks ignoring NaN (NaN, silently, when all are NaN)."""
    v = np.asarray(v, dtype=float)
    n = np.sum(~np.isnan(v), axis=1)
    total = np.nansum(v, axis=1)
    return np.divide(total, n, out=np.full(len(v), np.nan), where=n > 0)


def measured_mask(rec: ConfigRecord) -> np.ndarray:
    """True for measured steps; without ``steps/warmup`` every step counts as measured."""
    if "step_time_s" not in rec.steps:
        return np.zeros(0, dtype=bool)
    n = len(rec.steps["step_time_s"])
    warm = rec.steps.get("warmup")
    return np.ones(n, dtype=bool) if warm is None else np.asarray(warm) == 0


_OLD_ESTIMATORS = {"event-simulator": "stage", "list-schedule": "node"}


def config_row(rec: ConfigRecord, schema: Schema = LEGACY_SCHEMA) -> dict:
    """The ``configs`` row of one configuration; its parameter columns are the attributes
    of ``schema`` (the files' configuration schema, :meth:`.schema.Schema.parameters`).

    Derived metrics, each a median over measured steps of a per-step value:

    * ``step_time_s``: the step's time (max over ranks).
    * ``forward_s`` ... ``overhead_s``: mean over ranks; ``bytes_sent``: sum over ranks;
      ``peak_memory_bytes``: the maximum over steps and ranks.
    * ``utilisation``: compute (forward + backward + aux + optimizer) summed over the
      K x R ranks / (K x R x step time): the share of the device-time the kernels used.
    * ``idle_fraction``: idle_s summed over ranks / (K x R x step time), the bubble fraction,
      defined like the simulator's ``idle_fraction`` so the two compare directly.
    * ``sim_error``: predicted / measured step time - 1 (positive: the simulator is
      pessimistic).
    """
    a = rec.attrs
    row: dict = {"config_id": rec.id, "run_id": rec.run_id,
                 "config_key": a.get("config_key", rec.id), "repeat": rec.repeat,
                 "file": rec.file, "index": a.get("index", -1),
                 "name": a.get("name", "")}
    numbers = schema.number_parameters()
    for p in schema.parameters():
        row[p] = a.get(p, _nan() if p in numbers else None)
    row["status"] = a.get("status", "")
    row["reason"] = a.get("reason", "")
    row["started_utc"] = a.get("started_utc", "")
    row["wall_s"] = a.get("wall_s", _nan())
    for p in OK_ATTRIBUTES:
        row[p] = a.get(p, "" if p == "global_only_reason" else _nan())
    # One column per model option (model_option_<key>), typed, in every format version.
    for key, value in a.items():
        if key.startswith(MODEL_OPTION_PREFIX):
            row[key] = value
    row["strategy_label"] = strategy_label(a.get("strategy", ""), a.get("pipeline", ""),
                                           a.get("interlock_mode", ""),
                                           _virtual_stages(a))
    # Data-parallel replicas R of the K-stage pipeline (K x R ranks); the attribute is
    # written only when not 1.
    row["data_parallel"] = int(a.get("data_parallel", 1) or 1)
    # Simulate-only configurations (the traversal-order study): planned, not trained; the
    # rl placer's preset, the order whose node sequence a skipped one repeats, the placer's
    # wall time and what rl training did (absent in older files: not simulate-only).
    row["simulate_only"] = int(a.get("simulate_only", 0) or 0)
    row["rl_preset"] = str(a.get("rl_preset", "default"))
    row["same_sequence_as"] = str(a.get("same_sequence_as", ""))
    row["placer_wall_s"] = a.get("placer_wall_s", _nan())
    rl = rec.placer_rl
    row["rl_start_step_time_s"] = rl.get("start_step_time_s", _nan())
    row["rl_greedy_step_time_s"] = rl.get("greedy_step_time_s", _nan())
    row["rl_episodes_run"] = rl.get("episodes_run", _nan())
    row["rl_groups"] = rl.get("groups", _nan())
    # coarse to fine (docs/placers.md#coarse-to-fine): the fine level's groups, 0 for the
    # nodes; absent (NaN) when rl placed one level
    row["rl_fine_groups"] = rl.get("fine_groups", _nan())

    if rec.summary is not None:  # from the file's summary table: computed by the writer
        row.update({k: v for k, v in rec.summary.items() if k != "has_timeline"})
    else:
        row.update(step_columns(rec))

    pred = rec.prediction
    # Which schedule the simulator ran: "stage" (a stage chain's) or "node" (the node-level
    # list schedule of any other placement). Older files said it as their estimator:
    # "event-simulator" for stage schedules, "list-schedule" for the estimate they had then.
    row["pred_messages"] = pred.get("messages") or _OLD_ESTIMATORS.get(pred.get("estimator", ""), "")
    row["pred_step_time_s"] = pred.get("step_time_s", _nan())
    row["pred_idle_fraction"] = pred.get("idle_fraction", _nan())
    row["pred_node_level_reason"] = pred.get("node_level_reason", pred.get("fallback_reason", ""))
    for g in GRAPH_ATTRIBUTES:
        row[g] = rec.graph.get(g, _nan())
    # What the MFU needs (tables/efficiency.py); NaN/empty in files written before them.
    row["forward_flops"] = rec.graph.get("forward_flops", _nan())
    row["backward_flops"] = rec.graph.get("backward_flops", _nan())
    row["graph_batch_size"] = rec.graph.get("batch_size", _nan())
    row["peak_flops_per_s"] = a.get("peak_flops_per_s", _nan())
    row["cost_device_preset"] = a.get("cost_device_preset", "")
    row["device_names"] = a.get("device_names", "")
    row["sim_error"] = (row["pred_step_time_s"] / row["step_time_s"] - 1.0
                        if row["step_time_s"] and not math.isnan(row["step_time_s"])
                        else _nan())
    row["has_timeline"] = (bool(rec.summary.get("has_timeline", False))
                           if rec.summary is not None
                           else rec.timeline is not None and len(rec.timeline) > 0)
    return row


def step_columns(rec: ConfigRecord) -> dict:
    """The columns of :func:`config_row` computed from the steps (the summary table's step
    statistics, docs/results-format.md, which the C++ writer computes the same way)."""
    a = rec.attrs
    row: dict = {}
    mask = measured_mask(rec)
    row["measured_steps"] = int(mask.sum())
    st = np.asarray(rec.steps.get("step_time_s", np.zeros(0)), dtype=float)
    row["step_time_s"] = _median(st[mask]) if mask.any() else _nan()
    for name in RANK_DATASETS:
        v = rec.ranks.get(name)
        if v is None or not mask.any():
            row[name] = _nan()
        elif name == "peak_memory_bytes":
            row[name] = float(np.nanmax(v[mask])) if v[mask].size else _nan()
        elif name == "bytes_sent":
            row[name] = _median(np.sum(v[mask], axis=1))
        else:
            row[name] = _median(_mean_over_ranks(v[mask]))
    row["utilisation"] = row["idle_fraction"] = _nan()
    # Over every rank: the K stages of each of the R data-parallel replicas.
    k = int(a.get("devices", 0) or 0) * int(a.get("data_parallel", 1) or 1)
    if mask.any() and k and all(c in rec.ranks for c in COMPUTE_KINDS):
        denom = k * st[mask]
        compute = sum(rec.ranks[c][mask].astype(float) for c in COMPUTE_KINDS).sum(axis=1)
        row["utilisation"] = _median(compute / denom)
        if "idle_s" in rec.ranks:
            row["idle_fraction"] = _median(rec.ranks["idle_s"][mask].sum(axis=1) / denom)
    last = np.flatnonzero(mask)
    if last.size:
        i = last[-1]
        row["final_step"] = int(rec.steps["step"][i]) if "step" in rec.steps else int(i)
        row["final_loss"] = float(rec.steps["loss"][i]) if "loss" in rec.steps else _nan()
        row["final_accuracy"] = (float(rec.steps["accuracy"][i])
                                 if "accuracy" in rec.steps else _nan())
    else:
        row["final_step"], row["final_loss"], row["final_accuracy"] = -1, _nan(), _nan()
    return row


def elapsed_times(rec: ConfigRecord, mask: np.ndarray) -> np.ndarray:
    """Measured wall time at the end of each measured step (NaN for warm-up steps).

    A rank's ``step_s`` runs from the end of its previous optimiser step to the end of
    this one, so the running sum of a rank's ``step_s`` is when that rank finished the
    step, counted from the start of the measured steps; the step is finished when the
    last rank has finished it: ``elapsed[i] = max over ranks of cumsum(step_s)[i]``.
    Summing the per-step maximum instead would overstate the time of pipelined
    strategies, whose ranks are not slowest on the same steps. Without ``ranks/step_s``
    it falls back to the running sum of ``steps/step_time_s``.
    """
    st = np.asarray(rec.steps["step_time_s"], dtype=float)
    elapsed = np.full(len(st), np.nan)
    per_rank = rec.ranks.get("step_s")
    if per_rank is not None and per_rank.shape[1] > 0:
        elapsed[mask] = np.max(np.cumsum(per_rank[mask].astype(float), axis=0), axis=1)
    else:
        elapsed[mask] = np.cumsum(st[mask])
    return elapsed


def curve_frame(rec: ConfigRecord) -> pd.DataFrame:
    """Per step: step time, loss, accuracy and ``elapsed_s`` (:func:`elapsed_times`)."""
    if "step_time_s" not in rec.steps:
        return pd.DataFrame()
    st = np.asarray(rec.steps["step_time_s"], dtype=float)
    mask = measured_mask(rec)
    n = len(st)
    elapsed = elapsed_times(rec, mask)
    return pd.DataFrame({
        "config_id": rec.id, "run_id": rec.run_id,
        "step": rec.steps.get("step", np.arange(n)).astype(int),
        "warmup": ~mask,
        "step_time_s": st,
        "loss": np.asarray(rec.steps.get("loss", np.full(n, np.nan)), dtype=float),
        "accuracy": np.asarray(rec.steps.get("accuracy", np.full(n, np.nan)), dtype=float),
        "elapsed_s": elapsed,
    })


def per_rank_of_stage(values: np.ndarray, k: int) -> np.ndarray:
    """Per-stage columns (the last axis: K stages) spread over k ranks, rank r taking stage
    r mod K: with data parallelism (``data_parallel`` R) the file keeps the auxiliary losses
    and the prediction per stage and the ranks/* per rank, k = K x R; unchanged otherwise."""
    stages = values.shape[-1] if values.ndim else 0
    if stages == 0 or stages == k or k % stages != 0:
        return values
    return values[..., np.arange(k) % stages]


def step_rank_frame(rec: ConfigRecord, curve: pd.DataFrame) -> pd.DataFrame:
    """One row per (step, rank): the ``ranks/*`` values, aux loss/accuracy of the rank's
    stage, and the step's own columns from ``curve``."""
    if curve.empty or not rec.ranks:
        return pd.DataFrame()
    s, k = next(iter(rec.ranks.values())).shape
    data = {
        "config_id": rec.id, "run_id": rec.run_id,
        "step": np.repeat(curve["step"].to_numpy(), k),
        "rank": np.tile(np.arange(k), s),
    }
    for col in ("warmup", "step_time_s", "loss", "accuracy", "elapsed_s"):
        data[col] = np.repeat(curve[col].to_numpy(), k)
    for name in ("aux_loss", "aux_accuracy"):
        if name in rec.steps:
            data[name] = per_rank_of_stage(rec.steps[name].astype(float), k).reshape(-1)
    for name, v in rec.ranks.items():
        data[name] = v.reshape(-1)
    return pd.DataFrame(data)


def step_rank_arrays(rec: ConfigRecord) -> dict[str, np.ndarray] | None:
    """:func:`step_rank_frame` of :func:`curve_frame` as columns of arrays (no frame per
    run; export joins a batch of runs into one frame); None where that frame is empty."""
    if "step_time_s" not in rec.steps or not rec.ranks:
        return None
    st = np.asarray(rec.steps["step_time_s"], dtype=float)
    n = len(st)
    mask = measured_mask(rec)
    s, k = next(iter(rec.ranks.values())).shape
    if n == 0:
        return None
    curve = {"step": rec.steps.get("step", np.arange(n)).astype(int), "warmup": ~mask,
             "step_time_s": st,
             "loss": np.asarray(rec.steps.get("loss", np.full(n, np.nan)), dtype=float),
             "accuracy": np.asarray(rec.steps.get("accuracy", np.full(n, np.nan)),
                                    dtype=float),
             "elapsed_s": elapsed_times(rec, mask)}
    data = {"config_id": np.full(s * k, rec.id, dtype=object),
            "run_id": np.full(s * k, rec.run_id, dtype=object),
            "step": np.repeat(curve["step"], k), "rank": np.tile(np.arange(k), s)}
    for col in ("warmup", "step_time_s", "loss", "accuracy", "elapsed_s"):
        data[col] = np.repeat(curve[col], k)
    for name in ("aux_loss", "aux_accuracy"):
        if name in rec.steps:
            data[name] = per_rank_of_stage(rec.steps[name].astype(float), k).reshape(-1)
    for name, v in rec.ranks.items():
        data[name] = v.reshape(-1)
    return data


def rank_summary_rows(rec: ConfigRecord) -> list[dict]:
    """Per rank: medians over measured steps of every ``ranks/*`` value, the rank's
    utilisation (compute / its step_s), and the simulator's busy/idle for that device."""
    mask = measured_mask(rec)
    if not rec.ranks or not mask.any():
        return []
    k = next(iter(rec.ranks.values())).shape[1]
    cols: dict[str, np.ndarray] = {"rank": np.arange(k)}
    with warnings.catch_warnings():  # an all-NaN rank gives NaN, as it should
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, v in rec.ranks.items():
            cols[name] = stats.median(v[mask].astype(float), axis=0)
        if all(c in rec.ranks for c in COMPUTE_KINDS) and "step_s" in rec.ranks:
            comp = sum(rec.ranks[c][mask].astype(float) for c in COMPUTE_KINDS)
            cols["utilisation"] = stats.median(comp / rec.ranks["step_s"][mask], axis=0)
    for name in ("busy_s", "idle_s"):
        arr = per_rank_of_stage(np.asarray(rec.prediction.get(name, []), dtype=float), k)
        cols[f"pred_{name}"] = arr if arr.shape == (k,) else np.full(k, np.nan)
    return [{"config_id": rec.id, "run_id": rec.run_id,
             **{n: v[r].item() for n, v in cols.items()}}
            for r in range(k)]


def evaluation_frame(rec: ConfigRecord) -> pd.DataFrame:
    """The ``evaluations`` table of one run (test-split evaluations after chosen epochs, with
    the validation split's beside them where one was held out),
    with its strategy label and seed so that curves group without a join; empty when the
    run has none."""
    e = rec.evaluations
    if not e or "accuracy" not in e:
        return pd.DataFrame()
    n = len(e["accuracy"])
    a = rec.attrs
    return pd.DataFrame({
        "config_id": rec.id, "run_id": rec.run_id,
        "strategy_label": strategy_label(a.get("strategy", ""), a.get("pipeline", ""),
                                         a.get("interlock_mode", ""),
                                           _virtual_stages(a)),
        "seed": a.get("seed", -1),
        "epoch": np.asarray(e.get("epoch", np.full(n, np.nan)), dtype=float),
        "step": np.asarray(e.get("step", np.full(n, -1)), dtype=int),
        "loss": np.asarray(e.get("loss", np.full(n, np.nan)), dtype=float),
        "accuracy": np.asarray(e["accuracy"], dtype=float),
        "samples": np.asarray(e.get("samples", np.full(n, -1)), dtype=int),
        # NaN and 0 where no validation split was held out (and in older files).
        "validation_loss": np.asarray(e.get("validation_loss", np.full(n, np.nan)), dtype=float),
        "validation_accuracy": np.asarray(e.get("validation_accuracy", np.full(n, np.nan)),
                                          dtype=float),
        "validation_samples": np.asarray(e.get("validation_samples", np.zeros(n)), dtype=int),
    })
