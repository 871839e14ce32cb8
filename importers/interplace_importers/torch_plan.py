"""A torch plan (`interplace place/simulate --save-torch-plan`, docs/your-network.md) for
torch.distributed.pipelining: the split spec, the stages of each rank, the schedule class
or the per-rank action lists, and the parameters of each stage of your own module.

With torch >= 2.4 (torch.distributed.pipelining), on each rank:

    plan = TorchPlan.read("plan.json")
    pipe = pipeline(model, mb_args=(micro_batch,), split_spec=plan.split_spec())
    stages = [pipe.build_stage(i, device) for i in plan.stage_indices(rank)]
    schedule = plan.schedule(stages, loss_fn=loss_fn)
    schedule.step(x, target=y)   # losses=[...] on the rank of the last stage

On any torch (Debian's 1.13 has no pipelining), stage_parameters() splits the module at the
plan's split points by running it once, so that the stages' parameters can be checked
against the plan's:

    /usr/bin/python3 -m interplace_importers.torch_plan plan.json \\
        --module small_nets:transformer_encoder --input-shape 8,16

prints each stage's parameters, the plan's and torch's; exit 1 when they differ, 2 for a bad
plan or arguments."""

import argparse
import importlib
import json
import sys

FORMAT = "interplace-torch-plan"
FORMAT_VERSION = 1
KEYS = {"format", "format_version", "graph", "pipeline", "schedule_class",
        "class_runs_this_order", "ranks", "stages_per_rank", "stage_map", "n_microbatches",
        "split_spec", "stages", "rank_stages", "actions"}


class TorchPlan:
    """A plan file's contents, checked: `split_points` (stage order), `stages` (dicts: stage,
    rank, begins_at, first_node, nodes, parameters), `rank_stages`, `actions` (per rank,
    PyTorch's action strings), `schedule_class` (a name or None), `n_microbatches`."""

    def __init__(self, data, where="the plan"):
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{where}: not a torch plan (format {FORMAT!r})")
        if data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{where}: format_version {data.get('format_version')!r}; this "
                             f"reader takes {FORMAT_VERSION}")
        missing = KEYS - set(data)
        if missing:
            raise ValueError(f"{where}: missing {', '.join(sorted(missing))}")
        self.data = data
        self.graph = data["graph"]
        self.pipeline = data["pipeline"]
        self.schedule_class_name = data["schedule_class"]
        self.class_runs_this_order = bool(data["class_runs_this_order"])
        self.ranks = int(data["ranks"])
        self.stages_per_rank = int(data["stages_per_rank"])
        self.n_microbatches = int(data["n_microbatches"])
        self.stages = list(data["stages"])
        self.rank_stages = [list(s) for s in data["rank_stages"]]
        self.actions = [list(a) for a in data["actions"]]
        self.split_points = [s["begins_at"] for s in self.stages[1:]]
        if len(self.stages) != self.ranks * self.stages_per_rank \
                or len(self.rank_stages) != self.ranks or len(self.actions) != self.ranks:
            raise ValueError(f"{where}: {len(self.stages)} stages, {len(self.rank_stages)} "
                             f"rank_stages and {len(self.actions)} action lists for "
                             f"{self.ranks} ranks x {self.stages_per_rank}")
        if list(data["split_spec"]) != self.split_points \
                or any(v != "BEGINNING" for v in data["split_spec"].values()):
            raise ValueError(f"{where}: split_spec {data['split_spec']} is not the stages' "
                             f"begins_at {self.split_points} at BEGINNING")

    @classmethod
    def read(cls, path):
        with open(path) as f:
            return cls(json.load(f), where=path)

    def stage_indices(self, rank):
        """The stage indices rank `rank` holds, its chunk 0 first (pipe.build_stage's)."""
        return list(self.rank_stages[rank])

    def split_spec(self):
        """{fqn: SplitPoint.BEGINNING} for pipeline(..., split_spec=); needs torch >= 2.4."""
        from torch.distributed.pipelining import SplitPoint
        return {fqn: SplitPoint.BEGINNING for fqn in self.split_points}

    def schedule_class(self):
        """torch's class of the plan's pipeline (ScheduleGPipe, ...), or None (zb-h1, or a
        torch without it)."""
        if not self.schedule_class_name:
            return None
        from torch.distributed.pipelining import schedules
        return getattr(schedules, self.schedule_class_name, None)

    def torch_actions(self):
        """{rank: [_Action, ...]}: the action lists as torch's _Action (its from_str)."""
        from torch.distributed.pipelining.schedules import _Action
        return {rank: [_Action.from_str(a) for a in actions]
                for rank, actions in enumerate(self.actions)}

    def schedule(self, stages, loss_fn=None, use_actions=False, **kwargs):
        """The schedule of this rank's `stages` (PipelineStage, in stage_indices order): the
        named class where it runs the plan's order (class_runs_this_order) unless
        `use_actions`, else _PipelineScheduleRuntime with the plan's action lists (the order
        interplace simulated; torch adds the sends and receives; also Schedule1F1B's order
        with fewer micro-batches than stages, which the class refuses)."""
        from torch.distributed.pipelining import schedules
        cls = self.schedule_class()
        # Schedule1F1B refuses fewer micro-batches than stages; its order runs as actions.
        few = cls is schedules.Schedule1F1B and self.n_microbatches < len(self.stages)
        if cls is not None and self.class_runs_this_order and not use_actions and not few:
            if issubclass(cls, schedules.PipelineScheduleSingle):
                return cls(stages[0], self.n_microbatches, loss_fn=loss_fn, **kwargs)
            return cls(stages, self.n_microbatches, loss_fn=loss_fn, **kwargs)
        runtime = schedules._PipelineScheduleRuntime(stages, self.n_microbatches,
                                                     loss_fn=loss_fn, **kwargs)
        actions = self.torch_actions()
        if hasattr(runtime, "_prepare_schedule_with_comms"):  # torch >= 2.7
            runtime._prepare_schedule_with_comms(actions)
        else:
            runtime._load_actions(actions)
        return runtime

    def check_stage_parameters(self, counts):
        """Raises ValueError unless `counts` (per stage) are the plan's."""
        planned = [s["parameters"] for s in self.stages]
        if list(counts) != planned:
            raise ValueError(f"the module's stages hold {list(counts)} parameters, the plan's "
                             f"{planned}")


