"""The PyTorch runtime (`runtime = "torch"`, `train --runtime torch`; docs/runtime.md, "The
PyTorch runtime"): one process per rank runs its pipeline stages as PyTorch code of the
user's own module, executing the torch plan's per-rank action lists
(`--save-torch-plan`'s format) with point-to-point messages through torch.distributed
(gloo), and writes one JSON record per training step.

`interplace` starts it on every rank of the configuration with a job file (below) and reads
its records into the same result file as the C++ runtime's. By hand:

    /usr/bin/python3 -m interplace_importers.torch_runtime JOB.json

The job (JSON, written by runs/src/runtime/torch_runtime.cpp): "graph_file" (the imported
graph: its "source" names the module, its input node the shape and dtype, its sink the
classes), "plan" (the torch plan file), "rank", "world_size", "master" (host:port of the
TCP rendezvous), "batch_size", "micro_batches", "steps" (warm-up first: "warmup_steps"),
"learning_rates" (one per step), "optimizer" (sgd | sgd-momentum | sgd-nesterov | adamw),
"weight_decay", "seed", "threads", "timeout_s", "records" (the file to write), "python_path"
(directories for a module source). Exit 2 for a job this runtime cannot run (the message
ends in a HINT), 1 for a failure while training.

How a stage runs. The module is traced once on every rank (trace.ConcreteTracer, at the
micro-batch size, in training mode) into a straight-line program of torch calls; a stage
is the run of that program from one split point (SplitPoint.BEGINNING: the first call
inside the module at that FQN) to the next, so that every cut is a module boundary as in
torch.distributed.pipelining. A stage receives every value of the network computed before
it and used at or after it (a value a later stage needs passes through), runs its calls on
the module's own parameters, and sends on what later stages use. Values not computed from
the input (position ids, masks) are recomputed where they are used. Dropout is seeded per
(step, micro-batch, stage), so the losses do not depend on the order the schedule runs."""

import datetime
import importlib
import json
import os
import re
import sys
import time

HINT_PYTHON = ("HINT: run it on the Python that has torch (Debian's /usr/bin/python3 with "
               "python3-torch: scripts/install-deps), or set INTERPLACE_TORCH_PYTHON")


class JobError(ValueError):
    """A job this runtime cannot run (exit 2)."""


class Diverged(RuntimeError):
    """A non-finite loss (exit 3)."""


# ---- the module ------------------------------------------------------------------------
def build_module(graph, python_path=()):
    """The nn.Module the graph file was imported from: its "source" is "torchvision NAME" or
    "module MODULE:CALLABLE" (what interplace_importers wrote)."""
    source = graph.get("source", "")
    kind, _, what = source.partition(" ")
    for directory in python_path:
        if directory and directory not in sys.path:
            sys.path.insert(0, directory)
    if kind == "torchvision":
        import torchvision
        factory = getattr(torchvision.models, what, None)
        if factory is None:
            raise JobError(f"graph {graph['name']!r}: torchvision has no model {what!r}")
        kwargs = {"weights": None, "num_classes": sink_shape(graph)[-1]}
        if what in ("inception_v3", "googlenet"):
            kwargs.update(aux_logits=False, init_weights=False)
        return factory(**kwargs)
    if kind == "module" and ":" in what:
        module_name, _, attribute = what.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attribute)()
        except (ImportError, AttributeError) as error:
            raise JobError(f"graph {graph['name']!r}: cannot make its module {what!r} "
                           f"({error}). HINT: put the module's directory on PYTHONPATH")
    raise JobError(f"graph {graph['name']!r} has source {source!r}, not a PyTorch module of the "
                   f"importers ('torchvision NAME' or 'module MODULE:CALLABLE'). HINT: the torch "
                   f"runtime trains graphs written by `python3 -m interplace_importers "
                   f"torchvision|module ...`; use runtime = \"native\" for the others")


def input_node(graph):
    inputs = [n for n in graph["nodes"] if n["op"] == "input"]
    if len(inputs) != 1:
        raise JobError(f"graph {graph['name']!r} has {len(inputs)} input nodes; the torch runtime "
                       f"takes one. HINT: a module with one tensor input")
    return inputs[0]


