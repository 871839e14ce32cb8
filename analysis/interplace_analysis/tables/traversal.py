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
        arrays = [results.measured_step_times(cid).to_numpy() for cid in sub["config_id"]]
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


def rank_orders(samples: pd.DataFrame, by: list[str], seed: int = 0) -> pd.DataFrame:
    """Aggregates (placer, order) pairs over the settings of each ``by`` key.

    Returns one row per (by key, placer, order) with ``settings`` (how many it ran in),
    ``score`` (geometric mean of its median over the setting's fastest median; 1 is the
    fastest everywhere), ``speedup_vs_topo`` (geometric mean over the settings that have
    ``topo`` with the same placer) and its bootstrap interval, and ``rank`` (1 = best
    among the pairs present in the most settings). The best row of each key also gets
    ``vs_runner_up`` = geometric mean of runner-up / best medians, with its interval.
    """
    if samples.empty:
        return pd.DataFrame()
    rows = []
    for bkey, sub in samples.groupby(by, dropna=False, sort=True):
        bkey = bkey if isinstance(bkey, tuple) else (bkey,)
        sub = sub.assign(setting=sub[SETTING_KEY].astype(str).agg("|".join, axis=1),
                         median=sub["samples"].map(lambda a: float(np.median(a))))
        # Only settings that compare something say which pair is better; a setting with a
        # single pair (a strategy run at topo only, say) would just favour that pair.
        compared = sub.groupby("setting")["order"].transform("size") > 1
        if compared.any():
            sub = sub[compared]
        n_settings = sub["setting"].nunique()
        fastest = sub.groupby("setting")["median"].min()
        # One joint bootstrap for the whole key: replicate j of every sample belongs together.
        reps = stats.bootstrap_medians(list(sub["samples"]), stats.seed_for(*bkey, base=seed))
        rep_of = dict(zip(sub.index, reps))
        pairs = []
        for (placer, order), p in sub.groupby(["placer", "order"], sort=True):
            score = float(stats.geomean(p["median"] / p["setting"].map(fastest)))
            topo_meds, own_meds, num, den = [], [], [], []
            for idx, r in p.iterrows():
                topo = sub[(sub["setting"] == r["setting"]) & (sub["placer"] == placer)
                           & (sub["order"] == BASELINE)]
                if len(topo):
                    topo_meds.append(topo["median"].iloc[0])
                    own_meds.append(r["median"])
                    num.append(rep_of[topo.index[0]])
                    den.append(rep_of[idx])
            if num:
                point = float(stats.geomean(np.array(topo_meds) / np.array(own_meds)))
                lo, hi = stats.interval(stats.geomean(np.vstack(num) / np.vstack(den), axis=0))
            else:
                point = lo = hi = float("nan")
            pairs.append({**dict(zip(by, bkey)), "placer": placer, "order": order,
                          "settings": len(p), "of_settings": n_settings, "score": score,
                          "speedup_vs_topo": point, "speedup_ci_low": lo,
                          "speedup_ci_high": hi, "_rows": list(p.index)})
        ranked = pd.DataFrame(pairs).sort_values(["settings", "score", "placer", "order"],
                                                 ascending=[False, True, True, True])
        ranked["rank"] = np.arange(1, len(ranked) + 1)
        ranked["vs_runner_up"] = ranked["vs_ci_low"] = ranked["vs_ci_high"] = float("nan")
        if len(ranked) > 1:
            best, ru = ranked.iloc[0], ranked.iloc[1]
            common = set(sub.loc[best["_rows"], "setting"]) & set(sub.loc[ru["_rows"], "setting"])
            if common:
                b = {sub.loc[i, "setting"]: i for i in best["_rows"]}
                r = {sub.loc[i, "setting"]: i for i in ru["_rows"]}
                s_sorted = sorted(common)
                point = float(stats.geomean([sub.loc[r[s], "median"] / sub.loc[b[s], "median"]
                                             for s in s_sorted]))
                lo, hi = stats.interval(stats.geomean(
                    np.vstack([rep_of[r[s]] / rep_of[b[s]] for s in s_sorted]), axis=0))
                first = ranked.index[0]
                ranked.loc[first, ["vs_runner_up", "vs_ci_low", "vs_ci_high"]] = [point, lo, hi]
        rows.append(ranked.drop(columns="_rows"))
    return pd.concat(rows, ignore_index=True)
