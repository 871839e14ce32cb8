"""The simulator against the runtime: a matrix of configurations measured and predicted.

Run by ``bench/sim-validation`` (which says how); the steps:

1. per model, ``interplace profile`` on as many ranks as the largest K (node times at the
   micro-batch size of the matrix, the link between two ranks, and how ranks sharing the
   host slow each other down, ``host_sharing``), so the prediction uses this machine's
   numbers;
2. per model, one ``interplace sweep`` over the matrix below with ``cost_device =
   "profile:..."``: every configuration's record holds the measured step time (median over
   its measured steps) and the simulator's prediction made from that profile;
3. the table: MAPE of the prediction, Spearman's rank correlation between predicted and
   measured step times within each model, the GPipe idle fraction check, the worst cases.

The matrix (per model; the micro-batch is always MICRO samples, so one profile fits all):

* pipelines: order ``topo``, placer ``stages`` (a stage chain), K = 2, 3, 4, strategies
  global/GPipe, global/1F1B, local, pairwise, M = 1, 4, 8;
* placements: K = 2, M = 4, global/GPipe, orders ``topo``, ``bfs``, ``dfs-pre``, placers
  ``contiguous``, ``greedy-eft``, ``balanced``, ``refine`` (chains and non-chains).

K = 3 and 4 put more ranks than cores on a 2-core machine: the ranks time-share the
cores. The profile's ``host_sharing`` (measured for P = 2..4 ranks on the host) is what
lets the simulator predict that; their figures are still reported apart from K <= cores.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from interplace_analysis import load_results

MICRO = 8  # samples per micro-batch in every configuration
MODELS = ["resnet20", "vgg16-small", "mobilenet_v2-small", "gpt-mini"]
QUICK_MODELS = ["resnet20"]
# Models the cost model was never tuned on (issue #58's transfer check): a simulator that
# only fits the four above would show it here.
HELD_OUT_MODELS = ["inception_v3-small", "bert-mini", "resnet50-small", "nasnet_a_mobile-small"]


def device_counts(args: argparse.Namespace) -> list[int]:
    return args.devices or ([2, 3] if args.quick else [2, 3, 4])


def spec_text(model: str, profile: Path, quick: bool, steps: int, ks: list[int]) -> str:
    """The sweep specification of one model's matrix (a TOML string)."""
    ms = [1, 4] if quick else [1, 4, 8]
    batches = [MICRO * m for m in ms]
    mismatched = [(b, m) for b in batches for m in ms if b != MICRO * m]
    lines = [
        f'description = "sim-validation: {model}, micro-batch {MICRO}"',
        f'models = ["{model}"]',
        'dataset = "synthetic"',
        f"devices = {ks}",
        'orders = ["topo", "bfs", "dfs-pre"]',
        'placers = ["stages", "contiguous", "greedy-eft", "balanced", "refine"]',
        'strategies = ["global", "local", "pairwise"]',
        'pipelines = ["gpipe", "1f1b"]',
        f"micro_batches = {ms}",
        f"batch_sizes = {batches}",
        "warmup_steps = 1",
        f"steps = {steps}",
        'optimizer = "sgd-momentum"',
        f'cost_device = "profile:{profile}"',
        "seed = 1",
        "",
    ]
    for b, m in mismatched:  # the micro-batch stays MICRO samples
        lines += ["[[exclude]]", f"batch_size = {b}", f"micro_batches = {m}", ""]
    # The pipeline block: topo + stages, every K, strategy and M.
    lines += ["[[exclude]]", 'placer = "stages"', 'order = ["bfs", "dfs-pre"]', ""]
    # The placement block: K = 2, M = 4 (quick: M = 4 too), global/GPipe only.
    others = '["contiguous", "greedy-eft", "balanced", "refine"]'
    if any(k != 2 for k in ks):
        lines += ["[[exclude]]", f"placer = {others}", f"devices = {[k for k in ks if k != 2]}",
                  ""]
    lines += ["[[exclude]]", f"placer = {others}", f"micro_batches = {[m for m in ms if m != 4]}",
              ""]
    lines += ["[[exclude]]", f"placer = {others}", 'strategy = ["local", "pairwise"]', ""]
    lines += ["[[exclude]]", f"placer = {others}", 'pipeline = "1f1b"', ""]
    return "\n".join(lines)


def run(cmd: list[str], log: Path) -> None:
    print("+", " ".join(cmd), flush=True)
    with open(log, "a") as f:
        f.write("+ " + " ".join(cmd) + "\n")
        f.flush()
        done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log.read_text().splitlines()[-20:]
        sys.exit(f"sim-validation: {cmd[0]} exited {done.returncode}; last lines of {log}:\n"
                 + "\n".join(tail))


