"""Table 2: backprop strategies side by side (the second study).

A *group* holds everything fixed but the strategy (model, order, placer, K, replicas R,
micro-batches, batch size, device, data set); only groups with at least two
strategies are compared. Per configuration the table gives throughput, device
utilisation, bubble fraction and the training loss/accuracy compared two ways:

* **equal steps**: at step ``S_eq``, the last measured step that every configuration
  of the group reached (the final step when all ran the same number of steps).
* **equal wall time**: at ``T_eq``, the measured wall time (``elapsed_s``: when the
  last rank finished the step, see :func:`..frames.elapsed_times`) at which the
  *shortest* run of the group ends, i.e. the longest training
  time every strategy has data for. Each run's loss and accuracy at ``T_eq`` are
  linearly interpolated between the ends of its steps (clamped to its first step);
  ``step_at_equal_time`` is the last step finished by ``T_eq``. A run that is slower
  per step is thus judged after fewer steps, which is the point of the comparison.
  (With equal step counts the window ends where the fastest strategy ends; if the
  sweep ran faster strategies for more steps, the window grows accordingly.)

A row is a *configuration*: its runs (repeats) are pooled, every value is the median
over runs of the per-run value (``runs`` says how many). ``speedup`` is the ratio of
median samples/s over the baseline's, with a 95% bootstrap interval over runs, a
Holm-adjusted p-value (over the table's comparisons) and ``speedup_verdict`` (faster,
slower, same, not enough runs: :func:`..stats.verdict`, minimum effect included).

``accuracy_cost`` is the baseline's accuracy minus the strategy's (positive: the
strategy loses accuracy), on the evaluation accuracy when both have one, else on the
training accuracy at equal steps; the baseline is the group's global strategy
(``global/gpipe`` preferred). It is *refused* (``accuracy_refused`` gives the reason,
``accuracy_verdict`` says ``refused: ...``) when an accuracy of the group is at chance
level or all are identical (:func:`..stats.accuracy_refusal`): such a difference says
nothing about what a strategy costs.

**Against the best global schedule.** ``best_global`` is, per configuration, the global
schedule of its group (``global/<pipeline>`` of any pipeline of the registry, at any V:
``best_global_key`` names the one) with the highest median samples/s among those
that need no more memory than the configuration itself (peak memory over ranks within
``MEMORY_SLACK``; where a file has no peak memory every global schedule qualifies and
``best_global_memory`` says so). The group already fixes the devices, micro-batches and
batch size, so this is the comparison at equal devices and equal memory that a user who
runs today's pipelines would make. ``vs_best_global`` is the throughput ratio with its
95% bootstrap interval over runs, Holm-adjusted over the table's comparisons against it,
and ``vs_best_global_verdict``. The best schedule is chosen on the same runs it is then
compared with, which favours it (the winner of several noisy medians is flattered): a
strategy reported faster than it is so despite that.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import stats
from ..frames import is_global_label
from ..loader import Results

GROUP_KEY = ["family", "model", "model_options", "order", "placer", "devices",
             "data_parallel", "micro_batches", "batch_size", "device", "dataset"]
DISPLAY_KEY = ["family", "model", "devices", "data_parallel", "order", "placer"]
COLUMNS = GROUP_KEY + [
    "strategy_label", "config_key", "run_id", "runs", "samples_per_s", "speedup",
    "speedup_ci_low", "speedup_ci_high", "speedup_p", "speedup_p_holm", "speedup_verdict",
    "utilisation", "idle_fraction", "equal_step", "loss_at_equal_step",
    "accuracy_at_equal_step", "eval_accuracy", "equal_time_s", "step_at_equal_time",
    "loss_at_equal_time", "accuracy_at_equal_time", "accuracy_metric", "accuracy_cost",
    "accuracy_verdict", "accuracy_refused", "baseline", "peak_memory_bytes", "best_global",
    "best_global_key", "best_global_memory", "vs_best_global", "vs_best_global_ci_low",
    "vs_best_global_ci_high", "vs_best_global_p_holm", "vs_best_global_verdict"]
# A global schedule counts as needing no more memory than a configuration when its peak
# is within this fraction above the configuration's (allocator rounding, buffers).
MEMORY_SLACK = 0.05


def _at_step(curve: dict[str, np.ndarray], step: int, col: str) -> float:
    hit = np.flatnonzero(curve["step"] == step)
    return float(curve[col][hit[0]]) if hit.size else float("nan")


def _at_time(curve: dict[str, np.ndarray], t: float, col: str) -> float:
    keep = ~np.isnan(curve["elapsed_s"]) & ~np.isnan(curve[col])
    if not keep.any() or math.isnan(t):
        return float("nan")
    return float(np.interp(t, curve["elapsed_s"][keep], curve[col][keep]))


def _max(values: np.ndarray) -> float:
    """pandas' ``max`` of a column: NaN values skipped, NaN when none is left."""
    v = values[~np.isnan(values)] if values.dtype.kind == "f" else values
    return v.max() if v.size else float("nan")


