#!/usr/bin/env python3
"""`interplace order-study`, `place --save-placement` and `train --placement` through the real
binary (built with the runtime).

Usage: test_cli_order_study.py BINARY CASE   (CTest runs one case per test)
       test_cli_order_study.py BINARY --list
Reuses test_cli.py's helpers; only the standard library (the HDF5 contents are checked by
analysis/tests/test_order_study.py through h5py).
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

# Small and fast: gpt-mini has 36 nodes; 3 episodes per run.
STUDY = ["order-study", "--models", "gpt-mini,vgg16-small", "--orders", "topo-lifo,lexical",
         "--devices", "2", "--seeds", "2", "--rl-episodes", "3", "--device-preset", "h100",
         "--quiet"]


def test_order_study_runs_every_setting_and_matches_place():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "study.h5")
        doc = ok(*STUDY, "--out", out, "--format", "json").json()
        check(doc["runs"] == 2 * 2 * 2 and doc["failed"] == 0, doc)
        check(os.path.isfile(out) and not os.path.exists(out + ".tmp"), "file not written")
        settings = [(s["model"], s["devices"], s["order"]) for s in doc["summary"]]
        check(settings == [("gpt-mini", 2, "topo-lifo"), ("gpt-mini", 2, "lexical"),
                           ("vgg16-small", 2, "topo-lifo"), ("vgg16-small", 2, "lexical")],
              settings)
        for s in doc["summary"]:
            check(s["ok"] == 2 and 0 < s["min_step_time_s"] <= s["median_step_time_s"]
                  <= s["max_step_time_s"], s)
        # The same runs as `place --placer rl` with the same options: seeds 1 and 2.
        first = doc["summary"][0]
        times = [ok("place", "--model", "gpt-mini", "--order", "topo-lifo", "--placer", "rl",
                    "--devices", "2", "--seed", str(seed), "--rl-episodes", "3",
                    "--device-preset", "h100", "--format", "json").json()["rl"]["best_step_time_s"]
                 for seed in (1, 2)]
        check(min(times) == first["min_step_time_s"] and max(times) == first["max_step_time_s"],
              (times, first))
        # Results are never overwritten.
        fails(2, *STUDY, "--out", out, contains=("exists already",))


def test_order_study_runs_each_distinct_order_once():
    """dfs-post is topo-lifo-rev on every graph of this suite (docs/orders.md): asked for
    both, the study runs one and names the other."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "distinct.h5")
        study = [a for a in STUDY]
        study[study.index("--orders") + 1] = "topo-lifo-rev,dfs-post,lexical"
        doc = ok(*study, "--out", out, "--format", "json").json()
        for model in doc["models"]:
            check("dfs-post=topo-lifo-rev" in model["same_orders"], model)
            check(model["distinct_orders"] == 3 - len(model["same_orders"]), model)
        ran = {(s["model"], s["order"]) for s in doc["summary"]}
        check(all(order != "dfs-post" for _, order in ran), ran)
        check(("gpt-mini", "topo-lifo-rev") in ran and ("vgg16-small", "lexical") in ran, ran)
        distinct = sum(m["distinct_orders"] for m in doc["models"])
        check(doc["runs"] == distinct * 2, doc)  # 2 seeds per distinct order and model
        text = ok(*study, "--out", os.path.join(tmp, "t.h5")).out
        check("not run: dfs-post=topo-lifo-rev" in text, text)


def test_order_study_bad_options():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "s.h5")
        base = ["order-study", "--out", out]
        fails(2, *base, "--models", "nosuchnet", contains=("nosuchnet",))
        fails(2, *base, "--models", "gpt-mini", "--orders", "sideways", contains=("sideways",))
        fails(2, *base, "--models", "gpt-mini", "--seeds", "0", contains=("--seeds",))
        fails(2, *base, "--models", "gpt-mini", "--devices", "0", contains=("--devices",))
        fails(2, *base, "--models", "gpt-mini", "--baselines", "rl", contains=("not rl",))
        fails(2, *base, "--models", "gpt-mini", "--rl-episodes", "-1", contains=("episodes",))
        fails(2, *base, "--models", "gpt-mini,bert-mini", "--profile", out,
              contains=("--profile-dir",))
        fails(2, *base, "--models", "gpt-mini", "--profile-dir", tmp,
              contains=("gpt-mini.tsv", "interplace profile"))
        fails(2, "order-study", "--models", "gpt-mini", contains=("--out",))
        check(not os.path.exists(out), "a refused study wrote its file")


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
