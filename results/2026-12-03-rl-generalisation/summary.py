"""summary.md from study.py's rows.csv (beside this file, or in DIR).

    ../../.venv/bin/python summary.py [DIR]
"""
import os
import sys

import pandas as pd
from scipy.stats import wilcoxon

HERE = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
ORDER = ["zero-shot", "fine-tuned, 10 episodes", "from scratch, 10 episodes",
         "from scratch, 50 episodes (defaults)"]


def main():
    rows = pd.read_csv(os.path.join(HERE, "rows.csv"))
    ref = rows[rows.variant == "greedy-eft"].set_index(["family", "seed", "graph"])["step_time_s"]
    rl = rows[rows.variant != "greedy-eft"].copy()
    rl["vs_greedy_eft"] = rl.apply(lambda r: r.step_time_s / ref[(r.family, r.seed, r.graph)] - 1,
                                   axis=1)
    out = ["# Generalisation: summary (made by summary.py from rows.csv)", "",
           "Step time relative to greedy-eft on the same unseen graph (negative: faster); "
           "median [min, max] over 8 unseen graphs x 3 training seeds (n = 24); placer wall "
           "time per unseen graph, median, and the training's wall time per policy "
           "(the sum of its placer wall times), median over the 3 seeds.", ""]
    for family, f in rl.groupby("family", sort=False):
        train_s = f[f.variant == "zero-shot"].groupby("seed")["train_wall_s"].first().median()
        out += [f"## {family}", "",
                f"Training one policy on 24 graphs: {train_s:.0f} s (median over the seeds).", "",
                "| rl | vs greedy-eft: median [min, max] | placer wall per graph (s) |",
                "| --- | --- | --- |"]
        for variant in ORDER:
            v = f[f.variant == variant]
            x = 100 * v.vs_greedy_eft
            out.append(f"| {variant} | {x.median():+.1f}% [{x.min():+.1f}%, {x.max():+.1f}%] "
                       f"| {v.placer_wall_s.median():.2f} |")
        out.append("")
        per_graph = f.groupby(["variant", "graph"])["step_time_s"].median().unstack(0)
        for a, b in [("fine-tuned, 10 episodes", "from scratch, 10 episodes"),
                     ("zero-shot", "from scratch, 50 episodes (defaults)"),
                     ("fine-tuned, 10 episodes", "from scratch, 50 episodes (defaults)")]:
            d = per_graph[a] / per_graph[b] - 1
            p = wilcoxon(per_graph[a], per_graph[b]).pvalue if (d != 0).any() else float("nan")
            out.append(f"- {a} vs {b}, per unseen graph (median over seeds, n = 8): median "
                       f"{100 * d.median():+.1f}%, faster on {(d < 0).sum()} of 8, "
                       f"Wilcoxon signed-rank p = {p:.3g}")
        out.append("")
    with open(os.path.join(HERE, "summary.md"), "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