def _median_of(values: np.ndarray, pos: np.ndarray) -> float:
    """:func:`..stats.median` of ``values[pos]`` (one run: its value, no numpy call)."""
    if pos.size == 1:
        return float(values[pos[0]])
    return stats.median(values[pos])


def _baseline_label(group: pd.DataFrame) -> str:
    glob = group[group["strategy_label"].map(is_global_label)]
    if glob.empty:
        return ""
    return "global/gpipe" if (glob["strategy_label"] == "global/gpipe").any() \
        else sorted(glob["strategy_label"])[0]


def _throughput_runs(results: Results, runs: pd.DataFrame, seed: int) -> stats.Runs:
    return stats.Runs(runs["samples_per_s"].to_numpy(float),
                      results.lazy_step_times(runs["run_id"], seed), inverse=True)


PER_RUN = ["loss_at_equal_step", "accuracy_at_equal_step", "step_at_equal_time",
           "loss_at_equal_time", "accuracy_at_equal_time"]


def _per_run(curve: dict[str, np.ndarray], equal_step: int, equal_time: float) -> list[float]:
    """A run's values at equal steps and at equal wall time, in :data:`PER_RUN` order."""
    before = curve["elapsed_s"] <= equal_time * (1 + 1e-12)
    return [_at_step(curve, equal_step, "loss"), _at_step(curve, equal_step, "accuracy"),
            int(curve["step"][before].max()) if before.any() else int(curve["step"].min()),
            _at_time(curve, equal_time, "loss"), _at_time(curve, equal_time, "accuracy")]


def _best_global(configs: list[dict], memory: float) -> int | None:
    """Index into ``configs`` (the group's global configurations: ``samples_per_s``,
    ``peak_memory_bytes``) of the fastest whose peak memory fits ``memory``; None if none
    fits. An unknown (NaN) peak on either side fits."""
    fits = [i for i, c in enumerate(configs)
            if math.isnan(memory) or math.isnan(c["peak_memory_bytes"])
            or c["peak_memory_bytes"] <= memory * (1 + MEMORY_SLACK)]
    return max(fits, key=lambda i: configs[i]["samples_per_s"]) if fits else None


