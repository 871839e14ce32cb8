"""Table 3: each model's graph features beside the order that served it best.

The traversal-order study relates the best order to the shape of the graph (a long
chain vs a wide, branchy one); this table puts the two side by side. Graph features
come from the ``graph`` group of any configuration of the model (they do not depend
on order, placer or strategy); the best (placer, order) pair is the one
:func:`.traversal.rank_orders` ranks first over all of the model's settings.
"""

from __future__ import annotations

import pandas as pd

from ..h5file import GRAPH_ATTRIBUTES
from ..loader import Results
from .traversal import order_samples, rank_orders

KEY = ["family", "model", "model_options"]
COLUMNS = KEY + list(GRAPH_ATTRIBUTES) + ["best_order", "best_placer", "speedup_vs_topo",
                                          "speedup_ci_low", "speedup_ci_high", "settings",
                                          "min_runs"]


def graph_feature_table(results: Results, seed: int = 0) -> pd.DataFrame:
    c = results.configs
    if c.empty:
        return pd.DataFrame(columns=COLUMNS)
    stats_rows = (c.dropna(subset=["node_count"]).groupby(KEY, dropna=False, sort=True)
                  [list(GRAPH_ATTRIBUTES)].first().reset_index())
    if stats_rows.empty:
        return pd.DataFrame(columns=COLUMNS)
    ranked = rank_orders(order_samples(results, seed), KEY, seed=seed)
    best = (ranked[ranked["rank"] == 1] if not ranked.empty else pd.DataFrame(columns=KEY))
    best = best.rename(columns={"order": "best_order", "placer": "best_placer"})
    keep = KEY + ["best_order", "best_placer", "speedup_vs_topo", "speedup_ci_low",
                  "speedup_ci_high", "settings", "min_runs"]
    out = stats_rows.merge(best.reindex(columns=keep), on=KEY, how="left")
    for col in ("node_count", "edge_count", "depth", "max_width"):
        out[col] = out[col].astype("Int64")
    return out[COLUMNS]
