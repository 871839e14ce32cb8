#!/usr/bin/env python3
"""The importers (importers/interplace_importers) and graph files through the real binary:
torchvision models to graph files with torchvision's parameter counts, ONNX beside PyTorch,
the zoo exported and re-imported, bad files refused, and an imported model through
simulate, a simulate-only sweep (the order study), profile, train on 2 ranks and a sweep to
the recommendation table.

Usage: test_importers.py BINARY CASE   (CTest runs one case per test; tests/importers/)
       test_importers.py BINARY --list
Runs on /usr/bin/python3 with Debian's python3-torch, python3-torchvision and python3-onnx
(scripts/install-deps); the analysis report uses the project's venv (INTERPLACE_ANALYSIS_PYTHON).
"""
import json
import os
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "runs"))
sys.path.insert(0, os.path.join(ROOT, "importers"))
sys.path.insert(0, HERE)
from case_runner import Skip, run_cases  # noqa: E402

BINARY = None
TMP = tempfile.mkdtemp(prefix="interplace-importers-")
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(
                   [os.path.join(ROOT, "importers"), HERE, os.environ.get("PYTHONPATH", "")]))
MPIEXEC = os.environ.get("INTERPLACE_MPIEXEC", "mpirun")
# Published parameter counts (torchvision's documentation), at 1000 classes.
TORCHVISION_PARAMETERS = {"resnet18": 11_689_512, "mobilenet_v3_small": 2_542_856,
                          "inception_v3": 23_834_568}

warnings.filterwarnings("ignore")


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def run(*args, env=None, timeout=300, cwd=None):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, env=env or MPI_ENV, cwd=cwd)


