#!/usr/bin/env python3
"""Simulated order gaps checked for real (issue #28, item 6): for each `-small` family
graph, the order study at K = 2 on a CPU profile measured one rank per core (the study's
spec, runs/configs/wang2022-order-study.toml, as a simulate-only sweep of that graph with
the rl placer alone), then the best and the worst order's learned placements (each order's
median seed, taken from the result file) trained for real on 2 MPI ranks, REPEATS times
each, best and worst interleaved (best, worst, worst, best, ... so that a drift in the
machine's speed falls on both). Writes OUT/<model>-k2.h5 (the study), OUT/profiles/,
OUT/realrun.csv and prints one JSON line per run.

Usage: realrun.py INTERPLACE OUT_DIR REPEATS MODEL [MODEL...] [--rl-preset NAME]
(NAME: the study's rl_preset, wang2022 by default; wang2022-placeto for the ablation's
policy inputs; the profiles in OUT_DIR/profiles are reused when present).
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
    """The rl configurations of a simulate-only sweep that planned: model, order, seed,
    simulated step and the group's id (its placement)."""
    with h5py.File(path, "r") as f:
        return [dict(model=str(a["model"]), order=str(a["order"]), seed=int(a["seed"]),
                     t=float(g["prediction"].attrs["step_time_s"]), id=gid)
                for gid, g in f["configs"].items() for a in [g.attrs]
                if a["status"] == "ok" and a["placer"] == "rl"]


def write_placement(binary, model, study, gid, path):
    """The learned placement of configuration `gid` as a placement file (docs/placers.md,
    placement files): its devices by node id, named by the model's graph."""
    graph = json.loads(run([binary, "graph", "--model", model, "--batch-size", str(BATCH),
                            "--format", "json"]))["graph"]
    with h5py.File(study, "r") as f:
        devices = f["configs"][gid]["placement"][()]
    names = [n["name"] for n in sorted(graph["nodes"], key=lambda n: n["id"])]
    with open(path, "w") as out:
        out.write(f"interplace-placement 1\ndevices 2\nnodes {len(names)}\n")
        out.writelines(f"{n}\t{int(d)}\n" for n, d in zip(names, devices))


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
                        order_mean_s=means[order], id=rep["id"]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("out")
    ap.add_argument("repeats", type=int)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--rl-preset", default="wang2022")
    a = ap.parse_args()
    binary, out, repeats, models = a.binary, a.out, a.repeats, a.models
    spec = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runs",
                        "configs", "wang2022-order-study.toml")
    os.makedirs(os.path.join(out, "profiles"), exist_ok=True)
    results = []
    for model in models:
        profile = os.path.join(out, "profiles", model + ".tsv")
        if not os.path.exists(profile):
            run(["mpirun", "-np", "2", binary, "profile", "--model", model, "--batch-size",
                 str(BATCH), "--threads", "1", "--repeats", "3", "--warmup", "1", "--out",
                 profile])
        study = os.path.join(out, f"{model}-k2.h5")
        if not os.path.exists(study):
            run([binary, "sweep", spec, f"models={model}", "devices=2", "placers=rl",
                 f"rl_preset={a.rl_preset}", f"cost_device=profile:{profile}",
                 "--out", study])
        picks = pick(study_runs(study), model)
        for p in picks:
            p["placement"] = os.path.join(out, f"{model}-{p['order']}-s{p['seed']}.placement")
            write_placement(binary, model, study, p["id"], p["placement"])
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
                           study_step_s=p["study_step_s"], predicted_step_s=summary["predicted_step_time_s"],
                           measured_step_s=summary["median_step_time_s"], load=load)
                print(json.dumps(row), flush=True)
                results.append(row)
    if not results:  # REPEATS 0: the studies and placements only
        return
    with open(os.path.join(out, "realrun.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0]))
        w.writeheader()
        w.writerows(results)


if __name__ == "__main__":
    main()
