"""Placeto's headline, generalisation (issue #28, item 4): one rl policy trained on 24
graphs of a family places the family's 8 unseen graphs, zero-shot and after a short
fine-tune, against a policy trained on each unseen graph alone.

Per family (enas-cnn, enas-rnn, nmt; seeds 0-23 train, 24-31 test), 3 devices, order
topo-lifo, the default cpu-core device, training seed s in 1-3:
- train: one policy carried from graph to graph (--rl-policy / --rl-save-policy on the same
  file), 2 passes over the 24 training graphs in a seeded shuffled order, 5 episodes per
  graph at a constant learning rate (--rl-final-learning-rate = --rl-learning-rate; Adam's
  moments restart on each graph: a policy file holds the weights only);
- each unseen graph, with placement seed s: zero-shot (the trained policy, one greedy
  episode from the random start, --rl-episodes 0), fine-tuned (10 episodes from the trained
  policy), from scratch with the same 10 episodes, and from scratch with the default 50;
  greedy-eft as the reference.

    python3 study.py BUILD_DIR [OUT_DIR]   (writes rows.csv here or in OUT_DIR; summary.py reads it)
"""
import concurrent.futures
import csv
import json
import os
import random
import subprocess
import sys
import tempfile

BIN = os.path.join(sys.argv[1], "runs", "interplace")
# Where rows.csv goes: OUT_DIR if given (a rerun at other defaults), else beside this file.
HERE = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(__file__))
FAMILIES = ["enas-cnn", "enas-rnn", "nmt"]
TRAIN, TEST = range(0, 24), range(24, 32)
SEEDS = (1, 2, 3)
PASSES, EPISODES_PER_GRAPH = 2, 5
COMMON = ["--order", "topo-lifo", "--devices", "3"]


def train(family, seed, policy):
    graphs = [g for _ in range(PASSES) for g in random.Random(seed).sample(list(TRAIN), len(TRAIN))]
    total = 0.0
    for i, g in enumerate(graphs):
        flags = ["--placer", "rl", "--seed", str(seed), "--rl-episodes", str(EPISODES_PER_GRAPH),
                 "--rl-final-learning-rate", "0.001", "--rl-save-policy", policy]
        if i > 0:
            flags += ["--rl-policy", policy]
        doc = json.loads(subprocess.run([BIN, "place", "--model", f"{family}:{g}", *COMMON, *flags,
                                         "--format", "json"], capture_output=True, text=True,
                                        check=True).stdout)
        total += doc["placer_wall_s"]
    return total


def evaluate(family, seed, policy, train_wall_s):
    rows = []
    variants = {
        "zero-shot": ["--placer", "rl", "--rl-policy", policy, "--rl-episodes", "0"],
        "fine-tuned, 10 episodes": ["--placer", "rl", "--rl-policy", policy, "--rl-episodes", "10"],
        "from scratch, 10 episodes": ["--placer", "rl", "--rl-episodes", "10"],
        "from scratch, 50 episodes (defaults)": ["--placer", "rl"],
        "greedy-eft": ["--placer", "greedy-eft"],
    }
    for g in TEST:
        for name, flags in variants.items():
            doc = json.loads(subprocess.run(
                [BIN, "place", "--model", f"{family}:{g}", *COMMON, *flags, "--seed", str(seed),
                 "--format", "json"], capture_output=True, text=True, check=True).stdout)
            rows.append({"family": family, "seed": seed, "graph": g, "variant": name,
                         "step_time_s": doc["estimated_step_time_s"],
                         "placer_wall_s": doc["placer_wall_s"],
                         "train_wall_s": train_wall_s if name in ("zero-shot", "fine-tuned, 10 episodes") else 0.0})
    return rows


def chain(family, seed, tmp):
    policy = os.path.join(tmp, f"{family}-{seed}.policy")
    train_wall_s = train(family, seed, policy)
    return evaluate(family, seed, policy, train_wall_s)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda j: chain(*j, tmp),
                                    [(f, s) for f in FAMILIES for s in SEEDS]))
    rows = [r for chunk in results for r in chunk]
    with open(os.path.join(HERE, "rows.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
