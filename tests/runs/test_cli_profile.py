#!/usr/bin/env python3
"""`interplace profile` through the real binary, with 1 rank and under mpirun with 2.

Usage: test_cli_profile.py BINARY CASE   (CTest runs one case per test)
       test_cli_profile.py BINARY --list
Reuses test_cli.py's helpers (run, ok, fails, check); only the standard library.
"""
import json
import os
import shutil
import subprocess
import sys

from case_runner import run_cases  # noqa: E402
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli as cli  # noqa: E402
from test_cli import check, fails, ok  # noqa: E402

# A small, fast model: resnet20 at a quarter of its width, batch 4.
SMALL = ["--model", "resnet20", "--width-multiplier", "0.25", "--batch-size", "4"]
QUICK = ["--repeats", "2", "--warmup", "1", "--threads", "1"]


def read_profile(path):
    """Header keys, node lines and comment lines of a profile file."""
    header, nodes, comments = {}, [], []
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("#"):
                comments.append(line)
                continue
            fields = line.split("\t")
            if fields[0] == "node":
                nodes.append((fields[1], float(fields[2]), float(fields[3])))
            elif fields[0] != "format":
                header[fields[0]] = fields[1]
    return header, nodes, comments


def graph_nodes(*model):
    return ok("graph", *model, "--format", "json").json()["graph"]["nodes"]


def check_nodes(nodes, model):
    names = [n["name"] for n in graph_nodes(*model)]
    check([n[0] for n in nodes] == names, "profile nodes are not the graph's, in id order")
    for name, forward, backward in nodes:
        check(forward >= 0 and backward >= 0, f"negative time for {name}")
    inputs = [n for n in graph_nodes(*model) if n["op"] == "input"]
    for node in inputs:
        timing = [n for n in nodes if n[0] == node["name"]][0]
        check(timing[1:] == (0.0, 0.0), f"input node {node['name']} should cost 0: {timing}")
    check(sum(n[1] for n in nodes) > 0 and sum(n[2] for n in nodes) > 0, "all times are 0")


def test_profile_1_rank():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "resnet.tsv")
        doc = ok("profile", *SMALL, *QUICK, "--out", path, "--format", "json").json()
        check(doc["model"] == "resnet20" and doc["batch_size"] == 4 and doc["ranks"] == 1, doc)
        check(doc["threads"] == 1 and doc["repeats"] == 2, doc)
        link = doc["link"]
        check(link["measured"] is False and "preset" in link["source"], link)
        check(link["ping_pong"] == [], link)
        check(doc["host_sharing"] == {}, doc["host_sharing"])  # one rank: nothing shared
        check(doc["total_forward_s"] > 0 and doc["total_backward_s"] > 0, doc)
        check(len(doc["slowest_nodes"]) == 10, doc["slowest_nodes"])
        costs = [n["forward_s"] + n["backward_s"] for n in doc["slowest_nodes"]]
        check(costs == sorted(costs, reverse=True), "slowest nodes are not sorted")
        header, nodes, comments = read_profile(path)
        check(header["batch_size"] == "4" and int(header["node_count"]) == len(nodes), header)
        check(header["device"].endswith("(1 thread)"), header["device"])
        check(float(header["link_latency_s"]) == link["latency_s"], (header, link))
        check(any("link: NOT measured" in c and "cpu-core" in c for c in comments), comments)
        check_nodes(nodes, SMALL)
        check(abs(sum(n[1] for n in nodes) - doc["total_forward_s"]) < 1e-9, "forward total")
        # The placement commands accept it: the cost model takes node times from it.
        sim = ok("simulate", *SMALL, "--order", "topo", "--placer", "contiguous", "--devices",
                 "2", "--profile", path, "--format", "json").json()
        check(sim["simulation"]["step_time_s"] > 0, sim["simulation"])
        text = ok("profile", *SMALL, *QUICK, "--out", path, "--top", "3").out
        check("slowest nodes:" in text and "NOT measured: no second rank" in text, text)
        check(text.count("\n") < 20, "--top 3 should list three nodes:\n" + text)


