#!/usr/bin/env python3
"""run.sh's runs -> Markdown: per strategy at K = 2 (one rank per core) the measured step
time (median over runs of each run's median measured step; 95% bootstrap interval over
runs, the analysis package's one interval policy), the simulator's prediction from the
profile, measured / predicted, and the simulated step at K = 4 separate cores; per epoch
(468 steps of 128) for both.
    python3 results/2026-12-04-interlocking-time-k2/summary.py OUT_DIR"""
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "analysis"))
from interplace_analysis import stats  # noqa: E402

out = Path(sys.argv[1])
runs = defaultdict(list)
predicted = {}
for path in sorted(out.glob("train-*-r*.jsonl")):
    label = path.stem[len("train-"):path.stem.rindex("-r")]
    summary = [json.loads(line) for line in path.read_text().splitlines()
               if '"summary"' in line][-1]
    runs[label].append(summary["median_step_time_s"])
    predicted[label] = summary["predicted_step_time_s"]
order = ["global-e2e", "global-gpipe", "global-1f1b", "local", "pairwise"]
steps_per_epoch = 60000 // 128
print("| strategy (K = 2) | runs | measured step, ms [95% interval] | predicted, ms | measured / predicted | "
      "epoch at K = 2, s (measured) | simulated step at K = 4, ms | epoch at K = 4, s (simulated) |")
print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
for seed, label in enumerate(order):
    if label not in runs:
        continue
    est = stats.median_estimate(stats.Runs(runs[label]), seed=seed)
    k4 = json.loads((out / f"sim-k4-{label}.json").read_text())["simulation"]["step_time_s"]
    print(f"| {label} | {len(runs[label])} | {1e3 * est.point:.1f} [{1e3 * est.low:.1f}, "
          f"{1e3 * est.high:.1f}] | {1e3 * predicted[label]:.1f} | "
          f"{est.point / predicted[label]:.3f} | {steps_per_epoch * est.point:.1f} | "
          f"{1e3 * k4:.1f} | {steps_per_epoch * k4:.1f} |")
