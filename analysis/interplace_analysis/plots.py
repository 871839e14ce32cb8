"""The report's plots (PNG through matplotlib's Agg backend, so no display is needed).

Each function returns a Figure (or None when there is nothing to draw) so tests can
look at what was drawn; :func:`save` writes and closes it.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import stats  # noqa: E402
from .loader import Results  # noqa: E402
from .tables.traversal import GROUP_KEY  # noqa: E402

KIND_COLOURS = {"forward": "tab:blue", "backward": "tab:orange", "aux": "tab:green",
                "optimizer": "tab:purple", "comm_wait": "tab:red", "idle": "lightgrey"}


def save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)  # layouts are tight already; "tight" bbox would draw twice
    plt.close(fig)
    return path


def step_time_by_order(results: Results, model: str) -> plt.Figure | None:
    """Box plot of measured step times per order, one panel per group of the model
    (placer, K, strategy, ...) that tried several orders, orders sorted by median."""
    ok = results.ok
    ok = ok[ok["model"] == model] if not ok.empty else ok
    if ok.empty:
        return None
    groups = list(ok.groupby(GROUP_KEY, dropna=False, sort=True))
    compared = [(k, g) for k, g in groups if g["order"].nunique() > 1]
    groups = compared or groups  # a panel with one order says nothing about orders
    fig, axes = plt.subplots(len(groups), 1, figsize=(8, 2.8 * len(groups)), squeeze=False)
    for ax, (key, grp) in zip(axes[:, 0], groups):
        data = {o: np.concatenate([results.measured_step_times(c) for c in g["run_id"]])
                for o, g in grp.groupby("order")}
        orders = sorted(data, key=lambda o: (stats.median(data[o]), o))
        ax.boxplot([data[o] for o in orders])  # labels set apart: matplotlib < 3.9 and >= 3.9
        ax.set_xticks(range(1, len(orders) + 1), orders)
        k = dict(zip(GROUP_KEY, key))
        ax.set_title(f"{model}: {k['placer']}, K={k['devices']}, {k['strategy_label']},"
                     f" M={k['micro_batches']}", fontsize=9)
        ax.set_ylabel("step time (s)")
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    fig.tight_layout()
    return fig


def throughput_vs_accuracy(strategies: pd.DataFrame, model: str) -> plt.Figure | None:
    """Samples/s against accuracy, one point per configuration, labelled by strategy."""
    s = strategies[strategies["model"] == model] if not strategies.empty else strategies
    if s.empty:
        return None
    use_eval = (s["accuracy_metric"] == "eval").all()
    col = "eval_accuracy" if use_eval else "accuracy_at_equal_step"
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, g in s.groupby("strategy_label", sort=True):
        ax.scatter(g["samples_per_s"], g[col], label=label)
    ax.set_xlabel("samples/s")
    ax.set_ylabel("evaluation accuracy" if use_eval else "training accuracy at equal steps")
    ax.set_title(f"{model}: throughput vs accuracy per strategy", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def loss_curves(results: Results, config_ids: list[str], title: str,
                equal_time_s: float | None = None) -> plt.Figure | None:
    """Training loss per measured step and per elapsed wall time, one line per config;
    a dashed line marks the equal-wall-time point of Table 2 when given."""
    if results.curves.empty or not config_ids:
        return None
    cfg = results.configs.set_index("run_id")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for cid in config_ids:
        d = results.measured_curve(cid)
        label = cfg.loc[cid, "strategy_label"]
        a1.plot(d["step"], d["loss"], label=label)
        a2.plot(d["elapsed_s"], d["loss"], label=label)
    if equal_time_s is not None and equal_time_s == equal_time_s:
        a2.axvline(equal_time_s, color="grey", linestyle="--", linewidth=1,
                   label="equal wall time")
    a1.set_xlabel("step")
    a2.set_xlabel("measured wall time (s)")
    for a in (a1, a2):
        a.set_ylabel("loss")
        a.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def idle_intervals(events: pd.DataFrame, end_s: float) -> list[tuple[float, float]]:
    """Gaps in [0, end_s] covered by no event of one rank: the rank's idle time."""
    gaps, t = [], 0.0
    for s, e in sorted(zip(events["start_s"], events["end_s"])):
        if s > t:
            gaps.append((t, s - t))
        t = max(t, e)
    if end_s > t:
        gaps.append((t, end_s - t))
    return gaps


def timeline(results: Results, config_id: str) -> plt.Figure | None:
    """One measured step of every rank: busy time by kind, comm-wait, and idle gaps.

    A rank's step ends at its ``ranks/step_s`` of the last measured step (the step the
    timeline records) or, without it, at its last event."""
    ev = results.timelines.get(config_id)
    if ev is None or ev.empty:
        return None
    cfg = results.configs.set_index("run_id").loc[config_id]
    ends = {}
    st = results.steps
    if not st.empty:
        last = st[(st["run_id"] == config_id) & ~st["warmup"]]
        if len(last) and "step_s" in last:
            last = last[last["step"] == last["step"].max()]
            ends = dict(zip(last["rank"], last["step_s"]))
    ranks = sorted(set(ev["rank"]) | set(range(int(cfg["devices"] or 0))))
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(ranks) + 1.5))
    drawn = set()
    for r in ranks:
        e = ev[ev["rank"] == r]
        end = float(ends.get(r, e["end_s"].max() if len(e) else 0.0))
        for kind, g in e.groupby("kind"):
            ax.broken_barh(list(zip(g["start_s"], g["end_s"] - g["start_s"])), (r - 0.4, 0.8),
                           facecolors=KIND_COLOURS.get(kind, "black"),
                           label=None if kind in drawn else kind)
            drawn.add(kind)
        gaps = idle_intervals(e, end)
        if gaps:
            ax.broken_barh(gaps, (r - 0.4, 0.8), facecolors=KIND_COLOURS["idle"],
                           label=None if "idle" in drawn else "idle")
            drawn.add("idle")
    ax.set_yticks(ranks, [f"rank {r}" for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("time from the rank's start of the step (s)")
    ax.set_title(f"{cfg['name']}: one measured step", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig
