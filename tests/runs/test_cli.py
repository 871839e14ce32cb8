#!/usr/bin/env python3
"""Runs the real `interplace` binary and checks its output, JSON and exit codes.

Usage: test_cli.py BINARY CASE   (CTest runs one case per test; see CMakeLists.txt)
       test_cli.py BINARY --list
Only the standard library, so that /usr/bin/python3 runs it as is.
"""
import json
import os
import re
import subprocess
import sys

from case_runner import run_cases  # noqa: E402
import tempfile

BINARY = None
RESNET20_PARAMS = 272186
MODEL = ["--model", "resnet20"]


class Result:
    def __init__(self, args, proc):
        self.args = args
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self):
        return json.loads(self.out)


def run(*args):
    proc = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=120)
    return Result(args, proc)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def ok(*args):
    r = run(*args)
    check(r.code == 0, f"{args}: exit {r.code}, stderr: {r.err}")
    check(r.err == "", f"{args}: unexpected stderr: {r.err}")
    return r


def fails(code, *args, contains=()):
    """The command must fail with `code`, print nothing on stdout and exactly one error line."""
    r = run(*args)
    check(r.code == code, f"{args}: expected exit {code}, got {r.code}; stderr: {r.err}")
    check(r.out == "", f"{args}: stdout should be empty on error: {r.out[:200]}")
    lines = r.err.splitlines()
    check(len(lines) == 1, f"{args}: expected one stderr line, got {lines}")
    check(lines[0].startswith("interplace: error: "), f"{args}: bad error line {lines[0]}")
    for text in contains:
        check(text in lines[0], f"{args}: error line lacks {text!r}: {lines[0]}")
    return lines[0]


def valid_names(line):
    """The names listed in an error's '(valid: a, b, c)'."""
    match = re.search(r"\(valid: ([^)]*)\)", line)
    check(match is not None, f"no valid list in {line}")
    return [name.strip() for name in match.group(1).split(",")]


def resnet20_graph():
    return ok("graph", *MODEL, "--format", "json").json()["graph"]


def place_json(*extra):
    return ok("place", *MODEL, "--format", "json", *extra).json()


def simulate_json(*extra):
    return ok("simulate", *MODEL, "--format", "json", *extra).json()


# ---- graph -------------------------------------------------------------------------------


def test_graph_text():
    out = ok("graph", *MODEL).out
    check(out.startswith("resnet20 (resnet): "), out[:100])
    for key in ("nodes", "edges", "depth", "max width", "mean branching",
                "critical-path share", "parameters", "forward FLOPs", "backward FLOPs"):
        check(re.search(rf"^{re.escape(key)}\s", out, re.M), f"missing line {key!r}:\n{out}")
    check(re.search(r"^parameters\s+272,186 ", out, re.M), out)
    stats = ok("graph", *MODEL, "--stats").out
    check(re.search(r"^conv2d\s+\d+\s", stats, re.M), f"no per-op row for conv2d:\n{stats}")


def test_graph_json():
    doc = ok("graph", *MODEL, "--format", "json", "--stats").json()
    check(doc["model"] == "resnet20" and doc["family"] == "resnet", doc.keys())
    check(doc["parameter_count"] == RESNET20_PARAMS, doc["parameter_count"])
    check(doc["reference_parameters"] == RESNET20_PARAMS, doc["reference_parameters"])
    graph = doc["graph"]
    nodes = graph["nodes"]
    check(graph["node_count"] == len(nodes), "node_count does not match the node list")
    check(sum(n["parameter_count"] for n in nodes) == RESNET20_PARAMS, "node parameters")
    check(sum(n["forward_flops"] for n in nodes) == doc["forward_flops"], "forward FLOPs")
    check(graph["edge_count"] == len(graph["edges"]), "edge_count")
    check([n["id"] for n in nodes] == list(range(len(nodes))), "ids are not 0..n-1")
    stats = doc["stats"]
    check(stats["node_count"] == len(nodes) and stats["edge_count"] == graph["edge_count"], stats)
    check(1 < stats["depth"] <= len(nodes), stats)
    check(stats["max_width"] >= 2, "resnet20 has parallel shortcut branches")
    check(0.0 < stats["critical_path_cost_share"] <= 1.0, stats)
    check(sum(op["node_count"] for op in doc["ops"]) == len(nodes), "per-op counts")
    # Model options reach the builder: batch size 4 scales FLOPs, not parameters.
    one = ok("graph", *MODEL, "--format", "json", "--batch-size", "1").json()
    four = ok("graph", *MODEL, "--format", "json", "--batch-size", "4").json()
    check(four["forward_flops"] == 4 * one["forward_flops"], "batch size not applied")
    check(four["parameter_count"] == RESNET20_PARAMS, "batch size changed parameters")
    check(four["model_options"]["batch_size"] == 4, four["model_options"])
    wide = ok("graph", *MODEL, "--format", "json", "--width-multiplier", "0.5").json()
    check(wide["parameter_count"] < RESNET20_PARAMS / 2, "width multiplier not applied")
    ten = ok("graph", *MODEL, "--format", "json", "--classes", "7", "--in-channels", "3").json()
    fc = [n for n in ten["graph"]["nodes"] if n["name"] == "fc"][0]
    check(fc["output_shape"][-1] == 7, fc)


# The 11 model options of a spec's [model_options] (docs/cli.md); each is a flag of every
# subcommand that takes model options, made from the same table (config_fields.hpp).
SPEC_MODEL_OPTIONS = ("in_channels", "image_size", "classes", "sequence_length", "layers",
                      "dim", "heads", "vocab_size", "max_positions", "width_multiplier",
                      "depth_multiplier")


def test_model_option_flags():
    for command in ("graph", "simulate", "train", "profile"):
        helptext = ok(command, "--help").out
        for key in SPEC_MODEL_OPTIONS:
            check("--" + key.replace("_", "-") in helptext, f"{command} --help lacks {key}")
    # They reach the builder. gpt-mini with 1 block of width 32, 2 heads, a vocabulary of
    # 64 and 16 positions: token table 64*32 + positions 16*32 + block (2 layer norms 2*64,
    # qkv 32*96+96, projection 32*32+32, MLP 32*128+128 + 128*32+32) + final norm 64, the
    # LM head tied to the token table: 15328.
    small = ok("graph", "--model", "gpt-mini", "--layers", "1", "--dim", "32", "--heads", "2",
               "--vocab-size", "64", "--max-positions", "16", "--format", "json").json()
    check(small["parameter_count"] == 15328, small["parameter_count"])
    options = small["model_options"]
    check(all(key in options for key in SPEC_MODEL_OPTIONS), options)
    check((options["layers"], options["dim"], options["heads"], options["vocab_size"],
           options["max_positions"]) == (1, 32, 2, 64, 16), options)
    fails(2, "graph", "--model", "gpt-mini", "--dim", "30", "--heads", "4",
          contains=("heads",))


def test_graph_dot():
    out = ok("graph", *MODEL, "--format", "dot").out
    check(out.startswith("digraph"), out[:50])
    check(out.rstrip().endswith("}"), out[-50:])


def test_graph_list():
    text = ok("graph", "--list").out
    check(re.search(r"^resnet20\s+resnet\s+272,186\s", text, re.M), text)
    catalog = ok("graph", "--list", "--format", "json").json()
    entry = [m for m in catalog if m["name"] == "resnet20"]
    check(len(entry) == 1 and entry[0]["reference_parameters"] == RESNET20_PARAMS, catalog)
    check(all({"name", "family", "reference_parameters", "description"} <= m.keys()
              for m in catalog), catalog)
    check(ok("--list-models").out == text, "--list-models differs from graph --list")


# ---- order -------------------------------------------------------------------------------


def order_names():
    return valid_names(fails(2, "order", *MODEL, "--order", "nope"))


def test_order_text():
    graph = resnet20_graph()
    names = ok("order", *MODEL, "--order", "topo").out.splitlines()
    check(sorted(names) == sorted(n["name"] for n in graph["nodes"]), "not every node once")
    check(names[0] == "input", names[:3])
    lexical = ok("order", *MODEL, "--order", "lexical").out.splitlines()
    check(lexical == sorted(names), "lexical order is not sorted by name")


def test_order_list():
    lines = ok("order", "--list").out.splitlines()
    check([line.split()[0] for line in lines] == order_names(), lines)
    check(any(line.startswith("topo-lifo ") and "networkx 2.4" in line for line in lines), lines)
    listed = ok("order", "--list", "--format", "json").json()
    check([o["name"] for o in listed] == order_names() and all(o["definition"] for o in listed),
          listed)


