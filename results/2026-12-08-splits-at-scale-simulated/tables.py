"""Tables of results/2026-12-08-splits-at-scale-simulated (run.sh): SIMULATED step times
(nothing trained) of every placer's split per network, K stages x R replicas on the h100
preset and schedule; interplace's recommendation (the lower simulated step of stages and
balanced) against the best of the splits users get today (torchtitan's even-layers,
DeepSpeed's uniform and parameters) as best-default / recommended (> 1: the
recommendation is faster); the simulator is deterministic, so no interval: one number per
configuration, what the simulator says, not a measurement."""
import argparse
import collections
import math

import h5py
import numpy as np

OURS = ["stages", "balanced"]
BASELINES = ["even-layers", "deepspeed-uniform", "deepspeed-parameters"]
PIPELINES = ["gpipe", "1f1b", "interleaved-1f1b", "zb-h1"]


def text(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def read(paths):
    """{(net, K, R, pipeline): {placer: predicted step s}} and the refusals' reasons."""
    pred = collections.defaultdict(dict)
    refused = {}
    for path in sorted(paths):
        with h5py.File(path, "r") as f:
            s = f["summary"]
            ids = text(s["id"][:])
            dp = [int(f["configs"][i].attrs.get("data_parallel", 1)) for i in ids]
            for i, (net, placer, pipe, status) in enumerate(zip(
                    text(s["model"][:]), text(s["placer"][:]), text(s["pipeline"][:]),
                    text(s["status"][:]))):
                key = (net, int(s["devices"][i]), int(dp[i]), pipe)
                if status == "ok":
                    pred[key][placer] = float(s["pred_step_time_s"][i])
                else:
                    refused[key + (placer,)] = text([s["reason"][i]])[0]
    return pred, refused


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    pred, refused = read(args.files)
    here = __file__.replace("tables.py", "")
    print(open(here + "machine.txt").read().strip() + " (the machine that ran the simulator;"
          " the times are the h100 preset's)\n")
    print("## SIMULATED: every setting (h100 preset; step ms per placer)\n")
    print("| network | K x R = GPUs | schedule | " + " | ".join(OURS + BASELINES) +
          " | recommended | best default | best default / recommended |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in OURS + BASELINES) +
          " | --- | --- | --- |")
    gains = collections.defaultdict(list)
    for key in sorted(pred, key=lambda k: (k[0], k[1], k[2], PIPELINES.index(k[3])
                                           if k[3] in PIPELINES else 99)):
        net, k, r, pipe = key
        row = pred[key]
        cells = [f"{row[p] * 1e3:.1f}" if p in row else "refused" for p in OURS + BASELINES]
        ours = [p for p in OURS if p in row]
        base = [p for p in BASELINES if p in row]
        if ours and base:
            rec = min(ours, key=lambda p: (row[p], OURS.index(p)))
            best = min(base, key=lambda p: (row[p], BASELINES.index(p)))
            gain = row[best] / row[rec]
            gains[net].append(gain)
            gains[(net, pipe)].append(gain)
            tail = f"{rec} | {best} | {gain:.3f}"
        else:
            tail = " | | "
        print(f"| {net} | {k} x {r} = {k * r} | {pipe} | " + " | ".join(cells) + f" | {tail} |")

    print("\n## SIMULATED: best default / recommended, geometric mean over settings\n")
    print("| network | schedule | settings | geometric mean | min | max |")
    print("| --- | --- | --- | --- | --- | --- |")
    for key in sorted(gains, key=lambda k: (k if isinstance(k, str) else k[0],
                                            "" if isinstance(k, str) else k[1])):
        g = gains[key]
        net, pipe = (key, "all") if isinstance(key, str) else key
        print(f"| {net} | {pipe} | {len(g)} | {math.exp(np.mean(np.log(g))):.3f} | "
              f"{min(g):.3f} | {max(g):.3f} |")
    reasons = collections.Counter((key[0], key[4], r.split(" HINT")[0][:160])
                                  for key, r in refused.items())
    if reasons:
        print("\n## Refused\n")
        for (net, placer, reason), n in sorted(reasons.items()):
            print(f"- {net} {placer} ({n} settings): {reason}")


if __name__ == "__main__":
    main()
