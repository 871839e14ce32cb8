"""summary.md and curves.png from study.py's rows.csv and curves.csv.gz.

    ../../.venv/bin/python summary.py    (pandas, matplotlib: the analysis environment)
"""
import os

import matplotlib
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_HEURISTICS = ["contiguous", "greedy-eft", "balanced", "refine"]


def ms(s):
    return f"{1e3 * s:.3g}" if s >= 1e-3 else f"{1e3 * s:.3f}"


def main():
    rows = pd.read_csv(os.path.join(HERE, "rows.csv"))
    out = ["# rl against the heuristics: summary (made by summary.py from rows.csv)", ""]
    for model, m in rows.groupby("model", sort=False):
        heur = m[m.seed == 0].set_index("variant")["step_time_s"]
        best_name = heur[DEFAULT_HEURISTICS].idxmin()
        best = heur[best_name]
        out += [f"## {model}", "",
                f"Best heuristic at its defaults: **{best_name}, {ms(best)} ms** "
                f"(list-schedule step time; 3 devices, order topo-lifo).", "",
                "| placer | step time (ms): median over seeds [min, max] | vs best heuristic "
                "(median; worst seed) | greedy policy (ms, median) | placer wall (s, median) |",
                "| --- | --- | --- | --- | --- |"]
        for name, t in heur.items():
            out.append(f"| {name} | {ms(t)} | {100 * (t / best - 1):+.1f}% | | |")
        for variant, v in m[m.seed > 0].groupby("variant", sort=False):
            t = v["step_time_s"]
            greedy = pd.to_numeric(v["greedy_s"])
            out.append(
                f"| rl: {variant} (n = {len(v)}) | {ms(t.median())} [{ms(t.min())}, {ms(t.max())}] "
                f"| {100 * (t.median() / best - 1):+.1f}%; {100 * (t.max() / best - 1):+.1f}% "
                f"| {ms(greedy.median())} | {v['placer_wall_s'].median():.2f} |")
        groups = m[m.seed > 0]["groups"].max()
        if groups and groups > 0:
            out.append("")
            out.append(f"(rl placed {int(groups)} groups of this graph; step times are the full "
                       "graph's, the learning curves below the group graph's.)")
        out.append("")
    with open(os.path.join(HERE, "summary.md"), "w") as f:
        f.write("\n".join(out))

    curves = pd.read_csv(os.path.join(HERE, "curves.csv.gz"))
    shown = ["placeto, 50 episodes", "lookahead (defaults, 50 episodes)",
             "lookahead, candidate weights frozen"]
    models = list(dict.fromkeys(curves.model))
    fig, axes = plt.subplots(1, len(models), figsize=(4 * len(models), 3.4))
    for ax, model in zip(axes, models):
        for variant in shown:
            c = curves[(curves.model == model) & (curves.variant == variant)]
            med = c.groupby("episode")[["episode_step_time_s", "best_so_far_step_time_s"]].median()
            line, = ax.plot(med.index, 1e3 * med.episode_step_time_s, lw=1, label=variant)
            ax.plot(med.index, 1e3 * med.best_so_far_step_time_s, lw=1, ls="--",
                    color=line.get_color())
        ax.set_title(model, fontsize=9)
        ax.set_xlabel("episode")
        ax.set_ylabel("step time (ms)")
    axes[0].legend(fontsize=6)
    fig.suptitle("rl learning curves, median over 5 seeds: episode's placement (solid), "
                 "best so far (dashed)", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "curves.png"), dpi=110)


if __name__ == "__main__":
    main()
