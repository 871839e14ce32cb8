#!/usr/bin/env python3
"""Compares the losses of two `interplace train --format json` runs step by step.

bench/gpu-check trains one configuration on the CPU and on the GPU and calls this with both
outputs (JSON lines: one object per step with "step" and "loss", then a summary object
without "step"). The first file is the reference. The first --strict-steps steps must agree
to rounding, the runtime tests' tolerance (tests/runs/test_runtime_cuda.cpp):
|a - b| <= rtol * |reference| + atol. Step 0 is the forward pass of the same weights,
step 1 the weights after one update (every gradient and the optimiser), step 2 after the
second (momentum). Later steps only have to stay on the same trajectory,
|a - b| <= trajectory_rtol * |reference|: training at these settings amplifies rounding
differences 3-500x per step, so two runs that differ only in the order of their sums part
by more than the rounding tolerance within a few steps, CPU against CPU as well
(results/2026-12-04-gpu-h200/README.md). --twin names such a run (the reference's
configuration with another thread count): its difference from the reference is printed
beside, the size of that amplification in the same check.
Prints a table of the losses and the largest relative difference; exit status 0 when every
step is within its tolerance, 1 when one is not, 2 for unreadable input (the runs must
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


def relative_difference(reference, value):
    """|reference - value| / |reference| (|value| when the reference is 0)."""
    return abs(reference - value) / abs(reference) if reference != 0 else abs(value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reference", help="train --format json output (the CPU run)")
    parser.add_argument("other", help="train --format json output (the GPU run)")
    parser.add_argument("--rtol", type=float, default=2e-4)
    parser.add_argument("--atol", type=float, default=1e-6)
    parser.add_argument("--min-steps", type=int, default=1,
                        help="fail unless both runs have at least this many steps")
    parser.add_argument("--strict-steps", type=int, default=None,
                        help="steps held to the rounding tolerance (default: all)")
    parser.add_argument("--trajectory-rtol", type=float, default=5e-2,
                        help="relative tolerance of the steps after --strict-steps")
    parser.add_argument("--twin", help="the reference's configuration run again with another "
                        "summation order (printed beside, not judged)")
    args = parser.parse_args()
    if args.strict_steps is not None and args.strict_steps < 1:
        print("compare_losses: --strict-steps must be >= 1", file=sys.stderr)
        return 2
    try:
        ref = read_losses(args.reference)
        other = read_losses(args.other)
        twin = read_losses(args.twin) if args.twin else None
    except (OSError, ValueError) as e:
        print(f"compare_losses: {e}", file=sys.stderr)
        return 2
    for name, run in ((args.other, other), (args.twin, twin)):
        if run is not None and sorted(ref) != sorted(run):
            print(f"compare_losses: {name} has other steps than {args.reference} "
                  f"({len(run)} and {len(ref)})", file=sys.stderr)
            return 2
    if len(ref) < args.min_steps:
        print(f"compare_losses: {len(ref)} steps, fewer than {args.min_steps}", file=sys.stderr)
        return 2
    steps = sorted(ref)
    strict = len(steps) if args.strict_steps is None else args.strict_steps
    twin_header = " | twin's relative difference" if twin else ""
    print(f"| step | {args.reference} | {args.other} | relative difference{twin_header} |")
    print("| --- | --- | --- | --- |" + (" --- |" if twin else ""))
    worst, failures = 0.0, []
    for index, step in enumerate(steps):
        a, b = ref[step], other[step]
        relative = relative_difference(a, b)
        bound = (args.rtol * abs(a) + args.atol) if index < strict else args.trajectory_rtol * abs(a)
        ok = math.isfinite(b) and abs(a - b) <= bound
        worst = max(worst, relative if math.isfinite(relative) else math.inf)
        if not ok:
            failures.append(step)
        twin_cell = f" | {relative_difference(a, twin[step]):.2e}" if twin else ""
        print(f"| {step} | {a:.7g} | {b:.7g} | {relative:.2e}{'' if ok else ' FAIL'}{twin_cell} |")
    judged = (f"the first {min(strict, len(steps))} within {args.rtol:g} relative + {args.atol:g}"
              + (f", the rest within {args.trajectory_rtol:g} relative" if strict < len(steps)
                 else ""))
    print(f"\n{len(ref)} steps, largest relative difference {worst:.2e} ({judged})")
    if failures:
        print(f"compare_losses: steps {failures} outside the tolerance", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