def sink_shape(graph):
    used = {i for n in graph["nodes"] for i in n["inputs"]}
    sinks = [n for n in graph["nodes"] if n["id"] not in used and n["op"] != "input"]
    if len(sinks) != 1:
        raise JobError(f"graph {graph['name']!r} has {len(sinks)} sinks; training needs one "
                       f"(the logits)")
    return sinks[0]["output_shape"]


# ---- the program and its stages ---------------------------------------------------------
class Program:
    """The traced program of `module` split at `split_points`: per stage its calls, the
    values it receives (`inputs`) and sends on (`outputs`), and its parameters."""

    def __init__(self, module, example, split_points):
        import torch
        from .trace import ConcreteTracer
        state = {k: v.clone() for k, v in module.state_dict().items()}
        module.train()
        with torch.enable_grad():
            tracer = ConcreteTracer(module)
            graph = tracer.trace([example])
        module.load_state_dict(state)  # the trace's batch-norm updates undone
        self.module = module
        self.modules = dict(module.named_modules())
        self.nodes = [n for n in graph.nodes if n.op != "output"]
        self.output = next(n for n in graph.nodes if n.op == "output").args[0]
        self.network = tracer.network
        self.split_points = list(split_points)
        begins = []
        for point in self.split_points:
            at = next((i for i, n in enumerate(self.nodes)
                       if any(path == point for path, _, _ in n.meta.get("module_stack", ()))),
                      None)
            if at is None:
                raise JobError(f"split point {point!r}: no call of the module runs in the "
                               f"traced program. HINT: the plan was made for another module")
            begins.append(at)
        if begins != sorted(begins) or len(set(begins)) != len(begins):
            raise JobError(f"split points {self.split_points} begin at calls {begins} of the "
                           f"traced program, not in stage order")
        stage_count = len(self.split_points) + 1
        self.stage_of = {}
        for i, node in enumerate(self.nodes):
            self.stage_of[node] = sum(1 for b in begins if b <= i)
        if not isinstance(self.output, torch.fx.Node) or self.output not in self.network:
            raise JobError("the module's output is not one tensor computed from its input. "
                           "HINT: a module returning the logits")
        # Network calls run in their stage; the others (constants, parameters read
        # directly) run in every stage that uses them.
        self.calls = [[] for _ in range(stage_count)]
        for node in self.nodes:
            if node in self.network:
                self.calls[self.stage_of[node]].append(node)
        for s in range(stage_count):
            needed = set()
            for node in self.calls[s]:
                self._constants_of(node, needed)
            self.calls[s] = [n for n in self.nodes if n in needed or
                             (n in self.network and self.stage_of[n] == s)]
        # Values crossing each boundary: computed before it, used after it (or the output).
        last_use = {}
        for node in self.nodes:
            for user in node.users:
                if user.op == "output":
                    last_use[node] = stage_count - 1
                elif node in self.network and user in self.stage_of:
                    last_use[node] = max(last_use.get(node, 0), self.stage_of[user])
        self.outputs = []
        for s in range(stage_count - 1):
            self.outputs.append([n for n in self.nodes if n in self.network
                                 and self.stage_of[n] <= s and last_use.get(n, -1) > s])
        self.inputs = [[self.nodes[0]]] + self.outputs
        self.parameters = self._stage_parameters(stage_count)

    def _constants_of(self, node, needed):
        for arg in node.all_input_nodes:
            if arg not in self.network and arg not in needed:
                needed.add(arg)
                self._constants_of(arg, needed)

    def _stage_parameters(self, stage_count):
        owner = {}
        params = [[] for _ in range(stage_count)]
        for s in range(stage_count):
            for node in self.calls[s]:
                if node.op == "call_module":
                    found = list(self.modules[node.target].parameters())
                elif node.op == "get_attr":
                    found = [p for name, p in self.module.named_parameters() if name == node.target]
                else:
                    continue
                for p in found:
                    if owner.setdefault(id(p), s) != s:
                        raise JobError(f"a parameter of {node.target!r} is used by stages "
                                       f"{owner[id(p)]} and {s} (tied weights). HINT: the torch "
                                       f"runtime does not share parameters between stages yet; "
                                       f"cut elsewhere or use runtime = \"native\"")
                    if not any(q is p for q in params[s]):
                        params[s].append(p)
        return params

    def carries_gradient(self, node):
        meta = node.meta.get("tensor_meta")
        # TensorMetadata is a NamedTuple; a tuple of them is a value that is no tensor.
        return hasattr(meta, "dtype") and meta.requires_grad and meta.dtype.is_floating_point

    def call(self, node, env):
        """Runs one traced call on the values of `env` and returns its value (for `x[i] = y`,
        the tensor it wrote into, as the tracer recorded it)."""
        from torch.fx.node import map_arg
        args = map_arg(node.args, env.__getitem__)
        kwargs = map_arg(node.kwargs, env.__getitem__)
        if node.op == "get_attr":
            value = self.module
            for part in node.target.split("."):
                value = getattr(value, part)
            return value
        if node.op == "call_module":
            return self.modules[node.target](*args, **kwargs)
        value = node.target(*args, **kwargs)
        return args[0] if getattr(node.target, "__name__", "") == "__setitem__" else value

    def run(self, stage, values):
        """The stage's outputs (a list, or the logits for the last stage) from `values`, its
        inputs in order."""
        env = dict(zip(self.inputs[stage], values))
        for node in self.calls[stage]:
            if node not in env:
                env[node] = self.call(node, env)
        if stage == len(self.calls) - 1:
            return env[self.output]
        return [env[n] for n in self.outputs[stage]]


