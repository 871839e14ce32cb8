#!/usr/bin/env python3
"""Comparable step times of the experiment's strategies: `interplace simulate` with the
CPU-time profiles of profile.sh (one thread per rank, as the runs), 8 mini-batches back
to back (local and interlocking stages overlap consecutive mini-batches; global ones do
not), on the placement the runs had: the `stages` placer on the cpu-core roofline, their
cost device (`--place-with cpu-core`; the profile's own costs would cut the stages
elsewhere). The script checks that the placement is the roofline run's. Writes step_times.csv for
`python -m interplace_analysis strategies --step-times`, with the step time the
strategies would have with capped heads (--aux-head-capped, what-if), and
step_times-fullscale-h100.csv: the full-scale spec's model on the H100 roofline preset.

Usage from the repository root: python3 results/2026-12-01-interlocking/simulate.py
[INTERPLACE] [PROFILE_DIR] [OUT_CSV]"""

import csv
import json
import subprocess
import sys

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/runs/interplace"
PROFILES = sys.argv[2] if len(sys.argv) > 2 else "results/2026-12-01-interlocking/profiles"
OUT = sys.argv[3] if len(sys.argv) > 3 else "results/2026-12-01-interlocking/step_times.csv"

MODELS = {
    "resnet20": (["--model", "resnet20", "--width-multiplier", "0.5", "--batch-size", "128",
                  "--optimizer", "sgd-momentum"], "resnet20-w0.5-b32", "resnet20-w0.5-b128"),
    "gpt-mini": (["--model", "gpt-mini", "--sequence-length", "64", "--batch-size", "16",
                  "--optimizer", "adamw"], "gpt-mini-t64-b4", "gpt-mini-t64-b16"),
}
# strategy label -> simulate's strategy, pipeline, micro-batches
LABELS = {"e2e": ("global", "gpipe", 1), "global/1f1b": ("global", "1f1b", 4),
          "local": ("local", "", 4), "pairwise": ("pairwise", "", 4),
          "nwise:3": ("nwise:3", "", 4)}


def simulate(args: list[str]) -> dict:
    cmd = [BIN, "simulate", *args, "--order", "topo", "--placer", "stages", "--devices", "4",
           "--mini-batches", "8", "--format", "json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


rows = []
for model, (options, profile_m4, profile_m1) in MODELS.items():
    for label, (strategy, pipeline, m) in LABELS.items():
        profile = f"{PROFILES}/{profile_m1 if m == 1 else profile_m4}.tsv"
        common = [*options, "--micro-batches", str(m), "--strategy", strategy]
        if pipeline:
            common += ["--pipeline", pipeline]
        measured = simulate([*common, "--profile", profile, "--place-with", "cpu-core"])
        roofline = simulate(common)  # the runs' cost device: their placement
        same = (measured["placement"]["device_of_node"]
                == roofline["placement"]["device_of_node"])
        capped = (simulate([*common, "--profile", profile, "--place-with", "cpu-core",
                            "--aux-head-capped"])["simulation"]["step_time_s"]
                  if strategy != "global" else measured["simulation"]["step_time_s"])
        rows.append({"model": model, "strategy_label": label,
                     "step_time_s": measured["simulation"]["step_time_s"],
                     "idle_fraction": measured["simulation"]["idle_fraction"],
                     "roofline_step_time_s": roofline["simulation"]["step_time_s"],
                     "capped_heads_step_time_s": capped,
                     "same_placement_as_runs": int(same),
                     "source": "simulated, CPU-time profile of this machine"})
        print(model, label, rows[-1]["step_time_s"], "same placement" if same else
              "PLACEMENT DIFFERS from the runs'", file=sys.stderr)
with open(OUT, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
print(OUT)

# What if: the full-scale study (gomez2022.toml: resnet34-cifar, batch 128) on H100s, on
# the roofline (no profile of an H100 here): step time per strategy.
full = []
for label, (strategy, pipeline, m) in LABELS.items():
    args = ["--model", "resnet34-cifar", "--batch-size", "128", "--micro-batches", str(m),
            "--strategy", strategy, "--device-preset", "h100"]
    if pipeline:
        args += ["--pipeline", pipeline]
    full.append({"model": "resnet34-cifar", "strategy_label": label,
                 "step_time_s": simulate(args)["simulation"]["step_time_s"],
                 "source": "simulated, h100 roofline preset"})
with open(OUT.replace(".csv", "-fullscale-h100.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(full[0]))
    w.writeheader()
    w.writerows(full)