def ok(*args, **kw):
    r = run(*args, **kw)
    check(r.returncode == 0, f"{args}: exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def interplace(*args, **kw):
    return ok(BINARY, *args, **kw)


def fails(code, *args, contains=()):
    r = run(BINARY, *args)
    check(r.returncode == code, f"{args}: exit {r.returncode}, expected {code}: {r.stderr}")
    check(r.stdout == "", f"{args}: stdout on error: {r.stdout[:200]}")
    lines = r.stderr.splitlines()
    check(len(lines) == 1 and lines[0].startswith("interplace: error: "), f"{args}: {lines}")
    for text in contains:
        check(text in lines[0], f"{args}: error lacks {text!r}: {lines[0]}")
    return lines[0]


def graph_json(*selection):
    return json.loads(interplace("graph", *selection, "--format", "json").stdout)


def torchvision_model(name, **kwargs):
    import torchvision
    if name == "inception_v3":
        kwargs.update(aux_logits=False, init_weights=False)
    return getattr(torchvision.models, name)(weights=None, **kwargs)


def import_torchvision(name, input_shape, **kwargs):
    """The model, its graph builder and the graph file written from it."""
    from interplace_importers.from_torch import import_module
    model = torchvision_model(name, **kwargs)
    builder = import_module(model, input_shape, name, family="torchvision")
    path = os.path.join(TMP, f"{name}.json")
    builder.write(path)
    return model, builder, path


def importer_cli(*args):
    return ok(sys.executable, "-m", "interplace_importers", *args)


def test_torchvision_parameter_counts():
    for name, shape, opaque in [("resnet18", (3, 64, 64), set()),
                                ("mobilenet_v3_small", (3, 64, 64),
                                 {"hardswish", "hardsigmoid", "adaptiveavgpool2d", "mul"}),
                                ("inception_v3", (3, 299, 299), set())]:
        model, builder, path = import_torchvision(name, shape)
        expected = sum(p.numel() for p in model.parameters())
        check(expected == TORCHVISION_PARAMETERS[name], f"{name}: torchvision has {expected}")
        check(builder.parameter_count() == expected,
              f"{name}: imported {builder.parameter_count()} parameters, torchvision {expected}")
        g = graph_json("--graph-file", path, "--batch-size", "1")
        check(g["parameter_count"] == expected, f"{name}: interplace reads {g['parameter_count']}")
        check(g["family"] == "torchvision" and g["reference_parameters"] is None, g["family"])
        check(set(builder.opaque_ops) == opaque, f"{name}: opaque {builder.opaque_ops.keys()}")
        check(len(g["opaque_nodes"]) == sum(len(v) for v in builder.opaque_ops.values()),
              f"{name}: {len(g['opaque_nodes'])} opaque nodes")


def test_inception_matches_the_zoo():
    """The branching model: torchvision's Inception-v3 imported costs what the zoo's does."""
    _, _, path = import_torchvision("inception_v3", (3, 299, 299))
    imported = graph_json("--graph-file", path, "--batch-size", "2")
    zoo = graph_json("--model", "inception_v3", "--batch-size", "2")
    for key in ("parameter_count", "forward_flops", "backward_flops"):
        check(imported[key] == zoo[key], f"{key}: imported {imported[key]}, zoo {zoo[key]}")
    concat = [n for n in imported["graph"]["nodes"] if n["op"] == "concat"]
    check(len(concat) == 15 and max(len(n["inputs"]) for n in concat) == 4, "branches")


def test_onnx_matches_torch():
    import torch
    from interplace_importers.from_onnx import import_onnx
    for name in ("resnet18", "mobilenet_v3_small"):
        model = torchvision_model(name).train()
        onnx_path = os.path.join(TMP, f"{name}.onnx")
        torch.onnx.export(model, torch.zeros(1, 3, 64, 64), onnx_path,
                          training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                          opset_version=13, input_names=["input"])
        builder = import_onnx(onnx_path, name)
        expected = TORCHVISION_PARAMETERS[name]
        check(builder.parameter_count() == expected,
              f"{name} (onnx): {builder.parameter_count()} parameters, torchvision {expected}")
        path = os.path.join(TMP, f"{name}-onnx.json")
        builder.write(path)
        from_onnx = graph_json("--graph-file", path, "--batch-size", "1")
        check(from_onnx["parameter_count"] == expected, f"{name}: {from_onnx['parameter_count']}")
        if name == "resnet18":  # every op mapped both ways: the same costs
            _, _, torch_path = import_torchvision(name, (3, 64, 64))
            from_torch = graph_json("--graph-file", torch_path, "--batch-size", "1")
            for key in ("forward_flops", "backward_flops", "activation_bytes"):
                check(from_onnx[key] == from_torch[key], f"{key}: onnx {from_onnx[key]}, "
                      f"torch {from_torch[key]}")
            check(from_onnx["opaque_nodes"] == [], from_onnx["opaque_nodes"])
    r = importer_cli("onnx", os.path.join(TMP, "mobilenet_v3_small.onnx"), "--out",
                     os.path.join(TMP, "mv3-cli.json"))
    check("2,542,856 parameters" in r.stdout and "HardSigmoid" in r.stderr, r.stdout + r.stderr)


def test_zoo_round_trip():
    """The zoo exported (graph --save-graph), its kernel-layer costs recounted by the
    importers' formulas, written again by them and read back: the same graph."""
    from interplace_importers.graph import GraphBuilder, kernel_costs
    models = ["resnet20", "mobilenet_v2-small", "inception_v3-small", "nasnet_a_mobile-small",
              "vgg16-small", "resnet50-small", "enas-cnn-small:3", "gpt-mini", "nmt-small:2"]
    for model in models:
        exported = os.path.join(TMP, f"zoo-{model}.json")
        interplace("graph", "--model", model, "--batch-size", "4", "--save-graph", exported,
                   "--format", "json")
        with open(exported) as f:
            doc = json.load(f)
        rebuilt = GraphBuilder(doc["name"], doc["batch_size"], family=doc["family"])
        recounted = 0
        for node in doc["nodes"]:
            shapes = [doc["nodes"][i]["output_shape"] for i in node["inputs"]]
            try:
                if node["op"] == "input":
                    raise ValueError("no layer")
                out, forward, backward, grad, params = kernel_costs(node["op"], node["attributes"],
                                                                    shapes)
            except ValueError:
                out = None  # an op the importers never map (embedding, attention, ...)
            if out is not None:
                recounted += 1
                check([out, forward, backward, grad, params] ==
                      [node["output_shape"], node["forward_flops"], node["backward_flops"],
                       node["parameter_grad_flops"], node["parameter_count"]],
                      f"{model}: node {node['name']}: importers count {out, forward, backward, grad, params}")
            rebuilt._add(node["name"], node["op"], node["inputs"], node["output_shape"],
                         node["forward_flops"], node["backward_flops"],
                         node["parameter_grad_flops"], node["parameter_count"], node["attributes"])
        check(recounted > len(doc["nodes"]) // 3, f"{model}: only {recounted} nodes recounted")
        again = os.path.join(TMP, f"zoo-{model}-again.json")
        rebuilt.write(again)
        original = graph_json("--model", model, "--batch-size", "4")
        reread = graph_json("--graph-file", again, "--batch-size", "4")
        check(reread["graph"]["node_count"] == original["graph"]["node_count"], model)
        for key in ("parameter_count", "forward_flops", "backward_flops", "activation_bytes"):
            check(reread[key] == original[key], f"{model}: {key} {reread[key]} != {original[key]}")
        check(reread["graph"]["nodes"] == original["graph"]["nodes"], f"{model}: nodes differ")
        check(reread["family"] == original["family"], reread["family"])


BAD_FILES = [
    # (name, edit of a valid graph file, fragment of the error)
    ("cycle", lambda g: g["nodes"][1].update(inputs=[2]) or g["edges"].remove([0, 1])
     or g["edges"].append([2, 1]), "the graph has a cycle"),
    ("dangling_edge", lambda g: g["edges"].append([0, 999]), "is dangling: there is no node 999"),
    ("unknown_op", lambda g: g["nodes"][3].update(op="hardswish"),
     "unknown op type 'hardswish'"),
    ("negative_cost", lambda g: g["nodes"][2].update(backward_flops=-1), "backward_flops"),
    ("huge_shape", lambda g: g["nodes"][0].update(output_shape=[1, 1 << 30, 1 << 20]),
     "more than 1099511627776 elements"),
    ("duplicate_name", lambda g: g["nodes"][2].update(name=g["nodes"][1]["name"]),
     "duplicate node name"),
    ("wrong_costs", lambda g: g["nodes"][1].update(forward_flops=1),
     "differs from the conv2d kernel layer's"),
    ("version", lambda g: g.update(format_version=7), "format_version 7"),
]


def test_bad_graph_files():
    path = os.path.join(TMP, "good.json")
    interplace("graph", "--model", "resnet20", "--batch-size", "1", "--save-graph", path)
    for name, edit, fragment in BAD_FILES:
        with open(path) as f:
            doc = json.load(f)
        edit(doc)
        bad = os.path.join(TMP, f"bad-{name}.json")
        with open(bad, "w") as f:
            json.dump(doc, f)
        for command in (["graph"], ["simulate", "--order", "topo", "--placer", "contiguous",
                                    "--devices", "2"]):
            fails(2, *command, "--graph-file", bad, contains=(f"graph file '{bad}'", fragment))
    deep = os.path.join(TMP, "deep.json")
    with open(deep, "w") as f:
        f.write("[" * 100000 + "]" * 100000)
    fails(2, "graph", "--graph-file", deep, contains=("nested more than 16 levels",))
    fails(2, "graph", "--graph-file", "/dev/zero", contains=("not a regular file",))
    fails(2, "graph", "--graph-file", path, "--model", "resnet20", contains=("give one",))
    fails(2, "graph", "--graph-file", path, "--image-size", "32",
          contains=("--image-size does not apply to a graph file",))
    spec = os.path.join(TMP, "bad.toml")
    with open(spec, "w") as f:
        f.write(f'steps = 2\ngraph_file = "{os.path.join(TMP, "bad-cycle.json")}"\n')
    fails(2, "sweep", spec, "--dry-run", contains=(f"{spec}:2", "cycle"))
    with open(spec, "w") as f:
        f.write(f'model = "resnet20"\ngraph_file = "{path}"\n')
    fails(2, "sweep", spec, "--dry-run", contains=("'model' or 'graph_file', not both",))


def test_imported_model_simulate_order_study_and_refused_training():
    path = os.path.join(TMP, "mv3.json")
    r = importer_cli("torchvision", "mobilenet_v3_small", "--input-shape", "3,32,32",
                     "--num-classes", "10", "--out", path)
    check("hardswish" in r.stderr and "opaque" in r.stderr, f"no warning: {r.stderr}")
    sim = json.loads(interplace("simulate", "--graph-file", path, "--order", "topo", "--placer",
                                "contiguous", "--devices", "2", "--batch-size", "8",
                                "--micro-batches", "2", "--format", "json").stdout)
    check(sim["model"] == "mobilenet_v3_small" and sim["simulation"]["step_time_s"] > 0, sim)
    # The traversal-order study is a simulate-only sweep: it takes the graph with its
    # opaque ops (training refuses them, below).
    spec = os.path.join(TMP, "study.toml")
    with open(spec, "w") as f:
        f.write(f'graph_file = "{path}"\norders = ["topo", "lexical"]\ndevices = 2\n'
                'placer = "rl"\nrl_preset = "wang2022"\nsimulate_only = 1\nbatch_size = 8\n'
                'seeds = [1, 2]\n')
    study = os.path.join(TMP, "study.h5")
    interplace("sweep", spec, "--out", study)
    out = json.loads(interplace("inspect", study, "--format", "json").stdout)
    check([c["status"] for c in out["configs"]] == ["ok"] * 4 and
          all(c["name"].startswith("mobilenet_v3_small ") for c in out["configs"]), out)
    line = fails(2, "train", "--graph-file", path, "--batch-size", "4", "--steps", "1",
                 contains=("cannot train graph 'mobilenet_v3_small'", "hardswish",
                           "no kernel layer"))
    check("features.0.2" in line, line)
    profile = os.path.join(TMP, "mv3.tsv")
    r = interplace("profile", "--graph-file", path, "--batch-size", "2", "--out", profile,
                   "--repeats", "1", "--warmup", "0", "--threads", "1")
    check("estimated, not measured" in r.stdout and os.path.exists(profile), r.stdout)
    interplace("simulate", "--graph-file", path, "--batch-size", "2", "--profile", profile,
               "--order", "topo", "--placer", "contiguous", "--devices", "2")


def test_train_resnet18_np2():
    _, builder, path = import_torchvision("resnet18", (3, 32, 32), num_classes=10)
    check(builder.opaque_ops == {}, builder.opaque_ops)
    r = ok(MPIEXEC, "--oversubscribe", "-np", "2", BINARY, "train", "--graph-file", path,
           "--batch-size", "4", "--steps", "2", "--threads-per-rank", "1", "--placer", "stages",
           "--strategy", "local")
    header = r.stdout.splitlines()[0]
    check(header.startswith("resnet18 topo stages K=2 local") and "(11181642 parameters)" in header,
          header)
    check("median step" in r.stdout, r.stdout)
    # Its profile: every node measured, and the calibration run through the runtime.
    profile = os.path.join(TMP, "resnet18.tsv")
    r = interplace("profile", "--graph-file", path, "--batch-size", "2", "--repeats", "1",
                   "--warmup", "0", "--threads", "1", "--out", profile)
    check("runtime on 1 rank, whole model (calibration)" in r.stdout
          and "estimated" not in r.stdout, r.stdout)
    interplace("simulate", "--graph-file", path, "--batch-size", "2", "--profile", profile,
               "--order", "topo", "--placer", "stages", "--devices", "2")


def test_torchvision_resnet18_sweep_to_recommendations_np2():
    """docs/your-network.md's worked example, shortened: the committed import of torchvision's
    ResNet-18 swept on 2 ranks by the committed spec (2 steps, 1 repeat, its profile measured
    by the job: profile:auto), then the report's recommendation table names its family."""
    out = os.path.join(TMP, "resnet18.h5")
    ok(MPIEXEC, "--oversubscribe", "-np", "2", BINARY, "sweep",
       "importers/examples/resnet18-sweep.toml", "steps=2", "repeats=1", "warmup_steps=0",
       "cost_device=profile:auto",  # the job profiles the imported network itself
       "--out", out, timeout=600, cwd=ROOT)
    files = json.loads(interplace("inspect", out, "--format", "json").stdout)
    # Local strategies are skipped where the placement is no stage chain (which cuts the
    # measured profile's costs give: contiguous may cut across a downsampling shortcut).
    statuses = sorted(c["status"] for c in files["configs"])
    check(statuses.count("ok") >= 5 and set(statuses) <= {"ok", "skipped"}, statuses)
    for c in files["configs"]:
        check(c["status"] == "ok" or "cannot run on this placement" in c["reason"], c)
    check(all(c["name"].startswith("resnet18-cifar10 ") for c in files["configs"]), files)
    python = os.environ.get("INTERPLACE_ANALYSIS_PYTHON") or os.path.join(ROOT, ".venv/bin/python")
    report = os.path.join(TMP, "report18")
    ok(python, "-m", "interplace_analysis", "report", out, "--out", report, "--quiet")
    with open(os.path.join(report, "tables", "recommendations.md")) as f:
        table = f.read()
    row = [line for line in table.splitlines() if line.startswith("| torchvision |")]
    check(len(row) == 1 and ("| stages |" in row[0] or "| contiguous |" in row[0]), table)
    print(table)


def test_fashion_mnist_sweep_to_recommendations_np2():
    if not os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
        raise AssertionError("dataset-fashion-mnist is not installed (scripts/install-deps)")
    path = os.path.join(TMP, "fashion_cnn.json")
    r = importer_cli("module", "small_nets:fashion_cnn", "--input-shape", "1,28,28",
                     "--out", path)
    check("fashion_cnn: 12 nodes" in r.stdout and r.stderr == "", r.stdout + r.stderr)
    spec = os.path.join(TMP, "fashion.toml")
    with open(spec, "w") as f:
        f.write(f'graph_file = "{path}"\ndataset = "fashion-mnist"\ndevices = 2\n'
                'orders = ["topo", "dfs-pre"]\nplacers = ["contiguous", "stages"]\n'
                'strategies = ["global", "local"]\nmicro_batches = 2\nbatch_size = 16\n'
                'steps = 3\neval_samples = 32\nthreads_per_rank = 1\n')
    plan = json.loads(interplace("sweep", spec, "--dry-run", "--format", "json").stdout)
    for c in plan["configs"]:
        check(f"graph_file={path}\ngraph_digest=" in c["canonical_parameters"], c)
    out = os.path.join(TMP, "fashion.h5")
    ok(MPIEXEC, "--oversubscribe", "-np", "2", BINARY, "sweep", spec, "--out", out, timeout=600)
    files = json.loads(interplace("inspect", out, "--format", "json").stdout)
    statuses = [c["status"] for c in files["configs"]]
    check(statuses.count("ok") >= 6 and "failed" not in statuses, statuses)
    check(all(c["name"].startswith("fashion_cnn ") for c in files["configs"]), files)
    python = os.environ.get("INTERPLACE_ANALYSIS_PYTHON") or os.path.join(ROOT, ".venv/bin/python")
    report = os.path.join(TMP, "report")
    ok(python, "-m", "interplace_analysis", "report", out, "--out", report, "--quiet")
    with open(os.path.join(report, "tables", "recommendations.md")) as f:
        table = f.read()
    check("torch" in table and ("topo" in table or "dfs-pre" in table), table)
    print(table)


def test_committed_examples_are_current():
    """importers/examples/*.json (docs/your-network.md reads them) are what the importer
    writes today."""
    for name, model in [("resnet18-cifar10", "resnet18"),
                        ("mobilenet_v3_small-cifar10", "mobilenet_v3_small")]:
        path = os.path.join(TMP, f"{name}.json")
        importer_cli("torchvision", model, "--input-shape", "3,32,32", "--num-classes", "10",
                     "--name", name, "--out", path)
        with open(path) as new, open(os.path.join(ROOT, "importers", "examples",
                                                  f"{name}.json")) as committed:
            check(json.load(new) == json.load(committed),
                  f"importers/examples/{name}.json is stale: regenerate it (docs/your-network.md)")
    # The nn.TransformerEncoder model at modules:3, the torch plan's worked example, and the
    # GPT-2-style decoder one node per block, the torch runtime's example.
    for name, what, shape, extra in [
            ("transformer_encoder-blocks", "small_nets:transformer_encoder", "8,16",
             ["--granularity", "modules:3"]),
            ("gpt2_tiny-blocks", "interplace_importers.example_nets:gpt2_tiny", "32",
             ["--granularity", "modules:2", "--input-dtype", "int64"])]:
        path = os.path.join(TMP, f"{name}.json")
        importer_cli("module", what, "--input-shape", shape, *extra, "--name", name,
                     "--out", path)
        with open(path) as new, open(os.path.join(ROOT, "importers", "examples",
                                                  f"{name}.json")) as committed:
            check(json.load(new) == json.load(committed),
                  f"importers/examples/{name}.json is stale: regenerate it "
                  f"(docs/your-network.md)")


def import_timed(model, input_shape, name, granularity="ops", **kwargs):
    """import_module with its wall time (s), the builder written to TMP: (builder, path, s)."""
    import time
    from interplace_importers.from_torch import import_module
    start = time.monotonic()
    builder = import_module(model, input_shape, name, granularity=granularity, **kwargs)
    seconds = time.monotonic() - start
    path = os.path.join(TMP, f"{name}-{granularity.replace(':', '')}.json")
    builder.write(path)
    print(f"{name} --granularity {granularity}: {len(builder.nodes)} nodes, "
          f"{builder.parameter_count():,} parameters, imported in {seconds:.1f} s")
    return builder, path, seconds


def check_blocks(builder, blocks, attention, mlp):
    """Every block path of `blocks` has an attention node (module under block + attention,
    a self_attention kernel node or a matmul) and MLP linear nodes (module under block + mlp);
    no node holds more than half the parameters (no opaque whole)."""
    total = builder.parameter_count()
    for block in blocks:
        inside = [n for n in builder.nodes if n.get("module", "").startswith(block + ".")]
        attn = [n for n in inside if n["module"].startswith(f"{block}.{attention}")
                and (n["op"] == "self_attention"
                     or n["attributes"].get("source_op") in ("matmul", "linear")
                     or n["op"] == "linear")]
        ffn = [n for n in inside if n["module"].startswith(f"{block}.{mlp}")
               and n["op"] == "linear"]
        check(attn, f"{builder.name}: no attention node under {block}.{attention}")
        check(len(ffn) >= 2, f"{builder.name}: {len(ffn)} MLP linear nodes under {block}.{mlp}")
    biggest = max(builder.nodes, key=lambda n: n["parameter_count"])
    check(biggest["parameter_count"] <= total // 2,
          f"{builder.name}: node {biggest['name']} holds {biggest['parameter_count']} of {total}")


def check_fused_blocks(builder, blocks, kind):
    """modules:D: one fused node per block, its module the block's path, its class `kind`."""
    fused = {n["module"]: n for n in builder.nodes if n["attributes"].get("source_op") == kind}
    check(sorted(fused) == sorted(blocks), f"{builder.name}: fused {sorted(fused)}")
    check(all(n["attributes"]["fused_nodes"] > 3 for n in fused.values()), fused)


def place_and_simulate(path, devices=4, micro_batches=4):
    """The graph through the binary: read (its modules kept), placed by greedy-eft on h100s
    and simulated as stages under 1F1B."""
    g = graph_json("--graph-file", path, "--batch-size", "4")
    with open(path) as f:
        modules = [n.get("module") for n in json.load(f)["nodes"]]
    check([n.get("module") for n in g["graph"]["nodes"]] == modules, "modules not kept")
    placed = json.loads(interplace("place", "--graph-file", path, "--batch-size", "8",
                                   "--micro-batches", str(micro_batches), "--order",
                                   "topo", "--placer", "greedy-eft", "--devices", str(devices),
                                   "--device-preset", "h100", "--format", "json").stdout)
    sim = json.loads(interplace("simulate", "--graph-file", path, "--batch-size", "8",
                                "--micro-batches", str(micro_batches), "--order", "topo",
                                "--placer", "stages",
                                "--devices", str(devices), "--pipeline", "1f1b",
                                "--device-preset", "h100", "--format", "json").stdout)
    check(sim["simulation"]["step_time_s"] > 0, sim)
    return placed, sim


def vit_small():
    """vit_b_16's encoder (12 blocks of 768, 12 heads, MLP 3072) on 32x32 images in 8x8
    patches: the import and the placement of the full model at 17 tokens."""
    import torchvision
    return torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=12,
                                                num_heads=12, hidden_dim=768, mlp_dim=3072)


VIT_BLOCKS = [f"encoder.layers.encoder_layer_{i}" for i in range(12)]


def test_vit_small_per_block():
    """torchvision's VisionTransformer (vit_b_16's encoder at 32x32, patch 8): through the
    concrete tracer (fx stopped at `n, c, h, w = x.shape`), a node per attention and per MLP
    linear of every block at ops, one node per block at modules:3; torch's parameters."""
    model = vit_small()
    expected = sum(p.numel() for p in model.parameters())
    ops, path, _ = import_timed(model, (3, 32, 32), "vit_small")
    check(ops.parameter_count() == expected, f"{ops.parameter_count()} != {expected}")
    check_blocks(ops, VIT_BLOCKS, "self_attention", "mlp")
    attention = [n for n in ops.nodes if n["op"] == "self_attention"]
    check(len(attention) == 12 and all(n["attributes"] == {"dim": 768, "heads": 12}
                                       for n in attention), attention[:1])
    place_and_simulate(path)
    blocks, path, _ = import_timed(model, (3, 32, 32), "vit_small", granularity="modules:3")
    check(blocks.parameter_count() == expected, blocks.parameter_count())
    check_fused_blocks(blocks, VIT_BLOCKS, "EncoderBlock")
    check(sum(n["forward_flops"] for n in blocks.nodes) == sum(n["forward_flops"]
                                                              for n in ops.nodes), "flops")
    placed, sim = place_and_simulate(path)
    g = graph_json("--graph-file", path, "--batch-size", "1")
    check(g["parameter_count"] == expected and g["graph"]["node_count"] == len(blocks.nodes), g)


def test_vit_b_16_at_224():
    """torchvision's vit_b_16 itself at 3x224x224 (197 tokens), ops, placed and simulated;
    skipped when its import takes over 45 s here (a loaded machine)."""
    import torchvision
    model = torchvision.models.vit_b_16(weights=None)
    builder, path, seconds = import_timed(model, (3, 224, 224), "vit_b_16")
    check(builder.parameter_count() == 86_567_656, builder.parameter_count())
    check_blocks(builder, VIT_BLOCKS, "self_attention", "mlp")
    if seconds > 45:
        raise Skip(f"the import took {seconds:.0f} s (a loaded machine)")
    place_and_simulate(path)


def test_swin_t():
    """torchvision's swin_t at 3x224x224: its shifted-window attention (a torch.fx.wrap'd
    function, one opaque node under symbolic_trace) traced into its linear, matmul and
    softmax ops; a fused node per Swin block at modules:3; torch's 28,288,354 parameters."""
    import torchvision
    model = torchvision.models.swin_t(weights=None)
    blocks = [f"features.{stage}.{i}" for stage, depth in ((1, 2), (3, 2), (5, 6), (7, 2))
              for i in range(depth)]
    ops, path, _ = import_timed(model, (3, 224, 224), "swin_t")
    check(ops.parameter_count() == 28_288_354, ops.parameter_count())
    check_blocks(ops, blocks, "attn", "mlp")
    matmuls = [n for n in ops.nodes if n["attributes"].get("source_op") == "matmul"]
    check(len(matmuls) == 2 * len(blocks), f"{len(matmuls)} matmuls")
    place_and_simulate(path)
    from interplace_importers.from_torch import coarsen_to_modules
    fused = coarsen_to_modules(ops, 3)  # what granularity="modules:3" does, without a new trace
    path = os.path.join(TMP, "swin_t-modules3.json")
    fused.write(path)
    print(f"swin_t --granularity modules:3: {len(fused.nodes)} nodes")
    check(fused.parameter_count() == 28_288_354, fused.parameter_count())
    check_fused_blocks(fused, blocks, "SwinTransformerBlock")
    place_and_simulate(path)


def test_transformer_encoder_trains():
    """A model of torch's own nn.TransformerEncoder (4 layers; fx made it 5 nodes, the
    encoder one): at ops every op a kernel layer (nn.MultiheadAttention as self_attention),
    a node per attention and per MLP linear, torch's parameters; placed, simulated and
    trained 1 step by the binary; at modules:3 one node per encoder layer."""
    import small_nets
    model = small_nets.transformer_encoder()
    expected = sum(p.numel() for p in model.parameters())
    blocks = [f"encoder.layers.{i}" for i in range(4)]
    ops, path, _ = import_timed(model, (8, 16), "transformer_encoder")
    check(ops.parameter_count() == expected, f"{ops.parameter_count()} != {expected}")
    check(ops.opaque_ops == {}, ops.opaque_ops)
    check_blocks(ops, blocks, "self_attn", "linear")
    check(len(ops.nodes) == 4 + 11 * 4, len(ops.nodes))  # input, embed, select, head
    place_and_simulate(path, devices=2, micro_batches=2)
    r = interplace("train", "--graph-file", path, "--batch-size", "4", "--steps", "1",
                   "--threads-per-rank", "1")
    check("step 1: loss" in r.stdout and "median step" in r.stdout, r.stdout)
    fused, path, _ = import_timed(model, (8, 16), "transformer_encoder", granularity="modules:3")
    check(len(fused.nodes) == 8 and fused.parameter_count() == expected, fused.nodes)
    check_fused_blocks(fused, blocks, "TransformerEncoderLayer")
    place_and_simulate(path, devices=2, micro_batches=2)
    fails(2, "train", "--graph-file", path, "--batch-size", "4", "--steps", "1",
          contains=("TransformerEncoderLayer x4",))


def test_granularity_cli_and_checks():
    """--granularity on the command line (and its refusal), the parameter check failing
    loudly for a parameter forward never uses, and the FLOPs check's verdict."""
    path = os.path.join(TMP, "enc-cli.json")
    r = importer_cli("module", "small_nets:transformer_encoder", "--input-shape", "8,16",
                     "--granularity", "modules:3", "--out", path)
    check("transformer_encoder: 8 nodes, 51,690 parameters (= torch's)" in r.stdout, r.stdout)
    check("TransformerEncoderLayer x4" in r.stderr, r.stderr)
    try:
        import torch.utils.flop_counter  # noqa: F401
        check("FLOPs = torch's" in r.stdout, r.stdout)
    except ImportError:
        check("FLOPs not checked (torch" in r.stdout, r.stdout)
    r = run(sys.executable, "-m", "interplace_importers", "module",
            "small_nets:transformer_encoder", "--input-shape", "8,16", "--granularity",
            "blocks", "--out", path)
    check(r.returncode == 2 and "granularity must be 'ops' or 'modules:D'" in r.stderr, r.stderr)
    from torch import nn
    from interplace_importers.from_torch import import_module

    class Unused(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.spare = nn.Linear(4, 2), nn.Linear(4, 3)

        def forward(self, x):
            return self.used(x)
    try:
        import_module(Unused(), (4,), "unused")
        raise AssertionError("an unused parameter was accepted")
    except ValueError as error:
        check("the graph has 10 parameters, torch counts 25" in str(error)
              and "spare.weight" in str(error), str(error))


def test_torch_plan_splits_the_real_module():
    """`place --save-torch-plan` on the nn.TransformerEncoder model at modules:3 (one node per
    encoder layer), 2 devices: the split point is an encoder layer's FQN, and splitting the
    real torch module there (torch_plan.stage_parameters: one run, a new stage at the split
    point's call, each parameter where a torch function first takes it) gives each stage
    exactly the parameters of interplace's stage, summing to torch's total; the helper's
    command line says so. `simulate --pipeline zbv` writes the V map's 4 stages, at modules:3
    and at ops (a cut before a layer's self_attn is the layer's split point), each equal to
    torch's split; a zoo model (no module paths) and stages out of node order are refused
    with a HINT."""
    import torch
    import small_nets
    from interplace_importers.torch_plan import TorchPlan, stage_parameters
    model = small_nets.transformer_encoder()
    total = sum(p.numel() for p in model.parameters())
    example = [torch.zeros(1, 8, 16)]
    _, blocks, _ = import_timed(model, (8, 16), "transformer_encoder", granularity="modules:3")
    _, ops, _ = import_timed(model, (8, 16), "transformer_encoder")
    layers = {f"encoder.layers.{i}" for i in range(4)}
    placement = ("--batch-size", "32", "--micro-batches", "4", "--order", "topo", "--placer",
                 "contiguous", "--devices", "2")

    def torch_split(plan):
        counts = stage_parameters(model, plan.split_points, example)
        planned = [s["parameters"] for s in plan.stages]
        print(f"{plan.pipeline} split at {plan.split_points}: torch's stages {counts}, "
              f"interplace's {planned}")
        check(counts == planned, f"torch's stages hold {counts}, interplace's {planned}")
        check(sum(counts) == total and min(counts) > 0, f"{counts} of {total}")

    plan_path = os.path.join(TMP, "encoder-plan.json")
    interplace("place", "--graph-file", blocks, *placement, "--save-torch-plan", plan_path)
    plan = TorchPlan.read(plan_path)
    check(plan.pipeline == "gpipe" and plan.schedule_class_name == "ScheduleGPipe"
          and plan.n_microbatches == 4 and plan.rank_stages == [[0], [1]], plan.data)
    check(len(plan.split_points) == 1 and plan.split_points[0] in layers, plan.split_points)
    check(plan.actions[1] == ["1F0", "1F1", "1F2", "1F3", "1B0", "1B1", "1B2", "1B3"],
          plan.actions)
    torch_split(plan)
    r = ok(sys.executable, "-m", "interplace_importers.torch_plan", plan_path, "--module",
           "small_nets:transformer_encoder", "--input-shape", "8,16")
    check(f"per-stage parameters = torch's ({total:,} in all)" in r.stdout, r.stdout)

    for graph in (blocks, ops):
        zbv_path = os.path.join(TMP, "encoder-zbv.json")
        interplace("simulate", "--graph-file", graph, *placement, "--pipeline", "zbv",
                   "--save-torch-plan", zbv_path)
        zbv = TorchPlan.read(zbv_path)
        check(zbv.schedule_class_name == "ScheduleZBVZeroBubble" and zbv.stages_per_rank == 2
              and zbv.rank_stages == [[0, 3], [1, 2]]
              and [s["rank"] for s in zbv.stages] == [0, 1, 1, 0], zbv.data)
        check(set(zbv.split_points) <= layers, zbv.split_points)
        check(all(len(a) == 3 * 2 * 4 for a in zbv.actions), zbv.actions)  # F, I, W a stage
        torch_split(zbv)

    fails(2, "place", "--model", "resnet20", "--order", "topo", "--placer", "contiguous",
          "--devices", "2", "--save-torch-plan", os.path.join(TMP, "no.json"),
          contains=("has no module paths", "HINT: import the network with the importers"))
    fails(2, "place", "--graph-file", ops, "--order", "topo", "--placer", "round-robin",
          "--devices", "2", "--save-torch-plan", os.path.join(TMP, "no.json"),
          contains=("not contiguous in the graph's node order", "HINT: --order topo"))


def test_torch_plan_helper_calls_pipelinings_api():
    """TorchPlan's torch >= 2.4 side against a stand-in torch.distributed.pipelining (this
    machine's torch 1.13 has none): the split spec at SplitPoint.BEGINNING, the named class
    with one stage (PipelineScheduleSingle) or the rank's stages, and
    _PipelineScheduleRuntime loaded with every rank's actions (_Action.from_str) where the
    class is none, runs another order, or is asked not to be used. What it shows is the
    helper's calls, not torch's behaviour (unrun here)."""
    import types
    from interplace_importers.torch_plan import TorchPlan
    made = []

    class Single:
        def __init__(self, stage, n, loss_fn=None):
            made.append((type(self).__name__, stage, n))

    class Multi:
        def __init__(self, stages, n, loss_fn=None):
            made.append((type(self).__name__, list(stages), n))

    class Runtime(Multi):
        def _prepare_schedule_with_comms(self, actions):
            made.append(("actions", actions))

    schedules = types.SimpleNamespace(
        PipelineScheduleSingle=Single, Schedule1F1B=type("Schedule1F1B", (Single,), {}),
        ScheduleGPipe=type("ScheduleGPipe", (Single,), {}),
        ScheduleZBVZeroBubble=type("ScheduleZBVZeroBubble", (Multi,), {}),
        ScheduleInterleaved1F1B=type("ScheduleInterleaved1F1B", (Multi,), {}),
        _PipelineScheduleRuntime=Runtime, _Action=types.SimpleNamespace(from_str=str.upper))
    pipelining = types.ModuleType("torch.distributed.pipelining")
    pipelining.schedules = schedules
    pipelining.SplitPoint = types.SimpleNamespace(BEGINNING="<BEGINNING>")
    saved = {k: sys.modules.get(k) for k in ("torch.distributed.pipelining",
                                             "torch.distributed.pipelining.schedules")}
    sys.modules["torch.distributed.pipelining"] = pipelining
    sys.modules["torch.distributed.pipelining.schedules"] = schedules
    try:
        path = os.path.join(ROOT, "importers", "examples", "transformer_encoder-blocks.json")
        common = ("--graph-file", path, "--batch-size", "32", "--micro-batches", "4", "--order",
                  "topo", "--placer", "contiguous", "--devices", "2")
        plans = {}
        for pipeline in ("zbv", "zb-h1", "1f1b"):
            out = os.path.join(TMP, f"helper-{pipeline}.json")
            interplace("simulate", *common, "--pipeline", pipeline, "--save-torch-plan", out)
            plans[pipeline] = TorchPlan.read(out)
        zbv = plans["zbv"]
        check(zbv.split_spec() == {p: "<BEGINNING>" for p in zbv.split_points}, zbv.split_spec())
        zbv.schedule(["s0", "s3"])
        check(made.pop() == ("ScheduleZBVZeroBubble", ["s0", "s3"], 4), made)
        zbv.schedule(["s0", "s3"], use_actions=True)
        check(made[-1] == ("actions", {r: [a.upper() for a in acts]
                                       for r, acts in enumerate(zbv.actions)}), made[-1])
        check(made[-2] == ("Runtime", ["s0", "s3"], 4), made)
        made.clear()
        plans["zb-h1"].schedule(["s1"])
        check(made[0] == ("Runtime", ["s1"], 4) and made[1][1][1][:2] == ["1F0", "1I0"], made)
        made.clear()
        plans["1f1b"].schedule(["s1"])
        check(made == [("Schedule1F1B", "s1", 4)], made)
    finally:
        for key, module in saved.items():
            if module is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = module


def test_interpreter_without_torch_gets_a_hint():
    """On a Python without torch (a pyenv or conda python3), the importer says so and ends
    with a HINT naming the interpreter to use."""
    fake = os.path.join(TMP, "no-torch")
    os.makedirs(os.path.join(fake, "torch"), exist_ok=True)
    with open(os.path.join(fake, "torch", "__init__.py"), "w") as f:
        f.write("raise ImportError(\"No module named 'torch'\")\n")
    env = dict(MPI_ENV, PYTHONPATH=os.pathsep.join([fake, os.path.join(ROOT, "importers")]))
    r = run(sys.executable, "-m", "interplace_importers", "torchvision", "resnet18",
            "--input-shape", "3,32,32", "--out", os.path.join(TMP, "x.json"), env=env)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and r.stdout == "", f"exit {r.returncode}: {r.stdout}")
    check(len(lines) == 2 and "cannot import torch" in lines[0]
          and lines[-1].startswith("HINT: ") and "/usr/bin/python3 -m interplace_importers"
          in lines[-1], r.stderr)


GPT2_BLOCKS = os.path.join(ROOT, "importers", "examples", "gpt2_tiny-blocks.json")
TORCH_SWEEP = os.path.join(ROOT, "importers", "examples", "gpt2-torch-sweep.toml")


def torch_train(ranks, pipeline, *extra, graph=GPT2_BLOCKS, steps=3):
    """The step losses of `train --runtime torch` on `ranks` ranks (one stage each)."""
    r = ok(MPIEXEC, "--oversubscribe", "-np", str(ranks), BINARY, "train", "--graph-file", graph,
           "--runtime", "torch", "--order", "topo", "--placer", "stages", "--devices", str(ranks),
           "--pipeline", pipeline, "--micro-batches", "4", "--batch-size", "8", "--steps",
           str(steps), "--threads-per-rank", "1", "--format", "json", *extra, timeout=300)
    steps_out = [line for line in map(json.loads, r.stdout.splitlines()) if "step" in line]
    return [s["loss"] for s in steps_out], steps_out


def test_torch_runtime_p_ranks_equal_one_rank_np2():
    """PyTorch runs the imported GPT-2-style decoder (plain torch, one node per block) on 2
    ranks exactly as on 1: GPipe, 1F1B and ZB-H1 (its split I/W backward) give the 1-rank
    losses of every step to float tolerance; each rank sent its activations or gradients."""
    one, _ = torch_train(1, "gpipe")
    check(len(one) == 4 and all(l == l and 4.0 < l < 7.0 for l in one), one)
    for pipeline in ("gpipe", "1f1b", "zb-h1"):
        two, steps = torch_train(2, pipeline)
        for a, b in zip(one, two):
            check(abs(a - b) <= 1e-5 * abs(a), f"{pipeline}: 2-rank losses {two}, 1-rank {one}")
        for s in steps:
            check(all(r["bytes_sent"] > 0 for r in s["ranks"]), f"{pipeline}: {s['ranks']}")
    check(one[1] != one[2], f"the steps train: {one}")


def test_torch_runtime_refusals():
    """What the PyTorch runtime cannot run is refused in planning with a HINT (exit 2): a zoo
    model, a real data set, a local strategy; a Python without torch at run time."""
    fails(2, "train", "--model", "resnet20", "--runtime", "torch", "--order", "topo",
          contains=("runtime torch: model 'resnet20' is interplace's own", "HINT: graph_file"))
    fails(2, "train", "--graph-file", GPT2_BLOCKS, "--runtime", "torch", "--order", "topo",
          "--dataset", "fashion-mnist", contains=("synthetic batches",))
    fails(2, "train", "--graph-file", GPT2_BLOCKS, "--runtime", "torch", "--order", "topo",
          "--devices", "1", "--strategy", "local", contains=("backpropagate globally",))
    r = run(BINARY, "train", "--graph-file", GPT2_BLOCKS, "--runtime", "torch", "--order", "topo",
            "--steps", "1", env=dict(MPI_ENV, INTERPLACE_TORCH_PYTHON="/nonexistent/python3"))
    check(r.returncode == 2 and "INTERPLACE_TORCH_PYTHON" in r.stderr, r.stderr)
    # The native runtime still refuses the opaque blocks, and names the torch runtime.
    fails(2, "train", "--graph-file", GPT2_BLOCKS, "--order", "topo",
          contains=("no kernel layer", 'runtime = "torch"'))


def test_torch_runtime_sweep_report_and_resume_np2():
    """The committed spec (runtime = "torch", the imported transformer) on 2 ranks: killed
    after its first configuration, resumed with nothing lost or run twice, read by inspect,
    and the report's recommendation table names the family."""
    out = os.path.join(TMP, "gpt2-torch.h5")
    args = [MPIEXEC, "--oversubscribe", "-np", "2", BINARY, "sweep", TORCH_SWEEP, "steps=2",
            "warmup_steps=0", "repeats=1", "--out", out]
    proc = subprocess.Popen([str(a) for a in args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=MPI_ENV, cwd=ROOT, text=True,
                            start_new_session=True)
    for line in proc.stderr:
        if line.startswith("[1/6]") and " ok " in line:
            break
    import signal
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    r = ok(*args, "--resume", timeout=600, cwd=ROOT)
    check("resuming: " in r.stderr and "of 6 configurations already in the file" in r.stderr,
          r.stderr)
    files = json.loads(interplace("inspect", out, "--format", "json").stdout)
    ids = [c["id"] for c in files["configs"]]
    check(len(ids) == 6 and len(set(ids)) == 6, f"every configuration once: {ids}")
    check(all(c["status"] == "ok" for c in files["configs"]), files["configs"])
    python = os.environ.get("INTERPLACE_ANALYSIS_PYTHON") or os.path.join(ROOT, ".venv/bin/python")
    report = os.path.join(TMP, "report-torch")
    ok(python, "-m", "interplace_analysis", "report", out, "--out", report, "--quiet")
    with open(os.path.join(report, "tables", "recommendations.md")) as f:
        table = f.read()
    check(any(line.startswith("| torch |") for line in table.splitlines()), table)


def test_torch_runtime_profile_auto_np2():
    """cost_device = "profile:auto" with runtime = "torch": the job measures the torch
    runtime's own node times (torch_profile), keeps them in the file under a key that names
    the runtime, and predicts the configuration from them."""
    spec = os.path.join(TMP, "torch-auto.toml")
    with open(spec, "w") as f:
        f.write(f'graph_file = "{GPT2_BLOCKS}"\nruntime = "torch"\ndataset = "synthetic"\n'
                'devices = 2\norder = "topo"\nplacer = "stages"\npipeline = "1f1b"\n'
                'micro_batches = 2\nbatch_size = 4\nwarmup_steps = 0\nsteps = 2\n'
                'threads_per_rank = 1\ncost_device = "profile:auto"\n')
    out = os.path.join(TMP, "torch-auto.h5")
    ok(MPIEXEC, "--oversubscribe", "-np", "2", BINARY, "sweep", spec, "--out", out,
       timeout=600, cwd=ROOT)
    python = os.environ.get("INTERPLACE_ANALYSIS_PYTHON") or os.path.join(ROOT, ".venv/bin/python")
    read = ("import h5py, json, sys\n"
            "f = h5py.File(sys.argv[1], 'r')\n"
            "(name, g), = f['profiles'].items()\n"
            "c, = f['configs'].values()\n"
            "print(json.dumps({'name': name, 'key': g.attrs['key'], 'profile': g.attrs['profile'],"
            " 'profile_id': c.attrs['profile_id'], 'status': c.attrs['status'],"
            " 'pred': float(f['summary']['pred_step_time_s'][0])}))\n")
    got = json.loads(ok(python, "-c", read, out).stdout)
    check("runtime=torch" in got["key"], got["key"])
    check("interplace_importers.torch_profile" in got["profile"]
          and "the torch runtime's own node times" in got["profile"], got["profile"][:400])
    check(got["name"].startswith(got["profile_id"]) and got["status"] == "ok", got)
    check(got["pred"] > 0, got)


def set_binary(path):
    global BINARY
    BINARY = os.path.abspath(path)


if __name__ == "__main__":
    run_cases(globals(), __doc__, set_binary)
