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
        # The same runs as `simulate --placer rl` with the same options (place, then the
        # simulated step of what it placed): seeds 1 and 2.
        first = doc["summary"][0]
        times = [ok("simulate", "--model", "gpt-mini", "--order", "topo-lifo", "--placer", "rl",
                    "--devices", "2", "--seed", str(seed), "--rl-episodes", "3",
                    "--device-preset", "h100", "--format",
                    "json").json()["simulation"]["step_time_s"]
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


# What `--preset wang2022` sets (docs/placers.md, "The traversal-order study as its code
# ran it"; docs/cli.md, "order-study"), as the dry run prints it.
WANG2022 = {
    "--orders": "lexical,topo-lifo,topo-lifo-rev,dfs-pre,dfs-post,bfs-by-name",
    "--devices": "3",
    "--seeds": "10",
    "--rl-episodes": "50",
    "--rl-eval-every": "5",
    "--rl-start": "device-0",
    "--rl-episode-start": "best",
    "--rl-reward": "log",
    "--rl-baseline": "all-so-far",
    "--rl-learning-rate": "0.001",
    "--rl-final-learning-rate": "0.001",
    "--rl-entropy": "0",
    "--rl-entropy-schedule": "constant",
    "--rl-clip-norm": "1.25",
}
# What the preset leaves at the rl placer's defaults (our policy network and grouping).
NOT_PRESET = {"--rl-rounds": "8", "--rl-hidden": "32", "--rl-groups": "448",
              "--rl-memory-penalty": "10", "--rl-time-budget": "0",
              "--rl-features": "lookahead", "--rl-candidate-learning-rate": "0.3",
              "--rl-discount": "0.9"}


def dry_run(*extra):
    doc = ok("order-study", "--models", "gpt-mini", "--dry-run", "--format", "json",
             *extra).json()
    check(doc["dry_run"] is True, doc)
    return doc, {s["option"]: (s["value"], s["source"]) for s in doc["settings"]}


def test_order_study_preset_resolves_to_the_documented_settings():
    doc, settings = dry_run("--preset", "wang2022")
    expected = {k: (v, "preset wang2022") for k, v in WANG2022.items()}
    expected.update({k: (v, "default") for k, v in NOT_PRESET.items()})
    check(settings == expected, settings)
    check(doc["preset"] == "wang2022" and doc["rl_runs_at_most"] == 6 * 10, doc)
    # Without the preset, the defaults of a plain study are unchanged.
    _, plain = dry_run()
    check(plain["--rl-episodes"] == ("50", "default") and
          plain["--rl-episode-start"] == ("best", "default") and
          plain["--rl-reward"] == ("start-relative", "default") and
          plain["--rl-start"] == ("random", "default") and
          plain["--rl-baseline"] == ("recent", "default") and
          plain["--rl-eval-every"] == ("0", "default"), plain)
    text = ok("order-study", "--models", "gpt-mini", "--dry-run", "--preset", "wang2022").out
    check("preset wang2022: at most 60 rl runs" in text and "--rl-reward" in text and
          "all-so-far" in text, text)


def test_order_study_explicit_options_win_over_the_preset():
    _, settings = dry_run("--preset", "wang2022", "--seeds", "1", "--rl-reward", "log-study-sign",
                          "--orders", "topo-lifo", "--rl-rounds", "3")
    check(settings["--seeds"] == ("1", "given"), settings)
    check(settings["--rl-reward"] == ("log-study-sign", "given"), settings)
    check(settings["--orders"] == ("topo-lifo", "given"), settings)
    check(settings["--rl-rounds"] == ("3", "given"), settings)
    check(settings["--rl-episodes"] == ("50", "preset wang2022"), settings)
    fails(2, "order-study", "--models", "gpt-mini", "--dry-run", "--preset", "wang2021",
          contains=("unknown preset 'wang2021' (valid: wang2022)",))
    fails(2, "order-study", "--models", "gpt-mini", "--dry-run", "--rl-eval-every", "1",
          contains=("eval_every",))


def test_order_study_preset_runs_as_place_with_its_options():
    """A preset run is `simulate --placer rl` with the preset's options: the same placement,
    simulated."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "preset.h5")
        doc = ok("order-study", "--models", "gpt-mini", "--preset", "wang2022", "--seeds", "1",
                 "--orders", "topo-lifo", "--rl-episodes", "10", "--device-preset", "h100",
                 "--quiet", "--out", out, "--format", "json").json()
        check(doc["runs"] == 1 and doc["failed"] == 0 and doc["preset"] == "wang2022", doc)
        options = {s["option"]: s["value"] for s in doc["settings"]}
        placed = ok("simulate", "--model", "gpt-mini", "--order", "topo-lifo", "--placer", "rl",
                    "--devices", options["--devices"], "--seed", "1",
                    *[a for k in ("--rl-episodes", "--rl-eval-every", "--rl-start",
                                  "--rl-episode-start", "--rl-reward", "--rl-baseline",
                                  "--rl-learning-rate", "--rl-final-learning-rate",
                                  "--rl-entropy", "--rl-entropy-schedule", "--rl-clip-norm")
                      for a in (k, options[k])],
                    "--device-preset", "h100", "--format", "json").json()
        step = doc["summary"][0]["median_step_time_s"]
        check(placed["simulation"]["step_time_s"] == step, (placed["simulation"], step))
        fails(2, "place", "--model", "gpt-mini", "--order", "topo-lifo", "--placer", "rl",
              "--devices", "3", "--rl-reward", "lgo", contains=("--rl-reward",))


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