# ---- actions -----------------------------------------------------------------------------
ACTION = re.compile(r"^(\d+)([FBIW])(\d+)$")
OVERLAP = re.compile(r"^\((\d+F\d+);(\d+B\d+)\)OVERLAP_F_B$")


def parse_actions(texts):
    """[(text, [(stage, kind, micro-batch), ...])]: an overlapped pair runs its forward,
    then its backward."""
    out = []
    for text in texts:
        match = OVERLAP.match(text)
        parts = [match.group(1), match.group(2)] if match else [text]
        parsed = []
        for part in parts:
            m = ACTION.match(part)
            if not m:
                raise JobError(f"action {text!r} is not one this runtime runs (F, B, I, W, "
                               f"OVERLAP_F_B). HINT: a plan from --save-torch-plan")
            parsed.append((int(m.group(1)), m.group(2), int(m.group(3))))
        out.append((text, parsed))
    return out


class Runner:
    """One rank: its stages' state per micro-batch, messages, and the step's clocks."""

    def __init__(self, job, plan, program, torch, dist):
        self.torch, self.dist = torch, dist
        self.job, self.plan, self.program = job, plan, program
        self.rank = job["rank"]
        self.stage_rank = [s["rank"] for s in plan.stages]
        self.last = len(plan.stages) - 1
        self.mine = set(plan.stage_indices(self.rank))
        self.actions = parse_actions(plan.actions[self.rank])
        self.micro_batches = job["micro_batches"]
        self.params = [p for s in sorted(self.mine) for p in program.parameters[s]]

    def tag(self, kind, stage, micro_batch, index):
        return ((micro_batch * (self.last + 1) + stage) * 2 + kind) * 256 + index

    def begin_step(self, step, x, y):
        self.step = step
        self.x, self.y = x, y
        self.state = {}   # (stage, mb) -> (inputs, outputs)
        self.local = {}   # (kind, stage, mb) -> tensors handed on within this rank
        self.pending = {}  # (stage, mb) -> what a W action starts from (after its I)
        self.sends = []
        self.forward_s = self.backward_s = self.wait_s = 0.0
        self.forward_cpu_s = self.backward_cpu_s = 0.0
        self.bytes_sent = 0
        self.loss_sum = self.correct = self.rows = 0.0
        self.executed = []

    def _receive(self, kind, stage, mb, from_stage, nodes):
        """The tensors of `nodes` from `from_stage` (forward values or their gradients)."""
        torch = self.torch
        if self.stage_rank[from_stage] == self.rank:
            return self.local.pop((kind, stage, mb))
        start = time.perf_counter()
        tensors = []
        for i, node in enumerate(nodes):
            meta = node.meta["tensor_meta"]
            buffer = torch.empty(meta.shape, dtype=meta.dtype)
            self.dist.recv(buffer, src=self.stage_rank[from_stage],
                           tag=self.tag(kind, stage, mb, i))
            tensors.append(buffer)
        self.wait_s += time.perf_counter() - start
        return tensors

    def _send(self, kind, stage, mb, to_stage, tensors):
        if self.stage_rank[to_stage] == self.rank:
            self.local[(kind, to_stage, mb)] = [t.detach().clone() for t in tensors]
            return
        for i, t in enumerate(tensors):
            t = t.detach().contiguous()
            self.sends.append((self.dist.isend(t, dst=self.stage_rank[to_stage],
                                               tag=self.tag(kind, to_stage, mb, i)), t))
            self.bytes_sent += t.numel() * t.element_size()

    def forward(self, stage, mb):
        torch, program = self.torch, self.program
        if stage == 0:
            inputs = [self.x[mb]]
        else:
            inputs = self._receive(0, stage, mb, stage - 1, program.inputs[stage])
            for node, t in zip(program.inputs[stage], inputs):
                if program.carries_gradient(node):
                    t.requires_grad_(True)
        start, cpu = time.perf_counter(), time.thread_time()
        torch.manual_seed(hash_seed(self.job["seed"], self.step, mb, stage))
        out = program.run(stage, inputs)
        if stage == self.last:
            target = self.y[mb]
            logits = out.reshape(-1, out.shape[-1])
            loss = torch.nn.functional.cross_entropy(logits, target.reshape(-1))
            self.loss_sum += float(loss)
            self.correct += float((logits.argmax(-1) == target.reshape(-1)).sum())
            self.rows += target.numel()
            out = [loss / self.micro_batches]
        self.state[(stage, mb)] = (inputs, out)
        self.forward_s += time.perf_counter() - start
        self.forward_cpu_s += time.thread_time() - cpu
        if stage < self.last:
            self._send(0, stage, mb, stage + 1, out)

    def _output_gradients(self, stage, mb):
        """(outputs, their gradients) that backward starts from."""
        inputs, outs = self.state[(stage, mb)]
        if stage == self.last:
            return outs, [None]
        nodes = self.program.outputs[stage]
        grads = self._receive(1, stage, mb, stage + 1,
                              [n for n in nodes if self.program.carries_gradient(n)])
        pairs, it = [], iter(grads)
        for node, t in zip(nodes, outs):
            if self.program.carries_gradient(node):
                g = next(it)
                if t.requires_grad:
                    pairs.append((t, g))
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def _input_nodes_with_gradient(self, stage):
        return [(i, n) for i, n in enumerate(self.program.inputs[stage])
                if stage > 0 and self.program.carries_gradient(n)]

    def backward(self, stage, mb, kind):
        torch = self.torch
        if kind in ("B", "I"):
            outs, grads = self._output_gradients(stage, mb)
        start, cpu = time.perf_counter(), time.thread_time()
        inputs = self.state[(stage, mb)][0]
        carried = self._input_nodes_with_gradient(stage)
        if kind == "B":
            if outs:
                torch.autograd.backward(outs, grads)
            input_grads = [inputs[i].grad for i, _ in carried]
            del self.state[(stage, mb)]
        elif kind == "I":
            leaves = [inputs[i] for i, _ in carried]
            input_grads = list(torch.autograd.grad(outs, leaves, grads, retain_graph=True,
                                                   allow_unused=True)) if outs and leaves else \
                [None] * len(leaves)
            self.pending[(stage, mb)] = (outs, grads)
        else:  # W: the weight gradients of the split backward
            outs, grads = self.pending.pop((stage, mb))
            params = [p for p in self.program.parameters[stage] if p.requires_grad]
            if outs and params:
                torch.autograd.backward(outs, grads, inputs=params)
            del self.state[(stage, mb)]
            input_grads = None
        self.backward_s += time.perf_counter() - start
        self.backward_cpu_s += time.thread_time() - cpu
        if input_grads is not None and stage > 0:
            shaped = [g if g is not None else torch.zeros_like(inputs[i])
                      for g, (i, _) in zip(input_grads, carried)]
            self._send(1, stage, mb, stage - 1, shaped)

    def run_step(self):
        for text, parts in self.actions:
            for stage, kind, mb in parts:
                if stage not in self.mine:
                    raise JobError(f"rank {self.rank}'s action {text!r} runs stage {stage}, "
                                   f"which the plan gives rank {self.stage_rank[stage]}")
                if kind == "F":
                    self.forward(stage, mb)
                else:
                    self.backward(stage, mb, kind)
            self.executed.append(text)
        for work, _ in self.sends:
            start = time.perf_counter()
            work.wait()
            self.wait_s += time.perf_counter() - start
        self.sends = []
        if self.state or self.local:
            raise RuntimeError(f"rank {self.rank}: the action list left micro-batches "
                               f"{sorted(self.state)} unfinished")


