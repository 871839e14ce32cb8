"""Efficiency per configuration: utilisation beside model FLOPs utilisation (MFU).

Utilisation (``frames.config_row``) is the share of the ranks' time spent in kernels; it
says nothing about how fast the kernels ran. MFU does: the model's training FLOPs per
second per rank over the peak FLOP/s of the rank's device. The formula and the reasons
for its choices are in docs/results-format.md ("Model FLOPs utilisation"); this module is
the only place that computes it (:func:`training_flops_per_step`, :func:`peak_per_rank`,
:func:`mfu`).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from .. import stats
from ..loader import Results

COLUMNS = ["family", "model", "order", "placer", "devices", "data_parallel", "strategy_label",
           "micro_batches", "batch_size", "device", "config_key", "runs", "step_time_s",
           "utilisation", "idle_fraction", "train_flops_per_step", "achieved_flops_per_rank",
           "peak_flops_per_rank", "mfu", "mfu_ci_low", "mfu_ci_high", "mfu_note"]

KEY = COLUMNS[:COLUMNS.index("config_key")]

# The per-rank descriptions of runtime/devices.cpp, joined with "," in ``device_names``:
# "cpu: N threads", or a GPU's "NAME (cuda:I of N, PCI, sm_XY, ...)", which holds commas.
_CPU_THREADS = re.compile(r"^cpu: (\d+) threads?$")
_GPU_NAME = re.compile(r"(?:^|,)\s*([^,(]+?) \(cuda:\d+ of ")
CPU_PRESET = "cpu-core"


def training_flops_per_step(forward_flops: float, backward_flops: float,
                            graph_batch_size: float, batch_size: float) -> float:
    """The model's FLOPs of one optimiser step: forward plus backward of the graph (one
    micro-batch) scaled to the mini-batch. NaN when a count is missing."""
    values = (forward_flops, backward_flops, graph_batch_size, batch_size)
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values):
        return float("nan")
    if graph_batch_size <= 0:
        return float("nan")
    return (float(forward_flops) + float(backward_flops)) * float(batch_size) / float(
        graph_batch_size)


def peak_per_rank(device: str, preset: str, peak: float, device_names: str,
                  devices: int) -> tuple[float, str]:
    """Mean peak FLOP/s of one rank's device, or NaN and why it is unknown."""
    if not preset or peak is None or math.isnan(peak):
        return float("nan"), "no peak_flops_per_s in the file (written before it was recorded)"
    if not str(device_names).strip():
        return float("nan"), "no device_names for the ranks"
    if device == "cpu":
        names = [n.strip() for n in str(device_names).split(",")]
        if preset != CPU_PRESET:
            return float("nan"), (f"CPU run, but the cost device preset is {preset}"
                                  " (a GPU's peak)")
        threads = []
        for n in names:
            m = _CPU_THREADS.match(n)
            if m is None:
                return float("nan"), f"cannot read the thread count from {n!r}"
            threads.append(int(m.group(1)))
        return peak * float(np.mean(threads)), ""
    if preset == CPU_PRESET:
        return float("nan"), f"{device} run, but the cost device preset is {CPU_PRESET}"
    names = _GPU_NAME.findall(str(device_names))
    if len(names) != devices:
        return float("nan"), f"cannot read {devices} GPU names from {device_names!r}"
    other = sorted({n for n in names if preset.lower() not in n.lower()})
    if other:
        return float("nan"), (f"the device {other[0]!r} is not the cost device preset"
                              f" {preset}: its peak is unknown")
    return peak, ""


def mfu(flops_per_step: float, step_time_s: float, devices: int, peak: float) -> float:
    """Achieved model FLOP/s per rank over the peak FLOP/s per rank."""
    return flops_per_step / (step_time_s * devices) / peak


def efficiency_table(results: Results, seed: int = 0) -> pd.DataFrame:
    """One row per configuration (its ``ok`` runs pooled): median utilisation and bubble
    fraction over runs, and MFU: the median over runs of each run's MFU (from the run's
    median step time) with a 95% interval over runs, or NaN with ``mfu_note``."""
    ok = results.ok
    if ok.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    # Per configuration (in the order they first occur), positions into the columns.
    index = ok.groupby("config_key", sort=False).indices
    keys = list(pd.unique(ok["config_key"]))
    first = ok.iloc[[index[k][0] for k in keys]]
    firsts = {c: first[c].to_numpy() for c in KEY + [
        "forward_flops", "backward_flops", "graph_batch_size", "cost_device_preset",
        "peak_flops_per_s", "device_names"]}
    step_col = ok["step_time_s"].to_numpy(float)
    util_col = ok["utilisation"].to_numpy(float)
    idle_col = ok["idle_fraction"].to_numpy(float)
    run_ids = ok["run_id"].to_numpy()
    for i, ckey in enumerate(keys):
        pos = index[ckey]
        r = {c: v[i] for c, v in firsts.items()}
        flops = training_flops_per_step(r["forward_flops"], r["backward_flops"],
                                        r["graph_batch_size"], r["batch_size"])
        # Every rank computes: K stages x R data-parallel replicas.
        ranks = int(r["devices"]) * int(r["data_parallel"])
        peak, note = peak_per_rank(str(r["device"]), str(r["cost_device_preset"]),
                                   r["peak_flops_per_s"], str(r["device_names"]),
                                   ranks)
        if math.isnan(flops) and not note:
            note = "no FLOP counts in the file (written before they were recorded)"
        step = stats.median(step_col[pos])
        est = stats.NAN_ESTIMATE
        if not note:
            per_run = mfu(flops, step_col[pos], ranks, peak)
            steps = results.lazy_step_times(run_ids[pos], seed)
            est = stats.median_estimate(stats.Runs(per_run, steps, inverse=True),
                                        stats.seed_for("mfu", ckey, base=seed))
        rows.append({
            **{c: r[c] for c in KEY}, "config_key": ckey, "runs": len(pos),
            "step_time_s": step, "utilisation": stats.median(util_col[pos]),
            "idle_fraction": stats.median(idle_col[pos]),
            "train_flops_per_step": flops,
            "achieved_flops_per_rank": flops / (step * ranks) if step > 0 else float("nan"),
            "peak_flops_per_rank": peak, "mfu": est.point, "mfu_ci_low": est.low,
            "mfu_ci_high": est.high, "mfu_note": f"n/a: {note}" if note else ""})
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.sort_values(["family", "model", "devices", "order", "placer", "strategy_label"],
                           kind="stable").reset_index(drop=True)
