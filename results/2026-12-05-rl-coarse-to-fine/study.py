"""Coarse-to-fine rl against the heuristics (issue #28, item 3)

Places inception_v3 (H100 preset) and the median graph of each generated family (by node
count: enas-cnn:30, enas-rnn:1, nmt:25, as results/2026-12-03-rl-lookahead/) and, as graphs
the defaults were not chosen on, enas-rnn:7, enas-rnn:20, nmt:3 and nmt:13 (the cpu-core
device) on 3 devices in the topo-lifo order (the study's `topo`): the heuristic placers at
their defaults, and `rl` in the settings of RL below, seeds 1-5. Every number is the
list-schedule step time of the returned placement on the full graph (what `place` reports
and every placer here minimises).

    python3 study.py BUILD_DIR     (writes rows.csv and curves.csv.gz here; summary.py reads them)
"""
import concurrent.futures
import csv
import gzip
import json
import os
import subprocess
import sys

BIN = os.path.join(sys.argv[1], "runs", "interplace")
HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {  # name: the device flags
    "inception_v3": ["--device-preset", "h100"],
    "enas-cnn:30": [],
    "enas-rnn:1": [],
    "nmt:25": [],
    "enas-rnn:7": [],
    "enas-rnn:20": [],
    "nmt:3": [],
    "nmt:13": [],
}
# Graphs of at most 448 nodes are placed node by node: one level whatever the settings.
UNGROUPED = {"inception_v3", "enas-cnn:30"}
HEURISTICS = {
    "contiguous": ["--placer", "contiguous"],
    "greedy-eft": ["--placer", "greedy-eft"],
    "balanced": ["--placer", "balanced"],
    "refine": ["--placer", "refine"],
    # not a default: refine seeded with greedy-eft, the strongest composite here
    "refine(greedy-eft, 10)": ["--placer", "refine", "--refine-start", "greedy-eft",
                               "--refine-rounds", "10"],
}
STUDY = ["--rl-episodes", "50", "--rl-eval-every", "5", "--rl-start", "device-0",
         "--rl-episode-start", "best", "--rl-reward", "log", "--rl-baseline", "all-so-far",
         "--rl-learning-rate", "0.001", "--rl-final-learning-rate", "0.001",
         "--rl-entropy", "0", "--rl-entropy-schedule", "constant", "--rl-clip-norm", "1.25"]
RL = {  # name: (flags, also on the ungrouped graphs)
    "defaults (45 episodes on 448 groups, 5 on 1344)": ([], True),
    "one level (--rl-fine-episodes 0; the defaults before)": (["--rl-fine-episodes", "0"], False),
    "fine level 4x (--rl-fine-factor 4)": (["--rl-fine-factor", "4"], False),
    "defaults from greedy-eft": (["--rl-start", "greedy-eft"], True),
    "study preset (one level, as the order study ran)": (STUDY + ["--rl-fine-episodes", "0"], True),
    "study preset, coarse to fine": (STUDY + ["--rl-fine-episodes", "5"], False),
}
SEEDS = range(1, 6)


def place(model, flags):
    args = [BIN, "place", "--model", model, "--order", "topo-lifo", "--devices", "3",
            *MODELS[model], *flags, "--format", "json"]
    p = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def job(model, variant, seed, flags):
    doc = place(model, flags + (["--placer", "rl", "--seed", str(seed)] if seed else []))
    rl = doc.get("rl", {})
    row = {"model": model, "variant": variant, "seed": seed,
           "step_time_s": doc["estimated_step_time_s"], "placer_wall_s": doc["placer_wall_s"],
           "start_s": rl.get("start_step_time_s", ""), "greedy_s": rl.get("greedy_step_time_s", ""),
           "level_groups": " ".join(map(str, rl.get("level_groups", []))),
           "level_episodes": " ".join(map(str, rl.get("level_episodes", [])))}
    curve = [(model, variant, seed, e + 1, f"{a:.6g}", f"{b:.6g}") for e, (a, b) in
             enumerate(zip(rl.get("episode_step_time_s", []), rl.get("best_so_far_step_time_s", [])))]
    return row, curve


def main():
    jobs = [(m, name, 0, flags) for m in MODELS for name, flags in HEURISTICS.items()]
    jobs += [(m, name, s, flags) for m in MODELS for name, (flags, ungrouped_too) in RL.items()
             if ungrouped_too or m not in UNGROUPED for s in SEEDS]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda j: job(*j), jobs))
    with open(os.path.join(HERE, "rows.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0][0].keys()))
        w.writeheader()
        for row, _ in results:
            w.writerow(row)
    with gzip.open(os.path.join(HERE, "curves.csv.gz"), "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "variant", "seed", "episode", "episode_step_time_s",
                    "best_so_far_step_time_s"])
        for _, curve in results:
            w.writerows(curve)


if __name__ == "__main__":
    main()
