"""The backprop-strategies comparison of the interlocking-backpropagation study (issue #17):
per model, each strategy's final test accuracy over seeds, its accuracy during training
against epochs and against a comparable time, and its per-rank step time and utilisation.

``python -m interplace_analysis strategies FILE... --out DIR [--step-times CSV]`` writes
``DIR/strategies.md``, ``DIR/tables/*`` and ``DIR/plots/*`` (docs/analysis.md).

Seeds, not steps, are the unit: a run with one seed is one sample of what training
reaches. The interval of a mean over n seeds is Student's t interval (95%, n - 1 degrees
of freedom): with 3 seeds it is wide, as it should be. A difference between two strategies
is taken over the seeds both ran (the same seed gives both the same initial weights and
data order, so the difference is paired), with the t interval of the mean difference.

Time. Where ranks share cores the measured wall time is not the time of one device per
rank: a strategy that keeps every rank busy (local, interlocking, a pipeline) is slowed by
its own ranks' contention more than one that computes on one rank at a time (e2e). The
comparable time per step is therefore supplied from outside (``--step-times``: a CSV with
``model, strategy_label, step_time_s`` and a free-text ``source``, e.g. the simulator
run with a profile measured on the machine); without it the tables give the measured
times only and say so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats as sps  # noqa: E402

from . import stats  # noqa: E402
from .exported import RunTables, from_results  # noqa: E402
from .loader import Results  # noqa: E402
from .render import Table, to_markdown, write_table  # noqa: E402
from .schema import LEGACY_SCHEMA, Schema  # noqa: E402

LEVEL = 0.95
COMPUTE = ("forward_s", "backward_s", "aux_s", "optimizer_s")


class LabelOrder:
    """The reading order of the strategy labels, from the files' schema (schema.py): the
    baseline first, each pipeline of the global strategy in the registry's order, then by
    growing reach; ``global_pipelines``: the global strategy's label of each pipeline. A
    pipeline added to the registry is here with no edit of the analysis."""

    def __init__(self, schema: Schema) -> None:
        self.labels = schema.label_order()
        self.global_pipelines = schema.global_labels()

    def __call__(self, label: str) -> tuple[int, int, str]:
        base = re.sub(r"/v\d+$", "", label)  # the V of a chunked schedule beside its name
        n = re.match(r"nwise:(\d+)", base)  # nwise:N for every N, by growing N
        form = re.sub(r"^nwise:\d+", "nwise:N", base)
        return (self.labels.index(form) if form in self.labels else len(self.labels),
                int(n.group(1)) if n else 0, label)


def label_order(tables: RunTables | None = None, results: Results | None = None) -> LabelOrder:
    """The order of the inputs' schema (the legacy one for files without it, and for a
    stand-in of ``results`` that has no schema)."""
    if tables is not None:
        return LabelOrder(tables.schema)
    return LabelOrder(getattr(results, "schema", LEGACY_SCHEMA))


def mean_interval(values) -> tuple[float, float, float, int]:
    """Mean, and the bounds of its Student t interval, of the finite values; the bounds
    are NaN with fewer than 2 values."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    m = float(v.mean())
    if n < 2:
        return m, math.nan, math.nan, n
    half = float(sps.t.ppf(0.5 + LEVEL / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return m, m - half, m + half, n


def _pm(m: float, lo: float, hi: float, scale: float = 100.0, digits: int = 2) -> str:
    if not np.isfinite(m):
        return "n/a"
    if not np.isfinite(lo):
        return f"{m * scale:.{digits}f}"
    return f"{m * scale:.{digits}f} ± {(hi - m) * scale:.{digits}f}"


@dataclass
class StrategiesReport:
    tables: list[Table] = field(default_factory=list)
    figures: dict[str, plt.Figure] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)  # Markdown paragraphs, in order


def _runs(tables: RunTables) -> pd.DataFrame:
    """The finished runs, in reading order, with :func:`selected_by_validation`'s columns
    (NaN for runs without a validation split)."""
    c = tables.runs.copy()
    if c.empty:
        return c
    c = c.merge(selected_by_validation(tables.evaluations), on="run_id", how="left")
    key = label_order(tables)
    return c.sort_values(["model", "strategy_label", "seed"],
                         key=lambda s: s.map(key) if s.name == "strategy_label" else s)


def steps_per_epoch(run: pd.Series, results: Results) -> float:
    """Steps per epoch of a run from its evaluations (step after epoch e = e x steps - 1),
    NaN when the run has none."""
    ev = results.evaluations
    if ev.empty:
        return math.nan
    e = ev[ev["run_id"] == run["run_id"]]
    e = e[e["epoch"] > 0]
    if e.empty:
        return math.nan
    return float(stats.median((e["step"] + 1) / e["epoch"]))


def accuracy_table(runs: pd.DataFrame, model: str) -> Table:
    """Final test accuracy (the evaluation at the end of training) per strategy."""
    rows = []
    for label, g in runs.groupby("strategy_label", sort=False):
        m, lo, hi, n = mean_interval(g["eval_accuracy"])
        lm, llo, lhi, _ = mean_interval(g["eval_loss"])
        rows.append({
            "strategy": label, "seeds": n,
            "test_accuracy_pct": _pm(m, lo, hi),
            "mean": m, "low": lo, "high": hi,
            "test_loss": _pm(lm, llo, lhi, scale=1.0, digits=3),
            "per_seed_pct": ", ".join(f"{a * 100:.2f}" for a in g["eval_accuracy"]),
            "test_samples": int(g["eval_samples"].max()) if g["eval_samples"].notna().any()
            else -1,
        })
    frame = pd.DataFrame(rows)
    return Table(f"accuracy_{_slug(model)}",
                 f"{model}: final test accuracy, mean ± half-width of the {LEVEL:.0%} t interval"
                 " over seeds",
                 frame, ["strategy", "seeds", "test_accuracy_pct", "test_loss", "per_seed_pct",
                         "test_samples"])


# An interlocking strategy of single interlock mode: pairwise (reach 2) or nwise:N (reach N).
_INTERLOCKING = re.compile(r"^(?:pairwise|nwise:(\d+))$")


def comparison_pairs(labels) -> list[tuple[str, str]]:
    """The pairs (A, B) that the paired-difference tables test, one Holm family: every
    interlocking strategy (single interlock mode) against local, e2e and 1F1B, and against
    each interlocking strategy of smaller reach (the study's claim that accuracy grows with
    the reach: nwise:3 against pairwise); then local and 1F1B against e2e. Roughly, for
    e2e, 1F1B, local, pairwise and nwise:3: 3 + 4 + 2 = 9 pairs."""
    reach = {lab: int(m.group(1) or 2) for lab in labels if (m := _INTERLOCKING.match(lab))}
    interlocking = sorted(reach, key=reach.get)
    pairs = []
    for i, a in enumerate(interlocking):
        pairs += [(a, b) for b in ("local", "e2e", "global/1f1b")]
        pairs += [(a, b) for b in interlocking[:i] if reach[b] < reach[a]]
    return pairs + [("local", "e2e"), ("global/1f1b", "e2e")]


# The metrics difference_table compares: (table name, what, higher is better).
DIFFERENCE_METRICS = {
    "eval_accuracy": ("accuracy", "final test accuracy", True),
    "eval_loss": ("loss", "final test loss", False),
    "selected_test_accuracy": ("selected_accuracy",
                               "test accuracy at the epoch of best validation accuracy", True),
}


def difference_table(runs: pd.DataFrame, model: str, pairs: list[tuple[str, str]],
                     metric: str = "eval_accuracy") -> Table:
    """Paired (by seed) differences of a test metric, A - B, with t intervals and the
    paired t test's p-value, Holm-adjusted over the table's pairs (the verdict needs the
    adjusted p below ``stats.ALPHA``): ``eval_accuracy`` (in percentage points, higher is
    better), ``eval_loss`` (lower is better; where accuracy saturates, as a small
    language model's at the most common byte) or ``selected_test_accuracy`` (the test
    accuracy at the epoch that the validation split selects, :func:`selected_by_validation`)."""
    rows = []
    name, what, higher_better = DIFFERENCE_METRICS[metric]
    scale, unit = (100.0, "percentage points") if higher_better else (1.0, "nats")
    by = {label: g.set_index("seed")[metric]
          for label, g in runs.groupby("strategy_label", sort=False) if metric in g}
    for a, b in pairs:
        if a not in by or b not in by:
            continue
        common = sorted(set(by[a].index) & set(by[b].index))
        d = [float(by[a][s] - by[b][s]) for s in common]
        d = [x for x in d if np.isfinite(x)]
        m, lo, hi, n = mean_interval(d)
        p = math.nan
        if n >= 2:
            p = 0.0 if np.std(d) == 0 and m != 0 else float(sps.ttest_1samp(d, 0.0).pvalue)
        rows.append({"a": a, "b": b, "seeds": n,
                     "difference": _pm(m, lo, hi, scale=scale, digits=2 if higher_better else 3),
                     "mean": m, "low": lo, "high": hi, "p": p})
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["p_holm"] = stats.holm(frame["p"].to_numpy(dtype=float))
        frame["verdict"] = [_difference_verdict(r, higher_better) for _, r in frame.iterrows()]
    return Table(f"{name}_differences_{_slug(model)}",
                 f"{model}: {what} A - B in {unit}, paired by seed, mean ± half-width of the"
                 f" {LEVEL:.0%} t interval; p of the paired t test, Holm-adjusted over the"
                 f" {len(frame)} pairs",
                 frame, ["a", "b", "seeds", "difference", "p", "p_holm", "verdict"])


def _difference_verdict(row: pd.Series, higher_better: bool) -> str:
    if row["seeds"] < 2:
        return "not enough seeds"
    if not (row["p_holm"] < stats.ALPHA):
        return "no difference shown" + (" after Holm" if row["p"] < stats.ALPHA else "")
    a_higher = row["mean"] > 0
    return f"{row['a']} {'better' if a_higher == higher_better else 'worse'}"


def selected_by_validation(ev: pd.DataFrame) -> pd.DataFrame:
    """Per run that evaluated a validation split during training: the epoch of its best
    validation accuracy (the earliest of ties), that validation accuracy, the test accuracy
    of the same evaluation, and the validation accuracy of the last evaluation (how far
    the run is from its own plateau). Empty when no run held a validation split out."""
    columns = ["run_id", "selected_epoch", "selected_validation_accuracy",
               "selected_test_accuracy", "last_validation_accuracy"]
    if ev.empty or "validation_accuracy" not in ev:
        return pd.DataFrame(columns=columns)
    ev = ev[np.isfinite(ev["validation_accuracy"])]
    rows = []
    for run_id, g in ev.groupby("run_id", sort=False):
        g = g.sort_values("epoch")
        best = g.loc[g["validation_accuracy"].idxmax()]
        rows.append({"run_id": run_id, "selected_epoch": float(best["epoch"]),
                     "selected_validation_accuracy": float(best["validation_accuracy"]),
                     "selected_test_accuracy": float(best["accuracy"]),
                     "last_validation_accuracy": float(g["validation_accuracy"].iloc[-1])})
    return pd.DataFrame(rows, columns=columns)


def selection_table(runs: pd.DataFrame, model: str) -> Table:
    """Per strategy, over seeds: the epoch the validation split selects, the validation
    and test accuracy there (mean ± t half-width), and the last evaluation's validation
    accuracy below the best (percentage points; near 0: the run ended on its plateau)."""
    rows = []
    for label, g in runs.groupby("strategy_label", sort=False):
        g = g[np.isfinite(g["selected_test_accuracy"])]
        if g.empty:
            continue
        m, lo, hi, n = mean_interval(g["selected_test_accuracy"])
        vm, vlo, vhi, _ = mean_interval(g["selected_validation_accuracy"])
        below = (g["selected_validation_accuracy"] - g["last_validation_accuracy"]) * 100
        rows.append({
            "strategy": label, "seeds": n,
            "selected_epoch": ", ".join(f"{e:g}" for e in g["selected_epoch"]),
            "validation_accuracy_pct": _pm(vm, vlo, vhi),
            "test_accuracy_pct": _pm(m, lo, hi), "mean": m, "low": lo, "high": hi,
            "last_below_best_pp": f"{below.mean():.2f} (max {below.max():.2f})",
        })
    return Table(f"selected_{_slug(model)}",
                 f"{model}: the epoch of best validation accuracy per seed, and the validation"
                 f" and test accuracy there, mean ± half-width of the {LEVEL:.0%} t interval"
                 " over seeds; last_below_best_pp: the last evaluation's validation accuracy"
                 " below the best (mean, max over seeds)",
                 pd.DataFrame(rows), ["strategy", "seeds", "selected_epoch",
                                      "validation_accuracy_pct", "test_accuracy_pct",
                                      "last_below_best_pp"])


def time_table(runs: pd.DataFrame, results: Results, model: str,
               step_times: pd.DataFrame | None) -> Table:
    """Per strategy: steps per epoch, the measured median step time (wall clock, as run),
    the slowest rank's compute per step, and the comparable step time and epoch time."""
    rows = []
    for label, g in runs.groupby("strategy_label", sort=False):
        per_run = [steps_per_epoch(r, results) for _, r in g.iterrows()]
        spe = float(stats.median([x for x in per_run if np.isfinite(x)])) if any(
            np.isfinite(x) for x in per_run) else math.nan
        if not np.isfinite(spe):
            spe = float(g["steps"].iloc[0] + g["warmup_steps"].iloc[0])  # one "epoch": the run
        measured = float(stats.median(g["step_time_s"]))
        rs = results.rank_summary
        rs = rs[rs["run_id"].isin(g["run_id"])]
        compute = math.nan
        if not rs.empty and all(c in rs for c in COMPUTE):
            per_run = rs.assign(c=rs[list(COMPUTE)].sum(axis=1)).groupby("run_id")["c"].max()
            compute = float(stats.median(per_run))
        row = {"strategy": label, "seeds": len(g), "steps_per_epoch": spe,
               "measured_step_s": measured, "measured_epoch_s": measured * spe,
               "max_rank_compute_step_s": compute}
        comparable, source, hit = math.nan, "", pd.DataFrame()
        if step_times is not None and not step_times.empty:
            hit = step_times[(step_times["model"] == model)
                             & (step_times["strategy_label"] == label)]
            if not hit.empty:
                comparable = float(hit["step_time_s"].iloc[0])
                source = str(hit["source"].iloc[0]) if "source" in hit else ""
        row["comparable_step_s"] = comparable
        row["comparable_epoch_s"] = comparable * spe
        row["comparable_source"] = source
        # Further step times of the CSV (what-ifs such as capped_heads_step_time_s).
        if step_times is not None and not step_times.empty and not hit.empty:
            for col in step_times.columns:
                if col.endswith("_step_time_s") and col != "step_time_s":
                    row[col.replace("_step_time_s", "_epoch_s")] = float(hit[col].iloc[0]) * spe
        rows.append(row)
    frame = pd.DataFrame(rows)
    base = frame.set_index("strategy")["comparable_epoch_s"] if not frame.empty else None
    for ref in ("e2e", "global/1f1b"):
        col = f"epoch_time_vs_{ref.replace('/', '_')}"
        frame[col] = (frame["comparable_epoch_s"] / base[ref]
                      if base is not None and ref in base.index else math.nan)
    return Table(f"time_{_slug(model)}",
                 f"{model}: time per step and per epoch (measured: wall clock with ranks"
                 " sharing cores; comparable: see its source)",
                 frame, ["strategy", "seeds", "steps_per_epoch", "measured_step_s",
                         "max_rank_compute_step_s", "comparable_step_s", "comparable_epoch_s",
                         "epoch_time_vs_e2e", "epoch_time_vs_global_1f1b"]
                 + [c for c in frame.columns if c.endswith("_epoch_s")
                    and c not in ("comparable_epoch_s", "measured_epoch_s")])


def rank_table(runs: pd.DataFrame, results: Results, model: str) -> Table:
    """Per strategy and rank, medians over the runs (seeds) of the per-rank medians."""
    rs = results.rank_summary
    rs = rs[rs["run_id"].isin(runs["run_id"])].merge(
        runs[["run_id", "strategy_label"]], on="run_id")
    if rs.empty:
        return Table(f"ranks_{_slug(model)}", f"{model}: per-rank times", pd.DataFrame())
    rs = rs.assign(compute_s=rs[list(COMPUTE)].sum(axis=1))
    # The same in the rank's main-thread CPU time where the files have it (NaN, shown as
    # n/a, where not): with ranks sharing cores, compute_s includes other ranks' slices.
    cpu = [c.replace("_s", "_cpu_s") for c in COMPUTE]
    rs = rs.assign(compute_cpu_s=rs[cpu].sum(axis=1, min_count=len(cpu))
                   if set(cpu) <= set(rs) else np.nan,
                   step_cpu_s=rs["step_cpu_s"] if "step_cpu_s" in rs else np.nan)
    cols = ["step_s", "forward_s", "backward_s", "aux_s", "optimizer_s", "compute_s",
            "comm_wait_s", "idle_s", "utilisation", "step_cpu_s", "compute_cpu_s"]
    frame = (rs.groupby(["strategy_label", "rank"], sort=False)[cols]
             .agg(lambda v: stats.median(v.to_numpy(dtype=float))).reset_index()
             .rename(columns={"strategy_label": "strategy"}))
    key = label_order(results=results)
    frame = frame.sort_values(["strategy", "rank"],
                              key=lambda s: s.map(key) if s.name == "strategy" else s)
    return Table(f"ranks_{_slug(model)}",
                 f"{model}: per rank, median over seeds of the median over measured steps"
                 " (seconds per step; utilisation = compute / the rank's step time;"
                 " *_cpu_s: the rank's main-thread CPU time, n/a in files without it)",
                 frame, ["strategy", "rank"] + cols)


def passthrough_rows(run_id: str, timeline: pd.DataFrame | None, source: str) -> list[dict]:
    """Per rank of one timeline: the mean duration of its backward passes that train the
    body (actions ``B<m>``) and of those that only pass the gradient on (``b<m>``:
    input gradients only), where a rank has both. Their ratio is what skipping the
    parameter gradients leaves of a pass through the same layers.

    A measured timeline with the events' CPU time (``cpu_s``, the rank's main thread, the
    waits cut out) is timed by it (``clock`` = ``cpu``): ranks that share a core see each
    other's time slices in their wall intervals, not in their CPU time. Without it (older
    files) the wall intervals (``wall``); the simulator's timeline has its own times
    (``simulated``)."""
    if timeline is None or timeline.empty or "action" not in timeline:
        return []
    bw = timeline[timeline["kind"] == "backward"]
    if source != "measured":
        clock, seconds = "simulated", bw["end_s"] - bw["start_s"]
    elif "cpu_s" in bw and len(bw) and np.isfinite(bw["cpu_s"]).all():
        clock, seconds = "cpu", bw["cpu_s"]
    else:
        clock, seconds = "wall", bw["end_s"] - bw["start_s"]
    rows = []
    for rank, g in bw.groupby("rank"):
        d = seconds[g.index].groupby(g["action"]).sum()  # one action: its parts
        full = d[[a.startswith("B") for a in d.index]]
        through = d[[a.startswith("b") for a in d.index]]
        if full.empty or through.empty:
            continue
        rows.append({"run_id": run_id, "source": source, "clock": clock, "rank": int(rank),
                     "full_s": float(full.mean()), "inputs_only_s": float(through.mean()),
                     "passes": len(full) + len(through)})
    return rows


# The pass-through criterion of issue #17: the measured saving within 10% (relative) of
# the simulator's.
PASSTHROUGH_TOLERANCE = 0.10


def passthrough_table(runs: pd.DataFrame, results: Results, model: str) -> Table:
    """The saving of input-gradient-only passes, measured (the runtime's timeline of the
    last measured step, by CPU time where the file has it) against simulated (the
    simulator's timeline of the same schedule with the run's cost model), per strategy and
    rank: the saving of the means over the runs, and the range of the runs' own savings.
    Where some runs have CPU times and others not, only the CPU-timed ones count."""
    rows = []
    for _, run in runs.iterrows():
        rid = run["run_id"]
        rows += [dict(r, strategy=run["strategy_label"], cost_device=run["cost_device"])
                 for r in passthrough_rows(rid, results.timelines.get(rid), "measured")]
        rows += [dict(r, strategy=run["strategy_label"], cost_device=run["cost_device"])
                 for r in passthrough_rows(rid, results.predicted_timelines.get(rid),
                                           "simulated")]
    columns = ["strategy", "rank", "cost_device", "runs", "measured_clock", "measured_full_s",
               "measured_inputs_only_s", "measured_saving", "measured_saving_range",
               "simulated_full_s", "simulated_inputs_only_s", "simulated_saving",
               "relative_error", "within_10pct", "measured_saved_s", "simulated_saved_s"]
    title = f"{model}: pass-through saving"
    if not rows:
        return Table(f"passthrough_{_slug(model)}", title, pd.DataFrame(columns=columns))
    f = pd.DataFrame(rows)
    out = []
    for (label, rank, cost), g in f.groupby(["strategy", "rank", "cost_device"], sort=False):
        m = g[g["source"] == "measured"]
        # Runs of both clocks (a file continued by a newer binary): the CPU-timed ones
        # only, as wall and CPU times of shared cores do not average into anything.
        if (m["clock"] == "cpu").any():
            m = m[m["clock"] == "cpu"]
        s_ = g[g["source"] == "simulated"]
        row = {"strategy": label, "rank": rank, "cost_device": cost,
               "runs": int(m["run_id"].nunique()),
               "measured_clock": "/".join(sorted(m["clock"].unique())) or "n/a"}
        for name, part in (("measured", m), ("simulated", s_)):
            full = part["full_s"].mean() if not part.empty else math.nan
            through = part["inputs_only_s"].mean() if not part.empty else math.nan
            row[f"{name}_full_s"] = full
            row[f"{name}_inputs_only_s"] = through
            row[f"{name}_saving"] = 1.0 - through / full if full else math.nan
            # The time the parameter gradients took: unlike the saving, not diluted by
            # time both kinds of pass spend beyond the model's kernels.
            row[f"{name}_saved_s"] = full - through
        per_run = 1.0 - m["inputs_only_s"] / m["full_s"]
        row["measured_saving_range"] = (f"{per_run.min():.3f} to {per_run.max():.3f}"
                                        if len(per_run) else "n/a")
        sim = row["simulated_saving"]
        row["relative_error"] = ((row["measured_saving"] - sim) / sim if sim else math.nan)
        row["within_10pct"] = ("n/a" if not np.isfinite(row["relative_error"]) else
                               "yes" if abs(row["relative_error"]) <= PASSTHROUGH_TOLERANCE
                               else "no")
        out.append(row)
    key = label_order(results=results)
    frame = pd.DataFrame(out).sort_values(["strategy", "rank"], key=lambda s: s.map(
        key) if s.name == "strategy" else s)
    return Table(f"passthrough_{_slug(model)}",
                 f"{model}: backward passes that only pass the gradient on (b) against those"
                 " that train (B), same rank and layers; saving = 1 - b / B of the means over"
                 " runs (measured_clock: cpu = the rank's main-thread CPU time, wall = the"
                 " wall clock; simulated: the cost model's, e.g. a CPU-time profile);"
                 " measured_saving_range: the runs' own savings;"
                 " relative_error = (measured - simulated) / simulated saving;"
                 f" within_10pct: |relative_error| <= {PASSTHROUGH_TOLERANCE:g};"
                 " saved_s = full - inputs_only (seconds per pass)",
                 frame, columns)


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)


