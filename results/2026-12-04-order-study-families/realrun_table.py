#!/usr/bin/env python3
"""realrun.csv (realrun.py) -> realrun.md: per graph, the best and the worst order of the
K = 2 study in simulation (mean over seeds; the trained placement is the order's median
seed), its simulated and measured step time, and whether the simulated gap appears in the
measured one: the ratio worst / best of the measured step times, paired by repeat (the two
ran back to back), with a 95% bootstrap interval over the pairs and the Wilcoxon
signed-rank p of the pairs. Usage: realrun_table.py realrun.csv > realrun.md"""
import sys

import numpy as np
import pandas as pd
from scipy import stats

d = pd.read_csv(sys.argv[1])
rng = np.random.default_rng(0)
print("| graph | order (best / worst in simulation) | seed | simulated, order mean over seeds "
      "(ms) | simulated, this placement (ms) | measured, median of runs (ms) | runs | load "
      "| simulated gap worst/best | measured gap worst/best [95% interval] | Wilcoxon p "
      "| gap appears |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for model, g in d.groupby("model", sort=False):
    b = g[g["label"] == "best"].sort_values("repeat")
    w = g[g["label"] == "worst"].sort_values("repeat")
    ratio = w["measured_step_s"].to_numpy() / b["measured_step_s"].to_numpy()
    boot = np.median(ratio[rng.integers(0, len(ratio), (10000, len(ratio)))], axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    p = stats.wilcoxon(np.log(ratio)).pvalue if np.any(ratio != 1) else float("nan")
    sim_gap = w["predicted_step_s"].iloc[0] / b["predicted_step_s"].iloc[0]
    appears = ("yes" if lo > 1 else "opposite" if hi < 1 else "not resolved") \
        if sim_gap > 1 else "no gap simulated"
    for label, r in (("best", b), ("worst", w)):
        cells = [model if label == "best" else "", f"{label}: {r['order'].iloc[0]}",
                 str(r["seed"].iloc[0]), f"{r['order_mean_sim_s'].iloc[0] * 1e3:.2f}",
                 f"{r['predicted_step_s'].iloc[0] * 1e3:.2f}",
                 f"{np.median(r['measured_step_s']) * 1e3:.2f}", str(len(r)),
                 f"{r['load'].min():.1f}-{r['load'].max():.1f}"]
        cells += ([f"{sim_gap:.3f}", f"{np.median(ratio):.3f} [{lo:.3f}, {hi:.3f}]",
                   f"{p:.3g}", appears] if label == "best" else ["", "", "", ""])
        print("| " + " | ".join(cells) + " |")
# The replayed placement is the study's: train's prediction equals the study's step time.
off = (d["predicted_step_s"] / d["study_step_s"] - 1).abs().max()
print(f"\nLargest relative difference between the study's simulated step time of a placement "
      f"and `train`'s prediction for the replayed placement: {off:.2g}.")
