"""Tables of results/2026-12-07-every-pipeline (run.sh): per model, K and pipeline, the
measured step (median over a run's measured steps, then the median over the n runs, with
a 95% percentile-bootstrap interval over runs), the simulator's prediction (median over
runs: each run's own profile) and its error, the measured and predicted idle fraction,
and the peak memory per rank, measured (the process's resident high-water mark, which
holds the runtime, MPI and the data set as well) against predicted (parameters, optimiser
state and kept activations only); then the unit-cost bubble of each pipeline against the
published formula (schedule_grid: F = B = W = 1 chunk unit, transfers free)."""
import argparse
import collections
import re
import subprocess

import h5py
import numpy as np

ORDER = ["gpipe", "1f1b", "zb-h1", "interleaved-1f1b", "looped-bfs", "interleaved-zb", "zbv",
         "dualpipev"]


def text(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def runs(paths):
    rows = collections.defaultdict(list)
    for path in sorted(paths):
        with h5py.File(path, "r") as f:
            s = f["summary"]
            ids = text(s["id"][:])
            for i, (model, pipeline, status) in enumerate(
                    zip(text(s["model"][:]), text(s["pipeline"][:]), text(s["status"][:]))):
                if status != "ok":
                    continue
                peak_pred = int(np.max(f["configs"][ids[i]]["prediction"]["peak_memory_bytes"][:]))
                rows[(model, int(s["devices"][i]), pipeline)].append(dict(
                    round=path,
                    step=float(s["step_s"][i]), pred=float(s["pred_step_time_s"][i]),
                    idle=float(s["idle_fraction"][i]), pred_idle=float(s["pred_idle_fraction"][i]),
                    peak=float(s["peak_memory_bytes"][i]), peak_pred=peak_pred))
    return rows


def interval(values, rng, n=4000):
    values = np.asarray(values)
    medians = np.median(rng.choice(values, size=(n, len(values)), replace=True), axis=1)
    return np.percentile(medians, [2.5, 97.5])


def formula_units(pipeline, k, m, v):
    """Makespan without the optimiser step at F = B = W = 1 (a whole backward B + W = 2 under
    the split pipelines; chunk units with V chunks), from the papers' bubbles."""
    if pipeline in ("gpipe", "1f1b"):  # GPipe / 1F1B: (K-1)(F+B) idle
        return 2 * m + 2 * (k - 1)
    if pipeline == "zb-h1":  # Qi et al.: (K-1)(T_F + T_B - T_W)
        return 3 * m + (k - 1)
    if pipeline in ("interleaved-1f1b", "looped-bfs"):  # Narayanan et al.: (K-1)(F+B) chunk units
        return 2 * m * v + 2 * (k - 1)
    if pipeline in ("interleaved-zb", "zbv"):  # ZB1P / ZB-V: (K-1)(T_F + T_B - T_W) chunk units
        return 3 * m * v + (k - 1)
    return None  # DualPipeV: no bubble formula in this cost model (its gain is overlap)


def grid_makespan(grid, pipeline, k, m, v):
    out = subprocess.run([grid, "global", str(k), str(m), "1", pipeline, "single", str(v)],
                         check=True, capture_output=True, text=True).stdout
    return int(re.search(r"time (\d+)", out).group(1)) - 1  # without the step's unit


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--grid", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    rng = np.random.default_rng(20261207)
    rows = runs(args.files)
    print(open(__file__.replace("tables.py", "machine.txt")).read().strip() + "\n")
    print("| model | K | pipeline | n | measured step ms [95% CI] | simulated ms | error | "
          "idle measured / simulated | peak MiB per rank measured / simulated |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    errors = collections.defaultdict(list)
    for model in sorted({key[0] for key in rows}):
        for k in sorted({key[1] for key in rows}):
            for pipeline in ORDER:
                r = rows.get((model, k, pipeline))
                if not r:
                    continue
                step = np.median([x["step"] for x in r])
                lo, hi = interval([x["step"] for x in r], rng)
                pred = np.median([x["pred"] for x in r])
                error = pred / step - 1
                errors[k].append(abs(error))
                print(f"| {model} | {k} | {pipeline} | {len(r)} | {1e3 * step:.1f} "
                      f"[{1e3 * lo:.1f}, {1e3 * hi:.1f}] | {1e3 * pred:.1f} | {100 * error:+.0f}% | "
                      f"{np.median([x['idle'] for x in r]):.2f} / "
                      f"{np.median([x['pred_idle'] for x in r]):.2f} | "
                      f"{np.max([x['peak'] for x in r]) / 2**20:.0f} / "
                      f"{np.max([x['peak_pred'] for x in r]) / 2**20:.1f} |")
    print()
    for k, e in sorted(errors.items()):
        print(f"Simulator at K = {k}: MAPE {100 * np.mean(e):.1f}% over {len(e)} configurations.")
    # Each round runs every pipeline once, so a pipeline's step over GPipe's in the same
    # round is paired: drift of the machine between rounds cancels.
    print("\nPaired within each round: step over GPipe's step of the same round and model, "
          "median over the rounds [95% bootstrap interval], measured and simulated.\n")
    print("| model | K | pipeline | n | measured / gpipe [95% CI] | simulated / gpipe | "
          "same side of 1 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for model in sorted({key[0] for key in rows}):
        for k in sorted({key[1] for key in rows}):
            base = {x["round"]: x for x in rows.get((model, k, "gpipe"), [])}
            for pipeline in ORDER[1:]:
                pairs = [(x, base[x["round"]]) for x in rows.get((model, k, pipeline), [])
                         if x["round"] in base]
                if not pairs:
                    continue
                measured = [x["step"] / b["step"] for x, b in pairs]
                simulated = np.median([x["pred"] / b["pred"] for x, b in pairs])
                lo, hi = interval(measured, rng)
                verdict = ("yes" if (hi < 1 and simulated < 1) or (lo > 1 and simulated > 1)
                           else "tie (interval holds 1)" if lo <= 1 <= hi else "no")
                print(f"| {model} | {k} | {pipeline} | {len(pairs)} | {np.median(measured):.3f} "
                      f"[{lo:.3f}, {hi:.3f}] | {simulated:.3f} | {verdict} |")
    print("\n| pipeline | K | M | V | unit-cost makespan (simulator) | published formula |")
    print("| --- | --- | --- | --- | --- | --- |")
    for pipeline in ORDER:
        v = 2 if pipeline in ORDER[3:] else 1
        for k in (2, 4):
            m = 8
            got = grid_makespan(args.grid, pipeline, k, m, v)
            want = formula_units(pipeline, k, m, v)
            print(f"| {pipeline} | {k} | {m} | {v} | {got} | {want if want is not None else 'none'} |")


if __name__ == "__main__":
    main()
