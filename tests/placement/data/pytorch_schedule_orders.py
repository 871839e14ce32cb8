"""Writes pytorch-schedule-orders.txt: each rank's compute order of PyTorch's own
ScheduleInterleavedZeroBubble, ScheduleZBVZeroBubble and ScheduleDualPipeV, for
K in {2, 4}, M in {4, 8} (V = 2; interleaved zero bubble also V = 3), as their
`_calculate_single_rank_operations` lists them (no-op padding dropped).

The orders are PyTorch's, not a rewrite of them: this script reads torch's
torch/distributed/pipelining/schedules.py (and _utils.py) from a torch wheel, compiles
only the order functions it needs, and calls them on a stand-in for the schedule object
(the wheel's native libraries are never loaded, so a CUDA wheel works on a CPU machine).

    pip download torch==2.15.0 --no-deps -d /tmp/w
    unzip -q /tmp/w/torch-2.15.0-*.whl 'torch/distributed/pipelining/*' 'torch/version.py' -d /tmp/w/x
    python3 tests/placement/data/pytorch_schedule_orders.py /tmp/w/x > tests/placement/data/pytorch-schedule-orders.txt

Notation (PyTorch's): "3F0" stage 3's forward of micro-batch 0, "3I0" its input-gradient
backward, "3W0" its weight-gradient pass, "3B0" a full backward, "(0F3;3B1)" an
overlapped forward and backward (OVERLAP_F_B).
"""
import ast
import logging
import sys
import types
from collections import defaultdict
from enum import Enum
from pathlib import Path
from typing import NamedTuple

SCHEDULES = ("ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble", "ScheduleDualPipeV")


def load(torch_root: Path):
    pipelining = torch_root / "torch" / "distributed" / "pipelining"
    namespace = {"__name__": "schedules", "defaultdict": defaultdict, "Enum": Enum,
                 "NamedTuple": NamedTuple, "logger": logging.getLogger("schedules")}

    def run(node, where):
        exec(compile(ast.Module([node], []), where, "exec"), namespace)

    for node in ast.parse((pipelining / "_utils.py").read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("generate_"):
            run(node, "_utils.py")
    methods = {}
    for node in ast.parse((pipelining / "schedules.py").read_text()).body:
        named = getattr(node, "name", None)
        if named in ("_ComputationType", "_Action", "_get_1f1b_rank_ops", "_get_warmup_ops"):
            run(node, "schedules.py")
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            value = node.value  # FORWARD = _ComputationType.FORWARD, F = FORWARD, ...
            if (isinstance(value, ast.Attribute) and getattr(value.value, "id", "") == "_ComputationType") \
                    or (isinstance(value, ast.Name) and value.id in namespace):
                run(node, "schedules.py")
        elif named in SCHEDULES:
            for item in node.body:
                if getattr(item, "name", "") == "_calculate_single_rank_operations":
                    local = {}
                    exec(compile(ast.Module([item], []), named, "exec"), namespace, local)
                    methods[named] = local[item.name]
    return methods


def text(action):
    if action.sub_actions is not None:
        return "(" + ";".join(text(a) for a in action.sub_actions) + ")"
    return f"{action.stage_index}{action.computation_type.value}{action.microbatch_index}"


def main():
    torch_root = Path(sys.argv[1])
    version = (torch_root / "torch" / "version.py").read_text()
    methods = load(torch_root)
    print("# PyTorch's per-rank compute orders; made by tests/placement/data/pytorch_schedule_orders.py")
    for line in version.splitlines():
        if line.startswith(("__version__", "git_version")):
            print("# torch " + line)
    for name in SCHEDULES:
        for k in (2, 4):
            for m in (4, 8):
                for v in ((2, 3) if name == "ScheduleInterleavedZeroBubble" else (2,)):
                    if name == "ScheduleDualPipeV" and m < 2 * k:
                        continue  # DualPipeV refuses fewer micro-batches than stages
                    rounds = max(1, m // k)
                    schedule = types.SimpleNamespace(
                        pp_group_size=k, n_local_stages=v, _n_microbatches=m, num_stages=k * v,
                        _num_stages=k * v, number_of_rounds=rounds, microbatches_per_round=m // rounds)
                    for rank in range(k):
                        ops = methods[name](schedule, rank)
                        order = " ".join(text(a) for a in ops if a is not None)
                        print(f"{name.removeprefix('Schedule')} K{k} M{m} V{v} rank{rank}: {order}")


if __name__ == "__main__":
    main()
