#!/usr/bin/env python3
"""train.jsonl (run.sh) -> curve.csv and a Markdown table: per epoch the test accuracy and
loss (whole test split), the mean training loss and the learning rate; then the plateau
(mean test accuracy of the last 3 epochs) and the first epoch within 1 point of it.
    python3 results/2026-12-04-interlocking-plateau/curve.py [train.jsonl [curve.csv]]"""
import csv
import json
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
path = Path(sys.argv[1]) if len(sys.argv) > 1 else here / "train.jsonl"
csv_path = Path(sys.argv[2]) if len(sys.argv) > 2 else here / "curve.csv"
steps, summary = [], None
for line in path.read_text().splitlines():
    record = json.loads(line)
    if "step" in record and "summary" not in record:
        steps.append(record)
    elif record.get("summary"):
        summary = record
if summary is None or not summary.get("evaluations"):
    sys.exit(f"curve.py: {path} has no summary with evaluations (did the run finish?)")
evals = summary["evaluations"]
rows, first = [], 0
for e in evals:
    in_epoch = [s for s in steps[first:e["step"] + 1] if not s.get("warmup")]
    first = e["step"] + 1
    rows.append({
        "epoch": e["epoch"], "step": e["step"],
        "test_accuracy": e["accuracy"], "test_loss": e["loss"],
        "train_loss": sum(s["loss"] for s in in_epoch) / max(1, len(in_epoch)),
        "learning_rate": in_epoch[-1]["learning_rate"] if in_epoch else float("nan"),
        "wall_s": sum(s["step_time_s"] for s in steps[:first]),
    })
with open(csv_path, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
print("| epoch | test accuracy | test loss | train loss | learning rate | training wall, min |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    print(f"| {r['epoch']} | {100 * r['test_accuracy']:.2f}% | {r['test_loss']:.4f} | "
          f"{r['train_loss']:.4f} | {r['learning_rate']:g} | {r['wall_s'] / 60:.1f} |")
plateau = sum(r["test_accuracy"] for r in rows[-3:]) / len(rows[-3:])
within = next(r["epoch"] for r in rows if r["test_accuracy"] >= plateau - 0.01)
print(f"\nplateau (mean of the last 3 epochs): {100 * plateau:.2f}%; best {100 * max(r['test_accuracy'] for r in rows):.2f}%;"
      f" first epoch within 1 point of the plateau: {within}; {len(steps)} steps, "
      f"median step {1e3 * summary['median_step_time_s']:.0f} ms")
