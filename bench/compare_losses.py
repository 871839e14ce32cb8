#!/usr/bin/env python3
"""Compares the losses of two `interplace train --format json` runs step by step.

bench/gpu-check trains one configuration on the CPU and on the GPU and calls this with both
outputs (JSON lines: one object per step with "step" and "loss", then a summary object
without "step"). The tolerance is the runtime tests' (tests/runs/test_runtime_cuda.cpp):
|a - b| <= rtol * |reference| + atol at every step, the first file being the reference.
Prints a table of the losses and the largest relative difference; exit status 0 when every
step is within the tolerance, 1 when one is not, 2 for unreadable input (both runs must
have the same steps).
"""
import argparse
import json
import math
import sys


def read_losses(path):
    losses = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: not JSON ({e})") from e
            if isinstance(record, dict) and "step" in record:
                if "loss" not in record:
                    raise ValueError(f"{path}:{number}: step record without a loss")
                losses[int(record["step"])] = float(record["loss"])
    if not losses:
        raise ValueError(f"{path}: no step records")
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reference", help="train --format json output (the CPU run)")
    parser.add_argument("other", help="train --format json output (the GPU run)")
    parser.add_argument("--rtol", type=float, default=2e-4)
    parser.add_argument("--atol", type=float, default=1e-6)
    parser.add_argument("--min-steps", type=int, default=1,
                        help="fail unless both runs have at least this many steps")
    args = parser.parse_args()
    try:
        ref = read_losses(args.reference)
        other = read_losses(args.other)
    except (OSError, ValueError) as e:
        print(f"compare_losses: {e}", file=sys.stderr)
        return 2
    if sorted(ref) != sorted(other):
        print(f"compare_losses: the runs have different steps ({len(ref)} and {len(other)})",
              file=sys.stderr)
        return 2
    if len(ref) < args.min_steps:
        print(f"compare_losses: {len(ref)} steps, fewer than {args.min_steps}", file=sys.stderr)
        return 2
    print(f"| step | {args.reference} | {args.other} | relative difference |")
    print("| --- | --- | --- | --- |")
    worst, failures = 0.0, []
    for step in sorted(ref):
        a, b = ref[step], other[step]
        relative = abs(a - b) / abs(a) if a != 0 else abs(b)
        ok = math.isfinite(b) and abs(a - b) <= args.rtol * abs(a) + args.atol
        worst = max(worst, relative if math.isfinite(relative) else math.inf)
        if not ok:
            failures.append(step)
        print(f"| {step} | {a:.7g} | {b:.7g} | {relative:.2e}{'' if ok else ' FAIL'} |")
    print(f"\n{len(ref)} steps, largest relative difference {worst:.2e} "
          f"(tolerance {args.rtol:g} relative + {args.atol:g})")
    if failures:
        print(f"compare_losses: steps {failures} outside the tolerance", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
