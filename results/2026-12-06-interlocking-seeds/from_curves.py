#!/usr/bin/env python3
"""Seeds 1 and 2 of gomez2022-converge.toml as exported tables, recovered from the per-epoch
tables their sessions committed (curve.md, written by
results/2026-12-04-interlocking-converge/curve.py from the HDF5 files, which did not
outlive their machines):
    python3 results/2026-12-06-interlocking-seeds/from_curves.py CURVE.md... --out DIR
writes DIR/configs.csv and DIR/evaluations.csv in the columns of `interplace_analysis
export --tables configs,evaluations` that the strategies report reads. Precision is
curve.md's: accuracies to 0.01 points (the validation split's 6,000 samples are 0.017
points apart, so the epoch the validation split selects is the HDF5 file's), losses to
1e-4. The final test accuracy is the summary line's "end of training"; the final test
loss is the last epoch's, whose evaluation is the same (checked: the two accuracies
agree). Samples and steps per epoch are the spec's (9,984 test samples evaluated, 421
steps of 128 per epoch)."""
import argparse
import re
import sys
from pathlib import Path

import pandas as pd

STEPS_PER_EPOCH = 421
TEST_SAMPLES = 9984
VALIDATION_SAMPLES = 6000
HEADING = re.compile(r"^## (?P<label>\S+), seed (?P<seed>\d+)$")
ROW = re.compile(r"^\| (?P<epoch>\d+) \| (?P<va>[\d.]+)% \| (?P<ta>[\d.]+)% \| (?P<vl>[\d.]+) \|"
                 r" (?P<tl>[\d.]+) \|")
SUMMARY = re.compile(r"end of training \(whole test split\) (?P<final>[\d.]+)%.*; (?P<steps>\d+)"
                     r" steps, median step (?P<ms>\d+) ms")
STRATEGY = {"e2e": ("global", "e2e"), "global/1f1b": ("global", "1f1b"),
            "local": ("local", ""), "pairwise": ("pairwise", ""), "nwise:3": ("nwise:3", "")}


def parse(path: Path) -> tuple[list[dict], list[dict]]:
    runs, evaluations = [], []
    run = None
    for line in path.read_text().splitlines():
        if m := HEADING.match(line):
            label, seed = m["label"], int(m["seed"])
            if label not in STRATEGY:
                sys.exit(f"from_curves.py: {path}: unknown strategy label {label!r}")
            run = {"run_id": f"{label}-s{seed}", "label": label, "seed": seed, "epochs": []}
        elif run is not None and (m := ROW.match(line)):
            run["epochs"].append({k: float(v) for k, v in m.groupdict().items()})
        elif run is not None and (m := SUMMARY.search(line)):
            last = run["epochs"][-1]
            if float(m["final"]) != last["ta"]:
                sys.exit(f"from_curves.py: {path}: {run['run_id']}: the end-of-training"
                         f" accuracy {m['final']}% is not the last epoch's {last['ta']}%")
            if int(m["steps"]) != STEPS_PER_EPOCH * len(run["epochs"]):
                sys.exit(f"from_curves.py: {path}: {run['run_id']}: {m['steps']} steps for"
                         f" {len(run['epochs'])} epochs of {STEPS_PER_EPOCH}")
            strategy, pipeline = STRATEGY[run["label"]]
            runs.append({
                "run_id": run["run_id"], "config_key": f"gomez2022-converge {run['run_id']}",
                "model": "resnet20", "strategy": strategy, "pipeline": pipeline,
                "strategy_label": run["label"], "seed": run["seed"], "status": "ok",
                "steps": int(m["steps"]), "step_time_s": int(m["ms"]) / 1000,
                "eval_accuracy": round(last["ta"] / 100, 6), "eval_loss": last["tl"],
                "eval_samples": TEST_SAMPLES, "source_table": str(path)})
            for e in run["epochs"]:
                evaluations.append({
                    "run_id": run["run_id"], "strategy_label": run["label"],
                    "seed": run["seed"], "epoch": e["epoch"],
                    "step": int(e["epoch"]) * STEPS_PER_EPOCH - 1, "loss": e["tl"],
                    "accuracy": round(e["ta"] / 100, 6), "samples": TEST_SAMPLES,
                    "validation_loss": e["vl"], "validation_accuracy": round(e["va"] / 100, 6),
                    "validation_samples": VALIDATION_SAMPLES})
            run = None
    return runs, evaluations


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("curves", nargs="+", type=Path)
    ap.add_argument("--seeds", default="1,2", help="the seeds to keep (default 1,2)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    keep = {int(s) for s in args.seeds.split(",")}
    runs, evaluations = [], []
    for path in args.curves:
        r, e = parse(path)
        runs += r
        evaluations += e
    runs = pd.DataFrame(runs)
    runs = runs[runs["seed"].isin(keep)]
    evaluations = pd.DataFrame(evaluations)
    evaluations = evaluations[evaluations["run_id"].isin(runs["run_id"])]
    args.out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(args.out / "configs.csv", index=False)
    evaluations.to_csv(args.out / "evaluations.csv", index=False)
    print(f"{len(runs)} runs, {len(evaluations)} evaluations -> {args.out}")


if __name__ == "__main__":
    main()
