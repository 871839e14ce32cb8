#!/usr/bin/env python3
"""Prints interplace's resnet20 training step beside PyTorch's, per thread count.

Usage: compare_resnet20.py OUT_DIR   (reads resnet20_t{N}.json from bench_resnet20 and
resnet20_torch_t{N}.json from resnet20_torch.py, as bench/run writes them).
"""
import glob
import json
import os
import re
import sys


def ours(path):
    with open(path) as f:
        data = json.load(f)
    for b in data["benchmarks"]:
        if b.get("aggregate_name") == "median":
            return b["real_time"] / 1e3, int(b["threads"]), int(b["params"])
    raise SystemExit(f"{path}: no median aggregate in the benchmark output")


def main():
    out = sys.argv[1]
    rows = []
    for path in sorted(glob.glob(os.path.join(out, "resnet20_t*.json"))):
        match = re.search(r"resnet20_t(\d+)\.json$", path)
        if match is None:  # resnet20_torch_t*.json also matches the glob
            continue
        threads = int(match.group(1))
        step_s, reported_threads, params = ours(path)
        peer_path = os.path.join(out, f"resnet20_torch_t{threads}.json")
        peer = json.load(open(peer_path)) if os.path.exists(peer_path) else None
        rows.append((threads, reported_threads, params, step_s, peer))
    if not rows:
        raise SystemExit(f"no resnet20_t*.json in {out}")
    print("resnet20 training step: batch 128, 1x28x28, 10 classes, SGD momentum 0.9 (median)")
    print(f"{'threads':>7} {'params':>8} {'interplace ms':>14} {'pytorch ms':>11} "
          f"{'ratio ours/pytorch':>19}")
    for threads, reported, params, step_s, peer in rows:
        if reported != threads:
            raise SystemExit(f"bench ran with {reported} threads, expected {threads}")
        if peer is None:
            print(f"{threads:>7} {params:>8} {step_s * 1e3:>14.1f} {'n/a':>11} {'n/a':>19}")
            continue
        if peer["params"] != params:
            raise SystemExit(f"parameter counts differ: {params} vs PyTorch {peer['params']}")
        ratio = step_s / peer["step_s_median"]
        print(f"{threads:>7} {params:>8} {step_s * 1e3:>14.1f} "
              f"{peer['step_s_median'] * 1e3:>11.1f} {ratio:>19.2f}")


if __name__ == "__main__":
    main()
