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
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The heuristics, the study's flags, `place` and the job runner of the rl-lookahead study
# (2026-12-03).
_spec = importlib.util.spec_from_file_location(
    "lookahead_study", os.path.join(HERE, "..", "2026-12-03-rl-lookahead", "study.py"))
lookahead = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lookahead)
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
HEURISTICS = lookahead.HEURISTICS
STUDY = lookahead.STUDY + ["--rl-entropy", "0"]
RL = {  # name: (flags, also on the ungrouped graphs)
    "defaults (45 episodes on 448 groups, 5 on 1344)": ([], True),
    "one level (--rl-fine-episodes 0; the defaults before)": (["--rl-fine-episodes", "0"], False),
    "fine level 4x (--rl-fine-factor 4)": (["--rl-fine-factor", "4"], False),
    "defaults from greedy-eft": (["--rl-start", "greedy-eft"], True),
    "study preset (one level, as the order study ran)": (STUDY + ["--rl-fine-episodes", "0"], True),
    "study preset, coarse to fine": (STUDY + ["--rl-fine-episodes", "5"], False),
}
SEEDS = range(1, 6)


def job(model, variant, seed, flags):
    doc = lookahead.place(model, flags + (["--placer", "rl", "--seed", str(seed)] if seed else []),
                          MODELS)
    rl = doc.get("rl", {})
    row = {"model": model, "variant": variant, "seed": seed,
           "step_time_s": doc["estimated_step_time_s"], "placer_wall_s": doc["placer_wall_s"],
           "start_s": rl.get("start_step_time_s", ""), "greedy_s": rl.get("greedy_step_time_s", ""),
           "level_groups": " ".join(map(str, rl.get("level_groups", []))),
           "level_episodes": " ".join(map(str, rl.get("level_episodes", [])))}
    return row, lookahead.curve_rows(model, variant, seed, rl)


def main():
    jobs = [(m, name, 0, flags) for m in MODELS for name, flags in HEURISTICS.items()]
    jobs += [(m, name, s, flags) for m in MODELS for name, (flags, ungrouped_too) in RL.items()
             if ungrouped_too or m not in UNGROUPED for s in SEEDS]
    lookahead.run_jobs(jobs, job, HERE)


if __name__ == "__main__":
    main()
