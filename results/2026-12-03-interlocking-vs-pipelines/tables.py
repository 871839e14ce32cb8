"""summary.md of this folder from its CSV files (run.sh writes them): per K and strategy,
the measured step of each sweep, the simulator's prediction for this machine (ranks
sharing its 2 cores) and for K separate devices, and the comparison with the best
global schedule that fits the configuration's memory (the report's strategies table)."""
import csv
import math
import sys
from pathlib import Path

here = Path(__file__).resolve().parent


def rows(name):
    path = here / name
    return list(csv.DictReader(path.open())) if path.exists() else []


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def key(r):
    return (int(r["devices"]), r["strategy_label"])


separate = {key(r): r for r in rows("separate-devices.csv")}
out = []
runs = [n for n in ("run1", "run2", "k4-n10", "k2-n5") if (here / f"strategies-{n}.csv").exists()]
for run in runs:
    strat = {key(r): r for r in rows(f"strategies-{run}.csv")}
    sim = {key(r): r for r in rows(f"simulator-{run}.csv")}
    out.append(f"### {run}\n")
    out.append("| K | strategy | runs | measured step (ms) | predicted here (ms) | predicted, "
               "separate devices (ms) | best global (fits memory) | throughput / best global "
               "[95% interval] | verdict |")
    out.append("| ---: | --- | ---: | ---: | ---: | ---: | --- | --- | --- |")
    for k in sorted(strat, key=lambda kl: (kl[0], kl[1])):
        r, s, sep = strat[k], sim.get(k, {}), separate.get(k, {})
        ratio = num(r["vs_best_global"])
        lo, hi = num(r["vs_best_global_ci_low"]), num(r["vs_best_global_ci_high"])
        interval = "" if math.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]"
        out.append(f"| {k[0]} | {k[1]} | {r['runs']} | {1e3 * num(s.get('step_time_s')):.0f} | "
                   f"{1e3 * num(s.get('pred_step_time_s')):.0f} | "
                   f"{1e3 * num(sep.get('separate_step_s')):.0f} | {r['best_global']} | "
                   f"{ratio:.2f}{interval} | {r['vs_best_global_verdict']} |")
    out.append("")
out.append("### K separate devices (simulated from the measured profile)\n")
out.append("| K | strategy | step (ms) | idle fraction | peak memory of the fullest device (MiB) "
           "| step / best global's | fastest global within this memory (+5%) |")
out.append("| ---: | --- | ---: | ---: | ---: | ---: | --- |")
best = {}
for (k, label), r in separate.items():
    if label.startswith("global"):
        best[k] = min(best.get(k, math.inf), num(r["separate_step_s"]))
for (k, label), r in sorted(separate.items()):
    step, peak = num(r["separate_step_s"]), num(r["max_device_peak_mib"])
    fits = [(num(g["separate_step_s"]), gl) for (gk, gl), g in separate.items()
            if gk == k and gl.startswith("global")
            and num(g["max_device_peak_mib"]) <= peak * 1.05]
    within = f"{min(fits)[1]} ({step / min(fits)[0]:.2f}x)" if fits else "none fits"
    out.append(f"| {k} | {label} | {1e3 * step:.1f} | {num(r['separate_idle']):.2f} | "
               f"{peak:.1f} | {step / best[k]:.2f} | {within} |")
text = "\n".join(out) + "\n"
(here / "summary.md").write_text(text)
sys.stdout.write(text)