def test_order_json():
    graph = resnet20_graph()
    n = graph["node_count"]
    name_of = {node["id"]: node["name"] for node in graph["nodes"]}
    orders = order_names()
    check({"topo", "dfs-post-rev", "random", "critical-path"} <= set(orders), orders)
    for order in orders:
        doc = ok("order", *MODEL, "--order", order, "--format", "json").json()
        ids = [node["id"] for node in doc["nodes"]]
        check(sorted(ids) == list(range(n)), f"{order}: not a permutation of the nodes")
        check(all(name_of[node["id"]] == node["name"] for node in doc["nodes"]), order)
        check(doc["order"] == order and doc["node_count"] == n, doc.keys())
        if order in ("topo", "dfs-post-rev", "random-topo", "critical-path", "topo-lifo",
                     "lexical-topo"):
            check(doc["topological"], f"{order} should be topological")
        if order == "topo-rev":
            check(not doc["topological"], "topo-rev is not topological")
    seeded = [ok("order", *MODEL, "--order", "random", "--seed", s, "--format", "json").json()
              for s in ("1", "1", "2")]
    check(seeded[0]["nodes"] == seeded[1]["nodes"], "same seed, different order")
    check(seeded[0]["nodes"] != seeded[2]["nodes"], "different seeds, same order")
    check(seeded[2]["seed"] == 2, seeded[2]["seed"])


# ---- place -------------------------------------------------------------------------------


def test_place_rl():
    args = ("--order", "topo-lifo", "--placer", "rl", "--devices", "3", "--rl-episodes", "12")
    doc = place_json(*args)
    rl = doc["rl"]
    check(rl["episodes_run"] == 12, rl)
    check(len(rl["episode_step_time_s"]) == len(rl["best_so_far_step_time_s"]) == 12, rl)
    best = rl["best_so_far_step_time_s"]
    check(all(b >= a for a, b in zip(best[1:], best)), f"best so far increases: {best}")
    check(rl["best_step_time_s"] <= min(rl["start_step_time_s"], best[-1]), rl)
    check(place_json(*args)["placement"] == doc["placement"], "same seed, different placement")
    out = ok("place", *MODEL, *args).out
    check(re.search(r"^rl: 12 episodes; simulated step time of the start .+, best found .+$",
                    out, re.M), out)
    check("rl learning curve" in out, out)
    check("rl" not in place_json("--order", "topo", "--placer", "balanced", "--devices", "3"),
          "rl report from another placer")
    fails(2, "place", *MODEL, *args[:-2], "--rl-episodes", "0", contains=("episodes",))
    fails(2, "place", *MODEL, *args, "--rl-learning-rate", "-1", contains=("learning_rate",))
    fails(2, "place", *MODEL, *args, "--rl-start", "rl", contains=("start",))
    # Below the group limit nothing is grouped; above it the log says so and the returned
    # placement is the full graph's.
    check(rl["groups"] == 0, rl)
    grouped = place_json(*args, "--rl-groups", "20")
    check(grouped["rl"]["groups"] == 20, grouped["rl"])
    check(len(grouped["placement"]["device_of_node"]) == doc["node_count"], grouped["placement"])
    check(grouped["rl"]["best_step_time_s"] == grouped["estimated_step_time_s"]
          or not grouped["stage_chain"], grouped)
    # Coarse to fine: the last 5 episodes (the default) on 3 x 20 groups, or on the nodes
    # where the graph has fewer.
    fine = 60 if doc["node_count"] > 60 else 0
    check(grouped["rl"]["level_groups"] == [20, fine], grouped["rl"])
    check(grouped["rl"]["level_episodes"] == [7, 5], grouped["rl"])
    out = ok("place", *MODEL, *args, "--rl-groups", "20").out
    fine_text = "60 groups" if fine else "the nodes"
    check(re.search(rf"^rl: 12 episodes \(7 on 20 groups, then 5 on {fine_text}; ", out, re.M),
          out)
    out = ok("place", *MODEL, *args, "--rl-groups", "20", "--rl-fine-episodes", "0").out
    check(re.search(r"^rl: 12 episodes on 20 groups \(learning curve", out, re.M), out)
    one_level = place_json(*args, "--rl-groups", "20", "--rl-fine-episodes", "0")["rl"]
    check(one_level["level_groups"] == [20] and one_level["level_episodes"] == [12], one_level)
    fails(2, "place", *MODEL, *args, "--rl-fine-factor", "1", contains=("fine_factor",))
    fails(2, "place", *MODEL, *args, "--rl-fine-episodes", "-1", contains=("fine_episodes",))
    fails(2, "place", *MODEL, *args, "--rl-groups", "-1", contains=("groups",))
    fails(2, "place", *MODEL, *args, "--rl-groups", "2", contains=("groups",))
    with tempfile.TemporaryDirectory() as tmp:
        policy = os.path.join(tmp, "r.policy")
        # Every episode from the start, so that the trained run's greedy episode starts where
        # the replay's does (by default it starts from the best placement found).
        trained = place_json(*args, "--rl-episode-start", "start", "--rl-save-policy", policy)
        with open(policy) as f:
            # The default lookahead policy's file: version 2, with its candidate features.
            check(f.readline() == "interplace-rl-policy 2\n", "policy file header")
            check([line.split()[0] for line in f.readlines()[:5]] ==
                  ["rounds", "inputs", "hidden", "devices", "candidates"], "policy file fields")
        replay = place_json(*args[:-2], "--rl-episodes", "0", "--rl-policy", policy)
        check(replay["rl"]["episodes_run"] == 0, replay["rl"])
        check(replay["rl"]["greedy_step_time_s"] == trained["rl"]["greedy_step_time_s"],
              (replay["rl"], trained["rl"]))
        fails(2, "place", *MODEL, *args[:-4], "--devices", "2", "--rl-policy", policy,
              contains=("3 devices",))
        fails(2, "place", *MODEL, *args, "--rl-policy", os.path.join(tmp, "none"),
              contains=("rl policy file", "no such file"))
        # The policy fixes its architecture: a differing --rl-hidden or --rl-rounds given
        # is refused (it was silently ignored), an equal one or the default accepted.
        replay_args = (*args[:-2], "--rl-episodes", "0", "--rl-policy", policy)
        fails(2, "place", *MODEL, *replay_args, "--rl-hidden", "7",
              contains=("--rl-hidden 7 differs from the hidden width", "HINT: drop --rl-hidden"))
        fails(2, "place", *MODEL, *replay_args, "--rl-rounds", "9",
              contains=("--rl-rounds 9 differs from the message-passing rounds",))
        fails(2, "place", *MODEL, *replay_args, "--rl-features", "placeto",
              contains=("--rl-features placeto differs from the features of the policy",))
        placeto = os.path.join(tmp, "p.policy")
        place_json(*args, "--rl-features", "placeto", "--rl-save-policy", placeto)
        with open(placeto) as f:
            check(f.readline() == "interplace-rl-policy 1\n", "a placeto policy: version 1")
        check(place_json(*args[:-2], "--rl-episodes", "0", "--rl-policy", placeto)["rl"]
              ["episodes_run"] == 0, "a version-1 policy places")
        same = [line.split()[1] for line in open(policy).readlines()[1:4]]  # rounds, inputs, hidden
        check(place_json(*replay_args, "--rl-rounds", same[0], "--rl-hidden", same[2])["rl"]
              == replay["rl"], "the policy's own sizes given explicitly change nothing")
        fails(2, "place", *MODEL, "--order", "topo", "--placer", "balanced", "--devices", "2",
              "--rl-policy", policy, contains=("--placer rl",))



def test_place_text():
    out = ok("place", *MODEL, "--order", "topo", "--placer", "contiguous", "--devices", "4").out
    check(re.search(r"^device\s+nodes\s+compute\s+memory\s+load$", out, re.M), out)
    rows = re.findall(r"^([0-3])\s+(\d+)\s", out, re.M)
    check([r[0] for r in rows] == ["0", "1", "2", "3"], out)
    check(sum(int(r[1]) for r in rows) == resnet20_graph()["node_count"], out)
    check("stage chain: yes" in out, out)
    check(re.search(r"^local/interlocking strategies: (eligible|not eligible, .+)$", out, re.M),
          out)
    check(re.search(r"^placer wall time: [\d.]+ [num]?s$", out, re.M), out)
    rr = ok("place", *MODEL, "--order", "topo", "--placer", "round-robin", "--devices", "3").out
    check(re.search(r"^stage chain: no, .+", rr, re.M), rr)
    check(re.search(r"^local/interlocking strategies: not eligible, .+", rr, re.M), rr)


