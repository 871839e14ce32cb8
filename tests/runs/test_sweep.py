#!/usr/bin/env python3
"""End-to-end tests of `interplace sweep`, `inspect` and `merge` under mpirun, with h5py
reading the result files against docs/results-format.md.

Usage: test_sweep.py BINARY CASE   (CTest runs one case per test; see CMakeLists.txt)
       test_sweep.py BINARY --list
BINARY is `interplace` (the real runtime) or `interplace_fake` (the fake runner of
tests/runs/fake_runner.hpp; INTERPLACE_FAKE_STEP_S sets its seconds per step). Case names
end in the rank count they run with. Needs h5py and numpy (the project venv); --list does not.
"""
import re
import json
import os
import signal
import subprocess
import sys

from case_runner import Skip, run_cases  # noqa: E402
import tempfile
import time

BINARY = None
SOURCE_DIR = os.environ.get(
    "INTERPLACE_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
SMOKE = os.path.join(SOURCE_DIR, "runs", "configs", "smoke.toml")
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none",
          "--mca", "btl_vader_single_copy_mechanism", "none"]

# A small spec for the tests that run a sweep several times: 8 configurations, the local
# strategy on the 2-device round-robin placement skipped (no stage chain).
SMALL_SPEC = """
models = ["resnet20"]
dataset = "synthetic"
devices = [1, 2]
placers = ["contiguous", "round-robin"]
strategies = ["global", "local"]
micro_batches = 2
batch_size = 4
warmup_steps = 1
steps = 2
seed = 3
"""


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def env(step_s="0.02"):
    e = dict(os.environ)
    e.setdefault("OMP_NUM_THREADS", "1")
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    e["INTERPLACE_FAKE_STEP_S"] = step_s
    return e


def run(ranks, *args, step_s="0.02", timeout=300):
    cmd = ([*MPIRUN, "-np", str(ranks)] if ranks else []) + [BINARY, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env(step_s))


