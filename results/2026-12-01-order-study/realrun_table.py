#!/usr/bin/env python3
"""realrun.csv -> a Markdown table: per model, the best and the worst order's measured step
time (mean of the runs' medians, 95% t-interval over the runs), the simulator's, and
whether the measured ranking agrees (Welch's t-test of best < worst, one-sided)."""
import sys

import numpy as np
import pandas as pd
from scipy import stats

d = pd.read_csv(sys.argv[1])
print("| model | order (best / worst in simulation) | seed | simulated (ms) | measured mean (ms) "
      "| 95% interval (ms) | runs | load | measured ratio worst/best | agrees | Welch p (best < worst) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for model, g in d.groupby("model", sort=False):
    m = {}
    for label in ("best", "worst"):
        r = g[g["label"] == label]
        x = r["measured_step_s"].to_numpy() * 1e3
        half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
        m[label] = (r, x, half)
    (rb, xb, _), (rw, xw, _) = m["best"], m["worst"]
    p = stats.ttest_ind(xb, xw, equal_var=False, alternative="less").pvalue
    agrees = "yes" if xb.mean() < xw.mean() else "no"
    for label in ("best", "worst"):
        r, x, half = m[label]
        cells = [model if label == "best" else "", f"{label}: {r['order'].iloc[0]}",
                 str(r["seed"].iloc[0]), f"{r['predicted_step_s'].iloc[0] * 1e3:.1f}",
                 f"{x.mean():.1f}", f"{x.mean() - half:.1f} to {x.mean() + half:.1f}",
                 str(len(x)), f"{r['load'].min():.0f}-{r['load'].max():.0f}"]
        cells += ([f"{xw.mean() / xb.mean():.3f}", agrees, f"{p:.3f}"] if label == "best"
                  else ["", "", ""])
        print("| " + " | ".join(cells) + " |")
