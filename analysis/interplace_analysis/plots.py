"""The report's plots (PNG through matplotlib's Agg backend, so no display is needed).

Each function returns a Figure (or None when there is nothing to draw) so tests can
look at what was drawn; :func:`save` writes and closes it.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
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


MS = 1e3  # step times are recorded in seconds and drawn in milliseconds


def _run_side(results: Results, runs: pd.DataFrame, seed: int) -> stats.Runs:
    return stats.Runs(runs["step_time_s"].to_numpy(float),
                      results.lazy_step_times(runs["run_id"], seed))


def _errorbar(ax, x, y, low, high, **kw):
    """Points with asymmetric error bars from interval bounds (NaN bounds: no bar)."""
    y, low, high = (np.asarray(v, dtype=float) for v in (y, low, high))
    err = np.vstack([np.nan_to_num(y - low), np.nan_to_num(high - y)]).clip(min=0)
    return ax.errorbar(x, y, yerr=err, fmt="o", capsize=3, **kw)


def step_time_by_order(results: Results, model: str, seed: int = 0) -> plt.Figure | None:
    """Median step time (ms) per order with its 95% interval over runs, one panel per
    group of the model (placer, K, strategy, ...) that tried several orders, orders sorted
    by median; each tick says the order and its n (runs), each point its value."""
    ok = results.ok
    ok = ok[ok["model"] == model] if not ok.empty else ok
    if ok.empty:
        return None
    groups = list(ok.groupby(GROUP_KEY, dropna=False, sort=True))
    compared = [(k, g) for k, g in groups if g["order"].nunique() > 1]
    groups = compared or groups  # a panel with one order says nothing about orders
    fig, axes = plt.subplots(len(groups), 1, figsize=(8, 3.0 * len(groups)), squeeze=False)
    for ax, (key, grp) in zip(axes[:, 0], groups):
        ests = {o: stats.median_estimate(_run_side(results, g, seed),
                                         stats.seed_for("plot-order", *key, o, base=seed))
                for o, g in grp.groupby("order")}
        orders = sorted(ests, key=lambda o: (ests[o].point, o))
        x = np.arange(len(orders))
        pts = [ests[o] for o in orders]
        _errorbar(ax, x, [e.point * MS for e in pts], [e.low * MS for e in pts],
                  [e.high * MS for e in pts], color="tab:blue")
        for xi, o in zip(x, orders):  # each run's own median: the n behind the point
            per_run = grp[grp["order"] == o]["step_time_s"].to_numpy(float) * MS
            ax.scatter(np.full(per_run.size, xi + 0.12), per_run, s=8, color="grey",
                       marker="x", linewidths=0.8, label=None)
        for xi, e in zip(x, pts):
            ax.annotate(f"{e.point * MS:.4g}", (xi, e.point * MS), textcoords="offset points",
                        xytext=(6, 0), fontsize=7, va="center")
        ax.set_xticks(x, [f"{o}\nn={ests[o].runs[0]}" for o in orders])
        ax.set_xlim(-0.5, len(orders) - 0.5)
        k = dict(zip(GROUP_KEY, key))
        ax.set_title(f"{model}: {k['placer']}, K={k['devices']}, {k['strategy_label']},"
                     f" M={k['micro_batches']}", fontsize=9)
        ax.set_ylabel("step time (ms)")
        ax.tick_params(axis="x", labelsize=8)
    fig.text(0.01, 0.005, "dot: median over runs of each run's median step; bar: 95% interval"
             " over runs (one run: over its steps); grey x: each run", fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def throughput_vs_accuracy(strategies: pd.DataFrame, model: str, results: Results | None = None,
                           seed: int = 0) -> plt.Figure | None:
    """Samples/s against accuracy, one point per configuration (at most MAX_RUNS_DRAWN
    per strategy, spread over samples/s), labelled by strategy and placement, n in the
    legend. With ``results``, bars give each point's 95% intervals
    over runs (horizontal: samples/s; vertical: evaluation accuracy)."""
    s = strategies[strategies["model"] == model] if not strategies.empty else strategies
    if s.empty:
        return None
    use_eval = (s["accuracy_metric"] == "eval").all()
    col = "eval_accuracy" if use_eval else "accuracy_at_equal_step"
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ok = results.ok if results is not None else None
    by_key = ok.groupby("config_key").indices if ok is not None and not ok.empty else {}
    for i, (label, g) in enumerate(s.groupby("strategy_label", sort=True)):
        n = int(g["runs"].min())
        colour = f"C{i % 10}"
        if len(g) > MAX_RUNS_DRAWN:  # spread over throughput, as drawn_runs does
            g = g.sort_values("samples_per_s", kind="stable")
            g = g.iloc[np.linspace(0, len(g) - 1, MAX_RUNS_DRAWN).round().astype(int)]
        ax.scatter(g["samples_per_s"], g[col], label=f"{label} (n={n})", color=colour)
        for _, r in g.iterrows():
            ax.annotate(f"{label} {r['order']}/{r['placer']}", (r["samples_per_s"], r[col]),
                        textcoords="offset points", xytext=(4, 3), fontsize=6)
            if ok is None:
                continue
            runs = ok.iloc[by_key[r["config_key"]]]
            tput = stats.median_estimate(
                stats.Runs(runs["samples_per_s"].to_numpy(float),
                           results.lazy_step_times(runs["run_id"], seed),
                           inverse=True), stats.seed_for("plot-tput", r["config_key"], base=seed))
            xerr = np.array([[max(r["samples_per_s"] - tput.low, 0.0)],
                             [max(tput.high - r["samples_per_s"], 0.0)]])
            yerr = None
            if use_eval and len(runs) >= 2:
                acc = stats.median_estimate(stats.Runs(runs["eval_accuracy"].to_numpy(float)),
                                            stats.seed_for("plot-acc", r["config_key"],
                                                           base=seed))
                yerr = np.array([[max(r[col] - acc.low, 0.0)], [max(acc.high - r[col], 0.0)]])
            ax.errorbar([r["samples_per_s"]], [r[col]], xerr=np.nan_to_num(xerr),
                        yerr=None if yerr is None else np.nan_to_num(yerr), fmt="none",
                        ecolor=colour, capsize=2, linewidth=0.8)
    ax.set_xlabel("throughput (samples/s, median over runs)")
    ax.set_ylabel("evaluation accuracy" if use_eval else "training accuracy at equal steps")
    ax.set_title(f"{model}: throughput vs accuracy per strategy", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def loss_curves(results: Results, config_ids: list[str], title: str,
                equal_time_s: float | None = None) -> plt.Figure | None:
    """Training loss per measured step and per elapsed wall time, one line per run
    given; a dashed line marks the equal-wall-time point of Table 2 when given."""
    if results.ok.empty or not config_ids:
        return None
    cfg = results.configs.set_index("run_id")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for cid in config_ids:
        d = results.measured_curve(cid)
        label = cfg.loc[cid, "strategy_label"]
        a1.plot(d["step"], d["loss"], marker=".", label=label)
        a2.plot(d["elapsed_s"], d["loss"], marker=".", label=label)
    if equal_time_s is not None and equal_time_s == equal_time_s:
        a2.axvline(equal_time_s, color="grey", linestyle="--", linewidth=1,
                   label="equal wall time")
    a1.set_xlabel("step")
    a1.xaxis.set_major_locator(MaxNLocator(integer=True))
    a2.set_xlabel("measured wall time (s)")
    for a in (a1, a2):
        a.set_ylabel("training loss")
        a.legend(fontsize=8)
    fig.suptitle(f"{title} (one run per strategy)", fontsize=10)
    fig.tight_layout()
    return fig


MAX_RUNS_DRAWN = 25  # per strategy in one figure: more lines show nothing more
MAX_LABELLED = 200  # points of predicted_vs_measured that get their number written beside


def drawn_runs(cfg: pd.DataFrame, run_ids: list[str]) -> list[str]:
    """At most MAX_RUNS_DRAWN runs per strategy label, spread evenly over their step
    times (fastest to slowest), so that a figure of a 100,000-run sweep reads a few
    groups, not all of them."""
    out = []
    sub = cfg.loc[list(run_ids)]
    for _, g in sub.groupby("strategy_label", sort=True):
        g = g.sort_values("step_time_s", kind="stable")
        if len(g) > MAX_RUNS_DRAWN:
            g = g.iloc[np.linspace(0, len(g) - 1, MAX_RUNS_DRAWN).round().astype(int)]
        out += list(g.index)
    return out


def accuracy_vs_time(results: Results, run_ids: list[str], title: str) -> plt.Figure | None:
    """Training accuracy against measured wall time, every run given, one colour per
    strategy (legend: strategy and n runs). None when no run has an accuracy."""
    if results.ok.empty or not run_ids:
        return None
    cfg = results.configs.set_index("run_id")
    run_ids = drawn_runs(cfg, run_ids)
    curves = {r: results.measured_curve(r).dropna(subset=["accuracy", "elapsed_s"])
              for r in run_ids}
    curves = {r: d for r, d in curves.items() if not d.empty}
    if not curves:
        return None
    labels = sorted({cfg.loc[r, "strategy_label"] for r in curves})
    colours = {lab: f"C{i % 10}" for i, lab in enumerate(labels)}
    counts = {lab: sum(cfg.loc[r, "strategy_label"] == lab for r in curves) for lab in labels}
    fig, ax = plt.subplots(figsize=(7, 4))
    drawn = set()
    for r, d in curves.items():
        lab = cfg.loc[r, "strategy_label"]
        ax.plot(d["elapsed_s"], d["accuracy"], marker=".", color=colours[lab], alpha=0.8,
                label=None if lab in drawn else f"{lab} (n={counts[lab]})")
        drawn.add(lab)
    ax.set_xlabel("measured wall time (s)")
    ax.set_ylabel("training accuracy (mini-batch, top-1)")
    ax.set_title(f"{title}: accuracy vs wall time", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def predicted_vs_measured(sim: pd.DataFrame) -> plt.Figure | None:
    """Simulator's predicted against measured step time (ms), one point per configuration
    (measured: median over runs with its 95% interval as a horizontal bar), coloured by
    model, labelled with its ``point`` number (the simulator table's column: names would
    overlap), with the identity line; log-log when either axis spans more than 10x."""
    d = sim.dropna(subset=["pred_step_time_s", "step_time_s"]) if not sim.empty else sim
    if d.empty:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 5))
    for i, (model, g) in enumerate(d.groupby("model", sort=True)):
        x, y = g["step_time_s"].to_numpy(float) * MS, g["pred_step_time_s"].to_numpy(float) * MS
        lo = g["step_time_ci_low"].to_numpy(float) * MS
        hi = g["step_time_ci_high"].to_numpy(float) * MS
        err = np.vstack([np.nan_to_num(x - lo), np.nan_to_num(hi - x)]).clip(min=0)
        n = int(g["runs"].min())
        ax.errorbar(x, y, xerr=err, fmt="o", capsize=2, color=f"C{i % 10}",
                    label=f"{model} ({len(g)} configs, n>={n})")
        for xi, yi, pt in zip(x, y, g["point"] if len(d) <= MAX_LABELLED else []):
            ax.annotate(str(pt), (xi, yi), textcoords="offset points", xytext=(3, 3),
                        fontsize=6)
    allv = np.concatenate([d["step_time_s"].to_numpy(float),
                           d["pred_step_time_s"].to_numpy(float)]) * MS
    allv = allv[allv > 0]
    lo, hi = (allv.min(), allv.max()) if allv.size else (1.0, 10.0)
    if hi / lo > 10:
        ax.set_xscale("log")
        ax.set_yscale("log")
        lims = (lo / 1.3, hi * 1.3)
    else:
        pad = 0.1 * (hi - lo) if hi > lo else 0.1 * hi
        lims = (max(0.0, lo - pad), hi + pad)
    ax.plot(lims, lims, color="grey", linestyle="--", linewidth=1, label="predicted = measured")
    ax.set_xlim(lims)
    ax.set_ylim(lims)
    ax.set_xlabel("measured step time (ms, median over runs)")
    ax.set_ylabel("predicted step time (ms, simulator)")
    ax.set_title("simulator: predicted vs measured step time", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def speedup_vs_devices(scaling: pd.DataFrame, model: str) -> plt.Figure | None:
    """Speedup over the smallest-K configuration against device count, one line per
    (strategy, order, placer, M, B) of the model, 95% intervals over runs as bars, each
    point labelled with its value; dashed: linear speedup."""
    s = scaling[scaling["model"] == model] if not scaling.empty else scaling
    if s.empty:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lines = s.groupby(["strategy_label", "order", "placer", "micro_batches", "batch_size"],
                      sort=True)
    for i, ((label, order, placer, m, b), g) in enumerate(lines):
        g = g.sort_values("devices")
        n = int(min(g["runs"].min(), g["base_runs"].min()))
        _errorbar(ax, g["devices"], g["speedup"], g["speedup_ci_low"], g["speedup_ci_high"],
                  color=f"C{i % 10}", linestyle="-",
                  label=f"{label} {order}/{placer} M={m} B={b} (n>={n})")
        for _, r in g.iterrows():
            ax.annotate(f"x{r['speedup']:.3g}", (r["devices"], r["speedup"]),
                        textcoords="offset points", xytext=(5, 3), fontsize=6)
    ks = sorted(set(int(k) for k in s["devices"]))
    k0 = int(s["base_devices"].min())
    ax.plot(ks, [k / k0 for k in ks], color="grey", linestyle="--", linewidth=1,
            label="linear")
    ax.set_xticks(ks)  # the device counts run: whole numbers
    ax.set_xlabel("devices (K ranks)")
    ax.set_ylabel(f"speedup over K={k0} (step time ratio)")
    ax.set_title(f"{model}: speedup vs device count", fontsize=10)
    ax.legend(fontsize=6)
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


def _draw_timeline(ax, results: Results, config_id: str) -> set[str]:
    """One measured step of every rank of one run on ``ax`` (ms); returns kinds drawn.

    A rank's step ends at its ``ranks/step_s`` of the last measured step (the step the
    timeline records) or, without it, at its last event."""
    ev = results.timelines[config_id]
    cfg = results.configs.set_index("run_id").loc[config_id]
    ends = {}
    st = results.run_steps(config_id)  # this run's groups only
    if not st.empty:
        last = st[~st["warmup"]]
        if len(last) and "step_s" in last:
            last = last[last["step"] == last["step"].max()]
            ends = dict(zip(last["rank"], last["step_s"]))
    return _draw_events(ax, ev, int(cfg["devices"] or 0), ends)


def _draw_events(ax, ev: pd.DataFrame, devices: int, ends: dict) -> set[str]:
    """Events (rank, kind, start_s, end_s[, action]) as one bar per rank in ms, idle gaps
    grey up to each rank's end; bars wide enough carry their action label (F3, B3, ...)."""
    ranks = sorted(set(ev["rank"]) | set(range(devices)))
    span = float(max(list(ends.values()) + [ev["end_s"].max() if len(ev) else 0.0]))
    drawn: set[str] = set()
    for r in ranks:
        e = ev[ev["rank"] == r]
        end = float(ends.get(r, e["end_s"].max() if len(e) else 0.0))
        for kind, g in e.groupby("kind"):
            ax.broken_barh(list(zip(g["start_s"] * MS, (g["end_s"] - g["start_s"]) * MS)),
                           (r - 0.4, 0.8), facecolors=KIND_COLOURS.get(kind, "black"),
                           label=kind)
            drawn.add(kind)
        gaps = idle_intervals(e, end)
        if gaps:
            ax.broken_barh([(a * MS, w * MS) for a, w in gaps], (r - 0.4, 0.8),
                           facecolors=KIND_COLOURS["idle"], label="idle")
            drawn.add("idle")
        if "action" in e:
            for _, row in e[e["kind"] != "comm_wait"].iterrows():
                label = row["action"].decode() if isinstance(row["action"], bytes) \
                    else str(row["action"])
                if label and (row["end_s"] - row["start_s"]) > 0.025 * span:
                    ax.text((row["start_s"] + row["end_s"]) / 2 * MS, r, label, ha="center",
                            va="center", fontsize=7, color="white")
    ax.set_yticks(ranks, [f"rank {r}" for r in ranks])
    ax.set_ylim(max(ranks) + 0.6, min(ranks) - 0.6)  # rank 0 on top
    return drawn


