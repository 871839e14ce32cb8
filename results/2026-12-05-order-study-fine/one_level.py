"""The comparison for run.sh's study: the one-level study (results/2026-12-04-order-study-
families, rl_preset wang2022) restricted to what this one ran (enas-rnn and nmt, rl seeds 1-3),
through the same order-study report, into report-one-level/.

    ../../.venv/bin/python one_level.py STUDY_H5    (the 12-04 run.sh's merged study.h5)
"""
import os
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "analysis"))
from interplace_analysis import order_study  # noqa: E402


def main():
    study = order_study.load_order_study([sys.argv[1]])
    rnn = lambda df: df[df["model"].str.match(r"(enas-rnn|nmt):")]  # noqa: E731
    runs = rnn(study.runs)
    study = replace(study, runs=runs[runs["seed"] <= 3], models=rnn(study.models),
                    baselines=rnn(study.baselines))
    out = HERE / "report-one-level"
    order_study.write_report(study, out, command=" ".join(["one_level.py", *sys.argv[1:]]))
    for table in (out / "tables").glob("*"):
        if table.suffix in (".tex", ".md"):
            os.remove(table)  # report.md has them


if __name__ == "__main__":
    main()
