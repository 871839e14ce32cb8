#!/usr/bin/env python3
"""Real-run check of the order study (issue 18 part 4): for each model, the best and the
worst order of the CPU-profile study (mean simulated step time over seeds), each order's
representative seed (the seed whose simulated step time is the order's median), its
learned placement recomputed with `interplace place --placer rl --save-placement` (the
same options as the study, so the same placement: checked against the study's step time),
then trained for real on 3 MPI ranks (`train --placement`), REPEATS times, best and worst
interleaved. Prints one JSON line per run and writes realrun.csv.

Usage: realrun.py INTERPLACE STUDY.h5 PROFILE_DIR OUT_DIR REPEATS MODEL [MODEL...]
"""
import csv
import json
import os
import subprocess
import sys

import h5py
import numpy as np


def study_runs(path):
    with h5py.File(path, "r") as f:
        r = f["runs"]
        rows = [dict(model=m.decode() if isinstance(m, bytes) else m,
                     order=o.decode() if isinstance(o, bytes) else o, seed=int(s), t=float(t))
                for m, o, s, t in zip(r["model"][()], r["order"][()], r["seed"][()],
                                      r["step_time_s"][()])]
        attrs = {k: f.attrs[k] for k in ("rl_episodes", "rl_learning_rate",
                                         "rl_final_learning_rate", "batch_size")}
    return rows, attrs


def pick(rows, model):
    by_order = {}
    for r in rows:
        if r["model"] == model and np.isfinite(r["t"]):
            by_order.setdefault(r["order"], []).append(r)
    means = {o: np.mean([r["t"] for r in rs]) for o, rs in by_order.items()}
    best, worst = min(means, key=means.get), max(means, key=means.get)
    out = []
    for label, order in (("best", best), ("worst", worst)):
        rs = sorted(by_order[order], key=lambda r: r["t"])
        rep = rs[(len(rs) - 1) // 2]  # the lower median: an actual seed
        out.append(dict(label=label, order=order, seed=rep["seed"], study_step_s=rep["t"],
                        order_mean_s=means[order]))
    return out


def main():
    binary, study, profiles, out, repeats, models = (sys.argv[1], sys.argv[2], sys.argv[3],
                                                     sys.argv[4], int(sys.argv[5]), sys.argv[6:])
    os.makedirs(out, exist_ok=True)
    rows, a = study_runs(study)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1")
    results = []
    for model in models:
        profile = os.path.join(profiles, model + ".tsv")
        picks = pick(rows, model)
        if picks[0]["order_mean_s"] == picks[1]["order_mean_s"]:
            print(json.dumps(dict(model=model, skipped="every order has the same mean step "
                                  "time: nothing to rank")), flush=True)
            continue
        for p in picks:
            p["placement"] = os.path.join(out, f"{model}-{p['order']}-s{p['seed']}.placement")
            place = subprocess.run(
                [binary, "place", "--model", model, "--order", p["order"], "--placer", "rl",
                 "--devices", "3", "--seed", str(p["seed"]), "--batch-size", str(a["batch_size"]),
                 "--rl-episodes", str(a["rl_episodes"]),
                 "--rl-learning-rate", repr(float(a["rl_learning_rate"])),
                 "--rl-final-learning-rate", repr(float(a["rl_final_learning_rate"])),
                 "--profile", profile, "--save-placement", p["placement"], "--format", "json"],
                check=True, capture_output=True, text=True, env=env)
            p["replayed_step_s"] = json.loads(place.stdout)["rl"]["best_step_time_s"]
        for rep in range(repeats):
            for p in picks:
                train = subprocess.run(
                    ["mpirun", "--oversubscribe", "-np", "3", binary, "train", "--model", model,
                     "--order", p["order"], "--placer", "rl", "--placement", p["placement"],
                     "--devices", "3", "--batch-size", str(a["batch_size"]),
                     "--profile", profile, "--threads-per-rank", "1", "--warmup-steps", "1",
                     "--steps", "4", "--seed", str(p["seed"]), "--format", "json"],
                    capture_output=True, text=True, env=env)
                if train.returncode != 0:
                    print(train.stderr, file=sys.stderr)
                    raise SystemExit(f"train failed: {model} {p['order']}")
                summary = [json.loads(line) for line in train.stdout.splitlines()
                           if line.startswith("{") and '"summary"' in line][-1]
                with open("/proc/loadavg") as f:
                    load = float(f.read().split()[0])
                row = dict(model=model, label=p["label"], order=p["order"], seed=p["seed"],
                           repeat=rep, order_mean_sim_s=p["order_mean_s"],
                           study_step_s=p["study_step_s"], replayed_step_s=p["replayed_step_s"],
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
