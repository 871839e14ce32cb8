"""The node-level placements of a sim-validation run, predicted by two simulators.

For every configuration of the result files in OUT (bench/sim-validation's output) whose
prediction ran the node-level schedule, asks `interplace simulate` of each binary given
(label=path) for the step time with the run's own profile, and prints the error of each
against the step time the run measured (median over its steps), then MAPE per binary.
The first binary must be the one that made the files: its simulate must reproduce the
stored prediction (checked), so the others are compared on the same measurements.

    python paired.py OUT new=/path/to/interplace old=/path/to/old/interplace
"""
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "analysis"))
from interplace_analysis.loader import load_results  # noqa: E402

out = Path(sys.argv[1])
binaries = [a.split("=", 1) for a in sys.argv[2:]]
rows = []
for h5 in sorted(out.glob("*.r1.h5")):
    frame = load_results([h5]).configs
    frame = frame[(frame["status"] == "ok") & (frame["pred_messages"] == "node")]
    model = h5.name.split(".r1.")[0]
    profile = out / f"{model}-mb8.r1.profile"
    for _, c in frame.iterrows():
        args = ["simulate", "--model", c["model"], "--order", c["order"], "--placer", c["placer"],
                "--devices", str(int(c["devices"])), "--batch-size", str(int(c["batch_size"])),
                "--micro-batches", str(int(c["micro_batches"])), "--profile", str(profile),
                "--format", "json"]
        row = {"config": f"{c['model']} {c['order']} {c['placer']}",
               "measured_ms": 1e3 * c["step_time_s"]}
        for label, binary in binaries:
            sim = json.loads(subprocess.run([binary, *args], check=True, capture_output=True,
                                            text=True).stdout)["simulation"]
            row[label] = 1e3 * sim["step_time_s"]
        if abs(row[binaries[0][0]] - 1e3 * c["pred_step_time_s"]) > 1e-6 * row["measured_ms"]:
            sys.exit(f"{row['config']}: simulate gives {row[binaries[0][0]]} ms, the file "
                     f"{1e3 * c['pred_step_time_s']} ms")
        rows.append(row)

labels = [label for label, _ in binaries]
print("| configuration | measured ms | " + " | ".join(f"{x} ms | {x} error" for x in labels) + " |")
print("| --- | --- | " + " | ".join("--- | ---" for _ in labels) + " |")
for r in rows:
    cells = " | ".join(f"{r[x]:.2f} | {100 * (r[x] / r['measured_ms'] - 1):+.1f}%" for x in labels)
    print(f"| {r['config']} | {r['measured_ms']:.2f} | {cells} |")
print()
for x in labels:
    errors = [abs(r[x] / r["measured_ms"] - 1) for r in rows]
    signed = sorted(r[x] / r["measured_ms"] - 1 for r in rows)
    print(f"{x}: MAPE {100 * sum(errors) / len(errors):.1f}% over n = {len(rows)}, "
          f"median error {100 * signed[len(signed) // 2]:+.1f}%")
