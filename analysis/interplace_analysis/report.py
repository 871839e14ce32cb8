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

from . import plots
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
    orders = traversal.order_table(results, seed=seed)
    best = traversal.best_table(orders)
    for _, r in best[best["note"] != ""].iterrows():
        notes.append(f"{r['model']} {r['placer']} K={r['devices']}: {r['note']}")
    strat = strategies.strategy_table(results)
    ranked = traversal.rank_orders(traversal.order_samples(results), ["family"], seed=seed)
    families = sorted(set(results.ok["family"])) if not results.ok.empty else []
    rec = recommendations.recommendation_table(ranked, strat, families, tolerance)
    sim = simulator.simulator_table(results)
    c = results.configs
    summary = pd.DataFrame([{
        "files": len(results.files), "configurations": len(c),
        "ok": int((c["status"] == "ok").sum()) if not c.empty else 0,
        "failed": int((c["status"] == "failed").sum()) if not c.empty else 0,
        "skipped": int((c["status"] == "skipped").sum()) if not c.empty else 0,
        "diverged": int((c["status"] == "diverged").sum()) if not c.empty else 0,
        "missing": len(results.missing)}])
    dk, sk = traversal.DISPLAY_KEY, strategies.DISPLAY_KEY
    tables = [
        Table("summary", "Configurations", summary),
        Table("recommendations", "5. Recommendations per family", rec,
              ["family", "order", "placer", "order_evidence", "confidence", "strategy",
               "strategy_evidence"], "(no successful configurations)"),
        Table("traversal_best", "1a. Best traversal order per group", best,
              dk + ["orders", "best_order", "best_median_s", "speedup_vs_topo",
                    "speedup_ci_low", "speedup_ci_high", "runner_up", "verdict", "note"],
              "(no successful configurations)"),
        Table("traversal_orders", "1b. Step time per traversal order (speedup = topo / order)",
              orders, dk + ["order", "steps", "median_step_s", "speedup_vs_topo",
                            "speedup_ci_low", "speedup_ci_high", "rank"],
              "(no successful configurations)"),
        Table("strategies", "2. Backprop strategies (equal steps and equal wall time)", strat,
              sk + ["strategy_label", "samples_per_s", "speedup", "utilisation",
                    "idle_fraction", "equal_step", "loss_at_equal_step",
                    "accuracy_at_equal_step", "eval_accuracy", "equal_time_s",
                    "step_at_equal_time", "loss_at_equal_time", "accuracy_at_equal_time",
                    "accuracy_cost"], "(no group compares two or more strategies)"),
        Table("graph_features", "3. Graph features and best order per model",
              graph_features.graph_feature_table(results, seed=seed),
              ["family", "model", "node_count", "edge_count", "depth", "max_width",
               "mean_branching_factor", "critical_path_cost_share", "best_order",
               "best_placer", "speedup_vs_topo"], "(no graph statistics)"),
        Table("simulator", "4a. Simulator vs measured step time", sim,
              ["name", "pred_estimator", "pred_step_time_s", "step_time_s", "sim_error",
               "pred_idle_fraction", "idle_fraction"], "(no predictions)"),
        Table("simulator_summary", "4b. Simulator accuracy (MAPE, Spearman)",
              simulator.simulator_summary(sim), None, "(no predictions)"),
        Table("failures", "Failed, skipped and missing configurations",
              failures.failure_table(results), None, "(none: every configuration ran)"),
    ]
    return Report(tables=tables, notes=notes)


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
            fig = plots.loss_curves(results, list(g["config_id"]), title,
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
            fig = plots.timeline(results, r["config_id"])
            if fig is not None:
                name = _slug("timeline", r["model"], r["strategy_label"], r["config_id"])
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