def test_place_json():
    n = resnet20_graph()["node_count"]
    topo = [node["id"] for node in
            ok("order", *MODEL, "--order", "topo", "--format", "json").json()["nodes"]]
    placers = valid_names(fails(2, "place", *MODEL, "--order", "topo", "--placer", "nope",
                                "--devices", "2"))
    check({"contiguous", "stages", "greedy-eft", "balanced", "refine", "round-robin", "random"}
          <= set(placers), placers)
    for placer in placers:
        doc = place_json("--order", "topo", "--placer", placer, "--devices", "4")
        check(doc["device_count"] == 4 and doc["placer"] == placer, placer)
        devices = doc["placement"]["device_of_node"]
        check(len(devices) == n and set(devices) <= set(range(4)), f"{placer}: {devices}")
        check(len(doc["devices"]) == 4, placer)
        check(sum(d["node_count"] for d in doc["devices"]) == n, placer)
        for d in doc["devices"]:
            check(d["node_count"] == devices.count(d["device"]), f"{placer}: counts")
            check(d["compute_s"] >= 0 and d["memory_bytes"] >= 0, f"{placer}: {d}")
            check((d["node_count"] == 0) == (d["memory_bytes"] == 0), f"{placer}: {d}")
            check(d["memory_bytes"] <= doc["device"]["memory_capacity_bytes"], placer)
        check(doc["stage_chain"] == (doc["stage_chain_violation"] is None), placer)
        check(doc["local_eligible"] == (doc["local_ineligibility"] is None), placer)
        check(doc["placer_wall_s"] >= 0 and doc["estimated_step_time_s"] > 0, placer)
        if placer == "contiguous":
            check(doc["stage_chain"], "contiguous on a topological order is a chain")
            along = [devices[i] for i in topo]
            check(along == sorted(along), "contiguous chunks follow the order")
        if placer == "round-robin":
            check(not doc["stage_chain"] and not doc["local_eligible"], placer)
            check("device" in doc["stage_chain_violation"], doc["stage_chain_violation"])
    # Device descriptions reach the cost model.
    cpu = place_json("--order", "topo", "--placer", "contiguous", "--devices", "2")
    h100 = place_json("--order", "topo", "--placer", "contiguous", "--devices", "2",
                      "--device-preset", "h100")
    check(cpu["device"]["preset"] == "cpu-core" and h100["device"]["name"] == "h100", h100)
    check(h100["estimated_step_time_s"] < cpu["estimated_step_time_s"], "h100 not faster")
    custom = place_json("--order", "topo", "--placer", "contiguous", "--devices", "2",
                        "--device-flops", "1e9", "--device-bandwidth", "2e9", "--memory-gb",
                        "0.5", "--link-latency-us", "3", "--link-bandwidth-gbs", "4")
    check(custom["device"]["peak_flops_per_s"] == 1e9, custom["device"])
    check(custom["device"]["memory_bandwidth_bytes_per_s"] == 2e9, custom["device"])
    check(custom["device"]["memory_capacity_bytes"] == 500_000_000, custom["device"])
    check(abs(custom["link"]["latency_s"] - 3e-6) < 1e-18, custom["link"])
    check(custom["link"]["bandwidth_bytes_per_s"] == 4e9, custom["link"])
    # Memory counts every micro-batch's activations: eight micro-batches of the default 32
    # samples keep more than one.
    m8 = place_json("--order", "topo", "--placer", "contiguous", "--devices", "2",
                    "--batch-size", "256", "--micro-batches", "8")
    check(m8["micro_batch_size"] == cpu["micro_batch_size"] == 32, (m8, cpu))
    check(sum(d["memory_bytes"] for d in m8["devices"]) >
          sum(d["memory_bytes"] for d in cpu["devices"]), "micro-batches not in memory")


def test_place_profile():
    graph = resnet20_graph()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "resnet20.profile")
        with open(path, "w") as f:
            f.write("format\tinterplace-profile\t1\ndevice\ttest-box\nbatch_size\t1\n"
                    "link_latency_s\t0\nlink_bandwidth_bytes_per_s\tinf\n")
            f.write(f"node_count\t{graph['node_count']}\n")
            for node in graph["nodes"]:
                f.write(f"node\t{node['name']}\t0.001\t0.002\n")
        # The profile was timed at micro-batch size 1.
        doc = place_json("--order", "topo", "--placer", "contiguous", "--devices", "2",
                         "--batch-size", "1", "--profile", path)
        check(doc["device"]["name"] == "test-box" and doc["device"]["profile"] == path, doc)
        check(doc["link"]["bandwidth_bytes_per_s"] is None, "inf is written as null")
        for d in doc["devices"]:
            check(abs(d["compute_s"] - 0.003 * d["node_count"]) < 1e-9, d)
        fails(2, "place", *MODEL, "--batch-size", "2", "--order", "topo", "--placer",
              "contiguous", "--devices", "2", "--profile", path, contains=("batch size",))
        with open(path, "a") as f:
            f.write("node\textra\t1\t1\n")
        fails(2, "place", *MODEL, "--batch-size", "1", "--order", "topo", "--placer",
              "contiguous", "--devices", "2", "--profile", path, contains=(path,))


# ---- simulate ----------------------------------------------------------------------------


def test_simulate_text():
    out = ok("simulate", *MODEL, "--order", "topo", "--placer", "contiguous", "--devices", "4",
             "--micro-batches", "8").out
    check(re.search(r"^strategy global \(reach 3\), gpipe pipeline, 8 micro-batches, "
                    r"1 mini-batch: event simulator$", out, re.M), out)
    check(re.search(r"^step time: [\d.]+ [num]?s$", out, re.M), out)
    check(re.search(r"^idle fraction: [\d.]+%$", out, re.M), out)
    check(re.search(r"^device\s+busy\s+idle\s+peak memory\s+fits\s+aux head$", out, re.M), out)
    check(len(re.findall(r"^[0-3]\s+[\d.]+ [num]?s\s", out, re.M)) == 4, out)


def test_simulate_gpipe():
    base = ("--order", "topo", "--placer", "contiguous", "--devices", "4")
    one = simulate_json(*base, "--micro-batches", "1")
    eight = simulate_json(*base, "--micro-batches", "8")
    for doc, m in ((one, 1), (eight, 8)):
        sim = doc["simulation"]
        check(sim["messages"] == "stage" and sim["node_level_reason"] is None, sim)
        check(sim["strategy"] == "global" and sim["pipeline"] == "gpipe", sim)
        check(sim["reach"] == 3 and sim["micro_batches"] == m, sim)
        check(sim["step_time_s"] > 0 and len(sim["devices"]) == 4, sim)
        for d in sim["devices"]:
            check(abs(d["busy_s"] + d["idle_s"] - sim["step_time_s"]) < 1e-9 * sim["step_time_s"],
                  f"busy + idle != step time: {d}")
            check(not d["has_aux_head"] and d["fits_memory"], d)
        idle = sum(d["idle_s"] for d in sim["devices"]) / (4 * sim["step_time_s"])
        check(abs(idle - sim["idle_fraction"]) < 1e-9, "idle fraction inconsistent")
    # One micro-batch on four stages leaves each device idle about 3/4 of the step; eight
    # micro-batches shrink GPipe's bubble towards (K-1)/(M+K-1) = 3/11 plus imbalance.
    check(0.7 <= one["simulation"]["idle_fraction"] < 0.9, one["simulation"]["idle_fraction"])
    check(0.2 < eight["simulation"]["idle_fraction"] < one["simulation"]["idle_fraction"],
          eight["simulation"]["idle_fraction"])
    one_f = simulate_json(*base, "--micro-batches", "8", "--pipeline", "1f1b")
    check(one_f["simulation"]["pipeline"] == "1f1b", one_f["simulation"])
    peak = lambda doc: max(d["peak_memory_bytes"] for d in doc["simulation"]["devices"])
    check(peak(one_f) < peak(eight), "1F1B should keep fewer activations than GPipe")
    # ZB-H1 fills 1F1B's bubble with the weight-gradient passes, within 1F1B's peak.
    zb = simulate_json(*base, "--micro-batches", "8", "--pipeline", "zb-h1")["simulation"]
    check(zb["pipeline"] == "zb-h1", zb)
    check(zb["step_time_s"] < one_f["simulation"]["step_time_s"], (zb, one_f["simulation"]))
    check(zb["idle_fraction"] < one_f["simulation"]["idle_fraction"], zb)
    check(max(d["peak_memory_bytes"] for d in zb["devices"]) <= peak(one_f), zb["devices"])


def test_simulate_interleaved():
    """Interleaved 1F1B places devices x V stages and simulates the devices; V = 1 is 1F1B."""
    base = ("--order", "topo", "--placer", "contiguous", "--devices", "2", "--micro-batches", "8")
    one_f = simulate_json(*base, "--pipeline", "1f1b")
    one = simulate_json(*base, "--pipeline", "interleaved-1f1b", "--virtual-stages", "1")
    check(one["simulation"]["step_time_s"] == one_f["simulation"]["step_time_s"],
          (one["simulation"], one_f["simulation"]))
    two = simulate_json(*base, "--pipeline", "interleaved-1f1b", "--virtual-stages", "2")
    sim = two["simulation"]
    check(sim["pipeline"] == "interleaved-1f1b" and sim["virtual_stages"] == 2, sim)
    check(len(sim["devices"]) == 2 and sim["step_time_s"] > 0, sim)
    check(sim["idle_fraction"] < one_f["simulation"]["idle_fraction"],
          (sim, one_f["simulation"]))
    out = ok("simulate", *MODEL, *base, "--pipeline", "interleaved-1f1b",
             "--virtual-stages", "2").out
    check("interleaved-1f1b pipeline (2 virtual stages)" in out, out)
    fails(2, "simulate", *MODEL, *base, "--pipeline", "1f1b", "--virtual-stages", "2",
          contains=("virtual_stages 2 is for the pipelines with virtual stages (interleaved-1f1b, looped-bfs, ", "HINT:"))
    fails(2, "simulate", *MODEL, "--order", "topo", "--placer", "contiguous", "--devices", "2",
          "--micro-batches", "3", "--pipeline", "interleaved-1f1b", "--virtual-stages", "2",
          contains=("multiple of the 2 devices", "HINT:"))
    fails(2, "simulate", *MODEL, *base, "--strategy", "local", "--pipeline", "interleaved-1f1b",
          "--virtual-stages", "2", contains=("global strategy only", "HINT: --pipeline 1f1b"))


