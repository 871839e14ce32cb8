"""Simulated step per configuration of interlocking-vs-pipelines.toml on K separate devices
(--ranks-per-host 1) from the profile the sweep measured (ivp.h5 /profiles)."""
import csv, json, subprocess, sys
BIN = sys.argv[1]; PROFILE = sys.argv[2]
rows = []
for k in (2, 3, 4):
    cases = [("global", "gpipe", 1), ("global", "1f1b", 1), ("global", "zb-h1", 1),
             ("global", "interleaved-1f1b", 2), ("local", None, 1), ("pairwise", None, 1)]
    if k == 4:
        cases.append(("nwise:3", None, 1))
    for strategy, pipeline, v in cases:
        args = [BIN, "simulate", "--model", "resnet20", "--width-multiplier", "0.5", "--order",
                "topo", "--placer", "stages", "--devices", str(k), "--batch-size", "96",
                "--micro-batches", "12", "--strategy", strategy, "--profile", PROFILE,
                "--ranks-per-host", "1", "--aux-head", "proportional", "--format", "json"]
        if pipeline:
            args += ["--pipeline", pipeline, "--virtual-stages", str(v)]
        d = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
        s = d["simulation"]
        label = "global/" + pipeline + (f"/v{v}" if v != 1 else "") if pipeline else strategy
        rows.append({"devices": k, "strategy_label": label,
                     "separate_step_s": s["step_time_s"], "separate_idle": s["idle_fraction"],
                     "max_device_peak_mib": max(x["peak_memory_bytes"] for x in s["devices"]) / 2**20})
w = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
w.writeheader(); w.writerows(rows)
