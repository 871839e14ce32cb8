"""The report's provenance header: what made the numbers, from the files' root attributes.

One line per item (commit, dates, hosts, devices, world size, library versions, Slurm job,
spec path); when several files disagree on an item, the line says so and gives each
file's value. The spec text follows in a collapsible block (one per distinct text), then
the exact command that made the report. docs/results-format.md names the attributes.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

# (label, root attributes joined with " / ") in the order the header shows them.
ITEMS = [
    ("commit", ["git_commit"]),
    ("interplace version", ["interplace_version"]),
    ("file created (UTC)", ["created_utc"]),
    ("hosts", ["hosts"]),
    ("devices", ["devices"]),
    ("node-local ranks", ["node_local_ranks"]),
    ("world size (MPI ranks)", ["world_size"]),
    ("MPI", ["mpi_version"]),
    ("HDF5", ["hdf5_version"]),
    ("oneDNN", ["onednn_version"]),
    ("CUDA runtime / driver", ["cuda_runtime_version", "cuda_driver_version"]),
    ("cuDNN", ["cudnn_version"]),
    ("Slurm job / array job / array task", ["slurm_job_id", "slurm_array_job_id",
                                            "slurm_array_task_id"]),
    ("shard", ["shard"]),
    ("spec path", ["spec_path"]),
    ("overrides", ["overrides"]),
    ("filter", ["filter"]),
]


def _value(row: pd.Series, names: list[str]) -> str:
    vals = []
    for n in names:
        v = row.get(n) if n in row.index else None
        vals.append("(absent)" if v is None or (isinstance(v, float) and v != v) else str(v))
    if names[0].startswith("slurm_") and all(v in ("", "(absent)") for v in vals):
        return "none (not run under Slurm)"
    if names == ["overrides"] or names == ["filter"]:
        if vals == ["(absent)"]:
            return "(not recorded)"
        return vals[0].replace("\n", "; ") if vals[0] else "none"
    return " / ".join(vals)


def _code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


def run_dates(configs: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Per file: the first and last ``started_utc`` of its configurations (ISO strings
    sort chronologically)."""
    if configs.empty or "started_utc" not in configs:
        return {}
    out = {}
    for path, g in configs.groupby("file", sort=False):
        s = sorted(v for v in g["started_utc"] if isinstance(v, str) and v)
        if s:
            out[str(path)] = (s[0], s[-1])
    return out


def header_lines(files: pd.DataFrame, configs: pd.DataFrame, command: str | None) -> list[str]:
    """The Markdown lines of the header (no section title)."""
    if files.empty:
        return ["(no files)"]
    names = [Path(str(p)).name for p in files["path"]]
    lines = [f"- file{'s' if len(files) > 1 else ''}: "
             + ", ".join(f"{_code(str(p))} ({int(n)} configurations)"
                         for p, n in zip(files["path"], files["configurations"]))]
    dates = run_dates(configs)
    rows = [r for _, r in files.iterrows()]

    def per_file(label: str, values: list[str]) -> None:
        if len(set(values)) == 1:
            lines.append(f"- {label}: {_code(values[0])}")
        else:
            lines.append(f"- {label}: **differs between files**: "
                         + "; ".join(f"{n}: {_code(v)}" for n, v in zip(names, values)))

    for label, attrs in ITEMS[:3]:
        per_file(label, [_value(r, attrs) for r in rows])
    runs = [dates.get(str(p)) for p in files["path"]]
    per_file("configurations started (UTC, first - last)",
             [f"{d[0]} - {d[1]}" if d else "(no configurations)" for d in runs])
    for label, attrs in ITEMS[3:]:
        per_file(label, [_value(r, attrs) for r in rows])
    texts = [str(r.get("spec_text", "")) for r in rows]
    for text in dict.fromkeys(texts):
        which = [n for n, t in zip(names, texts) if t == text]
        title = "spec text" + ("" if len(set(texts)) == 1 else f" of {', '.join(which)}")
        fence = "~~~~" if "```" in text else "```"
        lines += ["", f"<details><summary>{title} ({len(text.splitlines())} lines)</summary>",
                  "", f"{fence}toml", text.rstrip("\n"), fence, "", "</details>"]
    if command:
        lines += ["", "Report made by:", "", "```sh", command, "```"]
    return lines