def mpirun(n: int) -> list[str]:
    cmd = ["mpirun", "-np", str(n), "--oversubscribe", "--bind-to", "none"]
    return cmd


def measure(args: argparse.Namespace, out: Path) -> dict[int, list[Path]]:
    """Profiles and sweeps each model once per repeat; returns the result files by repeat.

    A repeat is the whole measurement again, profile included, so the spread over repeats
    shows how much of the error is the machine's run-to-run noise."""
    interplace = str(args.interplace)
    log = out / "run.log"
    files: dict[int, list[Path]] = {}
    models = args.models or (HELD_OUT_MODELS if args.held_out else
                             QUICK_MODELS if args.quick else MODELS)
    ks = device_counts(args)
    ranks = max(ks)
    for repeat in range(1, args.repeats + 1):
        for model in models:
            profile = out / f"{model}-mb{MICRO}.r{repeat}.profile"
            if not profile.exists():
                run(mpirun(ranks) + [interplace, "profile", "--model", model, "--batch-size",
                                     str(MICRO), "--threads", "1", "--repeats", "7", "--out",
                                     str(profile)], log)
            spec = out / f"{model}.r{repeat}.toml"
            spec.write_text(spec_text(model, profile, args.quick, args.steps, ks))
            result = out / f"{model}.r{repeat}.h5"
            resume = ["--resume"] if result.exists() else []
            run(mpirun(ranks) + [interplace, "sweep", str(spec), "--out", str(result)] + resume,
                log)
            files.setdefault(repeat, []).append(result)
    return files


def repeats_table(by_repeat: dict[int, list[Path]]) -> tuple[str, dict]:
    """The headline figures of every repeat, their range, and the run-to-run noise of the
    measured step times (the floor under any prediction error)."""
    rows = []
    steps = []
    preds = []
    keys = None
    for repeat, files in sorted(by_repeat.items()):
        _, summary = table(files)
        rows.append((repeat, summary))
        c = load_results([str(f) for f in files]).ok.set_index("name")
        steps.append(c["step_time_s"].rename(f"r{repeat}"))
        preds.append(c["pred_step_time_s"].rename(f"r{repeat}"))
        keys = c[["model", "devices"]] if keys is None else keys.combine_first(c[["model", "devices"]])
    lines = ["| repeat | MAPE, K ≤ cores | MAPE, K > cores | Spearman within model (K ≤ cores) |"
             " resnet20 GPipe idle M=8 measured / simulated |",
             "| --- | --- | --- | --- | --- |"]
    for repeat, sm in rows:
        rho = ", ".join(f"{m} {fmt(v, 2)}" for m, v in sm["spearman_within_model_fitting"].items())
        bubble = sm.get("resnet20_gpipe_idle_M8")
        bubble_text = f"{bubble[0]:.3f} / {bubble[1]:.3f}" if bubble else "n/a"
        lines.append(f"| {repeat} | {percent(sm['mape_fitting'])} | "
                     f"{percent(sm['mape_oversubscribed'])} | {rho} | {bubble_text} |")
    fit = [sm["mape_fitting"] for _, sm in rows]
    over = [sm["mape_oversubscribed"] for _, sm in rows]
    out = {"repeats": len(rows),
           "mape_fitting": [min(fit), float(np.mean(fit)), max(fit)],
           "mape_oversubscribed": [min(over), float(np.mean(over)), max(over)]}
    lines.append("")
    over_text = ("none measured (every K ≤ cores)" if all(math.isnan(v) for v in over) else
                 f"mean {percent(float(np.mean(over)))}, range {percent(min(over))}–"
                 f"{percent(max(over))}")
    lines.append(f"Over n = {len(rows)} repeats: MAPE (K ≤ cores) mean {np.mean(fit):.1%}, range "
                 f"{min(fit):.1%}–{max(fit):.1%}; MAPE (K > cores) {over_text}.")
    if len(steps) > 1:
        both = pd.concat(steps, axis=1).dropna()
        spread = (both.max(axis=1) / both.min(axis=1) - 1.0)
        out["run_to_run_spread_median"] = float(spread.median())
        out["run_to_run_spread_p90"] = float(spread.quantile(0.9))
        lines.append(f"Run-to-run noise of the measured step times (max/min − 1 over the repeats, "
                     f"per configuration, n = {len(both)}): median {spread.median():.1%}, "
                     f"90th percentile {spread.quantile(0.9):.1%}.")
        # Each configuration's measurement as the median of its runs (n = repeats, each
        # with its own profile), against the median of its predictions: the figures a
        # single run's noise cannot make or break.
        measured = both.median(axis=1)
        predicted = pd.concat(preds, axis=1).loc[both.index].median(axis=1)
        pooled = pd.DataFrame({"measured": measured, "predicted": predicted}).join(keys)
        pooled["ape"] = (pooled["predicted"] / pooled["measured"] - 1.0).abs()
        fit = pooled[pooled["devices"] <= (os.cpu_count() or 1)]
        rho = {m: spearman(g["predicted"], g["measured"]) for m, g in fit.groupby("model")}
        out["pooled"] = {"n_runs": len(steps), "mape_fitting": float(fit["ape"].mean()),
                         "spearman_within_model_fitting": rho}
        lines.append(f"Pooled over the repeats (per configuration the median of its n = "
                     f"{len(steps)} runs against the median of its predictions), K ≤ cores: "
                     f"MAPE {fit['ape'].mean():.1%} over {len(fit)}; Spearman within each model: "
                     + ", ".join(f"{m} {fmt(v, 2)}" for m, v in rho.items()) + ".")
    return "\n".join(lines) + "\n", out


