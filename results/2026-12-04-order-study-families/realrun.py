#!/usr/bin/env python3
"""Simulated order gaps checked for real (issue #28, item 6): for each `-small` family
graph, the order study at K = 2 on a CPU profile measured one rank per core, then the best
and the worst order's learned placements (each order's median seed) trained for real on
2 MPI ranks, REPEATS times each, best and worst interleaved (best, worst, worst, best, ...
so that a drift in the machine's speed falls on both). Writes OUT/small-k2.h5 (the study),
OUT/profiles/, OUT/realrun.csv and prints one JSON line per run.

Usage: realrun.py INTERPLACE OUT_DIR REPEATS MODEL [MODEL...] [--study-options "OPTIONS"]
(OPTIONS: further order-study options for the study and the replay, e.g.
"--rl-features placeto"; the profiles in OUT_DIR/profiles are reused when present).
"""
import argparse
import csv
import json
import os
import subprocess
import sys

import h5py
import numpy as np

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMP_NUM_THREADS="1")
BATCH = 32


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, env=ENV, **kw)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr}")
    return done.stdout


def study_runs(path):
    with h5py.File(path, "r") as f:
        r = f["runs"]
        text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
        return [dict(model=text(m), order=text(o), seed=int(s), t=float(t))
                for m, o, s, t, st in zip(r["model"][()], r["order"][()], r["seed"][()],
                                          r["step_time_s"][()], r["status"][()])
                if text(st) == "ok"]


def pick(rows, model):
    """The best and the worst order by mean simulated step time over seeds, each with its
    median seed (the lower median: an actual run)."""
    by_order = {}
    for r in rows:
        if r["model"] == model:
            by_order.setdefault(r["order"], []).append(r)
    means = {o: np.mean([r["t"] for r in rs]) for o, rs in by_order.items()}
    out = []
    for label, order in (("best", min(means, key=means.get)),
                         ("worst", max(means, key=means.get))):
        rs = sorted(by_order[order], key=lambda r: r["t"])
        rep = rs[(len(rs) - 1) // 2]
        out.append(dict(label=label, order=order, seed=rep["seed"], study_step_s=rep["t"],
                        order_mean_s=means[order]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("out")
    ap.add_argument("repeats", type=int)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--study-options", default="")
    a = ap.parse_args()
    binary, out, repeats, models = a.binary, a.out, a.repeats, a.models
    os.makedirs(os.path.join(out, "profiles"), exist_ok=True)
    for m in models:
        profile = os.path.join(out, "profiles", m + ".tsv")
        if not os.path.exists(profile):
            run(["mpirun", "-np", "2", binary, "profile", "--model", m, "--batch-size",
                 str(BATCH), "--threads", "1", "--repeats", "3", "--warmup", "1", "--out",
                 profile])
    study = os.path.join(out, "small-k2.h5")
    common = ["--models", ",".join(models), "--preset", "wang2022", "--devices", "2",
              "--batch-size", str(BATCH), "--profile-dir", os.path.join(out, "profiles"),
              *a.study_options.split()]
    if not os.path.exists(study):
        run([binary, "order-study", *common, "--quiet", "--out", study])
    # The study's resolved rl options, to replay its placements with `place`.
    settings = json.loads(run([binary, "order-study", *common, "--dry-run", "--format",
                               "json"]))["settings"]
    rl = [x for s in settings if s["option"].startswith("--rl-")
          for x in (s["option"], str(s["value"]))]
    rows = study_runs(study)
    results = []
    for model in models:
        profile = os.path.join(out, "profiles", model + ".tsv")
        picks = pick(rows, model)
        for p in picks:
            p["placement"] = os.path.join(out, f"{model}-{p['order']}-s{p['seed']}.placement")
            placed = json.loads(run([binary, "place", "--model", model, "--order", p["order"],
                                     "--placer", "rl", "--devices", "2", "--seed",
                                     str(p["seed"]), "--batch-size", str(BATCH), *rl,
                                     "--profile", profile, "--save-placement", p["placement"],
                                     "--format", "json"]))
            p["replayed_estimate_s"] = placed["estimated_step_time_s"]
        for rep in range(repeats):
            for p in (picks if rep % 2 == 0 else picks[::-1]):
                text = run(["mpirun", "-np", "2", binary, "train", "--model", model,
                            "--order", p["order"], "--placer", "rl", "--placement",
                            p["placement"], "--devices", "2", "--batch-size", str(BATCH),
                            "--profile", profile, "--threads-per-rank", "1",
                            "--warmup-steps", "2", "--steps", "8", "--seed", str(p["seed"]),
                            "--format", "json"])
                summary = [json.loads(line) for line in text.splitlines()
                           if line.startswith("{") and '"summary"' in line][-1]
                with open("/proc/loadavg") as f:
                    load = float(f.read().split()[0])
                row = dict(model=model, label=p["label"], order=p["order"], seed=p["seed"],
                           repeat=rep, order_mean_sim_s=p["order_mean_s"],
                           study_step_s=p["study_step_s"], replayed_estimate_s=p["replayed_estimate_s"],
                           predicted_step_s=summary["predicted_step_time_s"],
                           measured_step_s=summary["median_step_time_s"], load=load)
                print(json.dumps(row), flush=True)
                results.append(row)
    with open(os.path.join(out, "realrun.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0]))
        w.writeheader()
        w.writerows(results)


if __name__ == "__main__":
    main()
