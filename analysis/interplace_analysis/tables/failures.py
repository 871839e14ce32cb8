"""The configurations that did not run: failed, skipped and missing ones.

They are listed, never silently dropped: a recommendation built on the configurations
that happened to finish is only as good as the list of those that did not. ``missing``
rows come from gaps in the sweep's indices (see :mod:`..loader`).
"""

from __future__ import annotations

import pandas as pd

from ..loader import Results

COLUMNS = ["config_id", "repeat", "index", "name", "status", "reason"]


def failure_table(results: Results) -> pd.DataFrame:
    parts = []
    c = results.configs
    if not c.empty:
        bad = c[c["status"] != "ok"]
        no_steps = c[(c["status"] == "ok") & ~c.index.isin(results.ok.index)].copy()
        no_steps["reason"] = "status ok but no measured step times in the file"
        parts += [bad[COLUMNS], no_steps[COLUMNS]]
    if not results.missing.empty:
        parts.append(results.missing.reindex(columns=COLUMNS))
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(parts, ignore_index=True).sort_values(["status", "index"],
                                                           kind="stable").reset_index(drop=True)
