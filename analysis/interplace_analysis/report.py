"""Builds every table and plot from loaded results and writes a report directory.

Layout of ``--out DIR``::

    DIR/report.md            provenance, notes, then numbered sections: 1. recommendations,
                             2. tables, 3. figures (the plots embedded)
    DIR/tables/<name>.{md,csv,tex}
    DIR/plots/*.png

The Markdown report is also what the command prints on stdout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import plots, provenance, stats
from .loader import Results
from .render import Table, to_markdown, write_table
from .tables import (efficiency, failures, graph_features, recommendations, scaling, simulator,
                     strategies, traversal)

MAX_TIMELINES = 6  # figures; one per model: its placement compared over most strategies


@dataclass
class Report:
    tables: list[Table]  # in the report's order: section 1 holds the first, section 2 the rest
    notes: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)  # provenance lines (Markdown)
    seed: int = 0  # the bootstrap seed, for the figures' intervals

    def table(self, name: str) -> pd.DataFrame:
        return next(t.frame for t in self.tables if t.name == name)


def build_report(results: Results, seed: int = 0, tolerance: float = 0.01,
                 command: str | None = None,
                 min_effect: float = stats.MIN_EFFECT) -> Report:
    """Computes every table and the provenance header (no files written); ``command``:
    the command line that made the report, shown in the header; ``min_effect``: the
    smallest change a verdict names (:func:`.stats.evidence`), stated in the notes."""
    notes = list(results.notes)
    samples = traversal.order_samples(results, seed)
    orders = traversal.order_table(results, seed=seed, min_effect=min_effect)
    best = traversal.best_table(orders, samples, seed=seed, min_effect=min_effect)
    for _, r in best[best["note"] != ""].iterrows():
        notes.append(f"{r['model']} {r['placer']} K={r['devices']}: {r['note']}")
    strat = strategies.strategy_table(results, seed=seed, min_effect=min_effect)
    ranked = traversal.rank_orders(samples, ["family"], seed=seed)
    families = sorted(set(results.ok["family"])) if not results.ok.empty else []
    sim = simulator.simulator_table(results, seed=seed)
    rec = recommendations.recommendation_table(ranked, strat, families, tolerance,
                                               min_effect, simulated=sim,
                                               spread=recommendations.run_spread(results.ok))
    c = results.configs
    per_config = results.runs_per_configuration()
    statuses = ("ok", "failed", "skipped", "diverged")
    summary = pd.DataFrame([{
        "files": len(results.files),
        "configurations": int(c["config_key"].nunique()) if not c.empty else 0,
        "runs": len(c),
        "runs_per_configuration": (f"{int(per_config.min())}-{int(per_config.max())}"
                                   if len(per_config) else "0"),
        **{s: int((c["status"] == s).sum()) if not c.empty else 0 for s in statuses},
        "other_status": int((~c["status"].isin(statuses)).sum()) if not c.empty else 0,
        "missing": len(results.missing)}])
    notes = confidence_notes(per_config, min_effect) + notes
    simulated_only = int((c["simulate_only"] == 1).sum()) if "simulate_only" in c else 0
    if simulated_only:
        notes.append(f"{simulated_only} of the runs are simulate-only configurations (planned"
                     " and simulated, not trained: no measured steps, so no table of this"
                     " report uses them); the traversal-order study's tables: python -m"
                     " interplace_analysis order-study FILE... (docs/analysis.md)")
    scale = scaling.scaling_table(results, seed=seed)
    dk, sk = traversal.DISPLAY_KEY, strategies.DISPLAY_KEY
    tables = [
        Table("recommendations", "Recommendations per family", rec,
              ["family", "order", "placer", "ranking", "order_evidence", "confidence",
               "run_spread", "prediction", "vs_best_default", "runs", "strategy",
               "strategy_evidence"],
              "(no successful configurations)"),
        Table("summary", "Configurations", summary),
        Table("traversal_best", "Best traversal order per group", best,
              dk + ["orders", "runs", "best_order", "best_median_s", "speedup_vs_topo",
                    "speedup_ci_low", "speedup_ci_high", "runner_up", "vs_runner_up",
                    "vs_ci_low", "vs_ci_high", "verdict", "note"],
              "(no successful configurations)"),
        Table("traversal_orders", "Step time per traversal order (speedup = topo / order)",
              orders, dk + ["order", "runs", "steps", "median_step_s", "speedup_vs_topo",
                            "speedup_ci_low", "speedup_ci_high", "speedup_p_holm", "verdict",
                            "interval_over", "rank"],
              "(no successful configurations)"),
        Table("strategies", "Backprop strategies (equal steps and equal wall time)", strat,
              sk + ["strategy_label", "runs", "samples_per_s", "speedup", "speedup_ci_low",
                    "speedup_ci_high", "speedup_verdict", "utilisation",
                    "idle_fraction", "equal_step", "loss_at_equal_step",
                    "accuracy_at_equal_step", "eval_accuracy", "equal_time_s",
                    "step_at_equal_time", "loss_at_equal_time", "accuracy_at_equal_time",
                    "accuracy_cost", "accuracy_verdict", "best_global", "vs_best_global",
                    "vs_best_global_ci_low", "vs_best_global_ci_high",
                    "vs_best_global_verdict"],
              "(no group compares two or more strategies)"),
        Table("efficiency", "Efficiency per configuration: utilisation and MFU",
              efficiency.efficiency_table(results, seed=seed),
              ["model", "order", "placer", "devices", "data_parallel", "strategy_label",
               "micro_batches", "runs", "step_time_s", "utilisation", "idle_fraction", "train_flops_per_step",
               "achieved_flops_per_rank", "peak_flops_per_rank", "mfu", "mfu_ci_low",
               "mfu_ci_high", "mfu_note"], "(no successful configurations)"),
        Table("scaling", "Speedup vs device count (over the smallest K)", scale,
              ["model", "order", "placer", "data_parallel", "strategy_label", "micro_batches",
               "devices", "runs", "step_time_s", "base_devices", "base_strategy", "base_runs", "speedup",
               "speedup_ci_low", "speedup_ci_high", "interval_over"],
              "(no setting ran on two or more device counts)"),
        Table("graph_features", "Graph features and best order per model",
              graph_features.graph_feature_table(results, seed=seed),
              ["family", "model", "node_count", "edge_count", "depth", "max_width",
               "mean_branching_factor", "critical_path_cost_share", "best_order",
               "best_placer", "speedup_vs_topo", "min_runs"], "(no graph statistics)"),
        Table("simulator", "Simulator vs measured step time", sim,
              ["point", "name", "runs", "cost_source", "pred_messages", "pred_step_time_s",
               "step_time_s",
               "step_time_ci_low", "step_time_ci_high", "sim_error", "pred_idle_fraction",
               "idle_fraction"], "(no predictions)"),
        Table("simulator_summary", "Simulator accuracy (MAPE, Spearman)",
              simulator.simulator_summary(sim), None, "(no predictions)"),
        Table("failures", "Failed, skipped and missing configurations",
              failures.failure_table(results), None, "(none: every configuration ran)"),
    ]
    header = provenance.header_lines(results.files, results.configs, command)
    return Report(tables=tables, notes=notes, header=header, seed=seed)


def confidence_notes(per_config: pd.Series, min_effect: float = stats.MIN_EFFECT) -> list[str]:
    """What the intervals and verdicts rest on, first in the report."""
    lo, hi = stats.band(min_effect)
    d = stats.effect_text(min_effect)
    rule = (f"Statistics: each run is summarised by the median of its measured steps; an"
            f" interval is a 95% bootstrap interval over runs (scipy.stats.bootstrap,"
            f" percentile); a difference is called (faster/slower, beats, beyond noise) only"
            f" with >= {stats.MIN_RUNS} runs per configuration, a Holm-adjusted permutation"
            f" p-value over runs < {stats.ALPHA} (Holm over each table's comparisons; with 3"
            f" runs a side p >= 0.1, so in practice verdicts need 4 or more runs, 5 or more"
            f" to survive Holm) and the whole interval outside [{lo:.4g}, {hi:.4g}]: a minimum"
            f" effect of {d} (--min-effect {min_effect:g}), as two sweeps of one build drift"
            f" by a few percent; a significant difference short of it reads 'same (faster,"
            f" within {d})' or '... not shown beyond {d})', 'tie with X (...)'. n = runs.")
    if per_config.empty:
        return [rule]
    few = int((per_config < stats.MIN_RUNS).sum())
    if few == 0:
        return [rule]
    lo = int(per_config.min())
    return [rule, f"LOW CONFIDENCE: {few} of {len(per_config)} configurations have fewer than"
                  f" {stats.MIN_RUNS} runs (fewest: n={lo}): their verdicts say 'not enough"
                  f" repeats' and every confidence is at most low. Intervals of a configuration"
                  f" with one run resample blocks of its own steps (within-run jitter, not"
                  f" run-to-run variation). Run the sweep with repeats = {stats.MIN_RUNS} or"
                  f" more (or pass several result files of the same spec)."]


def _slug(*parts: object) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", "_".join(str(p) for p in parts)).strip("-")


@dataclass
class Figure:
    """A numbered subsection of section 3: what it shows, how to read it, its files."""

    name: str
    title: str
    how_to_read: str
    paths: list[Path] = field(default_factory=list)
    empty_text: str = "(none: nothing to draw)"


def timeline_runs(results: Results) -> list[tuple[str, list[str]]]:
    """The timeline figures: per model, the placement (strategies.GROUP_KEY) with a
    recorded timeline on 2 or more ranks run under the most strategies; per strategy the
    run with the median step time of its runs. Never a 1-rank run: one rank has no
    pipeline to look at."""
    ok = results.ok
    if ok.empty:
        return []
    tl = ok[ok["has_timeline"] & (ok["devices"] >= 2)]
    chosen = []
    for model, m in tl.groupby("model", sort=True):
        groups = sorted(m.groupby(strategies.GROUP_KEY, dropna=False, sort=True),
                        key=lambda kg: -kg[1]["strategy_label"].nunique())
        key, g = groups[0]
        runs = []
        for _, lab in g.groupby("strategy_label", sort=True):
            lab = lab.sort_values(["step_time_s", "run_id"])
            runs.append(lab["run_id"].iloc[(len(lab) - 1) // 2])  # the median run
        k = dict(zip(strategies.GROUP_KEY, key))
        chosen.append((f"{model} {k['order']} {k['placer']} K={k['devices']}"
                       f" M={k['micro_batches']} B={k['batch_size']}", runs))
    return chosen[:MAX_TIMELINES]


def write_plots(results: Results, report: Report, out: Path) -> list[Figure]:
    """Every figure the data allows, in the report's order; each lists its files."""
    ok = results.ok
    models = sorted(set(ok["model"])) if not ok.empty else []
    strat = report.table("strategies")
    figs = [
        Figure("step_time_by_order", "Step time by traversal order",
               "One panel per group (placer, K, strategy, micro-batches) that tried several"
               " orders; a point is the median over runs of each run's median step time (ms),"
               " its bar the 95% interval over runs, n under each order. Lower is faster;"
               " overlapping bars mean the runs do not separate the orders."),
        Figure("speedup_vs_devices", "Speedup vs device count",
               "Per model, one line per strategy/order/placer: the step-time ratio of the"
               " smallest-K configuration of the same model, order and placer over this K"
               " (K = 1 when run), with 95% intervals over runs; dashed: linear speedup."
               " Table `scaling` holds the numbers.",
               empty_text="(none: no setting ran on two or more device counts)"),
        Figure("predicted_vs_measured", "Simulator: predicted vs measured step time",
               "One point per configuration, coloured by model: measured (median over runs,"
               " horizontal bar: 95% interval over runs) against the simulator's prediction,"
               " in ms, labelled with the `point` column of table `simulator`; on the dashed line"
               " the prediction is exact, above it pessimistic."
               " Log-log axes when the times span more than 10x.",
               empty_text="(none: no configuration has both a prediction and a measurement)"),
        Figure("throughput_vs_accuracy", "Throughput vs accuracy per strategy",
               "Per model, one point per configuration of a strategy comparison: samples/s"
               " (median over runs) against evaluation accuracy (or training accuracy at equal"
               " steps); bars: 95% intervals over runs; n in the legend. Up and right is"
               " better.",
               empty_text="(none: no group compares two or more strategies)"),
        Figure("accuracy_vs_time", "Accuracy vs wall time per strategy",
               "Per strategy comparison group, every run's training accuracy (top-1 on its"
               " mini-batch) against measured wall time, one colour per strategy (n runs in"
               " the legend): which strategy reaches an accuracy first.",
               empty_text="(none: no strategy comparison with recorded accuracy)"),
        Figure("loss", "Loss curves per strategy",
               "Per strategy comparison group, the training loss of one run per strategy by"
               " step and by measured wall time; dashed: the equal-wall-time point of the"
               " strategies table.",
               empty_text="(none: no group compares two or more strategies)"),
        Figure("timeline", "Timelines: one placement under each strategy",
               "Per model, the placement run under the most strategies on 2 or more ranks;"
               " one panel per strategy (its median run), one bar per rank over the last"
               " measured step in ms: forward, backward, aux, optimizer, comm_wait and idle"
               " (grey). Grey is the bubble the strategies try to fill.",
               empty_text="(none: no timeline on 2 or more ranks was recorded)"),
        Figure("timeline_vs_simulator", "Timelines: measured and simulated",
               "For each run of the timeline figures, its last measured step (top) above the"
               " simulator's first step of the same configuration (bottom), bars labelled"
               " with their schedule actions (F3 forward of micro-batch 3, B3 a backward that"
               " trains, b3 one that only passes the gradient on, H3 the head, S the"
               " optimiser step): where the runtime departs from the prediction.",
               empty_text="(none: no run with both a measured and a simulated timeline)"),
    ]
    by = {f.name: f for f in figs}
    for model in models:
        fig = plots.step_time_by_order(results, model, seed=report.seed)
        if fig is not None:
            by["step_time_by_order"].paths.append(
                plots.save(fig, out / f"step_time_by_order_{_slug(model)}.png"))
    scale = report.table("scaling")
    for model in models:
        fig = plots.speedup_vs_devices(scale, model)
        if fig is not None:
            by["speedup_vs_devices"].paths.append(
                plots.save(fig, out / f"speedup_vs_devices_{_slug(model)}.png"))
    fig = plots.predicted_vs_measured(report.table("simulator"))
    if fig is not None:
        by["predicted_vs_measured"].paths.append(
            plots.save(fig, out / "predicted_vs_measured.png"))
    for model in models:
        fig = plots.throughput_vs_accuracy(strat, model, results, seed=report.seed)
        if fig is not None:
            by["throughput_vs_accuracy"].paths.append(
                plots.save(fig, out / f"throughput_vs_accuracy_{_slug(model)}.png"))
    # The strategy comparison groups, as the strategies table forms them.
    for key, members in (ok.groupby(strategies.GROUP_KEY, dropna=False, sort=True)
                         if not ok.empty else []):
        rows = strat[strat["run_id"].isin(members["run_id"])] if not strat.empty else strat
        if members["strategy_label"].nunique() < 2 or rows.empty:
            continue
        k = dict(zip(strategies.GROUP_KEY, key))
        title = f"{k['model']} K={k['devices']} {k['order']} {k['placer']}"
        stem = _slug(k["model"], f"K{k['devices']}", k["order"], k["placer"],
                     f"M{k['micro_batches']}", f"B{k['batch_size']}")
        fig = plots.accuracy_vs_time(results, list(members["run_id"]), title)
        if fig is not None:
            by["accuracy_vs_time"].paths.append(
                plots.save(fig, out / f"accuracy_vs_time_{stem}.png"))
        drawn = list(rows["run_id"])
        if len(drawn) > plots.MAX_RUNS_DRAWN:  # one line per strategy (its median run)
            drawn = [g.sort_values(["samples_per_s", "run_id"])["run_id"].iloc[
                (len(g) - 1) // 2] for _, g in rows.groupby("strategy_label", sort=True)]
        fig = plots.loss_curves(results, drawn, title,
                                float(rows["equal_time_s"].iloc[0]))
        if fig is not None:
            by["loss"].paths.append(plots.save(fig, out / f"loss_{stem}.png"))
    for title, runs in timeline_runs(results):
        fig = plots.timeline_comparison(results, runs, title)
        if fig is not None:
            by["timeline"].paths.append(plots.save(fig, out / f"timeline_{_slug(title)}.png"))
        for run_id in runs:
            fig = plots.measured_vs_predicted_timeline(results, run_id)
            if fig is not None:
                by["timeline_vs_simulator"].paths.append(
                    plots.save(fig, out / f"timeline_vs_simulator_{_slug(run_id)}.png"))
    return figs


def markdown(report: Report, figures: list[Figure] | None = None,
             base: Path | None = None) -> str:
    """Provenance, notes, then 1. recommendations, 2. tables, 3. figures (numbered)."""
    parts = ["# interplace report", "", "## Provenance", ""] + report.header + [""]
    if report.notes:
        parts += ["## Notes", ""] + [f"- {n}" for n in report.notes] + [""]
    first, rest = report.tables[0], report.tables[1:]
    parts += ["## 1. Recommendations", "", to_markdown(first, "1.1")]
    parts += ["## 2. Tables", ""]
    parts += [to_markdown(t, f"2.{i}") for i, t in enumerate(rest, start=1)]
    if figures is not None:
        parts += ["## 3. Figures", ""]
        for i, f in enumerate(figures, start=1):
            parts += [f"### 3.{i} {f.title}", "", f.how_to_read, ""]
            if not f.paths:
                parts += [f.empty_text, ""]
            for p in f.paths:
                rel = p.relative_to(base) if base else p
                parts += [f"![{f.title}: {p.stem}]({rel.as_posix()})", ""]
    return "\n".join(parts)


def write_report(results: Results, report: Report, out: Path) -> tuple[str, list[Path]]:
    """Writes tables, plots and ``report.md`` under ``out``; returns the Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for t in report.tables:
        files += write_table(t, out / "tables")
    figures = write_plots(results, report, out / "plots")
    text = markdown(report, figures, out)
    (out / "report.md").write_text(text, encoding="utf-8")
    return text, files + [p for f in figures for p in f.paths]