def test_simulate_data_parallel():
    """--data-parallel R: one replica of the global batch is simulated, each device's step
    waits for the ring all-reduce of its gradients; R = 1 is the plain simulation."""
    base = ("--order", "topo", "--placer", "contiguous", "--devices", "2", "--batch-size", "32",
            "--micro-batches", "4", "--pipeline", "1f1b")
    plain = simulate_json(*base)
    one = simulate_json(*base, "--data-parallel", "1")
    check(one["simulation"] == plain["simulation"], (one["simulation"], plain["simulation"]))
    check(one["simulation"]["data_parallel"] == 1, one["simulation"])
    two = simulate_json(*base, "--data-parallel", "2")
    sim = two["simulation"]
    check(sim["data_parallel"] == 2 and len(sim["devices"]) == 2, sim)
    check(two["model_options"]["micro_batch_size"] == 4, two["model_options"])
    check(all(d["allreduce_s"] > 0 for d in sim["devices"]), sim["devices"])
    check(all(d["allreduce_s"] == 0 for d in plain["simulation"]["devices"]), plain)
    out = ok("simulate", *MODEL, *base, "--data-parallel", "2").out
    check("data parallel: 2 replicas x 2 devices = 4 devices" in out, out)
    check("all-reduce" in out, out)
    fails(2, "simulate", *MODEL, "--order", "topo", "--placer", "contiguous", "--devices", "2",
          "--batch-size", "30", "--data-parallel", "4",
          contains=("does not divide among 4 replicas", "HINT:"))
    fails(2, "simulate", *MODEL, *base, "--data-parallel", "16",
          contains=("which do not divide into 4 micro-batches", "HINT:"))
    fails(2, "simulate", *MODEL, *base, "--data-parallel", "0",
          contains=("--data-parallel must be in 1..",))


def find_local_eligible():
    """A placement of resnet20 on 2 devices that local strategies can run on."""
    for order in ("topo", "dfs-post-rev", "critical-path"):
        for placer in ("contiguous", "balanced", "greedy-eft"):
            args = ("--order", order, "--placer", placer, "--devices", "2")
            if place_json(*args)["local_eligible"]:
                return args
    raise AssertionError("no eligible resnet20 placement on 2 devices")


def test_simulate_strategies():
    args = find_local_eligible()
    # One micro-batch per mini-batch: global leaves each of the two stages idle while the
    # other works; local stages overlap consecutive mini-batches.
    batches = ("--micro-batches", "1", "--mini-batches", "8")
    # Capped heads: the study's uncapped head on this narrow boundary costs more than the
    # stage itself, which would hide the overlap this test is about.
    glob = simulate_json(*args, *batches)["simulation"]
    local = simulate_json(*args, *batches, "--strategy", "local",
                          "--aux-head-capped")["simulation"]
    pair = simulate_json(*args, *batches, "--strategy", "pairwise")["simulation"]
    uncapped = simulate_json(*args, *batches, "--strategy", "local")["simulation"]
    check(uncapped["devices"][0]["busy_s"] > local["devices"][0]["busy_s"], (uncapped, local))
    check(local["reach"] == 0 and local["pipeline"] is None, local)
    check([d["has_aux_head"] for d in local["devices"]] == [True, False], local["devices"])
    check(local["step_time_s"] < 0.8 * glob["step_time_s"], (local, glob))
    check(local["idle_fraction"] < glob["idle_fraction"], (local, glob))
    check(pair["reach"] == 1 and pair["pipeline"] == "gpipe", "pairwise on two stages is global")
    check(pair["step_time_s"] == glob["step_time_s"], (pair, glob))
    # One rule with train and sweep (placement::plan_pipeline): a local strategy runs the
    # interlocked (1F1B) order, whatever gpipe says; zb-h1 it refuses.
    local_gpipe = simulate_json(*args, *batches, "--strategy", "local", "--aux-head-capped",
                                "--pipeline", "gpipe")["simulation"]
    check(local_gpipe["step_time_s"] == local["step_time_s"], (local_gpipe, local))
    fails(2, "simulate", *MODEL, *args, "--strategy", "local", "--pipeline", "zb-h1",
          contains=("pipeline 'zb-h1' schedules the global strategy only", "HINT: --pipeline 1f1b"))


def test_simulate_not_chain():
    args = ("--order", "topo", "--placer", "round-robin", "--devices", "3")
    sim = simulate_json(*args, "--micro-batches", "2")["simulation"]
    check(sim["messages"] == "node" and "device" in sim["node_level_reason"], sim)
    check(sim["pipeline"] == "gpipe", sim)
    check(0 <= sim["idle_fraction"] < 1 and sim["step_time_s"] > 0, sim)
    # The node-level schedule's busy time holds each device's optimiser step and receives.
    check(all(d["busy_s"] > 0 and d["peak_memory_bytes"] > 0 for d in sim["devices"]), sim)
    fails(2, "simulate", *MODEL, *args, "--pipeline", "1f1b",
          contains=("pipeline '1f1b' cannot run on this placement", "HINT: --pipeline gpipe"))
    for strategy in ("local", "pairwise", "nwise:2"):
        fails(2, "simulate", *MODEL, *args, "--strategy", strategy,
              contains=(f"strategy '{strategy}' cannot run on this placement", "global"))


# ---- help and errors ---------------------------------------------------------------------


def test_help():
    top = ok("--help").out
    for command in ("graph", "order", "place", "simulate", "--list-models"):
        check(command in top, f"--help lacks {command}")
    for command, flag in (("graph", "--stats"), ("order", "--seed"), ("place", "--placer"),
                          ("simulate", "--strategy")):
        out = ok(command, "--help").out
        check(flag in out and "--format" in out and "--model" in out, f"{command} --help")
    check(ok("--version").out.startswith("interplace "), "--version")


def test_errors_names():
    line = fails(2, "graph", "--model", "nope", contains=("unknown model 'nope'", "resnet20"))
    check("resnet20" in valid_names(line), line)
    fails(2, "graph", contains=("--model is required", "resnet20"))
    fails(2, "order", *MODEL, "--order", "sideways", contains=("unknown order", "dfs-pre"))
    fails(2, "order", *MODEL, contains=("--order is required", "topo"))
    fails(2, "place", *MODEL, "--order", "topo", "--placer", "magic", "--devices", "2",
          contains=("unknown placer 'magic'", "greedy-eft"))
    fails(2, "place", *MODEL, "--order", "topo", "--devices", "2",
          contains=("--placer is required", "contiguous"))
    fails(2, "simulate", *MODEL, "--order", "topo", "--placer", "contiguous", "--devices", "2",
          "--strategy", "sometimes", contains=("sometimes", "pairwise", "nwise:N"))
    fails(2, "simulate", *MODEL, "--order", "topo", "--placer", "contiguous", "--devices", "2",
          "--pipeline", "zigzag", contains=("zigzag", "gpipe", "1f1b"))
    fails(2, "place", *MODEL, "--order", "topo", "--placer", "contiguous", "--devices", "2",
          "--device-preset", "tpu", contains=("unknown device preset 'tpu'", "h200"))
    fails(2, "place", *MODEL, "--order", "topo", "--placer", "contiguous", "--devices", "2",
          "--optimizer", "lion", contains=("lion", "adamw"))
    fails(2, "graph", *MODEL, "--format", "xml", contains=("xml", "dot"))
    fails(2, "order", *MODEL, "--order", "topo", "--format", "dot", contains=("dot",))


def test_errors_impossible():
    n = resnet20_graph()["node_count"]
    place = ("place", *MODEL, "--order", "topo", "--placer", "contiguous")
    fails(2, *place, "--devices", str(n + 1), contains=(str(n + 1),))
    fails(2, *place, "--devices", "0", contains=("--devices",))
    # One node larger than a device, and all nodes together larger than both devices.
    fails(2, *place, "--devices", "2", "--memory-gb", "0.000001", contains=("bytes",))
    fails(2, *place, "--devices", "2", "--memory-gb", "0.0005", contains=("bytes",))
    fails(2, *place, "--devices", "2", "--micro-batches", "0", contains=("--micro-batches",))
    fails(2, "simulate", *MODEL, "--order", "topo", "--placer", "contiguous", "--devices", "2",
          "--mini-batches", "0", contains=("--mini-batches",))
    fails(2, *place, "--devices", "2", "--profile", "/nonexistent/profile",
          contains=("/nonexistent/profile",))
    fails(2, "graph", *MODEL, "--classes", "-3", contains=("resnet20",))


