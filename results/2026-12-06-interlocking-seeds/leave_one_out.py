#!/usr/bin/env python3
"""Do the study's verdicts survive losing a seed? The strategies report's paired,
Holm-adjusted differences of selected test accuracy over every run kept under runs/, and
again with each seed left out in turn (the same 9-pair Holm family each time):
    .venv/bin/python results/2026-12-06-interlocking-seeds/leave_one_out.py > leave_one_out.md
A verdict that holds in every leave-one-out table does not rest on one seed."""
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from interplace_analysis import strategy_study as study
from interplace_analysis.exported import RunTables, combine, read_export_directory

HERE = Path(__file__).resolve().parent


def verdicts(tables: RunTables) -> dict[tuple[str, str], pd.Series]:
    """The strategies report's own table of selected-accuracy differences, per pair."""
    report = study.build(tables)
    for figure in report.figures.values():
        plt.close(figure)
    table = next(t for t in report.tables if t.name == "selected_accuracy_differences_resnet20")
    return {(r["a"], r["b"]): r for _, r in table.frame.iterrows()}


def cell(row: pd.Series | None) -> str:
    return "n/a" if row is None else f"{row['verdict']} (Holm {row['p_holm']:.3f}, n {row['seeds']})"


def shown(row: pd.Series | None) -> str | None:
    """The verdict's claim: which side is better, or none (with or without "after Holm")."""
    if row is None:
        return None
    return "none" if row["verdict"].startswith("no difference") else row["verdict"]


def without_seed(tables: RunTables, seed: int) -> RunTables:
    runs = tables.runs[tables.runs["seed"] != seed]
    return RunTables(runs.reset_index(drop=True),
                     tables.evaluations[tables.evaluations["run_id"].isin(runs["run_id"])])


def main() -> int:
    tables = combine([read_export_directory(d) for d in sorted((HERE / "runs").iterdir())
                      if d.is_dir()])
    seeds = sorted(int(s) for s in tables.runs["seed"].unique())
    columns = {"all seeds": verdicts(tables)}
    columns.update({f"without seed {s}": verdicts(without_seed(tables, s)) for s in seeds})
    pairs = list(columns["all seeds"])
    print("| A - B | " + " | ".join(columns) + " | holds without any one seed |")
    print("| --- |" + " --- |" * (len(columns) + 1))
    for pair in pairs:
        rows = [columns[c].get(pair) for c in columns]
        holds = all(shown(r) == shown(rows[0]) for r in rows[1:])
        print(f"| {pair[0]} - {pair[1]} | " + " | ".join(map(cell, rows))
              + f" | {'yes' if holds else 'no'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
