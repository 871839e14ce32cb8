"""Table 5: one recommendation per model family, with its evidence and a confidence.

* **Order and placer**: the (placer, order) pair :func:`.traversal.rank_orders` ranks
  first over all the family's settings. Evidence: its speedup over ``topo`` with the
  same placer (geometric mean over settings) and the bootstrap interval.
* **Confidence**, from two intervals: the runner-up's step time over the best's
  (``vs runner-up``) and the speedup over topo.
  - ``high``: the runner-up is slower beyond noise (interval above 1) and so is topo;
  - ``medium``: only one of the two holds;
  - ``low``: the best is within noise of both, any of them will do;
  - when the best *is* topo, only the runner-up counts: ``high`` or ``low``;
  - ``insufficient data``: a single pair measured.
* **Strategy**: the highest geometric-mean throughput gain over the global strategy
  among the strategies whose mean accuracy cost (:mod:`.strategies`) is at most
  ``tolerance`` (default 0.01, one percentage point of accuracy); ``global`` when
  nothing was compared or nothing else is accurate enough.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import stats
from .traversal import BASELINE

COLUMNS = ["family", "order", "placer", "order_evidence", "confidence", "strategy",
           "strategy_evidence", "speedup_vs_topo", "speedup_ci_low", "speedup_ci_high",
           "vs_runner_up", "vs_ci_low", "vs_ci_high", "runner_up", "strategy_speedup",
           "strategy_accuracy_cost"]


def _fmt_ci(point: float, lo: float, hi: float) -> str:
    if math.isnan(point):
        return "n/a"
    return f"x{point:.2f} [{lo:.2f}, {hi:.2f}]"


def _order_choice(ranked: pd.DataFrame) -> dict:
    if ranked.empty:
        return {"order": "-", "placer": "-", "order_evidence": "no successful runs",
                "confidence": "insufficient data"}
    best = ranked.iloc[0]
    out = {"order": best["order"], "placer": best["placer"],
           "speedup_vs_topo": best["speedup_vs_topo"], "speedup_ci_low": best["speedup_ci_low"],
           "speedup_ci_high": best["speedup_ci_high"], "vs_runner_up": best["vs_runner_up"],
           "vs_ci_low": best["vs_ci_low"], "vs_ci_high": best["vs_ci_high"], "runner_up": ""}
    if best["order"] == BASELINE:
        sp_text, gain = f"is {BASELINE}", True
    elif math.isnan(best["speedup_vs_topo"]):
        sp_text, gain = f"no {BASELINE} measured with {best['placer']}", None
    else:
        sp = _fmt_ci(best["speedup_vs_topo"], best["speedup_ci_low"], best["speedup_ci_high"])
        sp_text = f"{sp} vs {BASELINE}"
        gain = best["speedup_ci_low"] > 1.0
    if len(ranked) == 1:
        out.update(order_evidence=sp_text + "; only pair measured",
                   confidence="insufficient data (one order/placer)")
        return out
    ru = ranked.iloc[1]
    out["runner_up"] = f"{ru['placer']}/{ru['order']}"
    ru_text = (f"runner-up {out['runner_up']} "
               f"{_fmt_ci(best['vs_runner_up'], best['vs_ci_low'], best['vs_ci_high'])} slower")
    beats = bool(best["vs_ci_low"] > 1.0) if not math.isnan(best["vs_ci_low"]) else False
    settings = f"{int(best['settings'])}/{int(best['of_settings'])} settings"
    out["order_evidence"] = f"{sp_text}; {ru_text}; {settings}"
    if best["order"] == BASELINE:
        out["confidence"] = (f"high: {BASELINE} is faster than the runner-up beyond noise"
                             if beats else f"low: {BASELINE} is within noise of the runner-up")
    elif gain is None:
        out["confidence"] = ("medium: beats the runner-up beyond noise, no topo baseline"
                             if beats else "low: within noise of the runner-up, no topo baseline")
    elif beats and gain:
        out["confidence"] = "high: faster than the runner-up and topo beyond noise"
    elif beats:
        out["confidence"] = "medium: beats the runner-up, but within noise of topo"
    elif gain:
        out["confidence"] = f"medium: faster than topo, tie with {out['runner_up']}"
    else:
        out["confidence"] = "low: within noise of the runner-up and topo"
    return out


def _strategy_summary(strat: pd.DataFrame) -> pd.DataFrame:
    """Per strategy label: geometric-mean speedup over global, mean accuracy cost, runs."""
    rows = []
    for label, g in strat.groupby("strategy_label", sort=True):
        sp = g["speedup"].dropna()
        rows.append({"label": label, "speedup": float(stats.geomean(sp)) if len(sp) else np.nan,
                     "cost": float(g["accuracy_cost"].mean()), "runs": len(g),
                     "metric": g["accuracy_metric"].iloc[0],
                     "is_global": label.startswith("global")})
    return pd.DataFrame(rows)


def _strategy_choice(strat: pd.DataFrame, tolerance: float) -> dict:
    if strat.empty:
        return {"strategy": "global", "strategy_evidence": "no strategy comparison measured"}
    agg = _strategy_summary(strat)
    listed = "; ".join(f"{r.label} x{r.speedup:.2f}, cost {r.cost:+.3f}"
                       for r in agg[~agg["is_global"]].itertuples())
    base = agg[agg["is_global"]]
    if base.empty:
        return {"strategy": "global", "strategy_evidence": "no global run to compare with;"
                                                           f" measured: {listed}"}
    eligible = agg[~agg["is_global"] & (agg["cost"] <= tolerance) & (agg["speedup"] > 1)]
    if eligible.empty:
        return {"strategy": base["label"].iloc[0], "strategy_speedup": 1.0,
                "strategy_accuracy_cost": 0.0,
                "strategy_evidence": f"no faster strategy within {tolerance:.3g} accuracy of"
                                     f" global: {listed}"}
    best = eligible.sort_values(["speedup", "cost"], ascending=[False, True]).iloc[0]
    others = "; ".join(f"{r.label} x{r.speedup:.2f}, cost {r.cost:+.3f}"
                       for r in agg[~agg["is_global"] & (agg["label"] != best["label"])]
                       .itertuples())
    evidence = (f"x{best['speedup']:.2f} samples/s vs global, accuracy cost {best['cost']:+.3f}"
                f" ({best['metric']}, {best['runs']} run(s))")
    return {"strategy": best["label"], "strategy_speedup": best["speedup"],
            "strategy_accuracy_cost": best["cost"],
            "strategy_evidence": evidence + (f"; others: {others}" if others else "")}


def recommendation_table(ranked: pd.DataFrame, strategies: pd.DataFrame, families: list[str],
                         tolerance: float = 0.01) -> pd.DataFrame:
    """``ranked``: :func:`.traversal.rank_orders` by family; ``strategies``: Table 2."""
    rows = []
    for fam in families:
        r = ranked[ranked["family"] == fam] if not ranked.empty else ranked
        s = strategies[strategies["family"] == fam] if not strategies.empty else strategies
        rows.append({"family": fam, **_order_choice(r), **_strategy_choice(s, tolerance)})
    return pd.DataFrame(rows).reindex(columns=COLUMNS)
