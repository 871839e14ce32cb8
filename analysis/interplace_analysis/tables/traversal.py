"""Table 1: which traversal order gives the fastest training step (the first study).

A *group* is everything held fixed while the order varies: model (and its options),
placer, device count K, strategy, micro-batches, batch size and devices. Within a
group each order's measured step times are pooled over its configurations (several
seeds of ``random``, say), and the order is summarised by the median step time.

* ``speedup`` = median(topo) / median(order), > 1 is faster than ``topo`` (the default
  order of most placers), with a bootstrap 95% interval (:mod:`..stats`).
* The *best* order has the lowest median. It **beats** the runner-up when the two
  orders' bootstrap intervals of the median do not overlap; otherwise the table says
  ``tie`` and lists every order whose interval overlaps the best's.

:func:`rank_orders` aggregates groups (for a family or a model) for the
recommendations and the graph-feature table: a (placer, order) pair is scored by the
geometric mean, over *settings* (groups without the placer), of its median step time
over the setting's fastest median, so that models of different speeds weigh the same.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import stats
from ..loader import Results

GROUP_KEY = ["family", "model", "model_options", "placer", "devices", "strategy_label",
             "micro_batches", "batch_size", "device", "cost_device"]
SETTING_KEY = [k for k in GROUP_KEY if k != "placer"]
DISPLAY_KEY = ["family", "model", "placer", "devices", "strategy_label", "micro_batches"]
BASELINE = "topo"


def order_samples(results: Results) -> pd.DataFrame:
    """One row per (group, order): pooled measured step times of its configurations."""
    ok = results.ok
    if ok.empty:
        return pd.DataFrame(columns=GROUP_KEY + ["order", "samples", "configs"])
    rows = []
    for key, sub in ok.groupby(GROUP_KEY + ["order"], dropna=False, sort=True):
        arrays = [results.measured_step_times(cid) for cid in sub["config_id"]]
        samples = np.concatenate(arrays) if arrays else np.zeros(0)
        rows.append({**dict(zip(GROUP_KEY + ["order"], key)), "samples": samples,
                     "configs": len(sub)})
    return pd.DataFrame(rows)


def order_table(results: Results, seed: int = 0) -> pd.DataFrame:
    """Long table: per group and order, median step time, its interval, the speedup
    over ``topo`` with its interval, and the order's rank in the group (1 = fastest)."""
    samples = order_samples(results)
    cols = GROUP_KEY + ["order", "configs", "steps", "median_step_s", "median_ci_low",
                        "median_ci_high", "speedup_vs_topo", "speedup_ci_low",
                        "speedup_ci_high", "rank"]
    if samples.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, grp in samples.groupby(GROUP_KEY, dropna=False, sort=True):
        topo = grp[grp["order"] == BASELINE]
        topo_samples = topo["samples"].iloc[0] if len(topo) else None
        for _, r in grp.iterrows():
            seed_key = stats.seed_for(*key, r["order"], base=seed)
            med, lo, hi = stats.median_ci(r["samples"], seed_key)
            if r["order"] == BASELINE:
                sp = slo = shi = 1.0
            elif topo_samples is not None:
                sp, slo, shi = stats.ratio_ci(topo_samples, r["samples"], seed_key + 1)
            else:
                sp = slo = shi = float("nan")
            rows.append({**dict(zip(GROUP_KEY, key)), "order": r["order"],
                         "configs": r["configs"], "steps": len(r["samples"]),
                         "median_step_s": med, "median_ci_low": lo, "median_ci_high": hi,
                         "speedup_vs_topo": sp, "speedup_ci_low": slo,
                         "speedup_ci_high": shi})
    table = pd.DataFrame(rows)
    table["rank"] = (table.groupby(GROUP_KEY, dropna=False)["median_step_s"]
                     .rank(method="min").astype(int))
    return table.sort_values(GROUP_KEY + ["rank", "order"]).reset_index(drop=True)[cols]


def best_table(orders: pd.DataFrame) -> pd.DataFrame:
    """Per group: the best order, its speedup over topo, the runner-up and the verdict."""
    cols = GROUP_KEY + ["orders", "best_order", "best_median_s", "speedup_vs_topo",
                        "speedup_ci_low", "speedup_ci_high", "runner_up", "runner_up_median_s",
                        "verdict", "note"]
    rows = []
    for key, grp in orders.groupby(GROUP_KEY, dropna=False, sort=True):
        grp = grp.sort_values(["median_step_s", "order"])
        best = grp.iloc[0]
        row = {**dict(zip(GROUP_KEY, key)), "orders": len(grp), "best_order": best["order"],
               "best_median_s": best["median_step_s"],
               "speedup_vs_topo": best["speedup_vs_topo"],
               "speedup_ci_low": best["speedup_ci_low"],
               "speedup_ci_high": best["speedup_ci_high"],
               "runner_up": "", "runner_up_median_s": float("nan"), "note": ""}
        if BASELINE not in set(grp["order"]):
            row["note"] = f"no {BASELINE} in this group: no speedup"
        if len(grp) == 1:
            row["verdict"] = "only one order"
        else:
            ru = grp.iloc[1]
            row["runner_up"], row["runner_up_median_s"] = ru["order"], ru["median_step_s"]
            best_iv = (best["median_ci_low"], best["median_ci_high"])
            tied = [o["order"] for _, o in grp.iloc[1:].iterrows()
                    if stats.intervals_overlap(best_iv, (o["median_ci_low"],
                                                         o["median_ci_high"]))]
            row["verdict"] = ("beats runner-up" if not tied
                              else "tie with " + ", ".join(tied))
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)