def machine_line() -> str:
    """scripts/machine-line: lscpu's model, cores, the CPU's vector ISA, the caps in force."""
    script = Path(__file__).resolve().parent.parent / "scripts" / "machine-line"
    done = subprocess.run([str(script)], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else f"Machine: unknown ({done.stderr})"


def fmt(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def percent(x: float) -> str:
    """A fraction as a percentage, "n/a" where nothing was measured (NaN)."""
    return "n/a" if math.isnan(x) else f"{x:.1%}"


def spearman(a: pd.Series, b: pd.Series) -> float:
    if len(a) < 3:
        return math.nan
    return float(sps.spearmanr(a, b).statistic)


def table(files: list[Path]) -> tuple[str, dict]:
    """Markdown tables and a JSON summary of predicted against measured step times."""
    r = load_results([str(f) for f in files])
    c = r.ok.copy()
    c["ape"] = (c["pred_step_time_s"] / c["step_time_s"] - 1.0).abs()
    c["oversubscribed"] = c["devices"] > (os.cpu_count() or 1)
    c["chain"] = c["pred_messages"] == "stage"
    lines = []
    summary: dict = {"configurations": int(len(c)),
                     "skipped": int((r.configs["status"] == "skipped").sum()),
                     "failed": int((r.configs["status"] == "failed").sum()),
                     "cores": os.cpu_count()}
    lines.append(f"{len(c)} configurations measured ({summary['skipped']} skipped as not "
                 f"runnable, {summary['failed']} failed), {os.cpu_count()} cores; "
                 f"step time = median over the measured steps of one run (n = 1 run each).")
    lines.append("")
    lines.append("| model | K | configurations | MAPE | median error | worst error | "
                 "Spearman (within model and K) |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    groups = {}
    for (model, k), g in c.groupby(["model", "devices"]):
        err = g["pred_step_time_s"] / g["step_time_s"] - 1.0
        worst = err.iloc[int(np.argmax(err.abs().to_numpy()))]
        rho = spearman(g["pred_step_time_s"], g["step_time_s"])
        groups[f"{model} K={k}"] = {"n": int(len(g)), "mape": float(g["ape"].mean()),
                                    "spearman": rho}
        note = " (oversubscribed)" if bool(g["oversubscribed"].iloc[0]) else ""
        lines.append(f"| {model} | {k}{note} | {len(g)} | {g['ape'].mean():.1%} | "
                     f"{err.median():+.1%} | {worst:+.1%} | {fmt(rho, 2)} |")
    summary["groups"] = groups
    lines.append("")
    fit = c[~c["oversubscribed"]]
    over = c[c["oversubscribed"]]
    per_model_rho = {m: spearman(g["pred_step_time_s"], g["step_time_s"])
                     for m, g in fit.groupby("model")}
    summary["mape_fitting"] = float(fit["ape"].mean()) if len(fit) else math.nan
    summary["mape_oversubscribed"] = float(over["ape"].mean()) if len(over) else math.nan
    summary["spearman_within_model_fitting"] = per_model_rho
    # At fixed K and M the step times differ only by placement and strategy: whether the
    # simulator tells which of those is faster, without the easy ranking by batch size.
    fixed = fit[(fit["devices"] == 2) & (fit["micro_batches"] == 4)]
    fixed_rho = {m: spearman(g["pred_step_time_s"], g["step_time_s"])
                 for m, g in fixed.groupby("model")}
    summary["spearman_k2_m4"] = fixed_rho
    lines.append(f"Ranks ≤ cores: MAPE {summary['mape_fitting']:.1%} over {len(fit)}; "
                 "Spearman within each model: "
                 + ", ".join(f"{m} {fmt(v, 2)}" for m, v in per_model_rho.items()) + "; "
                 "within each model at K = 2, M = 4 (placements and strategies only): "
                 + ", ".join(f"{m} {fmt(v, 2)} (n = {len(fixed[fixed['model'] == m])})"
                             for m, v in fixed_rho.items()) + ".")
    if len(over):
        lines.append(f"Ranks > cores (time-shared cores, the profile's host_sharing): MAPE "
                     f"{summary['mape_oversubscribed']:.1%} over {len(over)}.")
    for name, g in (("stage chains (stage-level schedule)", fit[fit["chain"]]),
                    ("other placements (node-level list schedule)", fit[~fit["chain"]])):
        if len(g):
            lines.append(f"- {name}: MAPE {g['ape'].mean():.1%} over {len(g)}")
    lines.append("")

    # The GPipe bubble of a balanced 2-stage resnet20 at M = 8.
    bubble = fit[(fit["model"] == "resnet20") & (fit["devices"] == 2) & (fit["placer"] == "stages")
                 & (fit["strategy"] == "global") & (fit["pipeline"] == "gpipe")]
    if len(bubble):
        lines.append("GPipe idle fraction, resnet20, `stages`, K = 2 (formula (K-1)/(M+K-1)):")
        lines.append("")
        lines.append("| M | measured | simulator | formula |")
        lines.append("| --- | --- | --- | --- |")
        for _, row in bubble.sort_values("micro_batches").iterrows():
            m = int(row["micro_batches"])
            lines.append(f"| {m} | {row['idle_fraction']:.3f} | {row['pred_idle_fraction']:.3f} "
                         f"| {1 / (m + 1):.3f} |")
            summary[f"resnet20_gpipe_idle_M{m}"] = [float(row["idle_fraction"]),
                                                    float(row["pred_idle_fraction"])]
        lines.append("")

    lines.append("Worst 10 (ranks ≤ cores):")
    lines.append("")
    lines.append("| configuration | schedule | measured ms | predicted ms | error |")
    lines.append("| --- | --- | --- | --- | --- |")
    for _, row in fit.sort_values("ape", ascending=False).head(10).iterrows():
        lines.append(f"| {row['name']} | {row['pred_messages']} | "
                     f"{1e3 * row['step_time_s']:.1f} | {1e3 * row['pred_step_time_s']:.1f} | "
                     f"{row['pred_step_time_s'] / row['step_time_s'] - 1:+.1%} |")
    return "\n".join(lines) + "\n", summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--interplace", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--models", nargs="*", help=f"default: {' '.join(MODELS)}")
    p.add_argument("--steps", type=int, default=16,
                   help="measured steps per configuration (vgg16-small, K = 2, on the idle VM: "
                   "two runs of a configuration differ by 2.6%% at the median and 13%% at the "
                   "90th percentile with 4 steps, 1.6%% and 4.8%% with 16)")
    p.add_argument("--repeats", type=int, default=2,
                   help="independent repeats of the whole measurement, profiles included")
    p.add_argument("--quick", action="store_true",
                   help="resnet20 only, K = 2, 3, M = 1, 4: a check that the bench works")
    p.add_argument("--devices", type=int, nargs="+",
                   help="device counts K of the pipeline block (default 2 3 4; the placement "
                   "block is K = 2 whatever this says)")
    p.add_argument("--held-out", action="store_true",
                   help=f"the models the cost model was not tuned on: {' '.join(HELD_OUT_MODELS)}")
    p.add_argument("--table-only", action="store_true",
                   help="no measuring: the table from the result files already in --out")
    args = p.parse_args()
    if shutil.which("mpirun") is None and not args.table_only:
        sys.exit("sim-validation: mpirun not found (scripts/install-deps installs Open MPI)")
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    if args.table_only:
        by_repeat: dict[int, list[Path]] = {}
        for f in sorted(args.out.glob("*.r*.h5")):
            by_repeat.setdefault(int(f.suffixes[-2][2:]), []).append(f)
        if not by_repeat:
            sys.exit(f"sim-validation: no result files (MODEL.rN.h5) in {args.out}")
    else:
        by_repeat = measure(args, args.out)
    first = min(by_repeat)
    text, summary = table(by_repeat[first])
    text = (f"Repeat {first} in detail (the others in the last section).\n\n" + text)
    repeats_text, summary["over_repeats"] = repeats_table(by_repeat)
    text += "\n## Every repeat\n\n" + repeats_text
    summary["machine"] = machine_line()
    header = (f"# Simulator vs runtime ({time.strftime('%Y-%m-%d', time.gmtime())})\n\n"
              f"Made by `bench/sim-validation {' '.join(sys.argv[1:])}` "
              f"in {time.time() - start:.0f} s.\n{summary['machine']}\n\n")
    (args.out / "sim-validation.md").write_text(header + text)
    (args.out / "sim-validation.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(header + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