def ok(ranks, *args, **kw):
    r = run(ranks, *args, **kw)
    check(r.returncode == 0, f"{args}: exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def fails(code, ranks, *args, contains=()):
    r = run(ranks, *args)
    check(r.returncode == code, f"{args}: expected exit {code}, got {r.returncode}: {r.stderr}")
    # Rank 0 alone reports; mpirun's own notice may interleave with its line, so look for
    # the message in all of stderr.
    check(r.stderr.count("interplace: error: ") == 1, f"{args}: one error expected: {r.stderr}")
    for text in contains:
        check(text in r.stderr, f"{args}: the error lacks {text!r}: {r.stderr}")
    return r.stderr


def write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def fnv1a64(text):
    h = 0xcbf29ce484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


# docs/results-format.md: the canonical parameter string, rebuilt from the attributes.
CANONICAL_KEYS = ["model", "order", "placer", "devices", "strategy", "pipeline",
                  "interlock_mode", "micro_batches", "batch_size", "warmup_steps", "steps",
                  "dataset", "eval_samples_requested", "optimizer", "learning_rate",
                  "weight_decay", "seed", "device", "cost_device", "model_options", "data_dir",
                  "repeat"]


def canonical(attrs):
    lines = []
    for key in CANONICAL_KEYS[:-1]:
        value = attrs[key]
        if key in ("learning_rate", "weight_decay"):
            value = f"{float(value):.17g}"
        lines.append(f"{key}={value}\n")
    # The recipe's keys, only where they differ from the defaults.
    if (attrs["lr_schedule"] != "constant" or int(attrs["warmup_lr_steps"]) != 0
            or attrs["lr_milestones"] != ""):
        lines.append(f"lr_schedule={attrs['lr_schedule']}\n"
                     f"lr_milestones={attrs['lr_milestones']}\n"
                     f"lr_milestone_unit={attrs['lr_milestone_unit']}\n"
                     f"lr_decay={float(attrs['lr_decay']):.17g}\n"
                     f"warmup_lr_steps={int(attrs['warmup_lr_steps'])}\n")
    if float(attrs["epochs"]) != 0.0:
        lines.append(f"epochs={float(attrs['epochs']):.17g}\n")
    if attrs["eval_epochs"] != "":
        lines.append(f"eval_epochs={attrs['eval_epochs']}\n")
    if int(attrs.get("eval_epoch_samples", 0)) != 0:
        lines.append(f"eval_epoch_samples={int(attrs['eval_epoch_samples'])}\n")
    if int(attrs.get("train_samples", 0)) != 0:
        lines.append(f"train_samples={int(attrs['train_samples'])}\n")
    if attrs["augmentation"] != "none":
        lines.append(f"augmentation={attrs['augmentation']}\n")
    if int(attrs["aux_head_capped"]) != 0:
        lines.append("aux_head_capped=1\n")
    if attrs.get("aux_head", "study") == "proportional":
        lines.append("aux_head=proportional\n")
    if int(attrs["weight_decay_all"]) != 0:
        lines.append("weight_decay_all=1\n")
    if int(attrs.get("threads_per_rank", 0)) != 0:
        lines.append(f"threads_per_rank={int(attrs['threads_per_rank'])}\n")
    if int(attrs.get("virtual_stages", 1)) != 1:
        lines.append(f"virtual_stages={int(attrs['virtual_stages'])}\n")
    if int(attrs.get("data_parallel", 1)) != 1:
        lines.append(f"data_parallel={int(attrs['data_parallel'])}\n")
    if float(attrs.get("validation_fraction", 0.0)) != 0.0:
        lines.append(f"validation_fraction={float(attrs['validation_fraction']):.17g}\n")
    if attrs.get("rl_preset", "default") != "default":
        lines.append(f"rl_preset={attrs['rl_preset']}\n")
    if int(attrs.get("simulate_only", 0)) != 0:
        lines.append("simulate_only=1\n")
    lines.append(f"repeat={attrs['repeat']}\n")
    return "".join(lines)


ROOT_STR = ["format_name", "created_utc", "interplace_version", "git_commit", "mpi_version",
            "hdf5_version", "onednn_version", "cuda_runtime_version", "cuda_driver_version",
            "cudnn_version", "slurm_job_id", "slurm_array_job_id", "slurm_array_task_id",
            "shard", "spec_path", "spec_text", "filter", "schema"]
ROOT_STR_LIST = ["hosts", "devices", "overrides"]  # format 3: arrays of strings
GROUP_STR = ["id", "config_key", "name", "model", "family", "order", "placer", "strategy", "pipeline",
             "interlock_mode", "dataset", "data_dir", "optimizer", "device", "cost_device",
             "model_options", "status", "reason", "started_utc"]
GROUP_INT = ["index", "devices", "micro_batches", "batch_size", "warmup_steps", "steps",
             "eval_samples_requested", "seed", "repeat"]
OK_FLOAT = ["measured_wall_s", "samples_per_s", "eval_loss", "eval_accuracy"]
OK_STR = ["global_only_reason"]
OK_STR_LIST = ["hosts", "device_names"]
STEP_VECTORS = ["step", "warmup", "step_time_s", "loss", "accuracy"]
RANK_FLOATS = ["step_s", "forward_s", "backward_s", "aux_s", "optimizer_s", "comm_wait_s",
               "idle_s", "overhead_s", "step_cpu_s", "forward_cpu_s", "backward_cpu_s",
               "aux_cpu_s", "optimizer_cpu_s"]


def is_str(value):
    return isinstance(value, str)


def is_int(value):
    import numpy as np
    return isinstance(value, (np.integer,)) and value.dtype == np.int64


def is_float(value):
    import numpy as np
    return isinstance(value, (np.floating,)) and value.dtype == np.float64


def is_str_list(value):
    import numpy as np
    return isinstance(value, np.ndarray) and value.ndim == 1 and all(is_str(v) for v in value)


def axes(dataset):
    """The dimension scale names of each axis of `dataset` (one per axis)."""
    names = []
    for d in dataset.dims:
        check(len(d) == 1, f"{dataset.name}: {len(d)} dimension scales on an axis")
        names.append(d[0].name.rsplit("/", 1)[-1])
    return names


def check_described(group):
    """Every dataset under `group` has units and long_name (docs/results-format.md)."""
    def visit(name, obj):
        if hasattr(obj, "dtype"):
            for key in ("units", "long_name"):
                check(is_str(obj.attrs.get(key)), f"{obj.name}: attribute {key}")
    group.visititems(visit)


def check_scales(gid, g, k, r=1):
    """Format 3's dimension scales: rank, node, step, timeline/event, attached by axis.
    With r data-parallel replicas the rank scale has k x r ranks and per-stage data the
    stage scale of k."""
    import numpy as np
    check_described(g)
    if "order" not in g and "steps" not in g:
        return
    check(g["rank"].attrs["CLASS"] == b"DIMENSION_SCALE" and
          list(g["rank"][()]) == list(range(k * r)), f"{gid}: rank scale")
    per_stage = "rank" if r == 1 else "stage"
    if r > 1:
        check(list(g["stage"][()]) == list(range(k)), f"{gid}: stage scale")
        check(list(g["rank_stage"][()]) == [i % k for i in range(k * r)] and
              list(g["rank_replica"][()]) == [i // k for i in range(k * r)],
              f"{gid}: the ranks' (stage, replica)")
    if "order" in g:
        n = g["node_names"].shape[0]
        check(list(g["node"][()]) == list(range(n)), f"{gid}: node scale")
        for name in ("order", "placement", "node_names"):
            check(axes(g[name]) == ["node"], f"{gid}: {name} axes {axes(g[name])}")
        for name in ("busy_s", "idle_s", "peak_memory_bytes"):
            check(axes(g["prediction"][name]) == [per_stage], f"{gid}: prediction/{name}")
    if "steps" in g:
        check(np.array_equal(g["step"][()], g["steps"]["step"][()]), f"{gid}: step scale")
        for name in STEP_VECTORS:
            check(axes(g["steps"][name]) == ["step"], f"{gid}: steps/{name} axes")
        for name in ("aux_loss", "aux_accuracy"):
            check(axes(g["steps"][name]) == ["step", per_stage], f"{gid}: steps/{name} axes")
        for name in RANK_FLOATS + ["bytes_sent", "peak_memory_bytes"]:
            check(axes(g["ranks"][name]) == ["step", "rank"], f"{gid}: ranks/{name} axes")
        check(g["ranks"]["step_s"].attrs["units"] == "s" and
              g["ranks"]["bytes_sent"].attrs["units"] == "bytes", f"{gid}: units")
        t = g["timeline"]
        for name in ("rank", "kind", "action", "micro_batch", "loss_stage", "peer", "start_s",
                     "end_s", "cpu_s"):
            check(axes(t[name]) == ["event"], f"{gid}: timeline/{name} axes")
        check(t["cpu_s"].attrs["units"] == "s", f"{gid}: timeline/cpu_s units")
        if "timeline" in g["prediction"]:
            p = g["prediction"]["timeline"]
            for name in ("rank", "kind", "action", "start_s", "end_s"):
                check(axes(p[name]) == ["event"], f"{gid}: prediction/timeline/{name} axes")
            # The simulator has no CPU time.
            check("cpu_s" not in p, f"{gid}: prediction/timeline/cpu_s")


def analysis_rank_datasets():
    sys.path.insert(0, os.path.join(SOURCE_DIR, "analysis"))
    from interplace_analysis.h5file import RANK_DATASETS
    return RANK_DATASETS


def check_config_keys(groups):
    """Every group stores its configuration key: the id of repeat 0, as documented."""
    for gid, a in groups.items():
        stored = a.get("config_key")
        expected = fnv1a64(canonical({**a, "repeat": 0}))
        check(stored == expected, f"{gid}: config_key {stored}, the canonical string gives "
              f"{expected}")
        if int(a.get("repeat", 0)) == 0:
            check(stored == gid, f"{gid}: repeat 0 but config_key {stored}")


def check_layout(path, spec_path, world_size):
    """Every attribute and dataset of docs/results-format.md, with its type and shape."""
    import h5py
    import numpy as np
    with h5py.File(path, "r") as f:
        root = f.attrs
        for key in ROOT_STR:
            check(is_str(root[key]), f"root attribute {key} is {type(root[key])}")
        for key in ROOT_STR_LIST:
            check(is_str_list(root[key]), f"root attribute {key} is {root[key]!r}")
        check(root["format_name"] == "interplace-results", "format_name")
        check(is_int(root["format_version"]) and root["format_version"] == 3, "format_version")
        check(is_int(root["world_size"]) and root["world_size"] == world_size, "world_size")
        if root["shard"] == "merged":
            check("shard_index" not in root and "shard_count" not in root, "merged: no shard")
        else:
            check(is_int(root["shard_index"]) and is_int(root["shard_count"]) and
                  f"{root['shard_index']}/{root['shard_count']}" == root["shard"],
                  f"shard_index/shard_count vs shard {root['shard']}")
        check(len(root["hosts"]) == world_size, f"hosts {root['hosts']}")
        check(len(root["devices"]) == world_size, f"devices {root['devices']}")
        # One host here: the node-local ranks are the ranks.
        check(list(root["node_local_ranks"]) == list(range(world_size)),
              f"node_local_ranks {root['node_local_ranks']}")
        check(root["spec_path"] == spec_path, "spec_path")
        with open(spec_path) as spec:
            check(root["spec_text"] == spec.read(), "spec_text is the spec file")
        check(root["git_commit"] == "unknown" or len(root["git_commit"]) == 40, "git_commit")
        # The schema of the writer (`interplace schema`): every attribute it says a group
        # always has is there, and the pipelines are the registry's.
        schema = json.loads(root["schema"])
        always = {field["attribute"] for field in schema["fields"] if field["in_file"] == "always"}
        check("e2e" in next(field["values"] for field in schema["fields"]
                            if field["key"] == "pipeline"), "schema: the pipeline values")
        check({"gpipe", "1f1b"} <= {p["name"] for p in schema["pipelines"]}, "schema: pipelines")
        groups = {}
        for gid, g in f["configs"].items():
            a = dict(g.attrs)
            for key in GROUP_STR:
                check(is_str(a[key]), f"{gid}: {key} is {type(a.get(key))}")
            for key in GROUP_INT:
                check(is_int(a[key]), f"{gid}: {key} is {type(a.get(key))}")
            for key in ("learning_rate", "weight_decay", "wall_s"):
                check(is_float(a[key]), f"{gid}: {key}")
            check(a["id"] == gid, f"{gid}: id attribute {a['id']}")
            check(always <= set(a), f"{gid}: lacks the schema's {sorted(always - set(a))}")
            # Each model option is also its own typed attribute, the string unchanged.
            options = dict(kv.split("=", 1) for kv in a["model_options"].split(",") if kv)
            typed = {key[len("model_option_"):]: value for key, value in a.items()
                     if key.startswith("model_option_")}
            check(sorted(options) == sorted(typed) and
                  all(float(options[key]) == float(typed[key]) for key in options),
                  f"{gid}: model_option_* {typed} vs model_options {a['model_options']!r}")
            check(fnv1a64(canonical(a)) == gid, f"{gid}: id is not FNV-1a of {canonical(a)!r}")
            check(a["status"] in ("ok", "failed", "skipped"), f"{gid}: status {a['status']}")
            k = int(a["devices"])
            r = int(a.get("data_parallel", 1))  # replicas: k x r ranks
            check_scales(gid, g, k, r)
            if "order" in g:
                n = g["node_names"].shape[0]
                order = g["order"][()]
                check(g["order"].dtype == np.int64 and sorted(order) == list(range(n)),
                      f"{gid}: order is not a permutation")
                placement = g["placement"][()]
                check(placement.shape == (n,) and placement.min() >= 0 and placement.max() < k,
                      f"{gid}: placement")
                check(g["node_names"].dtype.kind == "O", f"{gid}: node_names are strings")
                p = g["prediction"]
                check(is_str(p.attrs["messages"]) and p.attrs["messages"] in ("stage", "node") and
                      is_float(p.attrs["step_time_s"]) and
                      is_float(p.attrs["idle_fraction"]) and is_str(p.attrs["node_level_reason"]),
                      f"{gid}: prediction attributes")
                for name in ("busy_s", "idle_s", "peak_memory_bytes"):
                    check(p[name].shape == (k,), f"{gid}: prediction/{name} {p[name].shape}")
                gr = g["graph"].attrs
                for name in ("node_count", "edge_count", "depth", "max_width"):
                    check(is_int(gr[name]), f"{gid}: graph/{name}")
                check(gr["node_count"] == n, f"{gid}: graph node_count")
                check(is_float(gr["mean_branching_factor"]) and
                      is_float(gr["critical_path_cost_share"]), f"{gid}: graph floats")
                check(is_int(a["parameter_count"]) and is_int(a["reach"]), f"{gid}: plan attrs")
                for name in ("forward_flops", "backward_flops", "batch_size"):
                    check(is_int(gr[name]) and gr[name] > 0, f"{gid}: graph/{name}")
                check(gr["batch_size"] * int(a["micro_batches"]) * r == a["batch_size"],
                      f"{gid}: graph/batch_size is one (replica's) micro-batch")
                check(is_str(a["cost_device_preset"]) and is_float(a["peak_flops_per_s"]) and
                      a["peak_flops_per_s"] > 0, f"{gid}: cost device peak")
            if a["status"] == "ok":
                check(a["reason"] == "", f"{gid}: ok with a reason")
                for key in OK_FLOAT:
                    check(is_float(a[key]), f"{gid}: {key}")
                for key in OK_STR:
                    check(is_str(a[key]), f"{gid}: {key}")
                for key in OK_STR_LIST:
                    check(is_str_list(a[key]), f"{gid}: {key} is {a[key]!r}")
                check(is_int(a["eval_samples"]), f"{gid}: eval_samples")
                check(len(a["hosts"]) == k * r, f"{gid}: hosts per rank")
                s = int(a["warmup_steps"]) + int(a["steps"])
                steps = g["steps"]
                for name in STEP_VECTORS:
                    check(steps[name].shape == (s,), f"{gid}: steps/{name} {steps[name].shape}")
                check(steps["warmup"].dtype == np.int8, f"{gid}: warmup is int8")
                check(list(steps["warmup"][()]) == [1] * int(a["warmup_steps"]) +
                      [0] * int(a["steps"]), f"{gid}: warm-up flags")
                check(list(steps["step"][()]) == list(range(s)), f"{gid}: steps/step")
                for name in ("aux_loss", "aux_accuracy"):
                    check(steps[name].shape == (s, k), f"{gid}: steps/{name}")
                for name in RANK_FLOATS:
                    check(g["ranks"][name].shape == (s, k * r) and
                          g["ranks"][name].dtype == np.float64, f"{gid}: ranks/{name}")
                for name in ("bytes_sent", "peak_memory_bytes"):
                    check(g["ranks"][name].shape == (s, k * r) and
                          g["ranks"][name].dtype == np.int64, f"{gid}: ranks/{name}")
                # The writer's columns (kRankStepFields) are the ones the analysis reads.
                check(set(g["ranks"].keys()) == set(analysis_rank_datasets()),
                      f"{gid}: ranks/* {sorted(g['ranks'].keys())} is not the analysis' "
                      "RANK_DATASETS")
                check(np.allclose(steps["step_time_s"][()], g["ranks"]["step_s"][()].max(axis=1)),
                      f"{gid}: step_time_s is the max over ranks")
                t = g["timeline"]
                e = t["rank"].shape[0]
                for name in ("kind", "start_s", "end_s", "cpu_s"):
                    check(t[name].shape == (e,), f"{gid}: timeline/{name}")
                # A rank's main thread cannot use more CPU than wall time in an interval
                # (but for the microseconds between reading the two clocks).
                check(np.all(t["cpu_s"][()] <= t["end_s"][()] - t["start_s"][()] + 1e-3),
                      f"{gid}: timeline/cpu_s above the interval")
                for name in ("forward", "backward", "aux", "optimizer", "step"):
                    check(np.all(g["ranks"][f"{name}_cpu_s"][()] <=
                                 g["ranks"][f"{name}_s"][()] + 1e-3),
                          f"{gid}: ranks/{name}_cpu_s above ranks/{name}_s")
                check(set(x.decode() if isinstance(x, bytes) else x for x in t["kind"][()]) <=
                      {"forward", "backward", "aux", "optimizer", "comm_wait"},
                      f"{gid}: timeline kinds")
                # Every interval names its schedule action (F3, B3, b3, H3, h3, r3, S): the
                # compute ones always, waits where they waited in a receive.
                text = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
                actions = [text(x) for x in t["action"][()]]
                kinds = [text(x) for x in t["kind"][()]]
                check(all(re.fullmatch(r"[FBbHh][0-9]+|S", x)
                          for x, kind in zip(actions, kinds) if kind != "comm_wait"),
                      f"{gid}: timeline actions {sorted(set(actions))}")
                # The prediction has its simulated timeline beside, in the same layout: per
                # rank, the first event starts at 0 and the actions are the same kinds of
                # labels (a chain's schedule or the node-level one).
                p = g["prediction"]["timeline"]
                check(p["rank"].shape[0] > 0 and
                      set(text(x)[0] for x in p["action"][()]) >= {"F", "S"},
                      f"{gid}: predicted timeline")
            else:
                check(a["reason"] != "", f"{gid}: {a['status']} without a reason")
            groups[gid] = a
        check_config_keys(groups)
        return groups


def statuses(groups):
    out = {}
    for a in groups.values():
        out[a["status"]] = out.get(a["status"], 0) + 1
    return out


def dry_run_ids(spec, *extra):
    r = ok(None, "sweep", spec, "--dry-run", "--format", "json", *extra)
    return [c["id"] for c in json.loads(r.stdout)["configs"]]


def is_fake():
    return os.path.basename(BINARY).startswith("interplace_fake")


# Overrides that make each configuration of SMALL_SPEC last long enough that a
# signal can arrive while one runs: the fake runner sleeps 0.3 s per step (env("0.3")),
# the real runtime needs more steps.
def slow_overrides():
    return [] if is_fake() else ["steps=20"]


def test_smoke_layout_np2():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "smoke.h5")
        start = time.time()
        r = ok(2, "sweep", SMOKE, "--out", out)
        wall = time.time() - start
        progress = [line for line in r.stderr.splitlines() if line.startswith("[")]
        check(len(progress) == 20, f"20 progress lines expected: {r.stderr}")
        check(progress[-1].startswith("[20/20] "), progress[-1])
        groups = check_layout(out, SMOKE, 2)
        ids = dry_run_ids(SMOKE)
        check(sorted(ids) == sorted(groups), "the file holds the dry run's configurations")
        for i, gid in enumerate(ids):
            check(groups[gid]["index"] == i, f"{gid}: index")
        counts = statuses(groups)
        # Planning decides which local strategies can run (chain, single-tensor boundaries);
        # round-robin placements never can, and 4 devices never fit a 2-rank job.
        check(counts.get("failed", 0) == 0 and counts.get("ok", 0) >= 10, f"statuses {counts}")
        too_big = [a for a in groups.values() if a["devices"] == 4]
        check(len(too_big) == 2 and all(a["reason"] == "needs 4 ranks, the job has 2"
                                        for a in too_big), "devices = 4 skipped")
        no_chain = [a for a in groups.values() if a["placer"] == "round-robin" and
                    a["strategy"] == "local"]
        check(len(no_chain) == 4 and all(a["status"] == "skipped" and "local" in a["reason"]
                                         for a in no_chain), "local on round-robin skipped")
        staged = [a for a in groups.values() if a["placer"] == "stages" and a["order"] == "topo"
                  and a["strategy"] == "local" and a["devices"] == 2]
        check(len(staged) == 2 and all(a["status"] == "ok" for a in staged),
              "local trains on the stages placement of both models")
        for a in groups.values():
            check(a["status"] == "ok" or a["devices"] == 4 or a["strategy"] == "local",
                  f"{a['name']}: {a['status']} {a['reason']}")
        two = [a for a in groups.values() if a["status"] == "ok" and a["devices"] == 2]
        check(all(len(a["hosts"]) == 2 for a in two), "K=2 trained on 2 ranks")
        gpt = [a for a in groups.values() if a["model"] == "gpt-mini"]
        check(gpt and all(a["model_option_sequence_length"] == 32 for a in gpt),
              "gpt-mini's sequence_length as model_option_sequence_length")

        table = ok(None, "inspect", out).stdout
        check(f"20 configurations: {counts['ok']} ok, 0 failed, {counts['skipped']} skipped"
              in table, table)
        rows = json.loads(ok(None, "inspect", out, "--format", "json").stdout)["configs"]
        check(len(rows) == 20 and [row["index"] for row in rows] == list(range(20)), "rows")
        for row in rows:
            if row["status"] == "ok":
                check(row["median_step_s"] > 0 and row["samples_per_s"] > 0 and
                      row["final_loss"] is not None, f"inspect row {row}")
        print(f"smoke sweep: {wall:.1f} s wall, {os.path.getsize(out)} bytes")


RECIPE_SPEC = """
models = ["resnet20"]
dataset = "synthetic"
devices = 2
placer = "stages"
strategies = ["global", "local"]
pipelines = ["e2e", "gpipe"]
micro_batches = [1, 2]
batch_size = 4
warmup_steps = 1
steps = 3
learning_rate = 0.2
lr_schedule = "step"
lr_milestones = "2"
lr_decay = 0.5
warmup_lr_steps = 2
augmentation = "crop-flip"
optimizer = "sgd-nesterov"
weight_decay = 2e-4
weight_decay_all = 1
aux_head_capped = 1
threads_per_rank = 1
[model_options]
width_multiplier = 0.25
image_size = 16
"""


def test_recipe_np2():
    """The recipe's keys: ids over them (check_layout recomputes each, and so does the
    analysis' config_key), e2e with one micro-batch, the rate of every step."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "recipe.toml")
        with open(spec, "w") as f:
            f.write(RECIPE_SPEC)
        out = os.path.join(tmp, "recipe.h5")
        ok(2, "sweep", spec, "--out", out)
        groups = check_layout(out, spec, 2)
        # global: e2e (M = 1 once), gpipe M = 1 and 2; local M = 1 and 2.
        check(len(groups) == 5, f"5 configurations expected, got {len(groups)}")
        e2e = [a for a in groups.values() if a["pipeline"] == "e2e" and a["strategy"] == "global"]
        check(len(e2e) == 1 and e2e[0]["micro_batches"] == 1, "one e2e configuration, M = 1")
        for a in groups.values():
            check(a["status"] == "ok", f"{a['name']}: {a['status']} {a['reason']}")
            check(a["lr_schedule"] == "step" and a["lr_milestones"] == "2" and
                  a["augmentation"] == "crop-flip" and a["optimizer"] == "sgd-nesterov", a)
        sys.path.insert(0, os.path.join(SOURCE_DIR, "analysis"))
        if is_fake():
            return
        import h5py
        with h5py.File(out, "r") as f:
            for gid in groups:
                rates = list(f["configs"][gid]["steps"]["learning_rate"][()])
                # Warm-up 0.1, 0.2; x0.5 from step 2.
                check(rates == [0.1, 0.2, 0.1, 0.1], f"{gid}: rates {rates}")


INTERLEAVED_SPEC = """
models = ["resnet20"]
dataset = "synthetic"
devices = 2
placer = "contiguous"
pipelines = ["1f1b", "interleaved-1f1b"]
virtual_stages = [1, 2]
micro_batches = 2
batch_size = 4
warmup_steps = 0
steps = 2
threads_per_rank = 1
[model_options]
width_multiplier = 0.25
image_size = 16
"""


def test_interleaved_np2():
    """Interleaved 1F1B in a sweep: virtual_stages multiplies it alone (1f1b runs V = 1
    once), the attribute and the id's line only where V is not 1, and the analysis'
    config_key tells V = 1 from V = 2."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "interleaved.toml")
        with open(spec, "w") as f:
            f.write(INTERLEAVED_SPEC)
        out = os.path.join(tmp, "interleaved.h5")
        ok(2, "sweep", spec, "--out", out)
        groups = check_layout(out, spec, 2)
        seen = sorted((a["pipeline"], int(a.get("virtual_stages", 1))) for a in groups.values())
        check(seen == [("1f1b", 1), ("interleaved-1f1b", 1), ("interleaved-1f1b", 2)], seen)
        for a in groups.values():
            check(a["status"] == "ok", f"{a['name']}: {a['status']} {a['reason']}")
            check(("virtual_stages" in a) == (a["pipeline"] == "interleaved-1f1b" and
                                              int(a.get("virtual_stages", 1)) == 2), a)
        sys.path.insert(0, os.path.join(SOURCE_DIR, "analysis"))


DATA_PARALLEL_SPEC = """
models = ["gpt-mini"]
dataset = "synthetic"
devices = 1
placer = "contiguous"
data_parallel = [1, 2]
micro_batches = 2
batch_size = 8
warmup_steps = 0
steps = 2
threads_per_rank = 1
optimizer = "adamw"
learning_rate = 0.001
[model_options]
layers = 2
dim = 32
heads = 2
sequence_length = 16
"""


def test_data_parallel_np2():
    """Data parallelism in a sweep on 2 ranks: K = 1 with R = 1 and R = 2 (the job's both
    ranks); the attribute and the id's line only where R is not 1, every rank's records
    (K x R) with its (stage, replica), the same losses as one replica (GPT: no batch
    statistics), and the analysis' config_key and data_parallel column."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "data_parallel.toml")
        with open(spec, "w") as f:
            f.write(DATA_PARALLEL_SPEC)
        out = os.path.join(tmp, "data_parallel.h5")
        ok(2, "sweep", spec, "--out", out)
        groups = check_layout(out, spec, 2)
        seen = sorted(int(a.get("data_parallel", 1)) for a in groups.values())
        check(seen == [1, 2], seen)
        for a in groups.values():
            check(a["status"] == "ok", f"{a['name']}: {a['status']} {a['reason']}")
            check(("data_parallel" in a) == (int(a.get("data_parallel", 1)) == 2), a)
        sys.path.insert(0, os.path.join(SOURCE_DIR, "analysis"))
        from interplace_analysis.loader import load_results
        results = load_results(out)
        configs = results.configs
        check(sorted(configs["data_parallel"]) == [1, 2], configs["data_parallel"])
        # The analysis' per-rank frames: K x R rows per step, the stage's aux and prediction.
        steps = results.steps
        for gid, a in groups.items():
            rows = steps[steps["config_id"] == gid]
            check(len(rows) == 2 * int(a.get("data_parallel", 1)), f"{gid}: steps rows {rows}")
        ranks = results.rank_summary
        check(len(ranks) == 3 and ranks["pred_busy_s"].notna().all(), ranks)
        if is_fake():
            return
        # Shares of every rank's time (K x R ranks), from the file's summary table and
        # recomputed from the groups: a division by K alone made R = 2's twice as large.
        from interplace_analysis.frames import config_row
        for _, row in configs.iterrows():
            again = config_row(results.record(row["run_id"]))
            for name in ("utilisation", "idle_fraction"):
                check(0.0 < row[name] <= 1.0 and abs(row[name] - again[name]) <= 1e-9,
                      f"{row['config_id']} {name}: summary {row[name]}, groups {again[name]}")
        import h5py
        with h5py.File(out, "r") as f:
            loss = {int(a.get("data_parallel", 1)): list(f["configs"][gid]["steps"]["loss"][()])
                    for gid, a in groups.items()}
        check(len(loss[1]) == len(loss[2]) == 2, loss)
        for x, y in zip(loss[1], loss[2]):
            check(abs(x - y) <= 1e-5 * abs(x) + 1e-7, f"R = 2 vs R = 1 losses: {loss}")


def session_processes(sid):
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[3]) == sid:
                    pids.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return pids


def count_configs(path):
    import h5py
    try:
        with h5py.File(path, "r") as f:
            return len(f["configs"])
    except (OSError, KeyError):
        return 0


def kill_after_first_config(spec, out, timeout_s):
    """Sweeps `spec` into `out` on 2 ranks and SIGKILLs the whole job (mpirun and the ranks:
    its session) once the file holds a configuration; returns what it printed on stderr."""
    cmd = [*MPIRUN, "-np", "2", BINARY, "sweep", spec, "--out", out]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env("0.3"), start_new_session=True, text=True)
    deadline = time.time() + timeout_s
    while count_configs(out) < 1:
        check(proc.poll() is None, "the sweep ended before it could be killed")
        check(time.time() < deadline, "no configuration written in time")
        time.sleep(0.05)
    for pid in session_processes(proc.pid):
        os.kill(pid, signal.SIGKILL)
    _, stderr = proc.communicate()
    while session_processes(proc.pid):
        time.sleep(0.05)
    return stderr


def test_kill_and_resume_np2():
    import h5py
    with tempfile.TemporaryDirectory() as tmp:
        spec = write(tmp, "small.toml", SMALL_SPEC)
        out = os.path.join(tmp, "small.h5")
        kill_after_first_config(spec, out, 120)
        before = count_configs(out)
        check(1 <= before < 8, f"killed mid-run, {before} configurations in the file")
        with h5py.File(out, "r") as f:
            started = {gid: g.attrs["started_utc"] for gid, g in f["configs"].items()}
            # The killed job's summary table says what its groups say (one crash-safe write).
            rows = list(f["summary"]["id"].asstr()[()])
            check(sorted(rows) == sorted(f["configs"]), f"summary rows {rows}")
            statuses_by_row = dict(zip(rows, f["summary"]["status"].asstr()[()]))
            for gid, g in f["configs"].items():
                check(statuses_by_row[gid] == g.attrs["status"], f"{gid}: summary status")

        fails(2, 2, "sweep", spec, "--out", out, contains=("exists already",))
        r = ok(2, "sweep", spec, "--out", out, "--resume")
        check(f"resuming: {before} of 8 configurations already in the file" in r.stderr,
              r.stderr)
        groups = check_layout(out, spec, 2)
        check(sorted(groups) == sorted(dry_run_ids(spec)), "every configuration exactly once")
        for gid, when in started.items():
            check(groups[gid]["started_utc"] == when, f"{gid} was run again")
        counts = statuses(groups)
        check(counts.get("failed", 0) == 0 and counts.get("ok", 0) >= 6, f"statuses {counts}")
        r = ok(2, "sweep", spec, "--out", out, "--resume")
        check("resuming: 8 of 8" in r.stderr, "a finished file has nothing left")
        edited = write(tmp, "edited.toml", SMALL_SPEC + "# a comment changes the text\n")
        r = ok(2, "sweep", edited, "--out", out, "--resume")
        check("warning: " in r.stderr and "another spec text" in r.stderr and
              "resuming: 8 of 8" in r.stderr, f"resume with another spec text: {r.stderr}")


def test_journal_kill_inspect_and_resume_np2():
    """A sweep whose appends go to the journal (from the first byte, never folded on the
    way): killed, its entries are read by inspect and refused by the analysis with a HINT;
    --resume folds them first, keeps them and finishes; the finished sweep leaves no
    journal and the same layout as a sweep without one."""
    import h5py
    saved = dict(os.environ)
    os.environ.update(INTERPLACE_JOURNAL_FROM_BYTES="0", INTERPLACE_JOURNAL_FOLD_FRACTION="1e9")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            spec = write(tmp, "small.toml", SMALL_SPEC)
            out = os.path.join(tmp, "small.h5")
            journal = out + ".journal"
            entries = lambda: sorted(n for n in os.listdir(journal) if n.endswith(".h5")) \
                if os.path.isdir(journal) else []
            cmd = [*MPIRUN, "-np", "2", BINARY, "sweep", spec, "--out", out]
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    env=env("0.3"), start_new_session=True, text=True)
            deadline = time.time() + 120
            while not entries():
                check(proc.poll() is None, "the sweep ended before it could be killed")
                check(time.time() < deadline, "no journal entry written in time")
                time.sleep(0.05)
            for pid in session_processes(proc.pid):
                os.kill(pid, signal.SIGKILL)
            proc.communicate()
            while session_processes(proc.pid):
                time.sleep(0.05)
            journaled = len(entries())
            check(1 <= journaled < 8, f"{journaled} journal entries")
            check(count_configs(out) == 0, "the main file took configurations before a fold")
            r = ok(0, "inspect", out, "--format", "json")
            listed = json.loads(r.stdout)
            check(len(listed["configs"]) == journaled,
                  f"inspect lists {len(listed['configs'])} of {journaled} journaled")
            analysis = subprocess.run([sys.executable, "-m", "interplace_analysis", "report", out,
                                       "--out", os.path.join(tmp, "report")],
                                      capture_output=True, text=True, env=env())
            check(analysis.returncode != 0 and f"interplace fold {out}" in analysis.stderr,
                  f"exit {analysis.returncode}: {analysis.stderr}")
            r = ok(2, "sweep", spec, "--out", out, "--resume")
            check(f"resuming: {journaled} of 8 configurations already in the file" in r.stderr,
                  r.stderr)
            check(not os.path.exists(journal), "the finished sweep left its journal")
            groups = check_layout(out, spec, 2)
            check(sorted(groups) == sorted(dry_run_ids(spec)), "every configuration exactly once")
            with h5py.File(out, "r") as f:
                rows = list(f["summary"]["id"].asstr()[()])
            check(sorted(rows) == sorted(groups), f"summary rows {rows}")
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_disk_full_np2():
    """The result file on a file system that fills up mid-sweep: one clear error naming the
    file and the cause, exit 1, no crash (rank 0 ended with SIGSEGV inside HDF5 before), no
    .tmp left holding space, every configuration finished before intact; with space again,
    --resume completes it."""
    if os.geteuid() != 0:
        raise Skip("needs root to mount a small tmpfs")
    import shutil
    for tool in ("mount", "umount"):
        if shutil.which(tool) is None:
            raise Skip(f"needs the {tool} command to mount a small tmpfs (Debian: mount)")
    with tempfile.TemporaryDirectory() as tmp:
        spec = write(tmp, "small.toml", SMALL_SPEC)
        # A file system the size of the finished file: the early configurations fit (file
        # and its next version side by side), the last ones do not.
        whole = os.path.join(tmp, "whole.h5")
        ok(2, "sweep", spec, "--out", whole)
        size = os.path.getsize(whole)
        full = os.path.join(tmp, "full")
        os.mkdir(full)
        mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", full],
                               capture_output=True, text=True)
        if mount.returncode != 0:
            raise Skip(f"cannot mount a tmpfs here: {mount.stderr.strip()}")
        try:
            out = os.path.join(full, "small.h5")
            r = run(2, "sweep", spec, "--out", out)
            check(r.returncode == 1, f"exit {r.returncode}: {r.stderr}")
            check(r.stderr.count("interplace: error: ") == 1, r.stderr)
            check(f"interplace: error: cannot write {out}: No space left on device" in r.stderr
                  and "HINT: free space" in r.stderr and "--resume" in r.stderr, r.stderr)
            check("Segmentation" not in r.stderr and "signal" not in r.stderr, r.stderr)
            check(not os.path.exists(out + ".tmp"), "the partial .tmp is left")
            before = count_configs(out)
            check(1 <= before < 8, f"{before} configurations in the full file system")
            subprocess.run(["mount", "-o", "remount,size=64m", full], check=True)
            r = ok(2, "sweep", spec, "--out", out, "--resume")
            check(f"resuming: {before} of 8 configurations already in the file" in r.stderr,
                  r.stderr)
            groups = check_layout(out, spec, 2)
            check(sorted(groups) == sorted(dry_run_ids(spec)), "every configuration exactly once")
            os.remove(out)

            # The fold of a journal (its entries copied into a copy of the file, written by
            # HDF5 on the disk) that does not fit: refused before HDF5 writes, with the file
            # and every entry kept; `interplace fold` completes it once there is space.
            subprocess.run(["mount", "-o", f"remount,size={2 * size + (4 << 20)}", full],
                           check=True)
            journaled = os.path.join(full, "journaled.h5")
            saved = dict(os.environ)
            os.environ.update(INTERPLACE_JOURNAL_FROM_BYTES="0",
                              INTERPLACE_JOURNAL_FOLD_FRACTION="1e9")
            try:
                r = run(2, "sweep", spec, "--out", journaled)
            finally:
                os.environ.clear()
                os.environ.update(saved)
            check(r.returncode == 1, f"exit {r.returncode}: {r.stderr}")
            check(f"cannot write {journaled}: No space left on device (reserving" in r.stderr
                  and f"HINT: free space, then run `interplace fold {journaled}`" in r.stderr,
                  r.stderr)
            check("Segmentation" not in r.stderr and "signal" not in r.stderr, r.stderr)
            check(not os.path.exists(journaled + ".tmp"), "the fold's .tmp is left")
            listed = json.loads(ok(0, "inspect", journaled, "--format", "json").stdout)
            check(len(listed["configs"]) == 8, f"{len(listed['configs'])} of 8 kept")
            subprocess.run(["mount", "-o", "remount,size=64m", full], check=True)
            ok(0, "fold", journaled)
            check(count_configs(journaled) == 8 and not os.path.exists(journaled + ".journal"),
                  "fold after freeing space")

            # A merge that does not fit: refused before anything is written.
            used = os.statvfs(full)
            used_bytes = (used.f_blocks - used.f_bfree) * used.f_frsize
            subprocess.run(["mount", "-o", f"remount,size={used_bytes + (1 << 20)}", full],
                           check=True)
            merged = os.path.join(full, "merged.h5")
            fails(1, None, "merge", journaled, "-o", merged,
                  contains=(f"cannot write {merged}: No space left on device (reserving",))
            check(not os.path.exists(merged) and not os.path.exists(merged + ".tmp"),
                  "a refused merge left a file")
        finally:
            subprocess.run(["umount", "-l", full])


AUTO_SPEC = """
models = ["resnet20"]
dataset = "synthetic"
devices = [1, 2]
placers = ["contiguous"]
strategies = ["global", "local"]
micro_batches = 2
batch_size = 4
warmup_steps = 1
steps = 2
repeats = 2
seed = 3
threads_per_rank = 1
cost_device = "profile:auto"
[model_options]
width_multiplier = 0.25
image_size = 8
"""


def test_auto_profile_np2():
    """cost_device = "profile:auto": the job measures the one profile its configurations
    need (one key: one model at one micro-batch and thread count) once, keeps it in
    /profiles and predicts every configuration from it; --resume after a kill reuses it
    instead of measuring again; the dry run plans on the preset."""
    import h5py
    with tempfile.TemporaryDirectory() as tmp:
        spec = write(tmp, "auto.toml", AUTO_SPEC)
        out = os.path.join(tmp, "auto.h5")
        r = ok(None, "sweep", spec, "--dry-run", "--format", "json")
        check(all(c["outcome"] == "run" for c in json.loads(r.stdout)["configs"]
                  if "global" in c["name"]), r.stdout)
        first = kill_after_first_config(spec, out, 240)
        check(first.count("measuring the profile of resnet20") == 1, first)
        r = ok(2, "sweep", spec, "--out", out, "--resume")
        check("measuring the profile" not in r.stderr, f"measured again: {r.stderr}")
        groups = check_layout(out, spec, 2)
        with h5py.File(out, "r") as f:
            names = list(f["profiles"])
            check(len(names) == 1 and names[0].endswith("-0"), names)
            stored = f["profiles"][names[0]].attrs
            check("micro_batch_size=2\nthreads=1\n" in stored["key"], stored["key"])
            text = stored["profile"]
        for gid, a in groups.items():
            check(a["cost_device"] == "profile:auto", a["cost_device"])
            check(a.get("profile_id") == names[0] or a["status"] != "ok",
                  f"{gid}: profile_id {a.get('profile_id')}")
        if is_fake():
            return
        # The prediction is the one the measured profile gives: simulate with it as a file.
        profile = write(tmp, "measured.tsv", text)
        for gid, a in groups.items():
            if a["status"] != "ok" or int(a["devices"]) != 2:
                continue
            with h5py.File(out, "r") as f:
                stored_prediction = float(f["configs"][gid]["prediction"].attrs["step_time_s"])
            sim = ok(None, "simulate", "--model", "resnet20", "--width-multiplier", "0.25",
                     "--image-size", "8", "--batch-size", "4", "--micro-batches", "2",
                     "--order", "topo", "--placer", "contiguous", "--devices", "2",
                     "--strategy", a["strategy"], "--aux-head", a.get("aux_head", "study"),
                     "--profile", profile, "--format", "json")
            predicted = json.loads(sim.stdout)["simulation"]["step_time_s"]
            check(abs(stored_prediction - predicted) <= 1e-9 * predicted,
                  f"{a['name']}: stored prediction {stored_prediction}, from the "
                  f"profile {predicted}")


def test_failure_recorded_np2():
    with tempfile.TemporaryDirectory() as tmp:
        corrupt = os.path.join(tmp, "corrupt")
        os.mkdir(corrupt)
        for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                     "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
            write(corrupt, name, "this is not a gzip file\n")
        spec = write(tmp, "failing.toml", f"""
models = ["resnet20"]
dataset = "fashion-mnist"
data_dir = ["{corrupt}", ""]
devices = [1, 2]
batch_size = 4
warmup_steps = 0
steps = 2
""")
        out = os.path.join(tmp, "failing.h5")
        r = ok(2, "sweep", spec, "--out", out)
        groups = check_layout(out, spec, 2)
        check(statuses(groups) == {"ok": 2, "failed": 2}, f"statuses {statuses(groups)}")
        for a in groups.values():
            if a["data_dir"] == corrupt:
                check(a["status"] == "failed" and corrupt in a["reason"],
                      f"corrupt data: {a['status']} {a['reason']}")
            else:
                check(a["status"] == "ok", f"{a['name']}: {a['reason']}")
        check(" failed " in r.stderr or "  failed" in r.stderr, r.stderr)


def losses(path):
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        for gid, g in f["configs"].items():
            loss = tuple(g["steps"]["loss"][()]) if "steps" in g else None
            out[gid] = (g.attrs["status"], g.attrs["reason"], loss)
    return out


def test_shard_merge_np2():
    import h5py
    with tempfile.TemporaryDirectory() as tmp:
        spec = write(tmp, "small.toml", SMALL_SPEC)
        whole = os.path.join(tmp, "whole.h5")
        shards = [os.path.join(tmp, f"shard{i}.h5") for i in range(2)]
        ok(2, "sweep", spec, "--out", whole)
        for i, path in enumerate(shards):
            ok(2, "sweep", spec, "--out", path, "--shard", f"{i}/2")
            with h5py.File(path, "r") as f:
                check(f.attrs["shard"] == f"{i}/2", "shard attribute")
                check(all(g.attrs["index"] % 2 == i for g in f["configs"].values()),
                      "shard takes index % n == i")
        merged = os.path.join(tmp, "merged.h5")
        ok(None, "merge", *shards, "-o", merged)
        check_layout(merged, spec, 2)
        # --format json, as every subcommand has: one summary object.
        again = os.path.join(tmp, "again.h5")
        doc = json.loads(ok(None, "merge", *shards, "-o", again, "--format", "json").stdout)
        with h5py.File(merged, "r") as f:
            count = len(f["configs"])
        check(doc == {"out": again, "inputs": shards, "configurations": count}, doc)
        with h5py.File(merged, "r") as f:
            check(f.attrs["shard"] == "merged", "merged shard attribute")
            check(list(f.attrs["merged_sources"]) == shards, "merged_sources")
        a, b = losses(whole), losses(merged)
        check(sorted(a) == sorted(b), "same ids")
        for gid in a:
            check(a[gid] == b[gid], f"{gid}: {a[gid]} != {b[gid]}")


THREADS_SPEC = """
models = ["resnet20"]
dataset = "synthetic"
devices = 1
placer = "contiguous"
micro_batches = 2
batch_size = 8
warmup_steps = 1
steps = 3
threads_per_rank = [2, 1]
"""


def test_thread_counts_np1():
    """Configurations of one process that differ in threads_per_rank each compute what a
    fresh process with that count computes, bit for bit: the CPU backend's cached oneDNN
    plans are made per thread count (a plan made at 2 threads kept its 2-thread team and
    summation order after set_cpu_threads(1), so a K = 4 configuration after a K = 1 one
    oversubscribed the node and lost bitwise equality with 1 rank)."""
    if is_fake():
        raise Skip("the fake runner computes no losses")
    if len(os.sched_getaffinity(0)) < 2:
        raise Skip("needs 2 usable cores to run a configuration on 2 threads")
    import h5py
    with tempfile.TemporaryDirectory() as tmp:
        spec = write(tmp, "threads.toml", THREADS_SPEC)
        out = os.path.join(tmp, "threads.h5")
        ok(1, "sweep", spec, "--out", out)
        swept = {}
        with h5py.File(out, "r") as f:
            for g in sorted(f["configs"].values(), key=lambda g: int(g.attrs["index"])):
                threads = int(g.attrs["threads_per_rank"])
                check(list(g.attrs["device_names"]) == [f"cpu: {threads} threads"],
                      f"threads_per_rank {threads}: ran as {list(g.attrs['device_names'])}")
                swept[threads] = [float(x) for x in g["steps"]["loss"][()]]
        check(sorted(swept) == [1, 2], f"thread counts {sorted(swept)}")
        fresh = {}
        for threads in (1, 2):
            r = ok(1, "train", "--model", "resnet20", "--dataset", "synthetic", "--placer",
                   "contiguous", "--micro-batches", "2", "--batch-size", "8", "--steps", "3",
                   "--threads-per-rank", str(threads), "--format", "json")
            fresh[threads] = [json.loads(line)["loss"] for line in r.stdout.splitlines()
                              if line.startswith('{"step"')]
        for threads in (1, 2):
            check(swept[threads] == fresh[threads],
                  f"{threads} thread(s): the sweep's losses {swept[threads]} differ from a fresh "
                  f"process's {fresh[threads]}")
        if fresh[1] == fresh[2]:
            print("note: 1 and 2 threads gave equal losses here, so the check above cannot "
                  "tell a stale plan from a fresh one on this machine")


CPU_DATASETS = ["ranks/step_cpu_s", "ranks/forward_cpu_s", "ranks/backward_cpu_s",
                "ranks/aux_cpu_s", "ranks/optimizer_cpu_s", "timeline/cpu_s"]


def strip_cpu_times(path):
    """Makes `path` a file as written before the runtime recorded CPU times: the same
    version 3 without ranks/*_cpu_s and timeline/cpu_s (scales detached first)."""
    import h5py
    with h5py.File(path, "r+") as f:
        for g in f["configs"].values():
            for name in CPU_DATASETS:
                if name not in g:
                    continue
                d = g[name]
                for axis in range(d.ndim):
                    for scale in list(d.dims[axis].values()):
                        d.dims[axis].detach_scale(scale)
                del g[name]


def test_older_file_without_cpu_times_np2():
    """A version-3 file from before the CPU times: inspect reads it, --resume continues it
    (the new groups have them, the old ones keep their layout) and merge combines it with
    a file that has them."""
    import h5py
    with tempfile.TemporaryDirectory() as tmp:
        spec = write(tmp, "small.toml", SMALL_SPEC)
        older = os.path.join(tmp, "older.h5")
        ok(2, "sweep", spec, "--out", older)
        strip_cpu_times(older)
        # As if the older binary was stopped after the K=1 configurations.
        with h5py.File(older, "r+") as f:
            for gid in [gid for gid, g in f["configs"].items() if g.attrs["devices"] == 2]:
                del f["configs"][gid]
            before = sorted(f["configs"])
            check(before and not any(n in g for g in f["configs"].values()
                                     for n in CPU_DATASETS), "stripped")
        ok(None, "inspect", older)
        # Resume: the K=2 groups are new.
        ok(2, "sweep", spec, "--out", older, "--resume")
        with h5py.File(older, "r") as f:
            for gid, g in f["configs"].items():
                if g.attrs["status"] != "ok":
                    continue
                has = all(n in g for n in CPU_DATASETS)
                check(has == (gid not in before), f"{gid}: CPU times only in the new groups")
        ok(None, "inspect", older)
        shard = os.path.join(tmp, "shard.h5")
        ok(2, "sweep", spec, "--out", shard, "--filter", "K=2")
        older_k1 = os.path.join(tmp, "older_k1.h5")
        ok(2, "sweep", spec, "--out", older_k1, "--filter", "K=1")
        strip_cpu_times(older_k1)
        merged = os.path.join(tmp, "merged.h5")
        ok(None, "merge", older_k1, shard, "-o", merged, "--allow-different-specs")
        with h5py.File(merged, "r") as f:
            with_cpu = [gid for gid, g in f["configs"].items() if "timeline/cpu_s" in g]
            ok_groups = [gid for gid, g in f["configs"].items() if g.attrs["status"] == "ok"]
            check(0 < len(with_cpu) < len(ok_groups), f"merged: {len(with_cpu)} of "
                  f"{len(ok_groups)} groups with CPU times")


# The traversal-order study as a simulate-only sweep (docs/cli.md, "Simulate-only sweeps"):
# two small graphs, three orders of which dfs-post repeats topo-lifo-rev's node sequence
# (docs/orders.md), the rl placer at the study's preset beside one heuristic (its seed 1
# only: it does not draw), K = 3 on a job of fewer ranks.
ORDER_STUDY_SPEC = """
models = ["gpt-mini", "vgg16-small"]
devices = 3
orders = ["topo-lifo-rev", "dfs-post", "lexical"]
placers = ["rl", "greedy-eft"]
rl_preset = "wang2022"
simulate_only = 1
cost_device = "h100"
batch_size = 32
micro_batches = 1
seeds = [1, 2]

[[exclude]]
placer = "greedy-eft"
seed = 2
"""
# What rl_preset = "wang2022" sets (placement::rl_preset_options, docs/placers.md), spelled
# out as `simulate` takes it.
WANG2022_RL = ["--rl-episodes", "50", "--rl-eval-every", "5", "--rl-start", "device-0",
               "--rl-episode-start", "best", "--rl-reward", "log", "--rl-baseline",
               "all-so-far", "--rl-learning-rate", "0.001", "--rl-final-learning-rate", "0.001",
               "--rl-entropy", "0", "--rl-entropy-schedule", "constant", "--rl-clip-norm",
               "1.25", "--rl-fine-episodes", "0"]


def study_outcomes(path):
    """(model, order, placer, seed) -> (status, same_sequence_as, simulated step or None)."""
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        for g in f["configs"].values():
            a = g.attrs
            step = g["prediction"].attrs["step_time_s"] if "prediction" in g else None
            out[(a["model"], a["order"], a["placer"], int(a["seed"]))] = (
                a["status"], a.get("same_sequence_as", ""), step)
    return out


def test_simulate_only_study_np1():
    """Each configuration is planned once and not trained: its result is the placement, the
    simulator's step (the same as `simulate` with the same options) and rl's learning curve;
    an order that repeats an earlier order's node sequence is skipped naming it, and every
    shard decides so alike."""
    if is_fake():
        raise Skip("the fake runner has no simulate command to compare with")
    import h5py
    with tempfile.TemporaryDirectory() as tmp:
        spec = write(tmp, "study.toml", ORDER_STUDY_SPEC)
        out = os.path.join(tmp, "study.h5")
        ok(1, "sweep", spec, "--out", out)
        got = study_outcomes(out)
        check(len(got) == 2 * 3 * 3, sorted(got))
        for (model, order, placer, seed), (status, twin, step) in got.items():
            if order == "dfs-post":
                check(status == "skipped" and twin == "topo-lifo-rev" and step is None,
                      (model, placer, seed, status, twin))
                continue
            check(status == "ok" and twin == "", (model, order, placer, seed, status, twin))
            rl = WANG2022_RL if placer == "rl" else []
            sim = json.loads(ok(None, "simulate", "--model", model, "--order", order,
                                "--placer", placer, "--devices", "3", "--seed", str(seed),
                                "--device-preset", "h100", "--batch-size", "32", *rl,
                                "--format", "json").stdout)["simulation"]
            check(sim["step_time_s"] == step, (model, order, placer, seed, sim, step))
        with h5py.File(out, "r") as f:
            for g in f["configs"].values():
                a = g.attrs
                check(int(a["simulate_only"]) == 1 and a["rl_preset"] == "wang2022", dict(a))
                check("steps" not in g and "ranks" not in g and "node_names" not in g,
                      f"{g.name}: training data in a simulate-only configuration")
                if a["status"] != "ok":
                    continue
                check(float(a["placer_wall_s"]) >= 0.0 and "placement" in g, g.name)
                if a["placer"] != "rl":
                    check("placer_rl" not in g, g.name)
                    continue
                rl = g["placer_rl"]
                best = rl["best_step_time_s"][()]
                check(int(rl.attrs["episodes_run"]) == 50 and len(best) == 50 and
                      int(rl.attrs["evaluation_episodes"]) == 10, dict(rl.attrs))
                check(all(b >= c for b, c in zip(best, best[1:])), "best so far rises")
                check_described(rl)
        # Shards split the configurations; the skip is decided from the spec, not from what
        # a shard ran before.
        shards = [os.path.join(tmp, f"s{i}.h5") for i in range(2)]
        for i, path in enumerate(shards):
            ok(1, "sweep", spec, "--out", path, "--shard", f"{i}/2")
        merged = {**study_outcomes(shards[0]), **study_outcomes(shards[1])}
        check(merged == got, "shards decide otherwise than the whole sweep")
        # inspect shows the result, the simulated step (there is no measured one).
        listed = json.loads(ok(None, "inspect", out, "--format", "json").stdout)["configs"]
        with h5py.File(out, "r") as f:
            for c in listed:
                g = f["configs"][c["id"]]
                step = g["prediction"].attrs["step_time_s"] if "prediction" in g else None
                check(c["simulated_step_s"] == step and c["median_step_s"] is None, c)
        # Bad values name the key.
        bad = write(tmp, "bad.toml", ORDER_STUDY_SPEC.replace('"wang2022"', '"wang2021"'))
        fails(2, None, "sweep", bad, "--out", os.path.join(tmp, "bad.h5"),
              contains=("unknown rl preset 'wang2021'", "wang2022-placeto"))
        bad = write(tmp, "bad2.toml", ORDER_STUDY_SPEC.replace("simulate_only = 1",
                                                               "simulate_only = 2"))
        fails(2, None, "sweep", bad, "--out", os.path.join(tmp, "bad2.h5"),
              contains=("simulate_only must be in 0..1",))


def test_simulate_only_rl_coarse_to_fine_np1():
    """rl at its defaults and at the study's preset with coarse to fine (wang2022-fine) on a
    graph it groups (nmt:3, 2,000+ nodes): the result file records both levels
    (docs/results-format.md, placer_rl) and its step is `simulate`'s with the options
    spelled out."""
    if is_fake():
        raise Skip("the fake runner has no simulate command to compare with")
    import h5py
    with tempfile.TemporaryDirectory() as tmp:
        spec = write(tmp, "c2f.toml", """
models = ["nmt:3"]
devices = 3
orders = ["topo-lifo"]
placers = ["rl"]
simulate_only = 1
batch_size = 32
micro_batches = 1
seeds = [1]
rl_presets = ["default", "wang2022-fine"]
""")
        out = os.path.join(tmp, "c2f.h5")
        ok(1, "sweep", spec, "--out", out)
        with h5py.File(out, "r") as f:
            got = {g.attrs.get("rl_preset", "default"):
                   (dict(g["placer_rl"].attrs), g["prediction"].attrs["step_time_s"])
                   for g in f["configs"].values()}
        check(sorted(got) == ["default", "wang2022-fine"], sorted(got))
        for preset, flags in (("default", []),
                              ("wang2022-fine", WANG2022_RL[:-1] + ["5"])):
            rl, step = got[preset]
            check(rl["groups"] == 448 and rl["fine_groups"] == 1344 and
                  rl["fine_episodes_run"] == 5 and rl["episodes_run"] == 50, (preset, rl))
            sim = json.loads(ok(None, "simulate", "--model", "nmt:3", "--order", "topo-lifo",
                                "--placer", "rl", "--devices", "3", "--seed", "1",
                                "--batch-size", "32", *flags,
                                "--format", "json").stdout)["simulation"]
            check(sim["step_time_s"] == step, (preset, sim, step))


def test_simulate_only_plans_as_simulate_np1():
    """A simulate-only configuration runs on none of the job's ranks: its devices share a
    host as in `simulate` (all on one), whatever the job's layout; planned by a 1-rank job
    as a training configuration, its K = 2 devices would count as two hosts and the
    profile's host sharing would vanish."""
    if is_fake():
        raise Skip("the fake runner has no profile or simulate command")
    import h5py
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "plain.tsv")
        ok(None, "profile", "--model", "gpt-mini", "--batch-size", "32", "--threads", "1",
           "--repeats", "1", "--warmup", "0", "--out", plain)
        shared = os.path.join(tmp, "shared.tsv")
        with open(plain) as f, open(shared, "w") as g:
            g.write(f.read() + "host_sharing\t2\t1.0\t1.8\n")  # two computing: 1.8x slower

        def simulated(profile):
            return json.loads(ok(None, "simulate", "--model", "gpt-mini", "--order", "topo",
                                 "--placer", "greedy-eft", "--devices", "2", "--batch-size",
                                 "32", "--profile", profile, "--format",
                                 "json").stdout)["simulation"]["step_time_s"]
        check(simulated(shared) != simulated(plain), "the sharing factors change nothing")
        spec = write(tmp, "s.toml", 'model = "gpt-mini"\ndevices = 2\norder = "topo"\n'
                     'placer = "greedy-eft"\nsimulate_only = 1\nbatch_size = 32\n'
                     f'cost_device = "profile:{shared}"\n')
        out = os.path.join(tmp, "s.h5")
        ok(1, "sweep", spec, "--out", out)
        with h5py.File(out, "r") as f:
            (g,) = f["configs"].values()
            step = g["prediction"].attrs["step_time_s"]
        check(step == simulated(shared), (step, simulated(shared), simulated(plain)))


def test_merge_refusals():
    import shutil

    import h5py
    with tempfile.TemporaryDirectory() as tmp:
        spec = write(tmp, "one.toml", "model = \"resnet20\"\nsteps = 1\nbatch_size = 2\n")
        first = os.path.join(tmp, "first.h5")
        ok(1, "sweep", spec, "--out", first)
        fails(2, None, "merge", first, first, "-o", os.path.join(tmp, "m.h5"),
              contains=("is in both",))
        text = write(tmp, "notes.h5", "not a result file\n")
        fails(2, None, "merge", first, text, "-o", os.path.join(tmp, "m.h5"),
              contains=("is not an HDF5 file",))
        plain = os.path.join(tmp, "plain.h5")
        h5py.File(plain, "w").close()
        fails(2, None, "merge", first, plain, "-o", os.path.join(tmp, "m.h5"),
              contains=("not an interplace result file",))
        other = os.path.join(tmp, "other.h5")
        ok(1, "sweep", write(tmp, "two.toml", "model = \"resnet20\"\nsteps = 2\n"),
           "--out", other)
        with h5py.File(other, "r+") as f:
            f.attrs["format_version"] = 2
        # Versions 1 to 3 are read; merge refuses to mix versions (the output has one
        # layout) and --resume to add version-3 groups to an older file.
        fails(2, None, "merge", first, other, "-o", os.path.join(tmp, "m.h5"),
              contains=("version 2 but", "version 3", "one version only"))
        check("v2" in ok(None, "inspect", other).stdout, "inspect reads version 2")
        fails(2, 1, "sweep", write(tmp, "two.toml", "model = \"resnet20\"\nsteps = 2\n"),
              "--out", other, "--resume", contains=("version 2", "cannot add to an older"))
        newer = os.path.join(tmp, "newer.h5")
        shutil.copy(other, newer)
        with h5py.File(newer, "r+") as f:
            f.attrs["format_version"] = 4
        fails(2, None, "inspect", newer, contains=("version 4", "reads versions 1 to 3"))
        fails(2, None, "merge", first, "-o", first, contains=("exists already",))
        # Files of different sweeps: refused, since the output's spec would describe only
        # the first; merged on request, and the file says so.
        third = os.path.join(tmp, "third.h5")
        ok(1, "sweep", write(tmp, "three.toml", "model = \"resnet20\"\nsteps = 1\nbatch_size = 4\n"),
           "--out", third)
        fails(2, None, "merge", first, third, "-o", os.path.join(tmp, "m.h5"),
              contains=("comes from another sweep", "--allow-different-specs"))
        check(not os.path.exists(os.path.join(tmp, "m.h5")), "no output after a refusal")
        both = os.path.join(tmp, "both.h5")
        ok(None, "merge", first, third, "-o", both, "--allow-different-specs")
        with h5py.File(both, "r") as f:
            check(f.attrs["merged_different_specs"] == 1, "merged_different_specs recorded")
            check(len(f["configs"]) == 2, "both configurations merged")
        # Readers check the attributes they count: a damaged status names the file, the
        # group and the attribute (escaped), instead of counts that do not add up. Inspect
        # counts the summary table's rows when the table lists the groups, the groups
        # themselves when it does not (a file from before the table: here, deleted).
        for value, expected in (("bogus", "attribute 'status' is 'bogus'"),
                                ("ok\x1b[2J", "is 'ok\\x1b[2J'"),
                                (None, "attribute 'status' is missing")):
            for where in ("group", "summary"):
                damaged = os.path.join(tmp, "damaged.h5")
                shutil.copy(first, damaged)
                with h5py.File(damaged, "r+") as f:
                    if where == "group":
                        del f["summary"]
                        group = next(iter(f["configs"].values()))
                        if value is None:
                            del group.attrs["status"]
                        else:
                            group.attrs["status"] = value
                    else:
                        f["summary"]["status"][0] = "" if value is None else value
                fails(1, None, "inspect", damaged,
                      contains=(damaged, "/configs/", expected) +
                      (("/summary row 0",) if where == "summary" else ()))
                os.remove(damaged)
        # --resume continues a file as the shard it was made for, and nothing else.
        fails(2, 1, "sweep", spec, "--out", first, "--resume", "--shard", "0/2",
              contains=("holds shard 0/1", "HINT: resume with --shard 0/1"))
        fails(2, 1, "sweep", spec, "--out", both, "--resume",
              contains=("holds shard merged", "resume the shard files"))


def test_spec_errors_np2():
    with tempfile.TemporaryDirectory() as tmp:
        bad = write(tmp, "bad.toml", "models = [\"resnet20\"]\n\nplacers = [\"contiguous\", "
                                     "\"nowhere\"]\n")
        fails(2, 2, "sweep", bad, "--out", os.path.join(tmp, "x.h5"),
              contains=(f"{bad}:3: unknown placer 'nowhere'",))
        check(not os.path.exists(os.path.join(tmp, "x.h5")), "nothing written for a bad spec")
        fails(2, None, "sweep", write(tmp, "typo.toml", "stepz = 3\n"), "--dry-run",
              contains=("typo.toml:1: unknown key 'stepz'",))
        fails(2, None, "sweep", SMOKE, "--dry-run", "--shard", "2/2", contains=("--shard",))
        fails(2, None, "inspect", os.path.join(tmp, "missing.h5"), contains=("no such file",))


def test_dry_run_plans():
    """--dry-run plans every configuration without MPI: would run / would skip: reason."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = write(tmp, "small.toml", SMALL_SPEC)
        start = time.time()
        r = run(None, "sweep", spec, "--dry-run", "--format", "json")
        wall = time.time() - start
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        d = json.loads(r.stdout)
        check(d["ranks"] == 2 and d["ranks_needed"] == 2, f"ranks default to the largest devices: {d}")
        check(d["selected"] == 8 and len(d["configs"]) == 8, "8 configurations")
        outcomes = {(c["devices"], c["name"].split()[2], c["name"].split()[4]): c["outcome"]
                    for c in d["configs"]}
        skipped = [c for c in d["configs"] if c["outcome"] == "skip"]
        # As the run: local on the 2-device round-robin placement has no stage chain.
        check(len(skipped) == 1 and "local" in skipped[0]["reason"] and
              skipped[0]["devices"] == 2 and "round-robin" in skipped[0]["name"],
              f"one skip expected: {outcomes}")
        check(d["would_run"] == 7 and d["would_skip"] == 1 and d["would_fail"] == 0, f"{d}")
        check(d["reasons"] == [{"outcome": "would skip: " + skipped[0]["reason"], "count": 1}],
              f"reasons {d['reasons']}")
        # One rank: the 2-device configurations are skipped for the job's size.
        r = ok(None, "sweep", spec, "--dry-run", "--ranks", "1")
        check("would skip: needs 2 ranks, the job has 1" in r.stdout, r.stdout)
        check("4 would run, 4 would skip, 0 would fail" in r.stdout, r.stdout)
        check("ranks needed: 2" in r.stdout, r.stdout)
        # Nothing would run: exit 2, with the reasons.
        r = run(None, "sweep", spec, "--dry-run", "--ranks", "1", "devices=2")
        check(r.returncode == 2, f"nothing would run: exit {r.returncode}: {r.stdout} {r.stderr}")
        check("0 would run" in r.stdout and "needs 2 ranks, the job has 1" in r.stdout and
              "no configuration would run" in r.stderr, r.stdout + r.stderr)
        r = run(None, "sweep", spec, "--dry-run", "--format", "json", "devices=2",
                "strategy=local", "placer=round-robin")
        d = json.loads(r.stdout)
        check(r.returncode == 2 and d["would_run"] == 0 and d["would_skip"] == 1 and
              "local" in d["configs"][0]["reason"], f"exit {r.returncode}: {d}")
        # The same planning as the run: what the dry run says is what the file records.
        if is_fake():
            out = os.path.join(tmp, "small.h5")
            ok(2, "sweep", spec, "--out", out)
            groups = check_layout(out, spec, 2)
            planned = {c["id"]: c["outcome"] for c in json.loads(
                ok(None, "sweep", spec, "--dry-run", "--format", "json").stdout)["configs"]}
            for gid, a in groups.items():
                check({"ok": "run", "skipped": "skip", "failed": "fail"}[a["status"]] ==
                      planned[gid], f"{gid}: ran {a['status']}, planned {planned[gid]}")
        print(f"dry run of 8 configurations: {wall:.2f} s")


def test_filter_and_overrides_np2():
    import h5py
    with tempfile.TemporaryDirectory() as tmp:
        spec = write(tmp, "small.toml", SMALL_SPEC)
        # The filter searches the display name and the id.
        names = json.loads(ok(None, "sweep", spec, "--dry-run", "--format", "json",
                              "--filter", "round-robin K=2").stdout)["configs"]
        check(len(names) == 2 and all("round-robin K=2" in c["name"] for c in names),
              f"--filter on names: {names}")
        some_id = dry_run_ids(spec)[3]
        check(dry_run_ids(spec, "--filter", f"^{some_id}$") == [some_id], "--filter on ids")
        fails(2, None, "sweep", spec, "--dry-run", "--filter", "(", contains=("--filter",))
        # Overrides behave as the edited file: same configurations, same ids.
        edited = write(tmp, "edited.toml", SMALL_SPEC.replace("steps = 2", "steps = 1")
                       .replace('placers = ["contiguous", "round-robin"]', 'placers = ["stages"]'))
        check(dry_run_ids(spec, "steps=1", "placers=stages") == dry_run_ids(edited),
              "overrides = editing the file")
        check(dry_run_ids(spec, "devices=1,2") == dry_run_ids(spec), "devices=1,2 is a list")
        check(dry_run_ids(spec, "devices=[1, 2]") == dry_run_ids(spec), "TOML lists")
        check(len(dry_run_ids(spec, "models=resnet20,gpt-mini")) == 16, "models list")
        fails(2, None, "sweep", spec, "--dry-run", "stepz=3",
              contains=("override 'stepz=3': unknown key 'stepz' (valid: ", "steps",
                        "model_options.OPTION"))
        fails(2, None, "sweep", spec, "--dry-run", "steps=0",
              contains=("override 'steps=0': steps must be >= 1, got 0",))
        fails(2, None, "sweep", spec, "--dry-run", "placer=nowhere",
              contains=("override 'placer=nowhere': unknown placer 'nowhere'",))
        fails(2, None, "sweep", spec, "--dry-run", "steps",
              contains=("override 'steps': overrides are key=value",))

        # A run with both: the file records them, holds what the dry run lists.
        args = ["--filter", "contiguous", "steps=1", "seed=5"]
        out = os.path.join(tmp, "f.h5")
        ok(2, "sweep", spec, "--out", out, *args)
        groups = check_layout(out, spec, 2)
        check(sorted(groups) == sorted(dry_run_ids(spec, *args)), "the filtered configurations")
        check(len(groups) == 4 and all(a["steps"] == 1 and a["seed"] == 5 and
                                       a["placer"] == "contiguous" for a in groups.values()),
              "overrides applied")
        with h5py.File(out, "r") as f:
            check(list(f.attrs["overrides"]) == ["steps=1", "seed=5"],
                  f"overrides {f.attrs['overrides']!r}")
            check(f.attrs["filter"] == "contiguous", f"filter {f.attrs['filter']!r}")
        # --resume with another set is refused; with the same, nothing is left to do.
        for other in (["--filter", "contiguous", "steps=1"], ["steps=1", "seed=5"],
                      ["--filter", "contiguous", "seed=5", "steps=1"]):
            fails(2, 2, "sweep", spec, "--out", out, "--resume", *other,
                  contains=("--resume needs the same",))
        r = ok(2, "sweep", spec, "--out", out, "--resume", *args)
        check("resuming: 4 of 4" in r.stderr, r.stderr)
        check(sorted(check_layout(out, spec, 2)) == sorted(groups), "nothing added")


def signal_sweep(tmp, sig, to_ranks):
    """Starts SMALL_SPEC under mpirun -np 2, sends `sig` once the file holds one
    configuration and rank 0 has logged the start of another (so one is in flight), to
    mpirun or to the ranks as Slurm does, and returns (process result, configurations in
    the file when signalled, spec, out)."""
    spec = write(tmp, "small.toml", SMALL_SPEC)
    out = os.path.join(tmp, "small.h5")
    cmd = [*MPIRUN, "-np", "2", BINARY, "sweep", spec, "--out", out, *slow_overrides()]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env("0.3"), start_new_session=True)
    # stderr is not a terminal, so rank 0 logs "<time> start [i/8] <name>" before each
    # configuration: wait for a start line after the first configuration is in the file.
    deadline = time.time() + 120
    head = []
    while True:
        line = proc.stderr.readline()
        check(line != "" or proc.poll() is None, "the sweep ended before it could be signalled")
        check(time.time() < deadline, "no configuration started in time")
        head.append(line)
        if " start [" in line and count_configs(out) >= 1:
            break
    if to_ranks:
        ranks = [pid for pid in session_processes(proc.pid) if pid != proc.pid]
        check(len(ranks) >= 2, f"rank processes: {ranks}")
        for pid in ranks:
            os.kill(pid, sig)
    else:
        os.kill(proc.pid, sig)
    at_signal = count_configs(out)
    stdout, stderr = proc.communicate(timeout=120)
    return (subprocess.CompletedProcess(cmd, proc.returncode, stdout, "".join(head) + stderr),
            at_signal, spec, out)


def check_resume_completes(spec, out, kept):
    import h5py
    with h5py.File(out, "r") as f:
        started = {gid: g.attrs["started_utc"] for gid, g in f["configs"].items()}
    check(len(started) == kept, f"{len(started)} configurations in the file, {kept} said kept")
    r = ok(2, "sweep", spec, "--out", out, "--resume", *slow_overrides(), step_s="0.02")
    check(f"resuming: {kept} of 8 configurations already in the file" in r.stderr, r.stderr)
    groups = check_layout(out, spec, 2)
    check(sorted(groups) == sorted(dry_run_ids(spec, *slow_overrides())),
          "every configuration exactly once")
    for gid, when in started.items():
        check(groups[gid]["started_utc"] == when, f"{gid} was run again")


def kept_count(stderr, sig_name):
    import re
    m = re.search(sig_name + r": stopped[^\n]*; kept (\d+) of 8 configurations in (\S+); "
                  r"resume with: interplace sweep \S+ (steps=20 )?--out \S+ --resume", stderr)
    check(m is not None, f"no '{sig_name}: stopped ... kept N of 8 ... resume with' line: {stderr}")
    return int(m.group(1))


def test_sigusr1_finishes_current_np2():
    """SIGUSR1 (Slurm's warning; mpirun forwards it): the configuration in flight is
    finished, then every rank stops at the same boundary; exit 3; resume completes."""
    with tempfile.TemporaryDirectory() as tmp:
        r, at_signal, spec, out = signal_sweep(tmp, signal.SIGUSR1, to_ranks=False)
        check(r.returncode == 3, f"exit {r.returncode}, not 3: {r.stderr}")
        kept = kept_count(r.stderr, "SIGUSR1")
        check(kept == at_signal + 1 and kept < 8,
              f"the configuration in flight is finished: {at_signal} at the signal, kept {kept}")
        check("stopped by SIGUSR1, resumable" in r.stdout, r.stdout)
        check_layout(out, spec, 2)
        check_resume_completes(spec, out, kept)


def test_sigterm_abandons_current_np2():
    """SIGTERM to every rank (as Slurm's scancel or time limit): the configuration in flight
    is abandoned, none is written partly; exit 3; resume completes."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.time()
        r, at_signal, spec, out = signal_sweep(tmp, signal.SIGTERM, to_ranks=True)
        stop_s = time.time() - start
        check(r.returncode == 3, f"exit {r.returncode}, not 3: {r.stderr}")
        kept = kept_count(r.stderr, "SIGTERM")
        check(kept == at_signal, f"abandoned: {at_signal} at the signal, kept {kept}")
        check("the configuration in flight abandoned" in r.stderr, r.stderr)
        check(not os.path.exists(out + ".tmp") or count_configs(out) == kept, "no partial record")
        check_layout(out, spec, 2)
        check_resume_completes(spec, out, kept)
        print(f"SIGTERM: stopped {stop_s:.1f} s after the start, {kept} kept")


def set_binary(path):
    global BINARY
    BINARY = path


if __name__ == "__main__":
    run_cases(globals(), __doc__, set_binary)