def _timeline_legend(fig: plt.Figure, ax) -> None:
    seen = {}
    for fig_ax in fig.axes:
        for h, lab in zip(*fig_ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    ax.legend(list(seen.values()), list(seen.keys()), fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))


def timeline(results: Results, config_id: str) -> plt.Figure | None:
    """One measured step of every rank of one run: busy time by kind, comm-wait, idle."""
    ev = results.timelines.get(config_id)
    if ev is None or ev.empty:
        return None
    cfg = results.configs.set_index("run_id").loc[config_id]
    fig, ax = plt.subplots(figsize=(9, 0.6 * max(int(cfg["devices"] or 1), 1) + 1.5))
    _draw_timeline(ax, results, config_id)
    ax.set_xlabel("time from the rank's start of the step (ms)")
    ax.set_title(f"{cfg['name']}: one measured step", fontsize=10)
    _timeline_legend(fig, ax)
    fig.tight_layout()
    return fig


def measured_vs_predicted_timeline(results: Results, run_id: str) -> plt.Figure | None:
    """The last measured step of a run above the simulator's first step of the same
    configuration, on one time axis in ms, bars labelled with their schedule actions (F3
    forward of micro-batch 3, B3/b3 backward that trains / passes through, H3 head, S
    step): where the runtime departs from what the simulator predicted."""
    ev = results.timelines.get(run_id)
    pred = results.predicted_timelines.get(run_id)
    if ev is None or ev.empty or pred is None or pred.empty:
        return None
    cfg = results.configs.set_index("run_id").loc[run_id]
    k = int(cfg["devices"] or 1)
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9, 2 * (0.5 * k + 1.0) + 1.0))
    _draw_timeline(top, results, run_id)
    top.set_title(f"measured: step {cfg['step_time_s'] * MS:.4g} ms (median of the run)",
                  fontsize=9)
    ends = {r: float(cfg["pred_step_time_s"]) for r in range(k)}
    _draw_events(bottom, pred, k, ends)
    bottom.set_title(f"simulated: step {cfg['pred_step_time_s'] * MS:.4g} ms", fontsize=9)
    bottom.set_xlabel("time from the rank's start of the step (ms)")
    _timeline_legend(fig, top)
    fig.suptitle(f"{cfg['name']}: measured and simulated", fontsize=10)
    fig.tight_layout()
    return fig


