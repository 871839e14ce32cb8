"""Speedup against device count, per model and strategy.

A *line* is one (model, order, placer, strategy, micro-batches, batch size, device, data
set) across K. Its baseline is the configuration of the same model, order, placer,
micro-batches, batch size, device and data set with the smallest K present (K = 1 when
the sweep has it): the same strategy if that K ran it, else the global strategy (at
K = 1 every strategy is the same plain backprop). Speedup = median step time of the
baseline's runs / median step time of the configuration's runs (equal mini-batches, so
this is the throughput ratio), with a 95% interval over runs (``stats.ratio``).
"""

from __future__ import annotations

import pandas as pd

from .. import stats
from ..frames import is_global_label
from ..loader import Results

BASE_KEY = ["family", "model", "model_options", "order", "placer", "data_parallel",
            "micro_batches", "batch_size", "device", "dataset"]
COLUMNS = BASE_KEY + ["strategy_label", "devices", "runs", "step_time_s", "base_devices",
                      "base_strategy", "base_runs", "speedup", "speedup_ci_low",
                      "speedup_ci_high", "interval_over"]


def _runs(results: Results, runs: pd.DataFrame, seed: int) -> stats.Runs:
    return stats.Runs(runs["step_time_s"].to_numpy(float),
                      results.lazy_step_times(runs["run_id"], seed))


def _baseline(at_k: pd.DataFrame, label: str) -> pd.DataFrame:
    same = at_k[at_k["strategy_label"] == label]
    if not same.empty:
        return same
    glob = at_k[at_k["strategy_label"].map(is_global_label)]
    pick = glob if not glob.empty else at_k
    first = sorted(pick["strategy_label"])[0]
    return pick[pick["strategy_label"] == first]


def scaling_table(results: Results, seed: int = 0) -> pd.DataFrame:
    """One row per configuration of every group with two or more device counts."""
    ok = results.ok
    if ok.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    for key, grp in ok.groupby(BASE_KEY, dropna=False, sort=True):
        if grp["devices"].nunique() < 2:
            continue
        k0 = int(grp["devices"].min())
        at_k0 = grp[grp["devices"] == k0]
        for (label, k), runs in grp.groupby(["strategy_label", "devices"], sort=True):
            base = _baseline(at_k0, label)
            est = stats.ratio(_runs(results, base, seed), _runs(results, runs, seed),
                              stats.seed_for("scaling", *stats.seed_parts(BASE_KEY, key), label, k,
                                            base=seed))
            rows.append({**dict(zip(BASE_KEY, key)), "strategy_label": label,
                         "devices": int(k), "runs": len(runs),
                         "step_time_s": stats.median(runs["step_time_s"]),
                         "base_devices": k0, "base_strategy": base["strategy_label"].iloc[0],
                         "base_runs": len(base), "speedup": est.point,
                         "speedup_ci_low": est.low, "speedup_ci_high": est.high,
                         "interval_over": "runs" if est.method == "runs" else
                         "steps of 1 run" if est.method == "within-run" else ""})
    return pd.DataFrame(rows, columns=COLUMNS)