def _geomean_ratio(pairs: list[tuple[int, int]], sub: pd.DataFrame,
                   reps: dict) -> tuple[float, float, float]:
    """Geometric mean over (numerator row, denominator row) pairs of the ratio of their
    medians, with the bootstrap interval of the same statistic."""
    if not pairs:
        return float("nan"), float("nan"), float("nan")
    point = float(stats.geomean([sub.loc[n, "median"] / sub.loc[d, "median"] for n, d in pairs]))
    replicated = np.vstack([reps[n] / reps[d] for n, d in pairs])
    return (point, *stats.interval(stats.geomean(replicated, axis=0)))


def _rank_one_key(sub: pd.DataFrame, seed: int) -> pd.DataFrame:
    """:func:`rank_orders` for the rows of one key (``sub`` has ``setting``, ``median``)."""
    # Only settings that compare orders say which order is better; counting a setting
    # that ran one order (a strategy study at topo only, say) would favour that order.
    compared = sub.groupby("setting")["order"].transform("nunique") > 1
    if compared.any():
        sub = sub[compared]
    fastest = sub.groupby("setting")["median"].min()
    # One joint bootstrap for the key: replicate j of every sample belongs together.
    reps = dict(zip(sub.index, stats.bootstrap_medians(list(sub["samples"]), seed)))
    row_of = {(r.setting, r.placer, r.order): i for i, r in sub.iterrows()}
    pairs = []
    for (placer, order), p in sub.groupby(["placer", "order"], sort=True):
        vs_topo = [(row_of[(s, placer, BASELINE)], i) for i, s in p["setting"].items()
                   if (s, placer, BASELINE) in row_of]
        point, lo, hi = _geomean_ratio(vs_topo, sub, reps)
        pairs.append({"placer": placer, "order": order, "settings": len(p),
                      "of_settings": sub["setting"].nunique(),
                      "score": float(stats.geomean(p["median"] / p["setting"].map(fastest))),
                      "speedup_vs_topo": point, "speedup_ci_low": lo, "speedup_ci_high": hi,
                      "rows": dict(zip(p["setting"], p.index))})
    ranked = pd.DataFrame(pairs).sort_values(["settings", "score", "placer", "order"],
                                             ascending=[False, True, True, True],
                                             ignore_index=True)
    ranked["rank"] = np.arange(1, len(ranked) + 1)
    ranked["vs_runner_up"] = ranked["vs_ci_low"] = ranked["vs_ci_high"] = float("nan")
    if len(ranked) > 1:
        best, ru = ranked.loc[0, "rows"], ranked.loc[1, "rows"]
        common = sorted(set(best) & set(ru))
        if common:
            ranked.loc[0, ["vs_runner_up", "vs_ci_low", "vs_ci_high"]] = _geomean_ratio(
                [(ru[s], best[s]) for s in common], sub, reps)
    return ranked.drop(columns="rows")


def rank_orders(samples: pd.DataFrame, by: list[str], seed: int = 0) -> pd.DataFrame:
    """Aggregates (placer, order) pairs over the settings of each ``by`` key.

    Returns one row per (by key, placer, order) with ``settings`` (how many it ran in),
    ``score`` (geometric mean of its median over the setting's fastest median; 1 is the
    fastest everywhere), ``speedup_vs_topo`` (geometric mean over the settings that have
    ``topo`` with the same placer) and its bootstrap interval, and ``rank`` (1 = best
    among the pairs present in the most settings). Settings that ran a single order are
    left out when any setting compares two or more. The best row of each key also gets
    ``vs_runner_up`` = geometric mean of runner-up / best medians, with its interval
    (above 1: the runner-up is slower).
    """
    if samples.empty:
        return pd.DataFrame()
    parts = []
    for key, sub in samples.groupby(by, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        sub = sub.assign(setting=sub[SETTING_KEY].astype(str).agg("|".join, axis=1),
                         median=sub["samples"].map(lambda a: float(np.median(a))))
        ranked = _rank_one_key(sub, stats.seed_for(*key, base=seed))
        parts.append(ranked.assign(**dict(zip(by, key)))[by + list(ranked.columns)])
    return pd.concat(parts, ignore_index=True)