def test_errors_numbers():
    place = ("place", *MODEL, "--order", "topo", "--placer", "contiguous")
    fails(2, *place, "--devices", "two")
    fails(2, *place, "--devices", "2.5")
    for flag, value in (("--memory-gb", "-1"), ("--memory-gb", "nan"), ("--device-flops", "0"),
                        ("--device-flops", "inf"), ("--device-bandwidth", "-3"),
                        ("--link-latency-us", "-1"), ("--link-bandwidth-gbs", "0")):
        fails(2, *place, "--devices", "2", flag, value, contains=(flag,))
    fails(2, "graph", *MODEL, "--width-multiplier", "nan", contains=("--width-multiplier",))
    fails(2, "graph", *MODEL, "--depth-multiplier", "0", contains=("--depth-multiplier",))
    fails(2, "graph", *MODEL, "--batch-size", "0", contains=("batch size",))
    for seed in ("-1", "18446744073709551616", "1e3"):
        fails(2, "order", *MODEL, "--order", "random", "--seed", seed, contains=("--seed",))
    check(ok("order", *MODEL, "--order", "random", "--seed", "18446744073709551615",
             "--format", "json").json()["seed"] == 2**64 - 1, "largest seed")
    fails(2, "graph", *MODEL, "--no-such-flag", contains=("--no-such-flag", "graph --help"))
    fails(2, contains=("subcommand is required",))
    fails(2, "frobnicate")
    fails(2, "--list-models", "graph", *MODEL)


# `interplace train` under mpirun (INTERPLACE_MPIEXEC, set by CTest); builds without the
# MPI runtime have no train command, and these cases then check nothing.
TRAIN_SMALL = ["--model", "resnet20", "--width-multiplier", "0.5", "--image-size", "16",
               "--batch-size", "8", "--threads-per-rank", "1"]


def mpirun(ranks, *args, env=None):
    launcher = os.environ.get("INTERPLACE_MPIEXEC", "mpirun")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1", **(env or {}))
    proc = subprocess.run([launcher, "--oversubscribe", "-np", str(ranks), BINARY, *args],
                          capture_output=True, text=True, timeout=120, env=env)
    return Result(args, proc)


def has_train():
    return subprocess.run([BINARY, "train", "--help"], capture_output=True).returncode == 0


def train_fails(code, ranks, *args, contains=()):
    """Every rank exits with `code`; exactly one error line (rank 0's), nothing on stdout."""
    r = mpirun(ranks, "train", *args)
    check(r.code == code, f"{args}: expected exit {code}, got {r.code}; stderr: {r.err}")
    check(r.out == "", f"{args}: stdout should be empty on error: {r.out[:200]}")
    lines = [l for l in r.err.splitlines() if l.startswith("interplace: error: ")]
    check(len(lines) == 1, f"{args}: expected one error line, got {r.err}")
    for text in contains:
        check(text in lines[0], f"{args}: error line lacks {text!r}: {lines[0]}")


def test_train_json():
    if not has_train():
        return
    r = mpirun(2, "train", *TRAIN_SMALL, "--micro-batches", "2", "--steps", "3",
               "--warmup-steps", "1", "--eval-samples", "8", "--format", "json")
    check(r.code == 0, f"exit {r.code}: {r.err}")
    lines = [json.loads(line) for line in r.out.splitlines()]
    check(len(lines) == 5, f"expected 4 step lines and a summary, got {r.out}")
    for i, step in enumerate(lines[:4]):
        check(step["step"] == i and step["warmup"] == (i == 0), f"bad step line {step}")
        check(step["loss"] > 0 and 0 <= step["accuracy"] <= 1, f"bad loss {step}")
        check(len(step["ranks"]) == 2, f"two ranks expected: {step}")
        for rank in step["ranks"]:
            check(rank["step_s"] > 0 and rank["forward_s"] > 0, f"bad times {rank}")
    summary = lines[-1]
    check(summary["summary"] is True and summary["eval_samples"] == 8, f"bad summary {summary}")
    check(summary["samples_per_s"] > 0 and summary["measured_wall_s"] > 0, f"{summary}")


def test_train_text():
    if not has_train():
        return
    r = mpirun(2, "train", *TRAIN_SMALL, "--steps", "2", "--warmup-steps", "0")
    check(r.code == 0, f"exit {r.code}: {r.err}")
    check(r.out.count("step ") == 2 + 1, f"one line per step and the median: {r.out}")
    check("samples/s" in r.out, r.out)


def test_train_data_parallel():
    """--data-parallel 2 on 2 ranks (K = 1): the global batch's losses are one rank's, every
    rank's record is kept, and rank counts or batch sizes that do not split are refused."""
    if not has_train():
        return
    model = ["--model", "gpt-mini", "--sequence-length", "16", "--batch-size", "8",
             "--micro-batches", "2", "--threads-per-rank", "1", "--optimizer", "sgd-momentum"]

    def steps(ranks, *args):
        r = mpirun(ranks, "train", *model, "--steps", "3", "--warmup-steps", "0", "--format",
                   "json", *args)
        check(r.code == 0, f"{args}: exit {r.code}: {r.err}")
        return [json.loads(line) for line in r.out.splitlines()[:-1]]
    single = steps(1)
    replicated = steps(2, "--data-parallel", "2")
    check(len(single) == len(replicated) == 3, (single, replicated))
    for a, b in zip(single, replicated):
        check(abs(a["loss"] - b["loss"]) <= 1e-5 * abs(a["loss"]) + 1e-7, (single, replicated))
        check(len(b["ranks"]) == 2, b)
    train_fails(2, 3, *model, "--devices", "1", "--data-parallel", "2",
                contains=("--devices 1 x --data-parallel 2 needs 2 MPI ranks", "HINT: mpirun -np 2"))
    train_fails(2, 3, *model, "--data-parallel", "2",
                contains=("3 MPI ranks do not divide into 2 data-parallel replicas", "HINT:"))
    train_fails(2, 2, *model[:4], "--batch-size", "6", "--micro-batches", "2",
                "--data-parallel", "2",
                contains=("gives each of the 2 replicas 3 samples", "HINT:"))


def test_train_interleaved():
    """Two ranks, two chunks each: the losses are the 1-rank run's (plain backprop)."""
    if not has_train():
        return
    def losses(ranks, *args):
        r = mpirun(ranks, "train", *TRAIN_SMALL, "--micro-batches", "4", "--steps", "3",
                   "--warmup-steps", "0", "--format", "json", *args)
        check(r.code == 0, f"{args}: exit {r.code}: {r.err}")
        return [json.loads(line)["loss"] for line in r.out.splitlines()[:-1]]
    single = losses(1, "--pipeline", "1f1b")
    interleaved = losses(2, "--pipeline", "interleaved-1f1b", "--virtual-stages", "2")
    check(len(single) == len(interleaved) == 3, (single, interleaved))
    for a, b in zip(single, interleaved):
        check(abs(a - b) <= 1e-5 * abs(a) + 1e-7, (single, interleaved))


def test_train_token_models_on_synthetic_data():
    """Synthetic token ids stay inside each embedding table: GPT's (= its classes) and
    BERT's, whose classifier has far fewer classes than its vocabulary."""
    if not has_train():
        return
    for model in ("gpt-mini", "bert-mini"):
        r = mpirun(2, "train", "--model", model, "--dataset", "synthetic", "--batch-size", "4",
                   "--sequence-length", "16", "--steps", "2", "--threads-per-rank", "1",
                   "--format", "json")
        check(r.code == 0, f"{model}: exit {r.code}: {r.err}")
        steps = [json.loads(line) for line in r.out.splitlines()][:-1]
        check(len(steps) == 3 and all(s["loss"] > 0 for s in steps), f"{model}: {r.out}")


def test_train_prints_steps_before_a_failure():
    """Steps are printed as the ranks finish them: when rank 1 fails in step 3, the lines of
    steps 0 to 2 are already out (nothing is lost), then rank 0's one error line."""
    if not has_train():
        return
    env = {"INTERPLACE_FAIL_AT": "1:3"}
    r = mpirun(2, "train", *TRAIN_SMALL, "--steps", "5", "--warmup-steps", "0", "--format",
               "json", env=env)
    check(r.code == 1, f"exit {r.code}: {r.err}")
    steps = [json.loads(line)["step"] for line in r.out.splitlines()]
    check(steps == [0, 1, 2], f"steps 0..2 expected before the failure, got {r.out}")
    errors = [l for l in r.err.splitlines() if l.startswith("interplace: error: ")]
    check(len(errors) == 1 and "injected failure on rank 1 in step 3" in errors[0], r.err)


