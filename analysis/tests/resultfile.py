"""Writes result files with h5py exactly as docs/results-format.md lays them out (version
1 by default; ``format_version=3`` adds the dimension scales, units and string arrays of
version 3), from a few numbers per configuration, so tests know every expected value.

Per-rank times follow from each step time ``t`` and a configuration's ``busy``
shares: on every rank ``step_s = t``, ``forward_s = busy[0] t``, ``backward_s =
busy[1] t``, ``aux_s = busy[2] t``, ``optimizer_s = busy[3] t``, ``idle_s`` the rest,
half of it ``comm_wait_s``. So utilisation is ``sum(busy)`` and the idle fraction
``1 - sum(busy)`` exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import h5py
import numpy as np

STR = h5py.string_dtype("utf-8")
PARAM_ORDER = ("model", "family", "order", "placer", "devices", "strategy", "pipeline",
               "interlock_mode", "micro_batches", "batch_size", "warmup_steps", "steps",
               "dataset", "eval_samples_requested", "optimizer", "learning_rate",
               "weight_decay", "seed", "device", "cost_device", "model_options")

# Measured step-time pattern: median 1.005 (with a warm-up step of 5.0 included it
# would be 1.01, so a wrong warm-up exclusion shows), sum 8.04.
PATTERN = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.04]


def fnv1a64(text: str) -> str:
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) % 2**64
    return f"{h:016x}"


@dataclass
class Cfg:
    """One configuration as the fixture describes it (defaults: a resnet20 run)."""

    model: str = "resnet20"
    family: str = "resnet"
    order: str = "topo"
    placer: str = "contiguous"
    devices: int = 2
    strategy: str = "global"
    pipeline: str = "gpipe"
    interlock_mode: str = "single"
    micro_batches: int = 4
    batch_size: int = 32
    seed: int = 1
    status: str = "ok"
    reason: str = ""
    scale: float = 1.0                  # measured step times = scale * PATTERN
    step_times: list[float] | None = None  # overrides scale * PATTERN
    warmup_time: float = 5.0
    busy: tuple[float, float, float, float] = (0.3, 0.4, 0.0, 0.1)
    loss0: float = 2.0                   # loss at step s = loss0 - loss_slope * s
    loss_slope: float = 0.1
    final_accuracy: float = 0.8          # accuracy rises linearly to this at the last step
    eval_accuracy: float = float("nan")
    pred_step_s: float | None = None     # simulator's prediction (None: no prediction group)
    pred_idle: float = 0.25
    graph: dict = field(default_factory=lambda: dict(
        node_count=70, edge_count=78, depth=62, max_width=2, mean_branching_factor=1.13,
        critical_path_cost_share=0.97))
    timeline: list[tuple[int, str, float, float]] | None = None
    # ranks/*_cpu_s = cpu_share x the wall times and timeline/cpu_s = cpu_share x each
    # event's length; None: not written (files from before the runtime recorded CPU time).
    cpu_share: float | None = None
    with_data: bool = True  # False: a failed/skipped group without steps/ranks datasets
    device: str = "cpu"
    # graph/forward_flops, graph/backward_flops of one micro-batch (None: not written, as
    # in files from before them) and the cost device preset's peak (None: not written).
    flops: tuple[int, int] | None = (1_000_000_000, 2_000_000_000)
    cost_preset: str = "cpu-core"
    peak_flops: float | None = 128e9
    device_name: str = "cpu: 1 threads"  # device_names entry of every rank
    index: int = 0
    repeat: int | None = None  # written as the `repeat` attribute (and in the id) when set
    group_name: str | None = None  # /configs/<group_name> instead of /configs/<id>
    model_options: str = ""  # the model_options attribute (k=v,...; part of the id)
    # Every rank's peak memory in bytes (None: rank r peaks at r + 1 MiB).
    peak_memory: int | None = None
    # The evaluations table, (epoch, step, loss, accuracy, samples) each, or with
    # (validation_loss, validation_accuracy, validation_samples) after them (None: absent).
    evaluations: list[tuple] | None = None
    # A simulate-only configuration (the traversal-order study): planned, not trained (give
    # with_data=False); its rl preset, the order a skipped one repeats, the placer's wall
    # time and rl's best-so-far curve (placer_rl; None: no such group).
    simulate_only: bool = False
    rl_preset: str = "default"
    same_sequence_as: str = ""
    rl_curve: list[float] | None = None

    def params(self) -> dict:
        return {"model": self.model, "family": self.family, "order": self.order,
                "placer": self.placer, "devices": self.devices, "strategy": self.strategy,
                "pipeline": self.pipeline, "interlock_mode": self.interlock_mode,
                "micro_batches": self.micro_batches, "batch_size": self.batch_size,
                "warmup_steps": 1, "steps": len(self.measured()), "dataset": "synthetic",
                "eval_samples_requested": 0 if np.isnan(self.eval_accuracy) else 1000,
                "optimizer": "sgd", "learning_rate": 0.05, "weight_decay": 0.0,
                "seed": self.seed, "device": self.device, "cost_device": self.cost_preset,
                "model_options": self.model_options}

    def measured(self) -> list[float]:
        return list(self.step_times) if self.step_times is not None else \
            [self.scale * t for t in PATTERN]

    def config_id(self) -> str:
        p = self.params()
        text = "".join(f"{k}={p[k]}\n" for k in PARAM_ORDER)
        return fnv1a64(text + (f"repeat={self.repeat}\n" if self.repeat is not None else ""))

    def display_name(self) -> str:
        strategy = f"{self.strategy}/{self.pipeline}" if self.pipeline else self.strategy
        return (f"{self.model} {self.order} {self.placer} K={self.devices} "
                f"{strategy} M={self.micro_batches} B={self.batch_size}")


def _attr(group: h5py.Group, name: str, value) -> None:
    if isinstance(value, str):
        group.attrs.create(name, value, dtype=STR)
    elif isinstance(value, bool | int | np.integer):
        group.attrs.create(name, np.int64(value))
    else:
        group.attrs.create(name, np.float64(value))


def _units(name: str) -> str:
    if name.endswith("_s"):
        return "s"
    return "bytes" if "bytes" in name else "1"


def _axis(group: h5py.Group, name: str, length: int) -> h5py.Dataset:
    d = group.create_dataset(name, data=np.arange(length, dtype=np.int64))
    d.make_scale(name)
    d.attrs.create("units", "1", dtype=STR)
    d.attrs.create("long_name", name, dtype=STR)
    return d


def _add_version3(g: h5py.Group, c: Cfg) -> None:
    """Version 3 on a written group: typed model options, hosts and device names as
    arrays, the step/rank/node/event scales attached by axis, units and long_name."""
    for item in filter(None, c.model_options.split(",")):
        key, _, value = item.partition("=")
        g.attrs[f"model_option_{key}"] = (np.int64(value) if value.lstrip("-").isdigit()
                                          else np.float64(value))
    for key in ("hosts", "device_names"):
        if key in g.attrs:
            g.attrs.create(key, str(g.attrs[key]).split(","), dtype=STR)
    scales = {"rank": _axis(g, "rank", c.devices)}
    if "order" in g:
        scales["node"] = _axis(g, "node", len(g["order"]))
    if "placer_rl" in g:
        scales["episode"] = _axis(g["placer_rl"], "episode",
                                  len(g["placer_rl"]["best_step_time_s"]))
    if "steps" in g:
        scales["step"] = _axis(g, "step", len(g["steps"]["step"]))
    if "timeline" in g:
        scales["event"] = _axis(g["timeline"], "event", len(g["timeline"]["rank"]))
    axes = {"order": ("node",), "placement": ("node",), "node_names": ("node",),
            "prediction": ("rank",), "steps": ("step", "rank"), "ranks": ("step", "rank"),
            "timeline": ("event",), "placer_rl": ("episode",)}

    def visit(path: str, obj) -> None:
        if not isinstance(obj, h5py.Dataset) or obj.attrs.get("CLASS") == b"DIMENSION_SCALE":
            return
        for axis, dim in enumerate(axes[path.split("/")[0]][:obj.ndim]):
            obj.dims[axis].attach_scale(scales[dim])
        obj.attrs.create("units", _units(path), dtype=STR)
        obj.attrs.create("long_name", path, dtype=STR)

    g.visititems(visit)


def _write_config(configs: h5py.Group, c: Cfg, version: int = 1) -> None:
    g = configs.create_group(c.group_name or c.config_id())
    k = c.devices
    if c.repeat is not None:
        _attr(g, "repeat", c.repeat)
    for key, value in {"id": c.config_id(), "index": c.index, "name": c.display_name(),
                       **c.params(), "status": c.status, "reason": c.reason,
                       "started_utc": "2026-11-29T19:00:00Z", "wall_s": 12.5}.items():
        _attr(g, key, value)
    if c.simulate_only:
        _attr(g, "simulate_only", 1)
        _attr(g, "rl_preset", c.rl_preset)
        if c.same_sequence_as:
            _attr(g, "same_sequence_as", c.same_sequence_as)
    if c.simulate_only and c.status == "ok":
        _attr(g, "placer_wall_s", 1.0)
        _attr(g, "parameter_count", 272186)
    if c.rl_curve is not None:
        rl = g.create_group("placer_rl")
        curve = np.asarray(c.rl_curve, dtype=float)
        for key, value in {"start_step_time_s": curve[0], "greedy_step_time_s": curve[-1],
                           "best_final_s": curve[-1], "episodes_run": len(curve),
                           "evaluation_episodes": 0, "groups": 0}.items():
            _attr(rl, key, value)
        rl.create_dataset("episode_step_time_s", data=curve)
        rl.create_dataset("best_step_time_s", data=curve)
    if c.pred_step_s is not None:
        p = g.create_group("prediction")
        _attr(p, "messages", "stage")
        _attr(p, "step_time_s", c.pred_step_s)
        _attr(p, "idle_fraction", c.pred_idle)
        _attr(p, "node_level_reason", "")
        p.create_dataset("busy_s", data=np.full(k, c.pred_step_s * (1 - c.pred_idle)))
        p.create_dataset("idle_s", data=np.full(k, c.pred_step_s * c.pred_idle))
        p.create_dataset("peak_memory_bytes", data=np.full(k, 1 << 20, dtype=np.int64))
    if c.graph:
        gr = g.create_group("graph")
        for key, value in c.graph.items():
            _attr(gr, key, value)
        if c.flops is not None:
            _attr(gr, "forward_flops", c.flops[0])
            _attr(gr, "backward_flops", c.flops[1])
            _attr(gr, "batch_size", c.batch_size // c.micro_batches)
        if c.peak_flops is not None:
            _attr(g, "cost_device_preset", c.cost_preset)
            _attr(g, "peak_flops_per_s", c.peak_flops)
    if c.simulate_only and c.status != "ok":
        return  # nothing planned
    n = c.graph.get("node_count", 4) if c.graph else 4
    g.create_dataset("order", data=np.arange(n, dtype=np.int64))
    g.create_dataset("placement", data=(np.arange(n) * k // n).astype(np.int64))
    if not c.simulate_only:  # a simulate-only study keeps no node names
        g.create_dataset("node_names", data=[f"n{i}" for i in range(n)], dtype=STR)
    if not c.with_data:
        if version >= 3:
            _add_version3(g, c)
        return
    measured = c.measured()
    times = np.array([c.warmup_time] + measured)
    s = len(times)
    steps = np.arange(s)
    _attr(g, "measured_wall_s", float(sum(measured)))
    _attr(g, "samples_per_s", len(measured) * c.batch_size / sum(measured))
    _attr(g, "eval_loss", float("nan") if np.isnan(c.eval_accuracy) else 0.5)
    _attr(g, "eval_accuracy", c.eval_accuracy)
    _attr(g, "eval_samples", 0 if np.isnan(c.eval_accuracy) else 1000)
    _attr(g, "parameter_count", 272186)
    _attr(g, "reach", {"global": k - 1, "local": 0, "pairwise": 1}.get(c.strategy, 1))
    _attr(g, "global_only_reason", "")
    _attr(g, "hosts", ",".join(["node1"] * k))
    _attr(g, "device_names", ",".join([c.device_name] * k))
    st = g.create_group("steps")
    st.create_dataset("step", data=steps.astype(np.int64))
    st.create_dataset("warmup", data=(steps == 0).astype(np.int8))
    st.create_dataset("step_time_s", data=times)
    st.create_dataset("loss", data=c.loss0 - c.loss_slope * steps)
    st.create_dataset("accuracy", data=c.final_accuracy * steps / (s - 1))
    aux = np.full((s, k), np.nan)  # the last stage has no auxiliary head
    if c.strategy != "global":
        aux[:, :-1] = 2.5
    st.create_dataset("aux_loss", data=aux)
    st.create_dataset("aux_accuracy", data=aux / 10)
    rk = g.create_group("ranks")
    t = np.repeat(times[:, None], k, axis=1)
    parts = dict(zip(("forward_s", "backward_s", "aux_s", "optimizer_s"), c.busy))
    for name, share in parts.items():
        rk.create_dataset(name, data=share * t)
    idle = (1 - sum(c.busy)) * t
    rk.create_dataset("step_s", data=t)
    rk.create_dataset("idle_s", data=idle)
    rk.create_dataset("comm_wait_s", data=idle / 2)
    rk.create_dataset("overhead_s", data=idle / 2)
    if c.cpu_share is not None:
        for name, share in parts.items():
            rk.create_dataset(name.replace("_s", "_cpu_s"), data=c.cpu_share * share * t)
        rk.create_dataset("step_cpu_s", data=c.cpu_share * sum(c.busy) * t)
    rk.create_dataset("bytes_sent", data=np.full((s, k), 1000, dtype=np.int64))
    peaks = np.arange(1, k + 1, dtype=np.int64) << 20 if c.peak_memory is None \
        else np.full(k, c.peak_memory, dtype=np.int64)
    rk.create_dataset("peak_memory_bytes", data=np.tile(peaks, (s, 1)))
    if c.evaluations is not None:
        ev = g.create_group("evaluations")
        names = ("epoch", "step", "loss", "accuracy", "samples", "validation_loss",
                 "validation_accuracy", "validation_samples")
        for i, name in enumerate(names[:len(c.evaluations[0])]):
            ev.create_dataset(name, data=np.array([e[i] for e in c.evaluations]))
    if c.timeline is not None:
        tl = g.create_group("timeline")
        tl.create_dataset("rank", data=np.array([e[0] for e in c.timeline], dtype=np.int64))
        tl.create_dataset("kind", data=[e[1] for e in c.timeline], dtype=STR)
        tl.create_dataset("start_s", data=np.array([e[2] for e in c.timeline]))
        tl.create_dataset("end_s", data=np.array([e[3] for e in c.timeline]))
        if c.cpu_share is not None:
            tl.create_dataset("cpu_s", data=np.array([c.cpu_share * (e[3] - e[2])
                                                      for e in c.timeline]))
    if version >= 3:
        _add_version3(g, c)


def write_result_file(path: Path, configs: list[Cfg], *, format_name="interplace-results",
                      format_version=1, shard="0/1", spec_text="[sweep]\nname = 'fixture'\n",
                      with_configs_group=True, root: dict | None = None) -> Path:
    """A complete file; ``index`` of each configuration is taken as given; ``root``
    replaces or adds root attributes."""
    with h5py.File(path, "w") as f:
        for key, value in {**{
            "format_name": format_name, "format_version": format_version,
            "created_utc": "2026-11-29T19:00:00Z", "interplace_version": "0.1.0",
            "git_commit": "unknown", "mpi_version": "Open MPI 4.1.4", "hdf5_version": "1.10.8",
            "onednn_version": "2.6", "cuda_runtime_version": "none",
            "cuda_driver_version": "none", "cudnn_version": "none", "hosts": "node1,node1",
            "devices": "cpu,cpu", "world_size": 2, "slurm_job_id": "",
            "slurm_array_job_id": "", "slurm_array_task_id": "", "shard": shard,
            "spec_path": "runs/configs/fixture.toml", "spec_text": spec_text,
        }, **(root or {})}.items():
            _attr(f, key, value)
        if format_version == 3:
            for key in ("hosts", "devices"):
                f.attrs.create(key, str(f.attrs[key]).split(","), dtype=STR)
            f.attrs.create("overrides", ["steps=9"], dtype=STR)
        if with_configs_group:
            grp = f.create_group("configs")
            for c in configs:
                _write_config(grp, c, format_version)
    return Path(path)


# --- The fixture sweep: values chosen so every table's numbers can be worked out by hand.

TIMELINE = [(0, "forward", 0.0, 0.3), (0, "backward", 0.6, 1.0),
            (1, "comm_wait", 0.0, 0.1), (1, "forward", 0.1, 0.4),
            (1, "backward", 0.4, 0.8), (1, "optimizer", 0.8, 0.9)]


def fixture_configs() -> list[Cfg]:
    """resnet20, contiguous, K=2: topo 1.005 s median, dfs-pre 0.804 (x1.25), bfs 0.9045
    (x1.111), lexical 1.206 (x0.833); greedy-eft: topo vs dfs-pre within noise; gpt: a
    single order (bfs, no topo); strategies on resnet20 topo contiguous: local (x2.0 samples/s,
    eval accuracy 0.75) and pairwise (x1.667, 0.845) beside global (0.85); one failed, one
    skipped and index 9 missing."""
    cs = [
        Cfg(order="topo", scale=1.0, pred_step_s=1.1, eval_accuracy=0.85, timeline=TIMELINE),
        Cfg(order="dfs-pre", scale=0.8, pred_step_s=0.8),
        Cfg(order="bfs", scale=0.9, pred_step_s=0.95),
        Cfg(order="lexical", scale=1.2, pred_step_s=1.3),
        Cfg(order="topo", placer="greedy-eft", scale=1.0, pred_step_s=1.0),
        Cfg(order="dfs-pre", placer="greedy-eft",
            step_times=[0.99, 1.01, 0.98, 1.00, 1.02, 0.97, 1.03, 0.995], pred_step_s=1.0),
        Cfg(order="topo", strategy="local", pipeline="", scale=0.5, busy=(0.35, 0.4, 0.1, 0.1),
            final_accuracy=0.7, eval_accuracy=0.75, pred_step_s=0.45),
        Cfg(order="topo", strategy="pairwise", pipeline="", scale=0.6,
            busy=(0.3, 0.4, 0.1, 0.1), final_accuracy=0.795, eval_accuracy=0.845,
            pred_step_s=0.62),
        Cfg(model="gpt-small", family="gpt", order="bfs", scale=2.0, pred_step_s=2.2,
            graph=dict(node_count=40, edge_count=52, depth=30, max_width=4,
                       mean_branching_factor=1.4, critical_path_cost_share=0.8)),
        Cfg(order="random", status="failed", reason="rank 1: out of memory", with_data=False,
            pred_step_s=1.5),
        Cfg(order="dfs-post", placer="balanced", strategy="local", pipeline="",
            status="skipped", reason="placement is not a stage chain", with_data=False,
            pred_step_s=None, graph={}),
    ]
    index = 0
    for c in cs:
        if index == 9:  # a gap: index 9 never finished
            index += 1
        c.index = index
        index += 1
    return cs


def repeated(cfg: Cfg, runs: int, seed: int, factor: float = 1.0, run_sd: float = 0.03,
             step_sd: float = 0.01, repeat_attr: bool = True) -> list[Cfg]:
    """``runs`` runs of one configuration with realistic noise: each run's step times are
    ``factor`` x the configuration's measured times x a run factor (lognormal, ``run_sd``:
    a node, its caches and neighbours vary between runs) x per-step jitter (``step_sd``).
    With ``repeat_attr`` each run gets ``repeat`` = 0, 1, ... (and its own id, as the C++
    sweep writes them); without, they share the id (give them distinct group names)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(runs):
        # math.exp, not numpy's: numpy picks a vector exp by the CPU's features, whose last
        # digit differs between AVX2 and AVX-512 machines; the fixture must be the same
        # bytes on every machine.
        run = math.exp(float(rng.normal(0.0, run_sd)))
        steps = [factor * run * t * math.exp(float(rng.normal(0.0, step_sd)))
                 for t in cfg.measured()]
        c = replace(cfg, step_times=steps, repeat=i if repeat_attr else None)
        if not repeat_attr:
            c.group_name = f"{cfg.config_id()}-run{i}"
        out.append(c)
    return out


def write_fixture(path: Path, format_version: int = 1) -> Path:
    return write_result_file(path, fixture_configs(), format_version=format_version)
