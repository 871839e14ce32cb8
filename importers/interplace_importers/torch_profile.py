"""A profile (docs/profile-format.md) of an imported graph measured in the PyTorch runtime
itself: the node times the torch runtime pays, for the simulator to predict its steps
(`cost_device = "profile:PATH"` with runtime = "torch").

    /usr/bin/python3 -m interplace_importers.torch_profile GRAPH.json --micro-batch 4 \\
        --out torch.tsv [--steps 20] [--threads 1] [--optimizer sgd-momentum]

One process runs the whole module as the torch runtime's single stage does (the traced
program, trace.ConcreteTracer, at the micro-batch size) for --steps training steps after
warm-up, and times:
- each traced call's forward (perf_counter around the call), summed per graph node;
- each node's backward: the time from the autograd hook on a call's output (its gradient
  is ready, the call's backward starts) to the next such hook, summed per graph node;
- the whole forward, backward, optimiser step and the rest of the step (runtime_*_s);
- GPipe steps of 4 and 8 micro-batches in flight, per micro-batch (runtime_in_flight).
A traced call belongs to the graph node of its name (ops granularity, `_label`) or to the
fused node of the module it ran under (modules:D); calls of neither (rare: ops the importer
folded) are the "unmatched" share, spread over the nodes by forward FLOPs. The link is an
8-point ping-pong between two gloo processes on this host (the torch runtime's messages).
Medians over the steps. Exit 2 for bad input."""

import argparse
import json
import statistics
import sys
import time

from .torch_runtime import (JobError, Program, build_module, input_node, make_optimizer,
                            sink_shape, synthetic_batch)


def node_of_calls(graph, program):
    """{traced call: graph node name} for the calls of the network."""
    from .trace import op_name
    names = {n["name"] for n in graph["nodes"]}
    fused = sorted((n["name"] for n in graph["nodes"] if n.get("attributes", {}).get("fused_nodes")),
                   key=len, reverse=True)
    seen = {}
    out = {}
    for call in program.calls[0]:
        if call not in program.network or call.op == "placeholder":
            continue
        module = call.meta.get("module", "")
        owner = next((f for f in fused if module == f or module.startswith(f + ".")), None)
        if owner is None:
            if call.op == "call_module":
                label = call.target
            else:
                base = op_name(call.target)
                label = f"{module}.{base}" if module else base
            k = seen.get(label, 0)
            seen[label] = k + 1
            candidate = label if k == 0 else f"{label}_{k}"
            owner = candidate if candidate in names else (label if label in names else None)
        if owner is not None:
            out[call] = owner
    return out


def measure_steps(program, owners, torch, graph, batch_fn, optimizer, steps, warmup):
    nodes = [n["name"] for n in graph["nodes"]]
    per_step = []
    for step in range(warmup + steps):
        t_step = time.perf_counter()
        x, y = batch_fn(step)
        forward = dict.fromkeys(nodes, 0.0)
        backward = dict.fromkeys(nodes, 0.0)
        events = []  # (time, node) when a call's output gradient is ready
        unmatched_f = 0.0
        env = {program.inputs[0][0]: x}
        t0 = time.perf_counter()
        for call in program.calls[0]:
            if call in env:
                continue
            start = time.perf_counter()
            value = program.call(call, env)
            spent = time.perf_counter() - start
            env[call] = value
            owner = owners.get(call)
            if owner is None:
                unmatched_f += spent
            else:
                forward[owner] += spent
            if owner is not None and isinstance(value, torch.Tensor) and value.requires_grad:
                value.register_hook(lambda g, o=owner: events.append((time.perf_counter(), o)))
        logits = env[program.output]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 y.reshape(-1))
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        marks = events + [(t2, None)]
        unmatched_b = marks[0][0] - t1
        for (when, owner), (after, _) in zip(marks, marks[1:]):
            backward[owner] += after - when
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        if step >= warmup:
            per_step.append(dict(forward=forward, backward=backward, unmatched_f=unmatched_f,
                                 unmatched_b=unmatched_b, total_f=t1 - t0, total_b=t2 - t1,
                                 optimizer=t3 - t2, overhead=t0 - t_step))
    return per_step


def in_flight(program, torch, batch_fn, optimizer, micro_batches, steps):
    """(forward s, backward s) per micro-batch of a GPipe step of `micro_batches` on one
    process (all forwards, then all backwards): the profile's runtime_in_flight line, what
    keeping M micro-batches' activations costs (docs/simulator.md, "Working set")."""
    forwards, backwards = [], []
    for step in range(steps + 1):
        batches = [batch_fn(1000 + step * micro_batches + i) for i in range(micro_batches)]
        start = time.perf_counter()
        losses = []
        for x, y in batches:
            logits = program.run(0, [x])
            losses.append(torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), y.reshape(-1)) / micro_batches)
        middle = time.perf_counter()
        for loss in losses:
            loss.backward()
        end = time.perf_counter()
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        if step > 0:
            forwards.append((middle - start) / micro_batches)
            backwards.append((end - middle) / micro_batches)
    return statistics.median(forwards), statistics.median(backwards)


def gloo_link(world_port=29611):
    """(latency s, bandwidth B/s, curve [(bytes, s)]) of gloo between two processes here."""
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    peer = ctx.Process(target=_ping_pong, args=(1, world_port, None))
    peer.start()
    _ping_pong(0, world_port, queue)
    peer.join()
    curve = queue.get()
    latency = curve[0][1]
    big, seconds = curve[-1]
    return latency, big / max(seconds - latency, 1e-9), curve