def hash_seed(*parts):
    value = 1469598103934665603
    for part in parts:
        value = ((value ^ (int(part) & 0xFFFFFFFFFFFFFFFF)) * 1099511628211) % (1 << 64)
    return value % (1 << 63)


def reset_peak_memory():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_memory_bytes():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def make_optimizer(torch, name, params, lr, weight_decay):
    if not params:
        return None
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    if name in ("sgd", "sgd-momentum", "sgd-nesterov"):
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay,
                               momentum=0.0 if name == "sgd" else 0.9,
                               nesterov=name == "sgd-nesterov")
    raise JobError(f"optimizer {name!r}: the torch runtime has sgd, sgd-momentum, "
                   f"sgd-nesterov and adamw")


def synthetic_batch(torch, shape, dtype, vocabulary, classes, target_shape, batch, seed,
                    step):
    """The same batch on every rank: inputs ~ N(0, 1) (token ids uniform below the
    vocabulary), targets uniform over the classes."""
    generator = torch.Generator().manual_seed(hash_seed(seed, step, 7))
    if dtype.is_floating_point:
        x = torch.randn(batch, *shape, generator=generator)
    else:
        x = torch.randint(0, vocabulary, (batch, *shape), generator=generator)
    y = torch.randint(0, classes, (batch, *target_shape), generator=generator)
    return x, y