def test_profile_records_the_micro_batch():
    """--batch-size is the mini-batch here too: the nodes are timed at the micro-batch, the
    file records that as its batch_size, and a run reads it only at the same split."""
    model = ["--model", "resnet20", "--width-multiplier", "0.25"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "split.tsv")
        doc = ok("profile", *model, "--batch-size", "8", "--micro-batches", "2", *QUICK,
                 "--out", path, "--format", "json").json()
        check((doc["batch_size"], doc["micro_batches"], doc["micro_batch_size"]) == (8, 2, 4), doc)
        header, _, comments = read_profile(path)
        check(header["batch_size"] == "4", header)
        check(any("--batch-size 8 --micro-batches 2" in c for c in comments), comments)
        place = ["--order", "topo", "--placer", "contiguous", "--devices", "2", "--profile", path]
        for split in (["--batch-size", "8", "--micro-batches", "2"], ["--batch-size", "4"]):
            ok("simulate", *model, *split, *place, "--format", "json")
        fails(2, "simulate", *model, "--batch-size", "8", *place,
              contains=("micro-batch size 4", "micro-batch size 8", "HINT:"))


def test_profile_refuses_other_model_options():
    """A profile records its graph's parameter count and forward FLOPs: the same model at
    another width (same node names, other shapes) is refused, naming the fix."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "quarter.tsv")
        ok("profile", *SMALL, *QUICK, "--out", path)
        header, _, _ = read_profile(path)
        graph = ok("graph", *SMALL, "--format", "json").json()
        check(int(header["graph_parameter_count"]) == graph["parameter_count"], header)
        check(int(header["graph_forward_flops"]) == graph["forward_flops"], header)
        place = ["--order", "topo", "--placer", "contiguous", "--devices", "2", "--profile", path]
        ok("simulate", *SMALL, *place, "--format", "json")
        wider = ["--model", "resnet20", "--width-multiplier", "0.5", "--batch-size", "4"]
        fails(2, "simulate", *wider, *place,
              contains=("profile was measured on a graph of", "same model options", "HINT:"))


def test_profile_transformer():
    """Token inputs feed the embedding valid ids; the tied LM head binds to its owner."""
    model = ["--model", "gpt-mini", "--batch-size", "2", "--sequence-length", "16"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gpt.tsv")
        ok("profile", *model, *QUICK, "--out", path, "--device-preset", "h100")
        _, nodes, comments = read_profile(path)
        check_nodes(nodes, model)
        check(any("device preset h100" in c for c in comments), comments)


def test_profile_2_ranks():
    mpirun = shutil.which("mpirun")
    check(mpirun is not None, "mpirun not found (the profile command is built with MPI)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "two.tsv")
        proc = subprocess.run([mpirun, "--oversubscribe", "-np", "2", cli.BINARY, "profile", *SMALL,
                               *QUICK, "--out", path, "--format", "json"],
                              capture_output=True, text=True, timeout=240, env=env)
        check(proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr}")
        doc = json.loads(proc.stdout)  # one document: only rank 0 prints
        check(doc["ranks"] == 2, doc)
        link = doc["link"]
        check(link["measured"] is True and link["source"] == "ping-pong", link)
        # One host: no inter-node link, and none in the file.
        check(doc["inter_node_link"] is None, doc["inter_node_link"])
        sizes = [s["bytes"] for s in link["ping_pong"]]
        check(sizes == [4**k for k in range(14)], sizes)  # 1 B ... 64 MiB
        check(0 < link["latency_s"] < 1e-3, link)
        check(1e7 < link["bandwidth_bytes_per_s"] < 1e12, link)
        check(link["latency_s"] == link["ping_pong"][0]["half_round_trip_s"], link)
        big = link["ping_pong"][-1]
        check(abs(link["bandwidth_bytes_per_s"] - big["bytes"] / big["half_round_trip_s"])
              <= 1e-6 * link["bandwidth_bytes_per_s"], link)
        # The receiver's own time per message: whole floats, 4 B ... 16 MiB, more for more
        # bytes, and the same points in the file.
        share = link["receive_cpu"]
        check([p["bytes"] for p in share] == [4**k for k in range(1, 13)], share)
        check(all(0 < p["seconds"] < 1.0 for p in share), share)
        check(share[-1]["seconds"] > share[0]["seconds"], share)
        with open(path) as f:
            lines = [line.split("\t") for line in f.read().splitlines()
                     if line.startswith("link_receive_cpu\t")]
        check([(int(b), float(t)) for _, b, t in lines] ==
              [(p["bytes"], p["seconds"]) for p in share], lines)
        header, nodes, comments = read_profile(path)
        check(float(header["link_latency_s"]) == link["latency_s"], header)
        check(float(header["link_bandwidth_bytes_per_s"]) == link["bandwidth_bytes_per_s"], header)
        check(any("measured by an MPI ping-pong" in c for c in comments), comments)
        check_nodes(nodes, SMALL)
        # Two ranks on one host: how they slow each other down, for n = 1 and 2 computing.
        factors = doc["host_sharing"]["2"]
        check(len(factors) == 2 and all(1.0 <= f < 20.0 for f in factors), doc["host_sharing"])
        check(header["host_sharing"] == "2", header)
        # Bad input fails on every rank before MPI communicates, so mpirun ends too.
        bad = subprocess.run([mpirun, "--oversubscribe", "-np", "2", cli.BINARY, "profile",
                              "--model", "nope", "--out", path],
                             capture_output=True, text=True, timeout=120, env=env)
        check(bad.returncode != 0 and "unknown model 'nope'" in bad.stderr, bad.stderr)


def test_profile_cpu_clock():
    """--clock cpu times nodes in thread CPU time, and the runtime's units by its CPU times
    (the calibration), with no host sharing; the cost model reads it; one thread only."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cpu.tsv")
        doc = ok("profile", *SMALL, *QUICK, "--clock", "cpu", "--out", path,
                 "--format", "json").json()
        check(doc["total_forward_s"] > 0 and doc["total_backward_s"] > 0, doc)
        check(doc["runtime_forward_s"] > 0 and doc["runtime_backward_s"] > 0, doc)
        # By CPU time the units cannot be far below what the nodes take one by one (not
        # under sanitizers: their allocator slows the per-node harness's fresh buffers
        # far more than the runtime's reused ones, 0.36x seen).
        if os.environ.get("INTERPLACE_TEST_SANITIZED") != "1":
            check(doc["runtime_forward_s"] > 0.5 * doc["total_forward_s"], doc)
        check(doc["host_sharing"] == {}, doc)
        header, nodes, comments = read_profile(path)
        check("runtime_forward_s" in header and "runtime_overhead_s" in header, header)
        check(any("thread CPU time" in c for c in comments), comments)
        check_nodes(nodes, SMALL)
        text = ok("profile", *SMALL, *QUICK, "--clock", "cpu", "--out", path).out
        check("runtime on 1 rank, whole model (calibration)" in text, text)
        # Every node also timed inside the runtime's steps (fields 6 and 7); their sums are
        # the units but for what the units spend outside the nodes, which on this tiny
        # model (4 samples, a quarter of resnet20's width) is up to ~40% of them (59% seen
        # inside under a loaded -j2 CI), and medians per node may add up a little above.
        # Medians of a loaded machine's timings: once in five suites at -j2 beside two
        # builds the sum came out 1.16x the units, so a profile whose sums miss the bound
        # is measured again (up to 3 times); nodes counted twice would miss it every time.
        def inside_over_units(profile_path):
            head, _, _ = read_profile(profile_path)
            fields = [l.split("\t") for l in open(profile_path).read().splitlines()
                      if l.startswith("node\t")]
            check(fields and all(len(f) == 7 for f in fields), fields[:3])
            units = float(head["runtime_forward_s"]) + float(head["runtime_backward_s"])
            return sum(float(f[5]) + float(f[6]) for f in fields) / units
        ratios = [inside_over_units(path)]
        while not 0.3 <= ratios[-1] <= 1.1 and len(ratios) < 3:
            ok("profile", *SMALL, *QUICK, "--clock", "cpu", "--out", path)
            ratios.append(inside_over_units(path))
        check(0.3 <= ratios[-1] <= 1.1, f"node sums over the units, per attempt: {ratios}")
        sim = ok("simulate", *SMALL, "--order", "topo", "--placer", "contiguous", "--devices",
                 "2", "--profile", path, "--format", "json").json()
        check(sim["simulation"]["step_time_s"] > 0, sim["simulation"])
        # --place-with: the roofline's placement, timed with the profile.
        place = ["--order", "topo", "--placer", "stages", "--devices", "2", "--format", "json"]
        roofline = ok("simulate", *SMALL, *place).json()
        mixed = ok("simulate", *SMALL, *place, "--profile", path, "--place-with",
                   "cpu-core").json()
        check(mixed["placement"] == roofline["placement"], (mixed["placement"],
                                                            roofline["placement"]))
        check(mixed["simulation"]["step_time_s"] != roofline["simulation"]["step_time_s"],
              "the profile's times should differ from the roofline's")
        fails(2, "simulate", *SMALL, *place, "--profile", path, "--place-with", "abacus",
              contains=("abacus",))
        fails(2, "profile", *SMALL, "--repeats", "1", "--threads", "2", "--clock", "cpu",
              "--out", path, contains=("--clock cpu", "--threads 1"))
        fails(2, "profile", *SMALL, *QUICK, "--clock", "sundial", "--out", path,
              contains=("--clock", "wall or cpu"))