def test_schema_lists_every_key():
    """`interplace schema` (docs/cli.md#schema): the configuration's schema and the pipeline
    registry as JSON; every spec key is a flag of train or says why it is spec-only."""
    if not has_train():
        return
    doc = ok("schema").json()
    fields = {f["key"]: f for f in doc["fields"]}
    check(len(fields) == len(doc["fields"]), "a key listed twice")
    steps = fields["steps"]
    check((steps["kind"], steps["default"], steps["flag"], steps["in_id"], steps["id_rank"],
           steps["attribute"], steps["in_file"]) ==
          ("integer", 10, "--steps", "always", 11, "steps", "always"), steps)
    check(fields["eval_samples"]["attribute"] == "eval_samples_requested", fields["eval_samples"])
    check(fields["watchdog_s"]["in_id"] == "never" and fields["watchdog_s"]["id_rank"] is None,
          fields["watchdog_s"])
    check(fields["model"]["id_rank"] == 1 and fields["model"]["hand_flag"], fields["model"])
    # The closed sets carry their registries' names: the ones the errors list.
    check(fields["order"]["values"] == valid_names(fails(2, "order", *MODEL, "--order", "nope")),
          fields["order"]["values"])
    check(fields["placer"]["values"] ==
          valid_names(fails(2, "place", *MODEL, "--order", "topo", "--placer", "x",
                            "--devices", "2")), fields["placer"]["values"])
    names = [p["name"] for p in doc["pipelines"]]
    check(fields["pipeline"]["values"] == names + [doc["no_pipeline"]], fields["pipeline"])
    check(doc["no_pipeline"] == "e2e" and "e2e" not in names, names)
    check({"gpipe", "1f1b", "zb-h1", "interleaved-1f1b"} <= set(names), names)
    for p in doc["pipelines"]:
        check({"name", "title", "takes_virtual_stages", "other_strategies", "stage_map"} <= set(p),
              p)
    check(fields["strategy"]["values"] == ["global", "local", "pairwise", "nwise:N"],
          fields["strategy"])
    # Every settable key appears (the spec parser's list of valid keys), and each is a flag
    # of train or spec-only with a reason.
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "empty.toml")
        with open(spec, "w") as out:
            out.write("")
        spec_keys = [k.split("/")[0] for k in
                     valid_names(fails(2, "sweep", spec, "--dry-run", "stepz=3"))
                     if k not in ("repeats", "description", "model_options.OPTION",
                                  "model_options.MODEL.OPTION")]
        check(spec_keys == [k for k, f in fields.items() if f["spec_key"]],
              f"spec keys {spec_keys} against the schema's")
        helptext = ok("train", "--help").out
        for key in spec_keys:
            f = fields[key]
            if f["flag"]:
                check(re.search(re.escape(f["flag"]) + r"\b", helptext),
                      f"train --help lacks {f['flag']}")
                check(f["spec_only"] == "", f)
            else:
                check(f["spec_only"] != "", f"{key}: neither a flag of train nor spec-only")
        # A closed set's unknown value: the valid names and a HINT, as a flag and a spec value.
        line = fails(2, "sweep", spec, "--dry-run", "order=dfs-pst", contains=("HINT:",))
        check("did you mean 'dfs-post'?" in line and "dfs-post" in valid_names(line), line)
    fails(2, "train", *MODEL, "--order", "dfs-pst", contains=("did you mean 'dfs-post'?",))
    fails(2, "train", *MODEL, "--pipeline", "nope",
          contains=("e2e", "HINT: `interplace schema` lists the values of every key"))


def test_train_errors():
    if not has_train():
        return
    train_fails(2, 2, *TRAIN_SMALL, "--devices", "3", contains=("--devices 3",))
    train_fails(2, 2, *TRAIN_SMALL, "--micro-batches", "3", contains=("divide",))
    train_fails(2, 2, *TRAIN_SMALL, "--placer", "oracle", contains=("greedy-eft",))
    train_fails(2, 2, *TRAIN_SMALL, "--strategy", "local", "--placer", "round-robin",
                contains=("cannot run on this placement",))
    train_fails(2, 2, "--model", "resnet21", contains=("resnet20",))


# ---- one meaning per flag (issue #13) ------------------------------------------------------

PLACE = ("--order", "topo", "--placer", "contiguous", "--devices", "2")


def test_batch_size_is_the_mini_batch():
    """--batch-size is samples per optimiser step everywhere; the graph is one micro-batch of
    batch_size / micro_batches samples, in graph, order, place and simulate alike."""
    split = ("--batch-size", "128", "--micro-batches", "4")
    sim = simulate_json(*PLACE, *split)
    options = sim["model_options"]
    check((options["batch_size"], options["micro_batches"], options["micro_batch_size"]) ==
          (128, 4, 32), options)
    check((sim["batch_size"], sim["micro_batches"], sim["micro_batch_size"]) == (128, 4, 32), sim)
    check(sim["simulation"]["micro_batches"] == 4, sim["simulation"])
    # The same per-micro-batch FLOPs and node costs as a graph of 32 samples.
    whole = ok("graph", *MODEL, "--format", "json", "--batch-size", "32").json()
    parts = ok("graph", *MODEL, "--format", "json", *split).json()
    check(parts["forward_flops"] == whole["forward_flops"], (parts["forward_flops"],
                                                             whole["forward_flops"]))
    check(parts["model_options"]["micro_batch_size"] == 32, parts["model_options"])
    check(ok("graph", *MODEL, "--format", "json", "--batch-size", "128").json()["forward_flops"]
          == 4 * whole["forward_flops"], "--batch-size 128 alone should be one 128-sample graph")
    single = place_json(*PLACE, "--batch-size", "32")
    check([d["compute_s"] for d in sim["devices"]] == [d["compute_s"] for d in single["devices"]],
          "place/simulate node costs are not those of one 32-sample micro-batch")
    order = ok("order", *MODEL, "--order", "topo", "--format", "json", *split).json()
    check(order["model_options"]["micro_batch_size"] == 32, order["model_options"])
    # The default is the same mini-batch everywhere (train's 32), so --micro-batches alone
    # splits it rather than failing.
    default = place_json(*PLACE, "--micro-batches", "8")
    check((default["batch_size"], default["micro_batch_size"]) == (32, 4), default)
    # A batch that does not split evenly is refused alike, with a hint at the multiples.
    for command in (("graph",), ("order", "--order", "topo"), ("place", *PLACE),
                    ("simulate", *PLACE)):
        line = fails(2, *command, *MODEL, "--batch-size", "100", "--micro-batches", "3",
                     contains=("does not divide", "HINT:", "99", "102"))
        check(line.index("HINT:") > line.index("divide"), line)


def help_block(text, flag):
    """The help lines of `flag`: its own line and the description lines below it."""
    lines = text.splitlines()
    own_line = re.compile(rf"^\s+{re.escape(flag)}(?=[\s,=]|$)")  # not --device-preset
    start = [i for i, line in enumerate(lines) if own_line.match(line)]
    check(len(start) == 1, f"{flag} not listed once in:\n{text}")
    block = [lines[start[0]]]
    for line in lines[start[0] + 1:]:
        if not line.strip() or re.match(r"^\s*-", line) or not line.startswith(" "):
            break
        block.append(line)
    return " ".join(block)


def enumerations():
    """Each enumerated option's valid values, as the parsers themselves list them in errors
    (not as the help says: the help must agree with them)."""
    place = ("place", *MODEL, *PLACE)
    values = {
        "--order": valid_names(fails(2, "order", *MODEL, "--order", "nope")),
        "--placer": valid_names(fails(2, "place", *MODEL, "--order", "topo", "--placer", "x",
                                      "--devices", "2")),
        "--optimizer": valid_names(fails(2, *place, "--optimizer", "lion")),
        "--pipeline": valid_names(fails(2, "simulate", *MODEL, *PLACE, "--pipeline", "zz")),
        "--device-preset": valid_names(fails(2, *place, "--device-preset", "tpu")),
        "--model": valid_names(fails(2, "graph", "--model", "nope")),
        "--strategy": ["global", "local", "pairwise", "nwise:N"],
    }
    values["--refine-start"] = values["--placer"]
    values["--cost-device"] = values["--device-preset"]
    values["--device"] = ["cpu", "cuda"]
    values["--interlock-mode"] = ["single", "sum"]
    values["--dataset"] = ["fashion-mnist", "text", "synthetic"]
    return values


HELP_ENUMS = {
    "graph": ["--model", "--format"],
    "order": ["--model", "--order", "--format"],
    "place": ["--model", "--order", "--placer", "--refine-start", "--device-preset",
              "--optimizer", "--format"],
    "simulate": ["--model", "--order", "--placer", "--refine-start", "--strategy",
                 "--pipeline", "--device-preset", "--optimizer", "--format"],
    "profile": ["--model", "--device", "--device-preset", "--format"],
    "train": ["--model", "--order", "--placer", "--strategy", "--pipeline", "--interlock-mode",
              "--dataset", "--optimizer", "--device", "--cost-device", "--format"],
    "sweep": ["--format"],
    "inspect": ["--format"],
    "merge": ["--format"],
}


def subcommands():
    top = ok("--help").out
    return [c for c in HELP_ENUMS if re.search(rf"^\s+{c}\s", top, re.M)]


