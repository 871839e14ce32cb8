"""Writes a table as Markdown, CSV and LaTeX.

Written here rather than through ``DataFrame.to_markdown``/``to_latex`` because those
need the optional packages tabulate and jinja2; the formats needed are simple.
CSV keeps full precision (for further analysis); Markdown and LaTeX round floats to
four significant digits (for reading).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd


@dataclass
class Table:
    """A named table: ``name`` is the file stem, ``title`` the heading above it."""

    name: str
    title: str
    frame: pd.DataFrame
    columns: list[str] | None = None  # shown in Markdown/LaTeX; CSV has every column
    empty_text: str = "(none)"


def format_value(v: object) -> str:
    if v is None or v is pd.NA:
        return ""
    if isinstance(v, float | np.floating):
        if math.isnan(v):
            return "n/a"
        if v == 0:
            return "0"
        if abs(v) >= 1e5 or abs(v) < 1e-3:
            return f"{v:.3e}"
        return f"{v:.4g}"
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    return str(v)


def _cells(table: Table) -> tuple[list[str], list[list[str]]]:
    cols = [c for c in (table.columns or list(table.frame.columns)) if c in table.frame]
    rows = [[format_value(v) for v in rec] for rec in table.frame[cols].itertuples(index=False)]
    return cols, rows


def to_markdown(table: Table, number: str = "") -> str:
    """The table under a ``###`` heading, numbered when ``number`` is given."""
    out = [f"### {number + ' ' if number else ''}{table.title}", ""]
    if table.frame.empty:
        return "\n".join(out + [table.empty_text, ""])
    cols, rows = _cells(table)
    esc = [[c.replace("|", "\\|") for c in r] for r in rows]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join(" --- " for _ in cols) + "|")
    out += ["| " + " | ".join(r) + " |" for r in esc]
    return "\n".join(out + [""])


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def to_latex(table: Table) -> str:
    cols, rows = _cells(table)
    if table.frame.empty:
        return f"% {latex_escape(table.title)}: {latex_escape(table.empty_text)}\n"
    lines = [f"% {latex_escape(table.title)}", r"\begin{tabular}{" + "l" * len(cols) + "}",
             r"\hline", " & ".join(latex_escape(c) for c in cols) + r" \\", r"\hline"]
    lines += [" & ".join(latex_escape(c) for c in r) + r" \\" for r in rows]
    lines += [r"\hline", r"\end{tabular}", ""]
    return "\n".join(lines)


def write_table(table: Table, directory: Path) -> list[Path]:
    """Writes ``<name>.md``, ``<name>.csv`` and ``<name>.tex``; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{table.name}.{ext}" for ext in ("md", "csv", "tex")]
    paths[0].write_text(to_markdown(table), encoding="utf-8")
    table.frame.to_csv(paths[1], index=False)
    paths[2].write_text(to_latex(table), encoding="utf-8")
    return paths
