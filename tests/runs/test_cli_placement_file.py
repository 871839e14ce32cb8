#!/usr/bin/env python3
"""`place --save-placement` and `train --placement` through the real binary (built with the
runtime). The traversal-order study, a simulate-only sweep, is tested with the sweeps
(test_sweep.py, simulate_only_study_np1).

Usage: test_cli_placement_file.py BINARY CASE   (CTest runs one case per test)
       test_cli_placement_file.py BINARY --list
Reuses test_cli.py's helpers; only the standard library.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from case_runner import run_cases  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli as cli  # noqa: E402
from test_cli import check, fails, ok  # noqa: E402


def test_placement_file_round_trip_and_train():
    mpirun = shutil.which("mpirun")
    check(mpirun is not None, "mpirun not found")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    model = ["--model", "resnet20", "--width-multiplier", "0.25", "--batch-size", "4"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.placement")
        placed = ok("place", *model, "--order", "topo", "--placer", "round-robin", "--devices",
                    "2", "--save-placement", path, "--format", "json").json()
        lines = open(path).read().splitlines()
        check(lines[:3] == ["interplace-placement 1", "devices 2",
                            f"nodes {placed['node_count']}"], lines[:3])
        devices = [int(line.split("\t")[1]) for line in lines[3:]]
        check(devices == placed["placement"]["device_of_node"], "file differs from the placement")

        def train(placement, *extra):
            return subprocess.run([mpirun, "--oversubscribe", "-np", "2", cli.BINARY, "train",
                                   *model, "--placement", placement, "--steps", "1",
                                   "--warmup-steps", "0", "--threads-per-rank", "1",
                                   "--format", "json", *extra],
                                  capture_output=True, text=True, timeout=240, env=env)

        # round-robin's placement trained as given, while --placer names contiguous.
        proc = train(path)
        check(proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr}")
        summary = json.loads(proc.stdout.splitlines()[-1])
        sim = ok("simulate", *model, "--order", "topo", "--placer", "round-robin", "--devices",
                 "2", "--format", "json").json()["simulation"]
        check(abs(summary["predicted_step_time_s"] - sim["step_time_s"])
              <= 1e-9 * sim["step_time_s"], (summary["predicted_step_time_s"], sim["step_time_s"]))
        # A file for another graph, or with a device out of range, is refused naming the line.
        bad = os.path.join(tmp, "bad.placement")
        with open(bad, "w") as f:
            f.write("\n".join(lines[:3] + [lines[3].split("\t")[0] + "\t7"] + lines[4:]) + "\n")
        proc = train(bad)
        check(proc.returncode == 2 and "bad.placement:4: device 7" in proc.stderr, proc.stderr)
        with open(bad, "w") as f:
            f.write("\n".join(lines[:3] + ["renamed\t0"] + lines[4:]) + "\n")
        proc = train(bad)
        check(proc.returncode == 2 and "'renamed' in the file" in proc.stderr, proc.stderr)
        # /dev/zero is one endless line: refused before reading (it grew memory without end).
        proc = train("/dev/zero")
        check(proc.returncode == 2 and "placement file '/dev/zero': is not a regular file"
              in proc.stderr, proc.stderr)
        fails(2, "place", *model, "--order", "topo", "--placer", "contiguous", "--devices", "2",
              "--save-placement", os.path.join(tmp, "no", "dir", "p"),
              contains=("cannot write the placement file",))


def set_binary(path):
    cli.BINARY = path


if __name__ == "__main__":
    run_cases(globals(), __doc__, set_binary)
