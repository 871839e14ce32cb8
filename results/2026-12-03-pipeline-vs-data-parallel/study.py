"""Simulated: for N GPUs (H100 preset, 8 per node), which split into K pipeline stages x R
data-parallel replicas, and which schedule, trains a step fastest within the GPUs' memory?

The simulator charges each stage's gradient all-reduce (a ring over its R replicas) after
the stage's last backward work, not overlapped with it (docs/strategies.md): the step it
gives is an upper bound for a runtime that overlaps bucketed all-reduces with the backward
pass (PyTorch DDP). The same configuration without the all-reduce (one replica's pipeline
on its slice of the batch) is the lower bound, no overlap could beat it. A configuration is
a *candidate* when its lower bound is at most the smallest upper bound of its (model, N):
some overlap could make it the fastest; the verdict is decided where one candidate is left.

    python3 study.py BUILD_DIR > rows.csv     (then summary.py writes summary.md)
"""
import csv
import json
import subprocess
import sys

BIN = sys.argv[1] + "/runs/interplace"
MODELS = {  # name: simulate's model flags
    "gpt2-small": ["--model", "gpt"],
    "gpt-48-layers": ["--model", "gpt", "--depth-multiplier", "4"],
}
BATCH = 512          # sequences of 1024 tokens per step, every configuration
MICRO = 4            # sequences per micro-batch
GPUS = (8, 16, 64)
PIPELINES = ("gpipe", "1f1b", "zb-h1", "interleaved-1f1b")


def simulate(model, k, r, batch, m, pipeline, v):
    args = [BIN, "simulate", *MODELS[model], "--order", "topo", "--placer", "stages",
            "--devices", str(k), "--batch-size", str(batch), "--micro-batches", str(m),
            "--pipeline", pipeline, "--device-preset", "h100", "--format", "json"]
    if v > 1:
        args += ["--virtual-stages", str(v)]
    if r > 1:
        args += ["--data-parallel", str(r)]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"
    return json.loads(p.stdout)["simulation"], ""


rows = []
for model in MODELS:
    for n in GPUS:
        k = 1
        while k <= min(n, 32):
            r = n // k
            m = BATCH // (r * MICRO)
            for pipeline in (PIPELINES if k > 1 else ("1f1b",)):
                v = 2 if pipeline == "interleaved-1f1b" else 1
                if v > 1 and m % k != 0:
                    continue  # interleaved 1F1B needs M a multiple of K
                row = {"model": model, "gpus": n, "stages": k, "replicas": r,
                       "micro_batches": m, "schedule": pipeline + (f"/v{v}" if v > 1 else "")}
                sim, why = simulate(model, k, r, BATCH, m, pipeline, v)
                if sim is None:
                    rows.append({**row, "refused": why})
                    continue
                alone, _ = simulate(model, k, 1, BATCH // r, m, pipeline, v)
                devices = sim["devices"]
                rows.append({**row,
                             "step_upper_s": sim["step_time_s"],
                             "step_lower_s": alone["step_time_s"] if alone else "",
                             "allreduce_max_s": max(d.get("allreduce_s", 0.0) for d in devices),
                             "idle_fraction": sim["idle_fraction"],
                             "peak_memory_gb": max(d["peak_memory_bytes"] for d in devices) / 1e9,
                             "refused": ""})
            k *= 2
w = csv.DictWriter(sys.stdout, fieldnames=["model", "gpus", "stages", "replicas",
                                           "micro_batches", "schedule", "step_upper_s",
                                           "step_lower_s", "allreduce_max_s", "idle_fraction",
                                           "peak_memory_gb", "refused"])
w.writeheader()
w.writerows(rows)
