#!/usr/bin/env python3
"""Per-layer saving of input-gradient-only backward passes from bench_layers' JSON
(median over repetitions of CPU time per iteration, one thread): measured saving
1 - t(backward-inputs) / t(backward) against the roofline's prediction, the share of the
backward FLOPs that are parameter-gradient FLOPs (bench_layers reports gflops_per_s = FLOPs /
real time, so FLOPs = rate x real time). Usage: layers.py bench_layers.json > layers.md"""

import json
import statistics
import sys

data = json.load(open(sys.argv[1]))
runs = {}
for b in data["benchmarks"]:
    if b.get("run_type") != "iteration":
        continue
    kind, case = b["run_name"].split("/")[:2]
    flops = b.get("gflops_per_s", 0.0) * 1e9 * b["real_time"] * 1e-3  # real_time in ms
    runs.setdefault((case, kind), []).append((b["cpu_time"], flops))
print("| layer | backward (ms CPU) | input-only (ms CPU) | measured saving | roofline saving |"
      " reps |")
print("| --- | --- | --- | --- | --- | --- |")
for case in sorted({c for c, _ in runs}):
    full, inputs = runs.get((case, "backward")), runs.get((case, "backward-inputs"))
    if not full or not inputs:
        continue
    tf = statistics.median(t for t, _ in full)
    ti = statistics.median(t for t, _ in inputs)
    ff = statistics.median(f for _, f in full)
    fi = statistics.median(f for _, f in inputs)
    roof = 1 - fi / ff if ff else float("nan")
    print(f"| {case} | {tf:.3f} | {ti:.3f} | {1 - ti / tf:.1%} | {roof:.1%} |"
          f" {len(full)} |")