def _band(ax, x, values: np.ndarray, label: str, marker: str | None = "o"):
    """Mean over seeds (rows) with its t interval as a band."""
    m = np.nanmean(values, axis=0)
    n = np.sum(np.isfinite(values), axis=0)
    sd = np.nanstd(values, axis=0, ddof=1) if values.shape[0] > 1 else np.zeros_like(m)
    half = np.where(n > 1, sps.t.ppf(0.5 + LEVEL / 2, np.maximum(n - 1, 1)) * sd
                    / np.sqrt(np.maximum(n, 1)), 0.0)
    line = ax.plot(x, m, marker=marker, markersize=3, label=f"{label} (n={int(n.max())})")[0]
    ax.fill_between(x, m - half, m + half, alpha=0.15, color=line.get_color())


def evaluation_curves(runs: pd.DataFrame, ev: pd.DataFrame, model: str,
                      step_times: dict[str, float], time_source: str,
                      order: LabelOrder | None = None) -> dict[str, plt.Figure]:
    """Test accuracy against epochs, and against comparable time (epochs x steps per epoch
    x the comparable step time), per strategy: mean over seeds with the t interval."""
    if ev.empty:
        return {}
    ev = ev[ev["run_id"].isin(runs["run_id"])]
    if ev.empty:
        return {}
    figs = {}
    fig_e, ax_e = plt.subplots(figsize=(7, 4.5))
    fig_t, ax_t = plt.subplots(figsize=(7, 4.5))
    for label in sorted(ev["strategy_label"].unique(), key=order or label_order()):
        g = ev[ev["strategy_label"] == label]
        table = g.pivot_table(index="run_id", columns="epoch", values="accuracy")
        epochs = table.columns.to_numpy(dtype=float)
        values = table.to_numpy(dtype=float) * 100
        _band(ax_e, epochs, values, label)
        step_s = step_times.get(label, math.nan)
        spe = float(stats.median((g["step"] + 1) / g["epoch"]))
        if np.isfinite(step_s):
            _band(ax_t, epochs * spe * step_s / 60.0, values, label)
    for ax in (ax_e, ax_t):  # accuracies: a band past 0 or 100 % says only "few seeds"
        ax.set_ylim(0, 100)
    ax_e.set_xlabel("epoch")
    ax_e.set_ylabel("test accuracy (%)")
    ax_e.set_title(f"{model}: test accuracy during training")
    ax_e.grid(alpha=0.3)
    ax_e.legend(fontsize=8)
    figs[f"accuracy_vs_epoch_{_slug(model)}"] = fig_e
    if ax_t.lines:
        ax_t.set_xlabel(f"training time (min; {time_source})")
        ax_t.set_ylabel("test accuracy (%)")
        ax_t.set_title(f"{model}: test accuracy against comparable time")
        ax_t.grid(alpha=0.3)
        ax_t.legend(fontsize=8)
        figs[f"accuracy_vs_time_{_slug(model)}"] = fig_t
    else:
        plt.close(fig_t)
    return figs