def test_help_lists_values_and_an_example():
    values = enumerations()
    for command in subcommands():
        out = ok(command, "--help").out
        formats = ["text", "json", "dot"] if command == "graph" else ["text", "json"]
        for flag in HELP_ENUMS[command]:
            block = help_block(out, flag)
            for name in (formats if flag == "--format" else values[flag]):
                check(name in block, f"{command} --help: {flag} does not list {name!r}: {block}")
        # The last lines: "Example:" and one command of this subcommand.
        tail = out.rstrip().splitlines()[-2:]
        check(tail[0] == "Example:", f"{command} --help does not end with an example: {tail}")
        check(re.match(rf"^  (mpirun -np \d+ )?interplace {command} ", tail[1]), tail)
        if command in ("graph", "order", "place", "simulate"):
            example = tail[1].split()[2:]  # runs as written (no MPI needed)
            check(ok(command, *example).out != "", f"example of {command} printed nothing")


def test_every_subcommand_formats_json():
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    commands = {
        "graph": ["graph", *MODEL],
        "order": ["order", *MODEL, "--order", "topo"],
        "place": ["place", *MODEL, *PLACE],
        "simulate": ["simulate", *MODEL, *PLACE],
        "sweep": ["sweep", os.path.join(source, "runs", "configs", "smoke.toml"), "--dry-run"],
    }
    for command in subcommands():
        check("json" in help_block(ok(command, "--help").out, "--format"), command)
        if command in commands:
            json.loads(ok(*commands[command], "--format", "json").out)
            fails(2, *commands[command], "--format", "yaml", contains=("yaml",))
    # train prints JSON lines, profile one document; inspect and merge are run on real
    # result files by test_sweep.py.
    if has_train():
        with tempfile.TemporaryDirectory() as tmp:
            doc = ok("profile", *TRAIN_SMALL[:-2], "--repeats", "1", "--warmup", "0",
                     "--out", os.path.join(tmp, "p.tsv"), "--format", "json").json()
            check(doc["node_count"] > 0, doc)


def test_shipped_specs_plan():
    """Every spec in runs/configs/ plans without a failure (skips depend on the host's
    memory); the CPU-sized ones a README or a results/ folder runs here skip nothing."""
    configs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runs",
                           "configs")
    specs = sorted(f for f in os.listdir(configs) if f.endswith(".toml"))
    check(len(specs) >= 5, specs)
    # The order study's 8,064 simulate-only configurations take minutes to plan: its first
    # graph of each family stands for it here.
    some = {"wang2022-order-study.toml": ["--filter", "^(enas-cnn|enas-rnn|nmt):0 "]}
    for spec in specs:
        r = run("sweep", os.path.join(configs, spec), "--dry-run", "--ranks", "8",
                "--format", "json", *some.get(spec, []))
        doc = r.json()
        if r.code == 2 and doc["would_run"] == 0:
            # A spec of GPU configurations only skips everything in a build without CUDA
            # (the sanitizer build), which the dry run reports with exit 2; nothing else may.
            check(all("has no CUDA backend" in c["reason"] for c in doc["configs"]),
                  (spec, doc["reasons"]))
            continue
        check(r.code == 0 and r.err == "", (spec, r.code, r.err))
        check(doc["configurations"] > 0 and doc["would_fail"] == 0, (spec, doc["reasons"]))
        if spec in ("demo.toml", "interlocking-vs-pipelines.toml", "gomez2022-small.toml"):
            check(doc["would_skip"] == 0, (spec, doc["reasons"]))


def test_dry_run_predicts_what_the_sweep_costs():
    """`sweep --dry-run` gives each configuration the step its plan simulates (the same as
    `simulate` of that configuration), the steps it trains and their product, and sums them
    to the sweep's time and device time (every rank counted)."""
    configs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runs",
                           "configs")
    doc = ok("sweep", os.path.join(configs, "smoke.toml"), "--dry-run", "--ranks", "4",
             "--format", "json").json()
    runs = [c for c in doc["configs"] if c["outcome"] == "run"]
    check(len(runs) >= 10, doc["reasons"])
    train_s = device_s = 0.0
    for c in runs:
        check(c["predicted_step_s"] > 0 and c["steps"] == 4 and c["cost_model"] == "cpu-core", c)
        check(abs(c["predicted_train_s"] - 4 * c["predicted_step_s"]) <= 1e-12, c)
        train_s += c["predicted_train_s"]
        device_s += c["predicted_train_s"] * c["devices"]
    check(abs(doc["predicted_train_s"] - train_s) <= 1e-9 * train_s, doc["predicted_train_s"])
    check(abs(doc["predicted_device_s"] - device_s) <= 1e-9 * device_s,
          doc["predicted_device_s"])
    for c in runs:
        p = dict(line.split("=", 1) for line in c["canonical_parameters"].splitlines())
        if p["devices"] != "2" or p["strategy"] != "global" or p["model_options"]:
            continue
        sim = ok("simulate", "--model", p["model"], "--order", p["order"], "--placer", p["placer"],
                 "--devices", "2", "--strategy", "global", "--pipeline", p["pipeline"],
                 "--micro-batches", p["micro_batches"], "--batch-size", p["batch_size"],
                 "--format", "json").json()
        check(sim["simulation"]["step_time_s"] == c["predicted_step_s"],
              (c["name"], sim["simulation"]["step_time_s"], c["predicted_step_s"]))
        break
    else:
        check(False, "smoke.toml has no global configuration on 2 devices to simulate")
    text = ok("sweep", os.path.join(configs, "gomez2022.toml"), "--dry-run",
              "cost_device=h100").out
    check(re.search(r"predicted training: [0-9.]+ h one after the other, [0-9.]+ h of device "
                    r"time .*cost model h100", text), text[-400:])


def train_summary(*args):
    r = mpirun(1, "train", *TRAIN_SMALL, "--steps", "1", "--warmup-steps", "0",
               "--format", "json", *args)
    check(r.code == 0, f"exit {r.code}: {r.err}")
    summary = json.loads(r.out.splitlines()[-1])
    check(summary["summary"] is True, summary)
    return summary


def test_place_and_train_pick_the_same_rl_placement():
    """One configuration, one placement, whichever command places it: `train --placer rl`
    trained rl against its list-scheduled default while `place` and `simulate` used the
    simulated step (GlobalStepTime), so train could run another placement than the one
    simulate reported."""
    if not has_train():
        return
    model = TRAIN_SMALL[:-2]  # without --threads-per-rank, which only train takes
    args = ("--order", "topo", "--placer", "rl", "--devices", "2", "--micro-batches", "1")
    sim = ok("simulate", *model, *args, "--format", "json").json()
    r = mpirun(2, "train", *TRAIN_SMALL, *args, "--steps", "1", "--warmup-steps", "0",
               "--format", "json")
    check(r.code == 0, f"exit {r.code}: {r.err}")
    summary = json.loads(r.out.splitlines()[-1])
    predicted, simulated = summary["predicted_step_time_s"], sim["simulation"]["step_time_s"]
    check(abs(predicted - simulated) <= 1e-9 * simulated,
          f"train predicts {predicted} s for its rl placement, simulate {simulated} s")


def test_train_measures_its_own_profile():
    """train --profile auto measures the profile on its ranks before planning, and predicts
    from it: not the roofline's prediction, and the same configuration's prediction with
    no profile named differs."""
    if not has_train():
        return
    args = (*TRAIN_SMALL, "--steps", "1", "--warmup-steps", "0")
    r = mpirun(1, "train", *args, "--profile", "auto")
    check(r.code == 0 and "measuring the profile (--profile auto, 1 CPU threads)" in r.out,
          f"exit {r.code}: {r.out[-500:]} {r.err[-1000:]}")
    value, unit = re.search(r"\(simulated ([0-9.]+) (s|ms|us)\)", r.out).groups()
    measured = float(value) * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[unit]
    r = mpirun(1, "train", *args, "--format", "json")
    roofline = json.loads(r.out.splitlines()[-1])["predicted_step_time_s"]
    check(abs(measured - roofline) > 0.05 * roofline, (measured, roofline))
    train_fails(2, 1, *args, "--profile", "/nonexistent.tsv", contains=("nonexistent",))


def test_placers_charge_the_micro_batches_the_pipeline_keeps():
    """1F1B keeps at most K micro-batches on a stage: a 64-stage GPT with 1024
    micro-batches plans and simulates with 1F1B, every device within its memory, while
    GPipe's M in flight is refused (the LM head alone: 211 GB)."""
    args = ("--model", "gpt", "--depth-multiplier", "8", "--devices", "64", "--batch-size",
            "1024", "--micro-batches", "1024", "--device-preset", "h100", "--order", "topo",
            "--placer", "contiguous")
    sim = ok("simulate", *args, "--pipeline", "1f1b", "--format", "json").json()["simulation"]
    check(sim["pipeline"] == "1f1b" and all(d["fits_memory"] for d in sim["devices"]),
          [d["peak_memory_bytes"] for d in sim["devices"]][:4])
    fails(2, "simulate", *args, "--pipeline", "gpipe", contains=("'lm_head' needs",))


