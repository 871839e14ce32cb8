"""summary.md and curves.png from study.py's rows.csv and curves.csv.gz.

    ../../.venv/bin/python summary.py    (pandas, scipy, matplotlib: the analysis environment)
"""
import os

import matplotlib
import numpy as np
import pandas as pd
from scipy import stats

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_HEURISTICS = ["contiguous", "greedy-eft", "balanced", "refine"]
DEFAULTS = "defaults (45 episodes on 448 groups, 5 on 1344)"
ONE_LEVEL = "one level (--rl-fine-episodes 0; the defaults before)"
OVERVIEW = [DEFAULTS, ONE_LEVEL, "fine level 4x (--rl-fine-factor 4)", "defaults from greedy-eft",
            "study preset (one level, as the order study ran)", "study preset, coarse to fine"]

# On a graph placed node by node these settings are those of another column.
SAME_ON_NODES = {ONE_LEVEL: DEFAULTS, OVERVIEW[2]: DEFAULTS, OVERVIEW[5]: OVERVIEW[4]}


def ms(s):
    return f"{1e3 * s:.3g}" if s >= 1e-3 else f"{1e3 * s:.3f}"


def relative(t, best):
    """Mean of t / best - 1 over the seeds with its 95% t interval, in per cent."""
    r = 100 * (np.asarray(t) / best - 1)
    half = stats.t.ppf(0.975, len(r) - 1) * r.std(ddof=1) / np.sqrt(len(r)) if len(r) > 1 else 0
    return r.mean(), half


def main():
    rows = pd.read_csv(os.path.join(HERE, "rows.csv"))
    out = ["# Coarse-to-fine rl against the heuristics: summary (made by summary.py from rows.csv)",
           "", "List-schedule step time of the returned placement on the full graph, 3 devices, "
           "order topo-lifo; rl seeds 1-5 (n = 5 per cell). Relative to the best heuristic at "
           "its defaults (of contiguous, greedy-eft, balanced, refine); negative is faster.", "",
           "## Overview: mean over seeds [95% t interval] (worst seed)", "",
           "| graph (nodes placed as) | best heuristic | " + " | ".join(OVERVIEW) + " |",
           "| --- | --- |" + " --- |" * len(OVERVIEW)]
    detail = []
    for model, m in rows.groupby("model", sort=False):
        heur = m[m.seed == 0].set_index("variant")["step_time_s"]
        best_name = heur[DEFAULT_HEURISTICS].idxmin()
        best = heur[best_name]
        rl = m[m.seed > 0]
        levels = rl[rl.variant == DEFAULTS]["level_groups"].fillna("").astype(str).iloc[0]
        cells = []
        for variant in OVERVIEW:
            t = rl[rl.variant == variant]["step_time_s"]
            if t.empty and variant in SAME_ON_NODES:  # an ungrouped graph: one level anyway
                t = rl[rl.variant == SAME_ON_NODES[variant]]["step_time_s"]
            if t.empty:
                cells.append("")
                continue
            mean, half = relative(t, best)
            cells.append(f"{mean:+.1f}% [{mean - half:+.1f}, {mean + half:+.1f}] "
                         f"({100 * (t.max() / best - 1):+.1f}%)")
        shape = f"groups {levels}" if levels.strip() not in ("", "nan") else "nodes"
        out.append(f"| {model} ({shape}) | {best_name} {ms(best)} ms | " + " | ".join(cells) + " |")

        detail += [f"## {model}", "",
                   f"Best heuristic at its defaults: **{best_name}, {ms(best)} ms**.", "",
                   "| placer | step time (ms): median [min, max] | vs best heuristic: mean "
                   "[95% t]; worst seed | greedy policy (ms, median) | placer wall (s, median) |",
                   "| --- | --- | --- | --- | --- |"]
        for name, t in heur.items():
            detail.append(f"| {name} | {ms(t)} | {100 * (t / best - 1):+.1f}% | | |")
        for variant, v in rl.groupby("variant", sort=False):
            t = v["step_time_s"]
            mean, half = relative(t, best)
            greedy = pd.to_numeric(v["greedy_s"])
            detail.append(
                f"| rl: {variant} (n = {len(v)}) | {ms(t.median())} [{ms(t.min())}, {ms(t.max())}] "
                f"| {mean:+.1f}% [{mean - half:+.1f}, {mean + half:+.1f}]; "
                f"{100 * (t.max() / best - 1):+.1f}% | {ms(greedy.median())} "
                f"| {v['placer_wall_s'].median():.2f} |")
        detail.append("")
    out += ["", "Graphs of at most 448 nodes are placed node by node whatever the fine-level "
            "settings: there the one-level and 4x columns repeat the defaults, the study preset's "
            "coarse-to-fine column its one-level one (not run twice).", ""]
    with open(os.path.join(HERE, "summary.md"), "w") as f:
        f.write("\n".join(out + detail))

    curves = pd.read_csv(os.path.join(HERE, "curves.csv.gz"))
    grouped = [m for m in dict.fromkeys(curves.model)
               if not curves[(curves.model == m) & (curves.variant == ONE_LEVEL)].empty]
    fig, axes = plt.subplots(1, len(grouped), figsize=(3.6 * len(grouped), 3.3))
    for ax, model in zip(axes, grouped):
        for variant in (ONE_LEVEL, DEFAULTS):
            c = curves[(curves.model == model) & (curves.variant == variant)]
            med = c.groupby("episode")[["episode_step_time_s", "best_so_far_step_time_s"]].median()
            line, = ax.plot(med.index, 1e3 * med.episode_step_time_s, lw=1,
                            label=variant.split(" (")[0])
            ax.plot(med.index, 1e3 * med.best_so_far_step_time_s, lw=1, ls="--",
                    color=line.get_color())
        ax.axvline(45.5, color="grey", lw=0.5)
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("episode")
        ax.set_ylabel("group-graph step estimate (ms)")
    axes[0].legend(fontsize=7)
    fig.suptitle("rl learning curves, median over 5 seeds: episode's placement (solid), best so "
                 "far (dashed); episodes 46-50 of the defaults place 1344 groups (their own "
                 "estimates)", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "curves.png"), dpi=110)


if __name__ == "__main__":
    main()
