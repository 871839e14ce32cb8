"""Table 2: backprop strategies side by side (the second study).

A *group* holds everything fixed but the strategy (model, order, placer, K,
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

``accuracy_cost`` is the baseline's accuracy minus the strategy's (positive: the
strategy loses accuracy), on the evaluation accuracy when both have one, else on the
training accuracy at equal steps; the baseline is the group's global strategy
(``global/gpipe`` preferred). ``speedup`` is samples/s over the baseline's.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..loader import Results

GROUP_KEY = ["family", "model", "model_options", "order", "placer", "devices",
             "micro_batches", "batch_size", "device", "dataset"]
DISPLAY_KEY = ["family", "model", "devices", "order", "placer"]
COLUMNS = GROUP_KEY + [
    "strategy_label", "config_id", "samples_per_s", "speedup", "utilisation",
    "idle_fraction", "equal_step", "loss_at_equal_step", "accuracy_at_equal_step",
    "eval_accuracy", "equal_time_s", "step_at_equal_time", "loss_at_equal_time",
    "accuracy_at_equal_time", "accuracy_metric", "accuracy_cost", "baseline"]


def _at_step(curve: pd.DataFrame, step: int, col: str) -> float:
    hit = curve[curve["step"] == step]
    return float(hit[col].iloc[0]) if len(hit) else float("nan")


def _at_time(curve: pd.DataFrame, t: float, col: str) -> float:
    d = curve.dropna(subset=["elapsed_s", col])
    if d.empty or math.isnan(t):
        return float("nan")
    return float(np.interp(t, d["elapsed_s"], d[col]))


def _baseline(group: pd.DataFrame) -> pd.DataFrame:
    glob = group[group["strategy_label"].str.startswith("global")]
    if glob.empty:
        return glob
    first = "global/gpipe" if (glob["strategy_label"] == "global/gpipe").any() \
        else sorted(glob["strategy_label"])[0]
    return glob[glob["strategy_label"] == first]


def strategy_table(results: Results) -> pd.DataFrame:
    """One row per configuration of every group that compares two or more strategies."""
    ok = results.ok
    if ok.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    for key, grp in ok.groupby(GROUP_KEY, dropna=False, sort=True):
        if grp["strategy_label"].nunique() < 2:
            continue
        curves = {cid: results.measured_curve(cid) for cid in grp["config_id"]}
        equal_step = int(min(c["step"].max() for c in curves.values()))
        equal_time = float(min(c["elapsed_s"].max() for c in curves.values()))
        base = _baseline(grp)
        use_eval = base["eval_accuracy"].notna().any() and grp["eval_accuracy"].notna().all()
        part = []
        for _, r in grp.sort_values(["strategy_label", "config_id"]).iterrows():
            c = curves[r["config_id"]]
            before = c[c["elapsed_s"] <= equal_time * (1 + 1e-12)]
            part.append({
                **dict(zip(GROUP_KEY, key)), "strategy_label": r["strategy_label"],
                "config_id": r["config_id"], "samples_per_s": r["samples_per_s"],
                "utilisation": r["utilisation"], "idle_fraction": r["idle_fraction"],
                "equal_step": equal_step,
                "loss_at_equal_step": _at_step(c, equal_step, "loss"),
                "accuracy_at_equal_step": _at_step(c, equal_step, "accuracy"),
                "eval_accuracy": r["eval_accuracy"], "equal_time_s": equal_time,
                "step_at_equal_time": int(before["step"].max()) if len(before)
                else int(c["step"].min()),
                "loss_at_equal_time": _at_time(c, equal_time, "loss"),
                "accuracy_at_equal_time": _at_time(c, equal_time, "accuracy"),
                "accuracy_metric": "eval" if use_eval else "train@equal_step",
            })
        part = pd.DataFrame(part)
        metric = "eval_accuracy" if use_eval else "accuracy_at_equal_step"
        if base.empty:
            part["baseline"], part["speedup"], part["accuracy_cost"] = "", np.nan, np.nan
        else:
            bids = set(base["config_id"])
            b = part[part["config_id"].isin(bids)]
            part["baseline"] = base["strategy_label"].iloc[0]
            part["speedup"] = part["samples_per_s"] / b["samples_per_s"].mean()
            part["accuracy_cost"] = b[metric].mean() - part[metric]
        rows.append(part)
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(rows, ignore_index=True)[COLUMNS]
