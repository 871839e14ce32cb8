"""Table "simulator": how well the simulator's predicted step time matches the measured one.

Per configuration (its runs pooled, ``runs``): predicted and measured (median over
runs, with its 95% interval over runs) step time, the error ``predicted / measured - 1``
and predicted vs measured idle (bubble) fraction; ``point`` numbers the rows (the labels
of the predicted-vs-measured figure). The summary gives MAPE (mean |error|, in %) and
Spearman's rank correlation: a placer only
needs the simulator to *rank* placements correctly, so the rank correlation is the
number that says whether the placers can trust it, even when MAPE is large. Over
all configurations it is dominated by model size, so the summary also gives the mean
rank correlation *within* traversal groups (same model, placer, K, strategy, ...; the
orders differ), which is the choice a placer actually makes.

Each prediction is labelled with where its costs came from (``cost_source``): ``measured
in job`` (``cost_device = "profile:auto"``: a profile the sweep measured on its own ranks),
``profile`` (a profile file, ``profile:PATH``) or ``roofline (<preset>)`` (a device
preset's peak rates: a placer's assumption, not a calibrated prediction, typically far
from a CPU's measured time). The summary gives each source its own rows, so that the
roofline's error is never read as the simulator's.
"""

from __future__ import annotations

import pandas as pd

from .. import stats
from ..loader import Results
from .traversal import GROUP_KEY

COLUMNS = ["point", "config_id", "runs", "name", "cost_source", "pred_messages", "pred_step_time_s",
           "step_time_s", "step_time_ci_low", "step_time_ci_high", "sim_error",
           "pred_idle_fraction", "idle_fraction"] + GROUP_KEY + ["order"]
SUMMARY = ["scope", "configs", "mape_pct", "spearman", "median_error"]


def cost_source(cost_device: str) -> str:
    """Where a configuration's predicted costs came from, by its cost_device attribute."""
    cost_device = str(cost_device)
    if cost_device == "profile:auto":
        return "measured in job"
    if cost_device.startswith("profile:"):
        return "profile"
    return f"roofline ({cost_device})"


def simulator_table(results: Results, seed: int = 0) -> pd.DataFrame:
    ok = results.ok
    if ok.empty:
        return pd.DataFrame(columns=COLUMNS)
    have = ok.dropna(subset=["pred_step_time_s", "step_time_s"])
    if have.empty:
        return pd.DataFrame(columns=COLUMNS)
    # One row per configuration: the prediction is the same for every run of it, the
    # measurement is the median over its runs (counting runs would weigh repeats). Rows in
    # the order the configurations first occur; positions, not sub-frames, per configuration.
    index = have.groupby("config_key", sort=False).indices
    keys = list(pd.unique(have["config_key"]))
    out = have.iloc[[index[k][0] for k in keys]].copy().reset_index(drop=True)
    step = have["step_time_s"].to_numpy(float)
    idle = have["idle_fraction"].to_numpy(float)
    run_ids = have["run_id"].to_numpy()
    points, lows, highs, idles = [], [], [], []
    for key in keys:
        pos = index[key]
        est = stats.median_estimate(
            stats.Runs(step[pos], results.lazy_step_times(run_ids[pos], seed)),
            stats.seed_for("simulator", key, base=seed))
        points.append(est.point)
        lows.append(est.low)
        highs.append(est.high)
        idles.append(stats.median(idle[pos]))
    out["config_id"] = keys
    out["runs"] = [len(index[k]) for k in keys]
    out["step_time_s"] = points
    out["step_time_ci_low"], out["step_time_ci_high"] = lows, highs
    out["idle_fraction"] = idles
    out["sim_error"] = out["pred_step_time_s"] / out["step_time_s"] - 1.0
    devices = out["cost_device"] if "cost_device" in out else pd.Series([""] * len(out))
    out["cost_source"] = [cost_source(d) for d in devices]
    out["point"] = range(1, len(out) + 1)  # the label of its point in the figure
    return out[COLUMNS].reset_index(drop=True)


def _summary_row(scope: str, t: pd.DataFrame) -> dict:
    return {"scope": scope, "configs": len(t),
            "mape_pct": stats.mape(t["pred_step_time_s"], t["step_time_s"]),
            "spearman": stats.spearman(t["pred_step_time_s"], t["step_time_s"]),
            "median_error": stats.median(t["sim_error"]) if len(t) else float("nan")}


def simulator_summary(table: pd.DataFrame) -> pd.DataFrame:
    """All configurations, then per cost source (always, even one: a roofline's error is no
    calibrated prediction's), per schedule level (stage or node) and per model (when there are several)."""
    if table.empty:
        return pd.DataFrame(columns=SUMMARY)
    rows = [_summary_row("all", table)]
    rows += [_summary_row(f"costs: {v}", g) for v, g in table.groupby("cost_source", sort=True)]
    groups = [g for _, g in table.groupby(GROUP_KEY, dropna=False) if len(g) >= 3]
    within = [(stats.spearman(g["pred_step_time_s"], g["step_time_s"]), len(g)) for g in groups]
    within = [(rho, n) for rho, n in within if rho == rho]  # NaN: constant side
    if within:
        rows.append({"scope": f"within traversal groups (mean of {len(within)})",
                     "configs": sum(n for _, n in within), "mape_pct": float("nan"),
                     "spearman": sum(rho for rho, _ in within) / len(within),
                     "median_error": float("nan")})
    for col in ("pred_messages", "model"):
        if table[col].nunique() > 1:
            rows += [_summary_row(f"{col}={v}", g) for v, g in table.groupby(col, sort=True)]
    return pd.DataFrame(rows, columns=SUMMARY)
