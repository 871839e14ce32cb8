#!/usr/bin/env python3
"""Compares the GPU kernels of one training step, ours against PyTorch's, from two
Nsight Compute CSV files made with

  ncu --csv --print-units base --metrics gpu__time_duration.sum \\
      --nvtx --nvtx-include profiled_step PROGRAM ...

(bench_train_gpu and the PyTorch peers each run one step in the NVTX start/end
range profiled_step). Prints, per side, the kernel count, the summed kernel time and the
kernels that take most of it, grouped by name, so that a slower step points at the
kernels to look at. Kernel times are measured one kernel at a time, without overlap.

Usage: kernel_times.py OURS.csv PYTORCH.csv [--top N]
"""
import argparse
import csv
import io
import re
import sys

UNITS = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
         "second": 1.0, "s": 1.0}


def kernel_times(path):
    """(kernel name, seconds) per profiled kernel in an ncu CSV file."""
    with open(path, newline="") as f:
        text = f.read()
    # ncu prints its own messages (==PROF== ...) before the CSV header.
    start = text.find('"ID"')
    if start < 0:
        raise SystemExit(f"{path}: no ncu CSV table in it (did ncu profile any kernel?)")
    rows = []
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = UNITS.get(row["Metric Unit"])
        if unit is None:
            raise SystemExit(f"{path}: unknown time unit {row['Metric Unit']!r}")
        rows.append((row["Kernel Name"], float(row["Metric Value"].replace(",", "")) * unit))
    if not rows:
        raise SystemExit(f"{path}: no gpu__time_duration.sum rows")
    return rows


def short_name(name):
    """The kernel's name without template arguments and parameter lists."""
    name = re.sub(r"\(anonymous namespace\)::", "", name)
    name = re.sub(r"\(.*", "", name)
    depth, out = 0, []
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip()
    return name.split(" ")[-1][:60]


def summary(label, rows, top):
    total = sum(t for _, t in rows)
    groups = {}
    for name, t in rows:
        count, seconds = groups.get(short_name(name), (0, 0.0))
        groups[short_name(name)] = (count + 1, seconds + t)
    print(f"{label}: {len(rows)} kernels, {total * 1e3:.3f} ms of kernel time")
    print(f"  {'kernel':<60} {'calls':>6} {'ms':>8} {'share':>6}")
    for name, (count, seconds) in sorted(groups.items(), key=lambda g: -g[1][1])[:top]:
        print(f"  {name:<60} {count:>6} {seconds * 1e3:>8.3f} {seconds / total:>6.1%}")
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ours")
    parser.add_argument("pytorch")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    ours = summary("interplace", kernel_times(args.ours), args.top)
    theirs = summary("pytorch", kernel_times(args.pytorch), args.top)
    print(f"kernel time, interplace / pytorch: {ours / theirs:.2f}")


if __name__ == "__main__":
    sys.exit(main())