def test_profile_errors():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.tsv")
        fails(2, "profile", "--model", "resnet99", "--out", path, contains=("resnet99", "resnet20"))
        fails(2, "profile", "--model", "resnet20", "--batch-size", "0", "--out", path,
              contains=("batch size",))
        fails(2, "profile", *SMALL, "--repeats", "0", "--out", path, contains=("--repeats",))
        fails(2, "profile", *SMALL, "--threads", "-1", "--out", path, contains=("--threads",))
        fails(2, "profile", *SMALL, contains=("--out",))
        fails(2, "profile", *SMALL, "--out", path, "--format", "xml", contains=("xml",))
        fails(2, "profile", *SMALL, "--out", path, "--device-preset", "tpu", contains=("tpu",))
        fails(2, "profile", *SMALL, "--out", path, "--device", "tpu", contains=("tpu", "cuda"))
        check(not os.path.exists(path), "a failed run wrote the file")
        fails(1, "profile", *SMALL, *QUICK, "--out", os.path.join(tmp, "no", "dir", "p.tsv"),
              contains=("cannot write", "p.tsv"))


def test_profile_on_cuda():
    """--device cuda: a GPU profile where there is a GPU, else one clear error line."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gpu.tsv")
        r = cli.run("profile", *SMALL, *QUICK, "--device", "cuda", "--out", path)
        if r.code == 0:
            header, nodes, _ = read_profile(path)
            check(not header["device"].startswith("cpu"), f"device {header['device']}")
            check_nodes(nodes, SMALL)
            return
        lines = r.err.splitlines()
        check(len(lines) == 1 and lines[0].startswith("interplace: error: "), r.err)
        no_gpu = r.code == 1 and "device cuda: no usable GPU" in lines[0]
        no_cuda = r.code == 2 and "no CUDA backend" in lines[0]
        check(no_gpu or no_cuda, f"exit {r.code}: {lines[0]}")
        check(not os.path.exists(path), "a failed run wrote the file")


def set_binary(path):
    cli.BINARY = path


if __name__ == "__main__":
    run_cases(globals(), __doc__, set_binary)