def run_job(job):
    import torch
    import torch.distributed as dist
    from .torch_plan import TorchPlan
    with open(job["graph_file"]) as f:
        graph = json.load(f)
    plan = TorchPlan.read(job["plan"])
    torch.set_num_threads(max(1, int(job.get("threads", 1))))
    batch, micro_batches = int(job["batch_size"]), int(job["micro_batches"])
    if micro_batches != plan.n_microbatches or batch % micro_batches:
        raise JobError(f"the job's {micro_batches} micro-batches of a batch of {batch} are not "
                       f"the plan's {plan.n_microbatches}")
    if plan.ranks != job["world_size"]:
        raise JobError(f"the plan has {plan.ranks} ranks, the job {job['world_size']}")
    inp = input_node(graph)
    dtype = torch.int64 if inp.get("attributes", {}).get("dtype") == "int64" else torch.float32
    shape = inp["output_shape"][1:]
    logits_shape = sink_shape(graph)
    classes, target_shape = logits_shape[-1], logits_shape[1:-1]
    mb = batch // micro_batches
    torch.manual_seed(int(job["seed"]))
    module = build_module(graph, job.get("python_path", ()))
    vocabulary = min([m.num_embeddings for m in module.modules()
                      if isinstance(m, torch.nn.Embedding)] or [2])
    example = torch.zeros(mb, *shape, dtype=dtype)
    if dtype.is_floating_point:
        example.requires_grad_(True)
    program = Program(module, example, plan.split_points)
    counts = [sum(p.numel() for p in ps) for ps in program.parameters]
    plan.check_stage_parameters(counts)
    runner = Runner(job, plan, program, torch, dist)
    # Parameters of other ranks' stages are dropped: the rank holds its own (memory).
    keep = {id(p) for p in runner.params}
    for s, params in enumerate(program.parameters):
        for p in params:
            if id(p) not in keep:
                p.data = torch.empty(0)
                p.requires_grad_(False)
    rates = job["learning_rates"]
    optimizer = make_optimizer(torch, job["optimizer"], runner.params, rates[0],
                               float(job["weight_decay"]))
    dist.init_process_group("gloo", init_method=f"tcp://{job['master']}", rank=job["rank"],
                            world_size=job["world_size"],
                            timeout=datetime.timedelta(seconds=float(job["timeout_s"])))
    total = int(job["warmup_steps"]) + int(job["steps"])
    records = open(job["records"], "w")
    previous = time.perf_counter()
    previous_cpu = time.thread_time()
    measured_start = None
    for step in range(total):
        if step == int(job["warmup_steps"]):
            dist.barrier()
            measured_start = previous = time.perf_counter()
            previous_cpu = time.thread_time()
        reset_peak_memory()
        x, y = synthetic_batch(torch, shape, dtype, vocabulary, classes, target_shape,
                               batch, job["seed"], step)
        runner.begin_step(step, list(x.split(mb)), list(y.split(mb)))
        runner.run_step()
        start, cpu = time.perf_counter(), time.thread_time()
        if optimizer is not None:
            for group in optimizer.param_groups:
                group["lr"] = rates[step]
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        end, end_cpu = time.perf_counter(), time.thread_time()
        loss = runner.loss_sum / micro_batches if runner.rows else None
        record = {
            "step": step, "step_s": end - previous, "forward_s": runner.forward_s,
            "backward_s": runner.backward_s, "optimizer_s": end - start,
            "comm_wait_s": runner.wait_s, "bytes_sent": runner.bytes_sent,
            "peak_memory_bytes": peak_memory_bytes(), "step_cpu_s": end_cpu - previous_cpu,
            "forward_cpu_s": runner.forward_cpu_s, "backward_cpu_s": runner.backward_cpu_s,
            "optimizer_cpu_s": end_cpu - cpu, "loss": loss,
            "accuracy": runner.correct / runner.rows if runner.rows else None,
            "actions": runner.executed}
        if loss is not None and not (loss == loss and abs(loss) != float("inf")):
            raise Diverged(f"rank {job['rank']}: diverged: the loss of step {step} is {loss}")
        records.write(json.dumps(record) + "\n")
        records.flush()
        previous, previous_cpu = end, end_cpu
    dist.barrier()
    wall = time.perf_counter() - (measured_start if measured_start is not None else previous)
    records.write(json.dumps({"measured_wall_s": wall,
                              "device_name": f"cpu: {torch.get_num_threads()} threads (torch "
                                             f"{torch.__version__})",
                              "stage_parameters": counts}) + "\n")
    records.close()
    dist.destroy_process_group()


def _die_with_parent():
    """A rank killed (SIGKILL, out of memory) takes its PyTorch process with it
    (PR_SET_PDEATHSIG), instead of leaving it waiting on its peers."""
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python3 -m interplace_importers.torch_runtime JOB.json", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError as error:
        print(f"interplace torch runtime: error: this Python ({sys.executable}) cannot import "
              f"torch ({error})\n{HINT_PYTHON}", file=sys.stderr)
        return 2
    import warnings
    warnings.filterwarnings("ignore")
    _die_with_parent()
    try:
        with open(argv[0]) as f:
            job = json.load(f)
        run_job(job)
    except (ValueError, OSError, KeyError) as error:  # JobError, the plan's checks, bad JSON
        print(f"interplace torch runtime: error: {error}", file=sys.stderr)
        return 2
    except Diverged as error:
        print(f"interplace torch runtime: {error}. HINT: a smaller learning rate",
              file=sys.stderr)
        return 3
    except RuntimeError as error:  # torch's own errors among them (a peer gone, a timeout)
        print(f"interplace torch runtime: rank failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