def _tensors(value):
    from .trace import _tensors as tensors_in  # the tracer's walk; imports torch
    return tensors_in(value)


def stage_parameters(module, split_points, inputs):
    """The parameters of each stage of `module` split before the calls of the modules
    `split_points` (FQNs, SplitPoint.BEGINNING), as torch's pipeline() splits it: the module
    runs once on `inputs` (eval mode, gradients on, so that no fused inference path hides
    the layers' ops), a new stage begins at each call of a split point, and a parameter
    belongs to the stage where a torch function first takes it (the module that owns it
    first runs, for one no function takes). Raises ValueError for a split point that is no
    module of `module`, or that is not called exactly once in the plan's order (torch would
    split before every call). Works on torch 1.13 (no torch.distributed.pipelining)."""
    import torch
    from torch.overrides import TorchFunctionMode
    named = dict(module.named_modules())
    unknown = [p for p in split_points if p not in named or not p]
    if unknown:
        raise ValueError(f"split point(s) {unknown} are no module of {type(module).__name__}")
    split_of = {id(named[p]): p for p in split_points}
    parameters = {id(p): p for p in module.parameters()}
    direct = {id(m): [id(p) for p in m.parameters(recurse=False)] for m in module.modules()}
    stage = [0]
    called = []
    used, owned = {}, {}

    def pre_hook(sub, args):
        point = split_of.get(id(sub))
        if point is not None:
            called.append(point)
            stage[0] += 1
        for pid in direct.get(id(sub), ()):
            owned.setdefault(pid, stage[0])

    class FirstUse(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            for t in _tensors((args, kwargs)):
                if id(t) in parameters:
                    used.setdefault(id(t), stage[0])
            return func(*args, **kwargs)

    handles = [m.register_forward_pre_hook(pre_hook) for m in module.modules()]
    was_training = module.training
    module.eval()
    try:
        with torch.enable_grad(), FirstUse():
            module(*inputs)
    finally:
        module.train(was_training)
        for h in handles:
            h.remove()
    if called != list(split_points):
        raise ValueError(f"the split points were called in the order {called}, the plan's is "
                         f"{list(split_points)} (each once): torch would cut elsewhere")
    counts = [0] * (len(split_points) + 1)
    for pid, p in parameters.items():
        s = used.get(pid, owned.get(pid))
        if s is not None:
            counts[s] += p.numel()
    return counts


def _shape(text):
    return [int(part) for part in text.split(",")]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m interplace_importers.torch_plan",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("plan", help="the plan file (--save-torch-plan)")
    parser.add_argument("--module", help="MODULE:CALLABLE making your nn.Module")
    parser.add_argument("--input-shape", type=_shape, help="one sample's input shape")
    parser.add_argument("--input-dtype", choices=["float32", "int64"], default="float32")
    args = parser.parse_args(argv)
    try:
        plan = TorchPlan.read(args.plan)
    except (OSError, ValueError) as error:
        print(f"interplace_importers.torch_plan: error: {error}", file=sys.stderr)
        return 2
    print(f"{plan.graph}: {plan.pipeline} on {plan.ranks} ranks x {plan.stages_per_rank} "
          f"stages, {plan.n_microbatches} micro-batches; class "
          f"{plan.schedule_class_name or 'none (the action lists run it)'}")
    spec = ", ".join(f"{p!r}: SplitPoint.BEGINNING" for p in plan.split_points)
    print(f"split_spec: {{{spec}}}")
    counts = None
    if args.module:
        if args.input_shape is None:
            parser.error("--module needs --input-shape")
        import torch
        module_name, _, attribute = args.module.partition(":")
        model = getattr(importlib.import_module(module_name), attribute)()
        dtype = getattr(torch, args.input_dtype)
        example = torch.zeros(1, *args.input_shape, dtype=dtype)
        try:
            counts = stage_parameters(model, plan.split_points, [example])
        except ValueError as error:
            print(f"interplace_importers.torch_plan: error: {error}", file=sys.stderr)
            return 2
    for s, stage in enumerate(plan.stages):
        torch_count = "" if counts is None else f", torch {counts[s]:,}"
        print(f"stage {s} (rank {stage['rank']}): begins at {stage['begins_at'] or 'the input'}, "
              f"{stage['parameters']:,} parameters{torch_count}")
    if counts is not None:
        try:
            plan.check_stage_parameters(counts)
        except ValueError as error:
            print(f"interplace_importers.torch_plan: error: {error}", file=sys.stderr)
            return 1
        print(f"per-stage parameters = torch's ({sum(counts):,} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
