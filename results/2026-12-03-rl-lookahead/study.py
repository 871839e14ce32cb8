"""Does the learned placer hold its own? (issue #28, item 3)

Places inception_v3 (H100 preset, as docs/placers.md's table) and the median graph of each
generated family (by node count, results/families/graph-stats.tsv: enas-cnn:30, enas-rnn:1,
nmt:25; the default cpu-core device) on 3 devices in the topo-lifo order (the study's
`topo`) with the heuristic placers at their defaults and with `rl` in several settings,
seeds 1-5, and records the list-schedule step time of each placement (what `place` reports
and every placer here minimises), rl's greedy policy and its learning curve.

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
}
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
         "--rl-entropy-schedule", "constant", "--rl-clip-norm", "1.25"]
RL = {
    # the placer's defaults before the lookahead features
    "placeto, 200 episodes (old defaults)": ["--rl-features", "placeto", "--rl-episodes", "200",
                                             "--rl-episode-start", "start", "--rl-discount", "1"],
    "placeto, 50 episodes": ["--rl-features", "placeto", "--rl-episode-start", "start",
                             "--rl-discount", "1"],
    "lookahead (defaults, 50 episodes)": [],
    "lookahead, candidate weights frozen": ["--rl-candidate-learning-rate", "1e-12"],
    "lookahead, study preset": STUDY + ["--rl-entropy", "0"],
    "lookahead, study preset, entropy 1": STUDY + ["--rl-entropy", "1"],
    "lookahead from greedy-eft": ["--rl-start", "greedy-eft"],
}
SEEDS = range(1, 6)


def place(model, flags, models=MODELS):
    args = [BIN, "place", "--model", model, "--order", "topo-lifo", "--devices", "3",
            *models[model], *flags, "--format", "json"]
    p = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def job(model, variant, seed, flags):
    doc = place(model, flags + (["--placer", "rl", "--seed", str(seed)] if seed else []))
    rl = doc.get("rl", {})
    row = {"model": model, "variant": variant, "seed": seed,
           "step_time_s": doc["estimated_step_time_s"], "placer_wall_s": doc["placer_wall_s"],
           "start_s": rl.get("start_step_time_s", ""), "greedy_s": rl.get("greedy_step_time_s", ""),
           "groups": rl.get("groups", "")}
    return row, curve_rows(model, variant, seed, rl)


def curve_rows(model, variant, seed, rl):
    """curves.csv.gz's rows of one placement: per episode, its step and the best so far."""
    return [(model, variant, seed, e + 1, f"{a:.6g}", f"{b:.6g}") for e, (a, b) in
            enumerate(zip(rl.get("episode_step_time_s", []), rl.get("best_so_far_step_time_s", [])))]


def run_jobs(jobs, job_fn=job, out_dir=HERE):
    """Runs job_fn(*j) for every j, two at a time; writes rows.csv and curves.csv.gz."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda j: job_fn(*j), jobs))
    with open(os.path.join(out_dir, "rows.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0][0].keys()))
        w.writeheader()
        for row, _ in results:
            w.writerow(row)
    with gzip.open(os.path.join(out_dir, "curves.csv.gz"), "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "variant", "seed", "episode", "episode_step_time_s",
                    "best_so_far_step_time_s"])
        for _, curve in results:
            w.writerows(curve)


def main():
    jobs = [(m, name, 0, flags) for m in MODELS for name, flags in HEURISTICS.items()]
    jobs += [(m, name, s, flags) for m in MODELS for name, flags in RL.items() for s in SEEDS]
    run_jobs(jobs)


if __name__ == "__main__":
    main()
