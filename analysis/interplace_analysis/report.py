"""Builds every table and plot from loaded results and writes a report directory.

Layout of ``--out DIR``::

    DIR/report.md            all tables in Markdown, notes, links to the plots
    DIR/tables/<name>.{md,csv,tex}
    DIR/plots/*.png

The Markdown report is also what the command prints on stdout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import plots, stats
from .loader import Results
from .render import Table, to_markdown, write_table
from .tables import failures, graph_features, recommendations, simulator, strategies, traversal

MAX_TIMELINES = 12


@dataclass
class Report:
    tables: list[Table]
    notes: list[str] = field(default_factory=list)

    def table(self, name: str) -> pd.DataFrame:
        return next(t.frame for t in self.tables if t.name == name)


def build_report(results: Results, seed: int = 0, tolerance: float = 0.01) -> Report:
    """Computes every table (no files written)."""
    notes = list(results.notes)
    samples = traversal.order_samples(results)
    orders = traversal.order_table(results, seed=seed)
    best = traversal.best_table(orders, samples, seed=seed)
    for _, r in best[best["note"] != ""].iterrows():
        notes.append(f"{r['model']} {r['placer']} K={r['devices']}: {r['note']}")
    strat = strategies.strategy_table(results, seed=seed)
    ranked = traversal.rank_orders(samples, ["family"], seed=seed)
    families = sorted(set(results.ok["family"])) if not results.ok.empty else []
    rec = recommendations.recommendation_table(ranked, strat, families, tolerance)
    sim = simulator.simulator_table(results)
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
    notes = confidence_notes(per_config) + notes
    dk, sk = traversal.DISPLAY_KEY, strategies.DISPLAY_KEY
    tables = [
        Table("summary", "Configurations", summary),
        Table("recommendations", "5. Recommendations per family", rec,
              ["family", "order", "placer", "order_evidence", "confidence", "runs", "strategy",
               "strategy_evidence"], "(no successful configurations)"),
        Table("traversal_best", "1a. Best traversal order per group", best,
              dk + ["orders", "runs", "best_order", "best_median_s", "speedup_vs_topo",
                    "speedup_ci_low", "speedup_ci_high", "runner_up", "vs_runner_up",
                    "vs_ci_low", "vs_ci_high", "verdict", "note"],
              "(no successful configurations)"),
        Table("traversal_orders", "1b. Step time per traversal order (speedup = topo / order)",
              orders, dk + ["order", "runs", "steps", "median_step_s", "speedup_vs_topo",
                            "speedup_ci_low", "speedup_ci_high", "speedup_p_holm", "verdict",
                            "interval_over", "rank"],
              "(no successful configurations)"),
        Table("strategies", "2. Backprop strategies (equal steps and equal wall time)", strat,
              sk + ["strategy_label", "runs", "samples_per_s", "speedup", "speedup_ci_low",
                    "speedup_ci_high", "speedup_verdict", "utilisation",
                    "idle_fraction", "equal_step", "loss_at_equal_step",
                    "accuracy_at_equal_step", "eval_accuracy", "equal_time_s",
                    "step_at_equal_time", "loss_at_equal_time", "accuracy_at_equal_time",
                    "accuracy_cost", "accuracy_verdict"],
              "(no group compares two or more strategies)"),
        Table("graph_features", "3. Graph features and best order per model",
              graph_features.graph_feature_table(results, seed=seed),
              ["family", "model", "node_count", "edge_count", "depth", "max_width",
               "mean_branching_factor", "critical_path_cost_share", "best_order",
               "best_placer", "speedup_vs_topo", "min_runs"], "(no graph statistics)"),
        Table("simulator", "4a. Simulator vs measured step time", sim,
              ["name", "runs", "pred_estimator", "pred_step_time_s", "step_time_s", "sim_error",
               "pred_idle_fraction", "idle_fraction"], "(no predictions)"),
        Table("simulator_summary", "4b. Simulator accuracy (MAPE, Spearman)",
              simulator.simulator_summary(sim), None, "(no predictions)"),
        Table("failures", "Failed, skipped and missing configurations",
              failures.failure_table(results), None, "(none: every configuration ran)"),
    ]
    return Report(tables=tables, notes=notes)


def confidence_notes(per_config: pd.Series) -> list[str]:
    """What the intervals and verdicts rest on, first in the report."""
    rule = (f"Statistics: each run is summarised by the median of its measured steps; an"
            f" interval is a 95% bootstrap interval over runs (scipy.stats.bootstrap,"
            f" percentile); a difference is called (faster/slower, beats, beyond noise) only"
            f" with >= {stats.MIN_RUNS} runs per configuration, an interval excluding 1 and a"
            f" Holm-adjusted permutation p-value over runs < {stats.ALPHA} (Holm over each"
            f" table's comparisons; with 3 runs a side p >= 0.1, so in practice verdicts need"
            f" 4 or more runs, 5 or more to survive Holm). n = runs.")
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


def write_plots(results: Results, report: Report, out: Path) -> list[Path]:
    """Every plot the data allows; returns the files written."""
    written = []
    ok = results.ok
    strat = report.table("strategies")
    for model in sorted(set(ok["model"])) if not ok.empty else []:
        fig = plots.step_time_by_order(results, model)
        if fig is not None:
            written.append(plots.save(fig, out / f"step_time_by_order_{_slug(model)}.png"))
        fig = plots.throughput_vs_accuracy(strat, model)
        if fig is not None:
            written.append(plots.save(fig, out / f"throughput_vs_accuracy_{_slug(model)}.png"))
    if not strat.empty:
        for key, g in strat.groupby(strategies.GROUP_KEY, dropna=False, sort=True):
            k = dict(zip(strategies.GROUP_KEY, key))
            title = f"{k['model']} K={k['devices']} {k['order']} {k['placer']}"
            fig = plots.loss_curves(results, list(g["run_id"]), title,
                                    float(g["equal_time_s"].iloc[0]))
            if fig is not None:
                name = _slug("loss", k["model"], f"K{k['devices']}", k["order"], k["placer"],
                             f"M{k['micro_batches']}", f"B{k['batch_size']}")
                written.append(plots.save(fig, out / f"{name}.png"))
    with_tl = ok[ok["has_timeline"]] if not ok.empty else ok
    if not with_tl.empty:
        fastest = (with_tl.sort_values("step_time_s")
                   .groupby(["model", "strategy_label"], sort=True).head(1))
        for _, r in fastest.head(MAX_TIMELINES).iterrows():
            fig = plots.timeline(results, r["run_id"])
            if fig is not None:
                name = _slug("timeline", r["model"], r["strategy_label"], r["run_id"])
                written.append(plots.save(fig, out / f"{name}.png"))
    return written


def markdown(report: Report, plot_paths: list[Path] | None = None,
             base: Path | None = None) -> str:
    parts = ["# interplace report", ""]
    if report.notes:
        parts += ["Notes:", ""] + [f"- {n}" for n in report.notes] + [""]
    parts += [to_markdown(t) for t in report.tables]
    if plot_paths:
        parts += ["### Plots", ""]
        parts += [f"- [{p.name}]({p.relative_to(base) if base else p})" for p in plot_paths]
        parts.append("")
    return "\n".join(parts)


def write_report(results: Results, report: Report, out: Path) -> tuple[str, list[Path]]:
    """Writes tables, plots and ``report.md`` under ``out``; returns the Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for t in report.tables:
        files += write_table(t, out / "tables")
    pngs = write_plots(results, report, out / "plots")
    text = markdown(report, pngs, out)
    (out / "report.md").write_text(text, encoding="utf-8")
    return text, files + pngs
