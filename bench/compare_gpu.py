#!/usr/bin/env python3
"""Prints the GPU benchmarks: per-layer times and TFLOP/s, and the training steps beside
their PyTorch peers with the ratio.

Usage: compare_gpu.py OUT_DIR   (reads layers_gpu.json and train_gpu.json from the C++
benchmarks, layers_torch_cuda.json, resnet20_torch_cuda_b{B}.json and gpt_torch_cuda.json
from the peers, as bench/gpu-check writes them; a missing file leaves its rows out or
marked n/a).
"""
import json
import os
import re
import sys


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def seconds(entry):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[entry["time_unit"]]
    return entry["real_time"] * scale


def print_layers(data, peer):
    rows = {}
    for b in data["benchmarks"]:
        direction, case = b["name"].split("/")[:2]
        rows.setdefault(case, {})[direction] = (seconds(b), b.get("tflops_per_s", 0.0),
                                                b.get("host_us"))
    theirs = peer["cases"] if peer else {}
    unknown = sorted(set(theirs) - set(rows))
    if unknown:
        raise SystemExit(f"layers_torch.py has cases bench_layers_gpu lacks: {unknown} "
                         "(keep layers_torch.py in step with layer_cases.cpp)")
    print("per-layer forward/backward on the GPU (each timed up to a synchronisation); "
          "ratio = interplace time / PyTorch time; host = our host time per call, µs")
    print(f"{'case':<30} {'fwd ms':>8} {'TFLOP/s':>8} {'torch ms':>9} {'ratio':>6} {'host':>6}   "
          f"{'bwd ms':>8} {'TFLOP/s':>8} {'torch ms':>9} {'ratio':>6} {'host':>6}")
    for case, r in rows.items():
        cells = []
        for direction in ("forward", "backward"):
            peer_s = theirs.get(case, {}).get(f"{direction}_s")
            if direction not in r:
                cells.append(f"{'n/a':>8} {'n/a':>8} {'':>9} {'':>6} {'':>6}")
                continue
            ours_s, tflops, host_us = r[direction]
            cell = f"{ours_s * 1e3:>8.3f} {tflops:>8.2f} "
            if peer_s:
                cell += f"{peer_s * 1e3:>9.3f} {ours_s / peer_s:>6.2f}"
            else:
                cell += f"{'n/a':>9} {'n/a':>6}"
            cell += f" {host_us:>6.1f}" if host_us is not None else f" {'n/a':>6}"
            cells.append(cell)
        print(f"{case:<30} {'   '.join(cells)}")


def medians(data):
    """Median step time and counters per benchmark run, keyed by run name."""
    result = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") == "median":
            result[b["run_name"]] = b
    return result


def print_training(train, out):
    runs = medians(train)
    print("training steps on the GPU, median (TF32 off on both sides)")
    print(f"{'step':<28} {'params':>11} {'interplace ms':>14} {'pytorch ms':>11} "
          f"{'ours/pytorch':>13} {'TFLOP/s':>8} {'peak GiB':>9} {'host ms':>8}")
    for name, b in runs.items():
        match = re.match(r"BM_resnet20_train_step_gpu/(\d+)/", name)
        if match:
            label = f"resnet20 batch {match.group(1)}"
            peer = load(os.path.join(out, f"resnet20_torch_cuda_b{match.group(1)}.json"))
        elif name.startswith("BM_gpt_train_step_gpu/"):
            args = dict(re.findall(r"(\w+):(\d+)", name))
            label = f"gpt {args['layers']}x{args['dim']} b{args['batch']} t{args['time']}"
            peer = load(os.path.join(out, "gpt_torch_cuda.json"))
        else:
            continue
        ours = seconds(b)
        params = int(b["params"])
        if peer is not None and peer["params"] != params:
            raise SystemExit(f"{label}: parameter counts differ, {params} vs PyTorch "
                             f"{peer['params']}")
        theirs = f"{peer['step_s_median'] * 1e3:>11.2f}" if peer else f"{'n/a':>11}"
        ratio = f"{ours / peer['step_s_median']:>13.2f}" if peer else f"{'n/a':>13}"
        peak = b.get("peak_memory_bytes", 0.0) / 2**30
        print(f"{label:<28} {params:>11} {ours * 1e3:>14.2f} {theirs} {ratio} "
              f"{b.get('tflops_per_s', 0.0):>8.2f} {peak:>9.2f} {b.get('host_ms', 0.0):>8.2f}")


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = sys.argv[1]
    layers = load(os.path.join(out, "layers_gpu.json"))
    train = load(os.path.join(out, "train_gpu.json"))
    if layers is None and train is None:
        raise SystemExit(f"no layers_gpu.json or train_gpu.json in {out}")
    context = (train or layers)["context"]
    print(f"device: {context.get('device', 'unknown')}")
    if layers is not None:
        print_layers(layers, load(os.path.join(out, "layers_torch_cuda.json")))
        print()
    if train is not None:
        print_training(train, out)


if __name__ == "__main__":
    main()
