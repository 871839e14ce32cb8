"""Tables of results/2026-12-07-splits-in-pytorch (run.sh): per imported network and K,
every placer's split (nodes and parameters per stage), its measured step in the PyTorch
runtime (median over a run's measured steps, then over the n rounds, with the analysis'
95% bootstrap interval over rounds), the simulator's prediction from the torch-measured
profile and its error, and the peak memory per rank measured (the PyTorch process's
resident high-water mark) against predicted; then the verdicts: interplace's
recommendation (the placer among stages and balanced with the lower simulated step: what
interplace says before anything runs) against each baseline (torchtitan's even-layers,
DeepSpeed's uniform and parameters) and against the best baseline (the one measured
fastest), as the baseline's step over the recommendation's, with the analysis' verdict
rule (interval_analysis.stats: permutation p-value, Holm over every comparison of the
study, the 5% minimum effect)."""
import argparse
import collections
import json
import sys

import h5py
import numpy as np

from interplace_analysis import stats

OURS = ["stages", "balanced"]
BASELINES = ["even-layers", "deepspeed-uniform", "deepspeed-parameters"]


def text(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def read(paths):
    """{(net, K): {placer: [per-round dicts]}} and {(net, K, placer): reason} of the skipped."""
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    skipped = {}
    graphs = {}
    for path in sorted(paths):
        with h5py.File(path, "r") as f:
            s = f["summary"]
            ids = text(s["id"][:])
            for i, (net, placer, status) in enumerate(
                    zip(text(s["model"][:]), text(s["placer"][:]), text(s["status"][:]))):
                k = int(s["devices"][i])
                g = f["configs"][ids[i]]
                if status != "ok":
                    skipped[(net, k, placer)] = text([s["reason"][i]])[0]
                    continue
                graph_file = g.attrs["graph_file"]
                graph_file = graph_file.decode() if isinstance(graph_file, bytes) else graph_file
                if graph_file not in graphs:
                    with open(graph_file) as gf:
                        graphs[graph_file] = json.load(gf)
                nodes = graphs[graph_file]["nodes"]
                stage = g["placement"][:]
                params = [sum(n["parameter_count"] for n in nodes if stage[n["id"]] == d)
                          for d in range(k)]
                counts = [int(np.sum(stage == d)) for d in range(k)]
                steps = g["ranks"]["step_s"][:]
                measured = ~g["steps"]["warmup"][:].astype(bool)
                runs[(net, k)][placer].append(dict(
                    step=float(s["step_s"][i]), pred=float(s["pred_step_time_s"][i]),
                    steps=np.max(steps[measured], axis=1),
                    peak=float(np.max(np.median(g["ranks"]["peak_memory_bytes"][:][measured],
                                                axis=0))),
                    peak_pred=float(np.max(g["prediction"]["peak_memory_bytes"][:])),
                    counts=counts, params=params))
    return runs, skipped


def side(rows):
    return stats.Runs(values=np.array([r["step"] for r in rows]),
                      steps=[r["steps"] for r in rows])


def ms(x):
    return f"{x * 1e3:.1f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--imports", help="run.sh's imports.txt (import wall times)")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    runs, skipped = read(args.files)
    here = __file__.replace("tables.py", "")
    print(open(here + "machine.txt").read().strip() + "\n")
    if args.imports:
        print("Import wall times (`python3 -m interplace_importers`, one run each): " +
              ", ".join(f"{name} {float(s):.1f} s" for name, _, s in
                        (line.split() for line in open(args.imports) if line.strip())) + ".\n")

    print("## Every split, measured and simulated\n")
    print("| network | K | placer | stages: nodes / parameters | n | measured step ms [95% CI] "
          "| simulated ms | error | peak MiB per rank measured / simulated |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    errors = collections.defaultdict(list)
    for (net, k), by_placer in sorted(runs.items()):
        for placer in OURS + BASELINES:
            rows = by_placer.get(placer)
            if not rows:
                reason = skipped.get((net, k, placer), "not run")
                print(f"| {net} | {k} | {placer} | refused: {reason[:140]} | 0 | | | | |")
                continue
            est = stats.median_estimate(side(rows), seed=stats.seed_for(net, k, placer))
            pred = float(np.median([r["pred"] for r in rows]))
            err = pred / est.point - 1
            errors[k].append(abs(err))
            errors[(net, k)].append(abs(err))
            split = " \\| ".join(f"{c} / {p / 1e6:.2f} M" for c, p in
                                 zip(rows[0]["counts"], rows[0]["params"]))
            peak = np.median([r["peak"] for r in rows]) / 2**20
            print(f"| {net} | {k} | {placer} | {split} | {len(rows)} | {ms(est.point)} "
                  f"[{ms(est.low)}, {ms(est.high)}] | {ms(pred)} | {err:+.1%} | "
                  f"{peak:.0f} / {rows[0]['peak_pred'] / 2**20:.0f} |")

    print("\n## Simulator error (MAPE over the configurations above)\n")
    print("| scope | configurations | MAPE |")
    print("| --- | --- | --- |")
    for key in sorted((k for k in errors if isinstance(k, int))):
        print(f"| all networks, K = {key} | {len(errors[key])} | {np.mean(errors[key]):.1%} |")
    for key in sorted((k for k in errors if isinstance(k, tuple))):
        print(f"| {key[0]}, K = {key[1]} | {len(errors[key])} | {np.mean(errors[key]):.1%} |")

    # Verdicts: the recommendation (simulator's pick among ours) against each baseline and
    # the best baseline; Holm over every comparison of the study.
    comparisons = []
    for (net, k), by_placer in sorted(runs.items()):
        ours = [p for p in OURS if by_placer.get(p)]
        if not ours:
            continue
        rec = min(ours, key=lambda p: (np.median([r["pred"] for r in by_placer[p]]),
                                       OURS.index(p)))
        measured = [b for b in BASELINES if by_placer.get(b)]
        best = min(measured, key=lambda b: side(by_placer[b]).point) if measured else None
        for b in measured:
            est = stats.ratio(side(by_placer[b]), side(by_placer[rec]),
                              seed=stats.seed_for(net, k, b, rec))
            # The same split is the same configuration: equal by construction, its measured
            # ratio only the noise between runs of one configuration (no test).
            same = by_placer[b][0]["counts"] == by_placer[rec][0]["counts"]
            comparisons.append(dict(net=net, k=k, rec=rec, baseline=b, best=b == best, est=est,
                                    same=same))
    tested = [c for c in comparisons if not c["same"]]
    for c, p in zip(tested, stats.holm([c["est"].p for c in tested])):
        c["p_holm"] = p
    print("\n## The recommendation against the baselines (baseline step / recommended step)\n")
    print(f"Holm over the {len(tested)} comparisons of different splits (of "
          f"{len(comparisons)}; a baseline that cuts where the recommendation cuts is the "
          f"same configuration, a tie by construction, and its measured ratio shows the "
          f"noise between runs of one configuration); minimum effect "
          f"{stats.MIN_EFFECT:.0%}; > 1: the recommendation is faster. The best baseline is "
          f"the one measured fastest (chosen after measuring, so its row favours the "
          f"baseline).\n")
    print("| network | K | recommended | baseline | ratio [95% CI] | p (Holm) | verdict |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for c in comparisons:
        est = c["est"]
        p = c.get("p_holm", float("nan"))
        verdict = "same split (tie)" if c["same"] else stats.verdict(est, p, lower_is_better=False)
        name = c["baseline"] + (" (best)" if c["best"] else "")
        print(f"| {c['net']} | {c['k']} | {c['rec']} | {name} | {est.point:.3f} "
              f"[{est.low:.3f}, {est.high:.3f}] | {p:.3g} | {verdict} |")
    for (net, k, placer), reason in sorted(skipped.items()):
        if placer in BASELINES:
            print(f"\n{net}, K = {k}: {placer} refused: {reason}", file=sys.stdout)


if __name__ == "__main__":
    main()