def loss_curves(runs: pd.DataFrame, results: Results, model: str,
                step_times: dict[str, float], time_source: str,
                window: int = 10) -> dict[str, plt.Figure]:
    """Training loss (the network's own, running mean over ``window`` steps) against steps
    and against comparable time, per strategy: mean over seeds with the t interval. For
    runs without evaluations during training (language models counted in steps)."""
    figs = {}
    fig_s, ax_s = plt.subplots(figsize=(7, 4.5))
    fig_t, ax_t = plt.subplots(figsize=(7, 4.5))
    for label in sorted(runs["strategy_label"].unique(), key=label_order(results=results)):
        ids = runs[runs["strategy_label"] == label]["run_id"]
        curves = []
        for rid in ids:
            c = results.curves[results.curves["run_id"] == rid].sort_values("step")
            curves.append(c["loss"].rolling(window, min_periods=1).mean().to_numpy())
        length = min(len(c) for c in curves)
        values = np.vstack([c[:length] for c in curves])
        steps = np.arange(length)
        _band(ax_s, steps, values, label, marker=None)
        step_s = step_times.get(label, math.nan)
        if np.isfinite(step_s):
            _band(ax_t, (steps + 1) * step_s / 60.0, values, label, marker=None)
    for ax in (ax_s, ax_t):
        ax.set_ylabel(f"training loss (running mean of {window} steps)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ax_s.set_xlabel("step")
    ax_s.set_title(f"{model}: training loss")
    figs[f"loss_vs_step_{_slug(model)}"] = fig_s
    if ax_t.lines:
        ax_t.set_xlabel(f"training time (min; {time_source})")
        ax_t.set_title(f"{model}: training loss against comparable time")
        figs[f"loss_vs_time_{_slug(model)}"] = fig_t
    else:
        plt.close(fig_t)
    return figs


def _reach_times(runs: pd.DataFrame, ev: pd.DataFrame, step_curves: pd.DataFrame | None,
                 window: int) -> tuple[str, float, dict[str, list[float]]]:
    """Per strategy, per run, the steps taken until the run first reached the common
    target (NaN where it never did): the metric, the target and the steps; see
    :func:`time_to_target_table`."""
    ev = ev[ev["run_id"].isin(runs["run_id"])] if not ev.empty else ev
    per_run: dict[str, pd.DataFrame] = {}
    if not ev.empty:
        metric, higher = "test accuracy", True
        for rid, g in ev.groupby("run_id", sort=False):
            per_run[rid] = pd.DataFrame({"steps": g["step"] + 1, "value": g["accuracy"]})
    elif step_curves is not None:
        metric, higher = f"training loss (running mean of {window} steps)", False
        for rid in runs["run_id"]:
            c = step_curves[step_curves["run_id"] == rid].sort_values("step")
            per_run[rid] = pd.DataFrame({
                "steps": c["step"] + 1,
                "value": c["loss"].rolling(window, min_periods=window).mean()})
    else:  # exported tables without evaluations: nothing to reach
        return "test accuracy", math.nan, {}
    finals = {}
    for label, g in runs.groupby("strategy_label", sort=False):
        last = [per_run[r]["value"].dropna().iloc[-1] for r in g["run_id"]
                if r in per_run and per_run[r]["value"].notna().any()]
        if last:
            finals[label] = float(np.mean(last))
    if not finals:
        return metric, math.nan, {}
    # The quality every strategy reaches on average: the worst strategy's mean final value.
    target = min(finals.values()) if higher else max(finals.values())
    reach: dict[str, list[float]] = {}
    for label, g in runs.groupby("strategy_label", sort=False):
        reach[label] = []
        for r in g["run_id"]:
            d = per_run.get(r)
            hit = pd.DataFrame() if d is None else d[
                (d["value"] >= target) if higher else (d["value"] <= target)]
            reach[label].append(float(hit["steps"].iloc[0]) if not hit.empty else math.nan)
    return metric, target, reach


def time_to_target_table(runs: pd.DataFrame, ev: pd.DataFrame,
                         step_curves: pd.DataFrame | None, model: str, step_times: dict[str, float], time_source: str,
                         window: int = 10, order: LabelOrder | None = None) -> Table:
    """The efficiency claim as the study makes it: the comparable time each strategy needs
    to reach the same quality. The target is the worst strategy's mean final value, so
    that every strategy reaches it on average: the test accuracy of the evaluations during
    training where the runs have them (the lowest of the strategies' mean final
    evaluations; a run reaches it at its first evaluation at or above it), else the
    training loss, running mean over ``window`` steps (the highest mean final value; the
    first step at or below it). Time = steps taken (warm-up included) x the strategy's
    comparable step time. Per strategy: the seeds that reached it, the steps and the time
    (mean ± t half-width over those seeds), and the mean time over e2e's and over the
    fastest global pipeline's (each pipeline of the schema: the best global schedule).

    Global pipelines compute the same gradients as one another (the same micro-batches,
    summed), so a global schedule with a step time in ``step_times`` but no runs in the
    file gets a row whose steps are those of a global pipeline that has runs (``curve``
    names it) at its own step time: the best global schedule of the suite, not only of
    the file. ``ev``: the evaluations; ``step_curves``: the loader's per-step curves, or
    None for runs read from exported tables (which keep the evaluations only). ``order``:
    the inputs' :class:`LabelOrder`, whose pipelines are the global schedules (the legacy
    schema's without it)."""
    global_pipelines = (order or label_order()).global_pipelines
    metric, target, reach = _reach_times(runs, ev, step_curves, window)
    measured_global = next((g for g in global_pipelines if g in reach), None)
    curves = {label: label for label in reach}
    if measured_global is not None:
        for label in global_pipelines:
            if label not in reach and np.isfinite(step_times.get(label, math.nan)):
                curves[label] = measured_global
    rows = []
    for label, curve in curves.items():
        steps = reach[curve]
        done = [x for x in steps if np.isfinite(x)]
        sm, slo, shi, n = mean_interval(done)
        step_s = step_times.get(label, math.nan)
        rows.append({"strategy": label, "curve": curve, "reached": f"{n} of {len(steps)}",
                     "steps": _pm(sm, slo, shi, scale=1.0, digits=0),
                     "step_s": step_s, "time_s": sm * step_s,
                     "time": _pm(sm * step_s, slo * step_s, shi * step_s, scale=1.0, digits=1)})
    frame = pd.DataFrame(rows)
    if not frame.empty:
        by = frame.set_index("strategy")["time_s"]
        frame["time_vs_e2e"] = by.get("e2e", math.nan)
        best = [by[g] for g in global_pipelines if g in by.index and np.isfinite(by[g])]
        frame["time_vs_best_global"] = min(best) if best else math.nan
        frame["time_vs_e2e"] = frame["time_s"] / frame["time_vs_e2e"]
        frame["time_vs_best_global"] = frame["time_s"] / frame["time_vs_best_global"]
    shown = f"{100 * target:.2f}%" if metric == "test accuracy" else f"{target:.4f}"
    return Table(f"time_to_target_{_slug(model)}",
                 f"{model}: comparable time to reach {metric} {shown} (the worst strategy's"
                 f" mean final value), mean ± half-width of the {LEVEL:.0%} t interval over the"
                 f" seeds that reached it; step time: {time_source}; curve: the runs whose"
                 f" steps are counted (another global schedule's where this one has no runs:"
                 f" the same gradients)",
                 frame, ["strategy", "curve", "reached", "steps", "step_s", "time",
                         "time_vs_e2e", "time_vs_best_global"])


def build(tables: RunTables, results: Results | None = None,
          step_times: pd.DataFrame | None = None) -> StrategiesReport:
    """The comparison, per model, of every finished run of ``tables``. ``results``: the
    loaded HDF5 files where every run came from one (then the tables of each step's
    timings and the loss curves are added); None where some came from exported tables."""
    report = StrategiesReport()
    runs = _runs(tables)
    if runs.empty:
        report.text.append("No finished runs.")
        return report
    if results is None:
        sources = sorted(set(runs["source"])) if "source" in runs else []
        report.text.append(
            f"{len(runs)} runs from {len(sources)} input{'s' if len(sources) != 1 else ''},"
            " exported tables among them"
            " (configs and evaluations, `interplace_analysis export`): the accuracy,"
            " selection, difference and time-to-target tables and the accuracy curves"
            " cover every run; the tables of measured, per-rank and pass-through time and"
            " the loss curves need each step's timings, which only the HDF5 files hold, and"
            " are left out.")
    order = label_order(tables)
    for model, g in runs.groupby("model", sort=False):
        report.text.append(f"## {model}")
        labels = sorted(g["strategy_label"].unique(), key=order)
        times = {}
        source = "measured wall clock"
        if step_times is not None and not step_times.empty:
            hit = step_times[step_times["model"] == model]
            times = dict(zip(hit["strategy_label"], hit["step_time_s"], strict=False))
            if "source" in hit and not hit.empty:
                source = str(hit["source"].iloc[0])
        if not times:
            times = {lab: float(stats.median(g[g["strategy_label"] == lab]["step_time_s"]))
                     for lab in labels}
        report.tables.append(accuracy_table(g, model))
        pairs = comparison_pairs(labels)
        report.tables.append(difference_table(g, model, pairs))
        report.tables.append(difference_table(g, model, pairs, "eval_loss"))
        if g["selected_test_accuracy"].notna().any():
            report.tables.append(selection_table(g, model))
            report.tables.append(difference_table(g, model, pairs, "selected_test_accuracy"))
        if results is not None:
            report.tables.append(time_table(g, results, model, step_times))
            report.tables.append(rank_table(g, results, model))
            report.tables.append(passthrough_table(g, results, model))
        step_curves = results.curves if results is not None else None
        ev = tables.evaluations
        report.tables.append(time_to_target_table(g, ev, step_curves, model, times, source,
                                                  order=order))
        report.figures.update(evaluation_curves(g, ev, model, times, source, order=order))
        if results is not None and (ev.empty or not ev["run_id"].isin(g["run_id"]).any()):
            report.figures.update(loss_curves(g, results, model, times, source))
    return report


def build_for_results(results: Results, step_times: pd.DataFrame | None = None
                      ) -> StrategiesReport:
    """:func:`build` of the runs of loaded HDF5 files (every table)."""
    return build(from_results(results), results, step_times)


def write(report: StrategiesReport, out: Path, title: str, command: str) -> tuple[str, list[Path]]:
    """Writes DIR/strategies.md, DIR/tables/* and DIR/plots/*; returns the Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "plots").mkdir(exist_ok=True)
    written: list[Path] = []
    parts = [f"# {title}", "", f"Made with `{command}`.", ""]
    for paragraph in report.text:
        parts.append(paragraph)
        parts.append("")
        if paragraph.startswith("## "):
            slug = _slug(paragraph[3:])
            for t in report.tables:
                if t.name.endswith(slug):
                    parts.append(to_markdown(t))
                    parts.append("")
            for name in report.figures:
                if name.endswith(slug):
                    parts.append(f"![{name}](plots/{name}.png)")
                    parts.append("")
    for t in report.tables:
        written.extend(write_table(t, out / "tables"))
    for name, fig in report.figures.items():
        path = out / "plots" / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    text = "\n".join(parts)
    md = out / "strategies.md"
    md.write_text(text)
    written.append(md)
    return text, written


def read_step_times(path: Path) -> pd.DataFrame:
    """The ``--step-times`` CSV: columns model, strategy_label, step_time_s[, source]."""
    frame = pd.read_csv(path)
    missing = {"model", "strategy_label", "step_time_s"} - set(frame.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {', '.join(sorted(missing))}"
                         " (need model, strategy_label, step_time_s[, source])")
    return frame