def _ping_pong(rank, port, queue):
    import datetime
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2, timeout=datetime.timedelta(seconds=60))
    curve = []
    for size in [4, 4096, 65536, 1 << 20, 4 << 20, 16 << 20]:
        buffer = torch.zeros(max(1, size // 4))
        times = []
        for _ in range(10):
            start = time.perf_counter()
            if rank == 0:
                dist.send(buffer, 1)
                dist.recv(buffer, 1)
            else:
                dist.recv(buffer, 0)
                dist.send(buffer, 0)
            times.append((time.perf_counter() - start) / 2)
        curve.append((buffer.numel() * 4, statistics.median(times[2:])))
    dist.destroy_process_group()
    if queue is not None:
        queue.put(curve)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m interplace_importers.torch_profile",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("graph", help="an imported graph file (a PyTorch module's)")
    parser.add_argument("--micro-batch", type=int, required=True,
                        help="samples per micro-batch (the profile's batch_size)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--optimizer", default="sgd-momentum")
    parser.add_argument("--no-link", action="store_true",
                        help="skip the gloo ping-pong (link values 0 s and inf)")
    args = parser.parse_args(argv)
    if args.micro_batch < 1 or args.steps < 1:
        parser.error("--micro-batch and --steps must be >= 1")
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    try:
        with open(args.graph) as f:
            graph = json.load(f)
        torch.set_num_threads(args.threads)
        inp = input_node(graph)
        dtype = torch.int64 if inp.get("attributes", {}).get("dtype") == "int64" else torch.float32
        shape = inp["output_shape"][1:]
        logits = sink_shape(graph)
        torch.manual_seed(args.seed)
        module = build_module(graph)
        example = torch.zeros(args.micro_batch, *shape, dtype=dtype)
        if dtype.is_floating_point:
            example.requires_grad_(True)
        program = Program(module, example, [])
        owners = node_of_calls(graph, program)
    except (JobError, OSError, ValueError, KeyError) as error:
        print(f"interplace_importers.torch_profile: error: {error}", file=sys.stderr)
        return 2
    vocabulary = min([m.num_embeddings for m in module.modules()
                      if isinstance(m, torch.nn.Embedding)] or [2])
    optimizer = make_optimizer(torch, args.optimizer, list(module.parameters()), 0.01, 0.0)

    def batch_fn(step):
        return synthetic_batch(torch, shape, dtype, vocabulary, logits[-1], logits[1:-1],
                               args.micro_batch, args.seed, step)

    steps = measure_steps(program, owners, torch, graph, batch_fn, optimizer, args.steps,
                          args.warmup)
    med = statistics.median
    names = [n["name"] for n in graph["nodes"]]
    flops = {n["name"]: max(n["forward_flops"], 0) for n in graph["nodes"]}
    total_flops = sum(flops.values()) or 1
    unmatched_f = med(s["unmatched_f"] for s in steps)
    unmatched_b = med(s["unmatched_b"] for s in steps)
    rows = []
    for name in names:
        share = flops[name] / total_flops
        f = med(s["forward"][name] for s in steps) + share * unmatched_f
        b = med(s["backward"][name] for s in steps) + share * unmatched_b
        rows.append((name, f, b))
    timed = len(set(owners.values()))
    flights = {m: in_flight(program, torch, batch_fn, optimizer, m, max(3, args.steps // 4))
               for m in (4, 8)}
    latency, bandwidth, curve = (0.0, float("inf"), []) if args.no_link else gloo_link()
    parameters = sum(p.numel() for p in module.parameters())
    lines = [
        f"# interplace_importers.torch_profile {args.graph} --micro-batch {args.micro_batch} "
        f"--steps {args.steps} --threads {args.threads}: the torch runtime's own node times "
        f"(torch {torch.__version__}), medians over {len(steps)} steps",
        f"# {timed} of {len(names)} nodes timed by their calls; unmatched calls "
        f"{unmatched_f * 1e3:.3f} ms forward, {unmatched_b * 1e3:.3f} ms backward spread by "
        f"FLOPs; link: gloo ping-pong between two processes on this host",
        "# interplace per-node times; see docs/profile-format.md",
        "format\tinterplace-profile\t1",
        f"device\ttorch cpu ({args.threads} thread{'s' if args.threads > 1 else ''})",
        f"batch_size\t{args.micro_batch}",
        f"link_latency_s\t{latency!r}",
        f"link_bandwidth_bytes_per_s\t{bandwidth!r}" if bandwidth != float("inf")
        else "link_bandwidth_bytes_per_s\tinf",
        f"node_count\t{len(names)}",
        f"graph_parameter_count\t{parameters}",
        f"runtime_forward_s\t{med(s['total_f'] for s in steps)!r}",
        f"runtime_backward_s\t{med(s['total_b'] for s in steps)!r}",
        f"runtime_optimizer_s\t{med(s['optimizer'] for s in steps)!r}",
        f"runtime_overhead_s\t{max(0.0, med(s['overhead'] for s in steps))!r}",
    ]
    lines += [f"runtime_in_flight\t{m}\t{f!r}\t{b!r}" for m, (f, b) in flights.items()]
    lines += [f"link_curve\t{b}\t{t!r}" for b, t in curve]
    lines += [f"node\t{name}\t{f!r}\t{b!r}" for name, f, b in rows]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{graph['name']}: {len(names)} nodes ({timed} timed by their calls), forward "
          f"{med(s['total_f'] for s in steps) * 1e3:.2f} ms, backward "
          f"{med(s['total_b'] for s in steps) * 1e3:.2f} ms at micro-batch {args.micro_batch} "
          f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