def strategy_table(results: Results, seed: int = 0,
                   min_effect: float = stats.MIN_EFFECT) -> pd.DataFrame:
    """One row per configuration (its runs pooled) of every group that compares two or
    more strategies; ``min_effect``: the verdicts' minimum effect. Per run it reads the
    curve (steps, loss, accuracy, elapsed time) once, as arrays; per configuration it works
    on positions into the group's columns, not on sub-frames."""
    ok = results.ok
    if ok.empty:
        return pd.DataFrame(columns=COLUMNS)
    parts, ests, best_ests = [], [], []
    for key, grp in ok.groupby(GROUP_KEY, dropna=False, sort=True):
        if grp["strategy_label"].nunique() < 2:
            continue
        seed_key = stats.seed_parts(GROUP_KEY, key)
        run_ids = grp["run_id"].to_numpy()
        curves = [results.curve_arrays(rid) for rid in run_ids]
        equal_step = int(min(_max(c["step"]) for c in curves))
        equal_time = float(min(_max(c["elapsed_s"]) for c in curves))
        per_run = np.array([_per_run(c, equal_step, equal_time) for c in curves], dtype=float)
        base_label = _baseline_label(grp)
        base = grp[grp["strategy_label"] == base_label]
        use_eval = base["eval_accuracy"].notna().any() and grp["eval_accuracy"].notna().all()
        base_runs = _throughput_runs(results, base, seed) if len(base) else None
        if base_runs is not None:
            stats.share_replicates(base_runs, stats.seed_for(*seed_key, base_label, "shared",
                                                             base=seed))
        sps = grp["samples_per_s"].to_numpy(float)
        peak = grp["peak_memory_bytes"].to_numpy(float) if "peak_memory_bytes" in grp \
            else np.full(len(grp), np.nan)
        util = grp["utilisation"].to_numpy(float)
        idle = grp["idle_fraction"].to_numpy(float)
        evals = grp["eval_accuracy"].to_numpy(float)
        indices = grp.groupby(["strategy_label", "config_key"], sort=True).indices
        # The group's global configurations, the candidates for the best global schedule.
        globals_ = []
        for (label, ckey) in sorted(indices):
            if is_global_label(label):
                pos = indices[(label, ckey)]
                runs_g = _throughput_runs(results, grp.iloc[pos], seed)
                globals_.append({"label": label, "config_key": ckey, "runs": runs_g,
                                 "samples_per_s": runs_g.point,
                                 "peak_memory_bytes": _median_of(peak, pos)})
        part = []
        for (label, ckey) in sorted(indices):
            pos = indices[(label, ckey)]
            mine = stats.Runs(sps[pos], results.lazy_step_times(run_ids[pos], seed), inverse=True)
            if base_runs is None:
                est = stats.NAN_ESTIMATE
            elif label == base_label:
                est = stats.Estimate(1.0, 1.0, 1.0, float("nan"), (mine.n,), "none")
            else:
                est = stats.ratio(mine, base_runs, stats.seed_for(*seed_key, label, base=seed))
            ests.append((label == base_label, est))
            memory = _median_of(peak, pos)
            best = _best_global(globals_, memory)
            if best is None:
                vs_best, best_row = stats.NAN_ESTIMATE, {"label": "", "config_key": ""}
            elif globals_[best]["config_key"] == ckey:
                best_row = globals_[best]
                vs_best = stats.Estimate(1.0, 1.0, 1.0, float("nan"), (mine.n,), "none")
            else:
                best_row = globals_[best]
                vs_best = stats.ratio(mine, best_row["runs"],
                                      stats.seed_for(*seed_key, label, ckey, "best", base=seed))
            kind = ("no global schedule in the group" if not globals_ else
                    "no global schedule fits its memory" if best is None else
                    "best global" if best_row["config_key"] == ckey else "")
            best_ests.append((kind, vs_best))
            known = not (math.isnan(memory) or best is None
                         or math.isnan(best_row["peak_memory_bytes"]))
            med = {col: _median_of(per_run[:, i], pos) for i, col in enumerate(PER_RUN)}
            part.append({
                **dict(zip(GROUP_KEY, key)), "strategy_label": label, "config_key": ckey,
                "run_id": run_ids[pos[0]], "runs": len(pos),
                "samples_per_s": mine.point, "speedup": est.point, "speedup_ci_low": est.low,
                "speedup_ci_high": est.high, "speedup_p": est.p,
                "utilisation": _median_of(util, pos),
                "idle_fraction": _median_of(idle, pos),
                "equal_step": equal_step,
                **{col: med[col] for col in PER_RUN if col != "step_at_equal_time"},
                "step_at_equal_time": int(med["step_at_equal_time"]),
                "eval_accuracy": _median_of(evals, pos), "equal_time_s": equal_time,
                "accuracy_metric": "eval" if use_eval else "train@equal_step",
                "peak_memory_bytes": memory, "best_global": best_row["label"],
                "best_global_key": best_row["config_key"],
                "best_global_memory": ("" if best is None else "within the configuration's"
                                       if known else "not recorded: any global schedule"),
                "vs_best_global": vs_best.point, "vs_best_global_ci_low": vs_best.low,
                "vs_best_global_ci_high": vs_best.high,
            })
        part = pd.DataFrame(part)
        metric = "eval_accuracy" if use_eval else "accuracy_at_equal_step"
        if not base_label:
            part["baseline"], part["accuracy_cost"] = "", np.nan
            part["accuracy_refused"] = "no global baseline"
        else:
            b = part[part["strategy_label"] == base_label]
            part["baseline"] = base_label
            part["accuracy_cost"] = stats.median(b[metric]) - part[metric]
            acc = part.groupby("strategy_label")[metric].agg(stats.median).to_dict()
            part["accuracy_refused"] = stats.accuracy_refusal(str(key[GROUP_KEY.index(
                "dataset")]), acc)
        part["accuracy_verdict"] = [
            f"refused: {why}" if why else f"cost {cost:+.3f} ({metric}, n={n})"
            for why, cost, n in zip(part["accuracy_refused"], part["accuracy_cost"],
                                    part["runs"])]
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    table = pd.concat(parts, ignore_index=True)
    # Holm over the table's speedup comparisons (the baseline rows compare nothing).
    p = [e.p if not is_base else float("nan") for is_base, e in ests]
    table["speedup_p_holm"] = stats.holm(p)
    table["speedup_verdict"] = [
        "baseline" if is_base else stats.verdict(e, q, lower_is_better=False,
                                                     min_effect=min_effect)
        for (is_base, e), q in zip(ests, table["speedup_p_holm"])]
    q = stats.holm([e.p if not kind else float("nan") for kind, e in best_ests])
    table["vs_best_global_p_holm"] = q
    table["vs_best_global_verdict"] = [
        kind or stats.verdict(e, p, lower_is_better=False, min_effect=min_effect)
        for (kind, e), p in zip(best_ests, q)]
    return table[COLUMNS]