def test_train_recipe_flags():
    """The step schedule's rate per step in the JSON lines; bad recipe values exit 2 naming
    the flag or the valid names."""
    if not has_train():
        return
    r = mpirun(1, "train", *TRAIN_SMALL, "--steps", "4", "--warmup-steps", "1",
               "--learning-rate", "0.2", "--lr-schedule", "step", "--lr-milestones", "2,4",
               "--lr-decay", "0.5", "--warmup-lr-steps", "2", "--optimizer", "sgd-nesterov",
               "--weight-decay", "2e-4", "--augmentation", "crop-flip", "--format", "json")
    check(r.code == 0, f"exit {r.code}: {r.err}")
    lines = [json.loads(line) for line in r.out.splitlines()]
    rates = [line["learning_rate"] for line in lines if "step" in line]
    # Warm-up to 0.2 over 2 steps, x0.5 from step 2, x0.25 from step 4.
    expected = [0.1, 0.2, 0.1, 0.1, 0.05]
    check(len(rates) == 5 and all(abs(a - b) < 1e-12 for a, b in zip(rates, expected)), rates)
    check(lines[-1]["optimizer"] == "sgd-nesterov", lines[-1])
    check(lines[-1]["evaluations"] == [], lines[-1])
    # --weight-decay-all decays biases and batch-norm parameters too: a different run.
    def last_loss(*extra):
        r = mpirun(1, "train", *TRAIN_SMALL, "--steps", "2", "--warmup-steps", "0",
                   "--weight-decay", "0.5", "--format", "json", *extra)
        check(r.code == 0, f"exit {r.code}: {r.err}")
        return [json.loads(line) for line in r.out.splitlines()][-2]["loss"]
    check(last_loss() != last_loss("--weight-decay-all"), "--weight-decay-all changes nothing")
    check(last_loss() == last_loss(), "training is not deterministic")
    train_fails(2, 1, *TRAIN_SMALL, "--lr-schedule", "linear", contains=("cosine",))
    train_fails(2, 1, *TRAIN_SMALL, "--lr-milestones", "5", contains=("step schedule",))
    train_fails(2, 1, *TRAIN_SMALL, "--lr-schedule", "step", "--lr-milestones", "3,x",
                contains=("--lr-milestones",))
    train_fails(2, 1, *TRAIN_SMALL, "--augmentation", "mixup", contains=("crop-flip",))
    train_fails(2, 1, *TRAIN_SMALL, "--pipeline", "e2e", "--micro-batches", "2",
                contains=("micro_batches must be 1",))
    train_fails(2, 2, *TRAIN_SMALL, "--strategy", "local", "--pipeline", "zb-h1",
                contains=("pipeline 'zb-h1' schedules the global strategy only",))
    train_fails(2, 2, *TRAIN_SMALL, "--strategy", "local", "--pipeline", "interleaved-1f1b",
                contains=("pipeline 'interleaved-1f1b' schedules the global strategy only",
                          "HINT:"))
    train_fails(2, 2, *TRAIN_SMALL, "--pipeline", "interleaved-1f1b", "--virtual-stages", "2",
                "--micro-batches", "1", contains=("multiple of the 2 devices",))
    train_fails(2, 2, *TRAIN_SMALL, "--pipeline", "1f1b", "--virtual-stages", "2",
                contains=("virtual_stages 2 is for the pipelines with virtual stages (interleaved-1f1b, looped-bfs, ", "HINT:"))
    train_fails(2, 1, "--model", "gpt-mini", "--dataset", "text", "--epochs", "1",
                contains=("'text'",))


def test_train_validation_split():
    """--validation-fraction: the held-out samples are evaluated beside the test split at
    each of --eval-epochs, the same on 2 ranks as on 1 (collective, summed once); bad
    fractions, data sets and combinations exit 2 naming the key."""
    if not has_train():
        return
    args = ("--model", "resnet20", "--width-multiplier", "0.25", "--dataset", "fashion-mnist",
            "--batch-size", "64", "--micro-batches", "2", "--train-samples", "256",
            "--epochs", "2", "--eval-epochs", "1,2", "--eval-epoch-samples", "128",
            "--warmup-steps", "0", "--threads-per-rank", "1", "--pipeline", "1f1b",
            "--placer", "stages", "--format", "json")
    evaluations = []
    for ranks in (1, 2):
        r = mpirun(ranks, "train", *args, "--devices", str(ranks), "--validation-fraction",
                   "0.1")
        check(r.code == 0, f"exit {r.code}: {r.err}")
        evaluations.append(json.loads(r.out.splitlines()[-1])["evaluations"])
    for e in evaluations[0]:
        check(e["validation_samples"] == 128 and e["samples"] == 128, e)
        check(0 <= e["validation_accuracy"] <= 1 and e["validation_loss"] > 0, e)
        check(e["validation_loss"] != e["loss"], f"validation and test are the same samples: {e}")
    check(evaluations[0] == evaluations[1], f"1 rank {evaluations[0]}, 2 ranks {evaluations[1]}")
    r = mpirun(1, "train", *args, "--devices", "1")
    check("validation_loss" not in json.loads(r.out.splitlines()[-1])["evaluations"][0], r.out)
    train_fails(2, 1, *args, "--validation-fraction", "0.6",
                contains=("--validation-fraction", "[0, 0.5]"))
    whole = [a for a in args if a not in ("--train-samples", "256")]
    train_fails(2, 1, *whole, "--validation-fraction", "0.5", "--train-samples", "30001",
                contains=("train_samples 30001 is more than the 30000",))
    no_eval = [a for a in args if a not in ("--eval-epochs", "1,2")]
    train_fails(2, 1, *no_eval, "--validation-fraction", "0.1",
                contains=("HINT: give eval_epochs",))
    train_fails(2, 1, "--model", "gpt-mini", "--dataset", "text", "--validation-fraction", "0.1",
                contains=("only fashion-mnist",))


def test_optimizer_names_mean_the_same():
    """A name gives the same optimiser state in place/simulate (the memory estimate) and in
    train (its plan's prediction), and each name its own state."""
    model = TRAIN_SMALL[:-2]  # without --threads-per-rank, which only train takes
    names = valid_names(fails(2, "place", *model, *PLACE, "--optimizer", "lion"))
    check(names == ["sgd", "sgd-momentum", "sgd-nesterov", "adamw"], names)
    one = ("--order", "topo", "--placer", "contiguous", "--devices", "1")
    peak = {}
    for name in names:
        sim = ok("simulate", *model, *one, "--optimizer", name, "--format", "json").json()
        check(sim["optimizer"] == name, sim["optimizer"])
        peak[name] = sim["simulation"]["devices"][0]["peak_memory_bytes"]
    # Plain SGD keeps no state, momentum one copy of the parameters, AdamW two.
    check(peak["sgd"] < peak["sgd-momentum"] < peak["adamw"], peak)
    check(peak["sgd-nesterov"] == peak["sgd-momentum"], peak)  # one velocity copy too
    default = ok("simulate", *model, *one, "--format", "json").json()
    check(default["optimizer"] == "sgd-momentum", default["optimizer"])
    if not has_train():
        return
    for name in names:
        summary = train_summary("--optimizer", name)
        check(summary["optimizer"] == name, summary)
        check(summary["predicted_peak_memory_bytes"] == peak[name],
              f"{name}: train predicts {summary['predicted_peak_memory_bytes']}, "
              f"simulate {peak[name]}")
    check(train_summary()["optimizer"] == default["optimizer"], "default optimizers differ")
    train_fails(2, 1, *TRAIN_SMALL, "--optimizer", "lion", contains=("sgd-momentum",))


def test_default_seed_is_shared():
    seeds = {
        "order": ok("order", *MODEL, "--order", "random", "--format", "json").json()["seed"],
        "place": place_json(*PLACE)["seed"],
        "simulate": simulate_json(*PLACE)["seed"],
    }
    if has_train():
        summary = train_summary()
        seeds["train"] = summary["seed"]
        check((summary["batch_size"], summary["micro_batches"], summary["micro_batch_size"]) ==
              (8, 1, 8), summary)
        with tempfile.TemporaryDirectory() as tmp:
            seeds["profile"] = ok("profile", *TRAIN_SMALL[:-2], "--repeats", "1", "--warmup",
                                  "0", "--out", os.path.join(tmp, "p.tsv"),
                                  "--format", "json").json()["seed"]
    check(len(set(seeds.values())) == 1, f"default seeds differ: {seeds}")
    # The default is the seed given explicitly, not merely equal numbers by chance.
    explicit = ok("order", *MODEL, "--order", "random", "--format", "json", "--seed",
                  str(seeds["order"])).json()
    implicit = ok("order", *MODEL, "--order", "random", "--format", "json").json()
    check(explicit["nodes"] == implicit["nodes"], "default seed is not the one reported")
    for command in ("order", "place", "simulate"):
        check(re.search(rf"--seed \S*={seeds['order']}\s", ok(command, "--help").out),
              f"{command} --help does not show the default seed")


def set_binary(path):
    global BINARY
    BINARY = path


if __name__ == "__main__":
    run_cases(globals(), __doc__, set_binary)