def timeline_comparison(results: Results, run_ids: list[str], title: str) -> plt.Figure | None:
    """The same placement under each strategy: one stacked panel per run given (one run
    per strategy), a shared time axis in ms, each panel titled with its strategy and the
    run's step time. Refuses (ValueError) runs on one rank: there is nothing to compare
    between ranks, and a 1-rank step has no bubbles."""
    run_ids = [r for r in run_ids if r in results.timelines and len(results.timelines[r])]
    if not run_ids:
        return None
    cfg = results.configs.set_index("run_id")
    one = [r for r in run_ids if int(cfg.loc[r, "devices"]) < 2]
    if one:
        raise ValueError(f"timeline_comparison: run {one[0]} has a single rank")
    k = max(int(cfg.loc[r, "devices"]) for r in run_ids)
    fig, axes = plt.subplots(len(run_ids), 1, sharex=True, squeeze=False,
                             figsize=(9, len(run_ids) * (0.5 * k + 1.0) + 1.0))
    for ax, rid in zip(axes[:, 0], run_ids):
        _draw_timeline(ax, results, rid)
        c = cfg.loc[rid]
        ax.set_title(f"{c['strategy_label']}: step {c['step_time_s'] * MS:.4g} ms (median of"
                     f" this run), repeat {c['repeat']}", fontsize=9)
    axes[-1, 0].set_xlabel("time from the rank's start of the last measured step (ms)")
    _timeline_legend(fig, axes[0, 0])
    fig.suptitle(f"{title}: one measured step per strategy", fontsize=10)
    fig.tight_layout()
    return fig
