#!/usr/bin/env python3
"""GPT result files -> per run the training loss and accuracy (mean over the 100 steps up to
each milestone) and, for local, stage 0's own head (aux accuracy of rank 0), then the
test split at the end: does the 4-layer model trained end to end overtake local's
one-layer head when given the steps?
    .venv/bin/python results/2026-12-05-interlocking-seed2/gpt_curve.py FILE.h5... > gpt_curve.md"""
import sys

import h5py
import numpy as np

from interplace_analysis import load_results

WINDOW = 100
results = load_results(sys.argv[1:])
runs = results.ok.sort_values(["strategy_label", "seed"])
if runs.empty:
    sys.exit(f"gpt_curve.py: {' '.join(sys.argv[1:])}: no finished runs")
steps = int(results.curves["step"].max()) + 1
milestones = [m for m in (100, 250, 500, 1000, 2000, 3000, 4000, 5000, 10000, 20000) if m <= steps]
print(f"Mean over the {WINDOW} steps up to each step of the running training loss (nats) and "
      "accuracy; for local also stage 0's head (rank 0's auxiliary output).\n")
header = "| strategy, seed | " + " | ".join(f"step {m}" for m in milestones) + " | test at the end |"
print(header)
print("|" + " --- |" * (len(milestones) + 2))
for _, run in runs.iterrows():
    curve = results.curves[results.curves["run_id"] == run["run_id"]].sort_values("step")
    loss = curve["loss"].to_numpy()
    accuracy = curve["accuracy"].to_numpy()
    cells = [f"{np.nanmean(loss[m - WINDOW:m]):.3f} / {100 * np.nanmean(accuracy[m - WINDOW:m]):.1f}%"
             if m <= len(loss) else "" for m in milestones]
    print(f"| {run['strategy_label']}, {run['seed']}, {run['steps'] + 1} steps | " +
          " | ".join(cells) +
          f" | {run['eval_loss']:.3f} / {100 * run['eval_accuracy']:.2f}% |")
    if run["strategy_label"] == "local":
        with h5py.File(run["file"], "r") as f:  # per step x rank; rank 0 is stage 0
            head = f["configs"][run["config_id"]]["steps"]["aux_accuracy"][:, 0]
        cells = [f"{100 * np.nanmean(head[m - WINDOW:m]):.1f}%" if m <= len(head) else ""
                 for m in milestones]
        print(f"| local, {run['seed']}, {run['steps'] + 1} steps: stage 0's head | " +
              " | ".join(cells) + " | |")
