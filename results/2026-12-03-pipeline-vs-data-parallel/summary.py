"""summary.md from rows.csv (study.py). Per model and GPU count the step of every
configuration is taken as lower + (1 - f) x (upper - lower): f is the share of each
all-reduce that overlaps the backward pass, the same for every configuration (0: the
simulator's step, all-reduce exposed; 1: the step without it). For f = 0 and f = 1 the
table names the fastest configuration; and the smallest f from which pure data parallelism
(K = 1) is at least as fast as every pipeline split (K > 1)."""
import csv
from collections import defaultdict
from pathlib import Path

here = Path(__file__).resolve().parent
groups = defaultdict(list)
refused = defaultdict(list)
for r in csv.DictReader((here / "rows.csv").open()):
    key = (r["model"], int(r["gpus"]))
    if r["refused"]:
        refused[key].append(r)
        continue
    for c in ("step_upper_s", "step_lower_s", "allreduce_max_s", "idle_fraction",
              "peak_memory_gb"):
        r[c] = float(r[c])
    groups[key].append(r)


def name(r):
    return f"K={r['stages']} x R={r['replicas']} {r['schedule']} (M={r['micro_batches']})"


def step(r, f):
    return r["step_lower_s"] + (1.0 - f) * (r["step_upper_s"] - r["step_lower_s"])


def fastest(rows, f):
    return min(rows, key=lambda r: step(r, f))


out = ["| model | GPUs | fastest, all-reduce exposed (f = 0) | step (s) | fastest, all-reduce "
       "hidden (f = 1) | step (s) | pure data parallel (K = 1), f = 0 / 1 (s) | best pipeline "
       "split, f = 0 / 1 (s) | data parallel is fastest from f = |",
       "| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: |"]
for key in sorted(groups):
    rows = groups[key]
    dp = [r for r in rows if r["stages"] == "1"]
    pp = [r for r in rows if r["stages"] != "1"]
    b0, b1 = fastest(rows, 0.0), fastest(rows, 1.0)
    grid = [i / 100 for i in range(101)]
    wins = [f for f in grid if dp and pp and step(fastest(dp, f), f) <= step(fastest(pp, f), f)]
    from_f = "never" if not wins else f"{wins[0]:.2f}"
    d0, d1 = (fastest(dp, 0.0), fastest(dp, 1.0)) if dp else (None, None)
    p0, p1 = (fastest(pp, 0.0), fastest(pp, 1.0)) if pp else (None, None)
    two = (lambda a, b: f"{step(a, 0.0):.3f} / {step(b, 1.0):.3f}" if a else "none fits")
    out.append(f"| {key[0]} | {key[1]} | {name(b0)} | {step(b0, 0.0):.3f} | {name(b1)} | "
               f"{step(b1, 1.0):.3f} | {two(d0, d1)} | {two(p0, p1)} | {from_f} |")
out.append("")
out.append("Refused by the planner (memory over the H100 preset's 80 GB, or no such stage cut), "
           "per (model, GPUs):")
for key in sorted(refused):
    out.append(f"- {key[0]}, {key[1]} GPUs: {len(refused[key])}: " + "; ".join(
        f"K={r['stages']} {r['schedule']}: {r['refused'].removeprefix('interplace: error: ')}"
        for r in refused[key]))
text = "\n".join(out) + "\n"
(here / "summary.md").write_text(text)
