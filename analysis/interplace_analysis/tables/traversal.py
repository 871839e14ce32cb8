"""Table 1: which traversal order gives the fastest training step (the first study).

A *group* is everything held fixed while the order varies: model (and its options),
placer, device count K, strategy, micro-batches, batch size and devices. Within a
group each order has *runs* (every ``ok`` run of its configurations: repeats, and
several seeds of ``random``, say); a run is summarised by the median of its measured
steps and the order by the median over its runs (:mod:`..stats`).

* ``speedup`` = median(topo) / median(order), > 1 is faster than ``topo`` (the default
  order of most placers), with a 95% bootstrap interval over runs (a single run: the
  within-run block bootstrap, ``interval_over`` says which), a Holm-adjusted p-value and
  a verdict (faster/slower/same/not enough runs) by the rule of :func:`..stats.verdict`,
  minimum effect included.
* The *best* order has the lowest median. It **beats** the runner-up by the same rule
  (see :func:`best_table`); otherwise the table says ``tie`` or ``not enough repeats``.

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

GROUP_KEY = ["family", "model", "model_options", "placer", "devices", "data_parallel",
             "strategy_label",
             "micro_batches", "batch_size", "device", "cost_device"]
SETTING_KEY = [k for k in GROUP_KEY if k != "placer"]
DISPLAY_KEY = ["family", "model", "placer", "devices", "data_parallel", "strategy_label",
               "micro_batches"]
BASELINE = "topo"


def order_samples(results: Results, seed: int = 0) -> pd.DataFrame:
    """One row per (group, order): its runs (every ``ok`` run of its configurations),
    ``values`` = each run's median step time, ``steps`` = each run's measured step times
    (:class:`..stats.LazySteps`: read only if an interval needs them, a side of one run),
    ``samples`` = how many measured steps the runs have together (``measured_steps``),
    ``configs`` and ``runs`` counts."""
    ok = results.ok
    cols = GROUP_KEY + ["order", "values", "steps", "samples", "configs", "runs"]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, sub in ok.groupby(GROUP_KEY + ["order"], dropna=False, sort=True):
        steps = results.lazy_step_times(sub["run_id"], seed)
        rows.append({**dict(zip(GROUP_KEY + ["order"], key)),
                     "values": sub["step_time_s"].to_numpy(dtype=float), "steps": steps,
                     "samples": int(sub["measured_steps"].sum()),
                     "configs": sub["config_key"].nunique(), "runs": len(sub)})
    return pd.DataFrame(rows, columns=cols)


def runs_of(row: pd.Series) -> stats.Runs:
    """The :class:`..stats.Runs` of an :func:`order_samples` row."""
    return stats.Runs(row["values"], row["steps"])


def order_table(results: Results, seed: int = 0,
                min_effect: float = stats.MIN_EFFECT) -> pd.DataFrame:
    """Long table: per group and order, median over runs of the run medians, its
    interval, the speedup over ``topo`` (median(topo) / median(order)) with its interval,
    Holm-adjusted p-value (over every non-topo row of the table) and verdict (minimum
    effect ``min_effect``), and the order's rank in the group (1 = fastest)."""
    samples = order_samples(results, seed)
    cols = GROUP_KEY + ["order", "configs", "runs", "steps", "median_step_s", "median_ci_low",
                        "median_ci_high", "speedup_vs_topo", "speedup_ci_low",
                        "speedup_ci_high", "speedup_p", "speedup_p_holm", "verdict",
                        "interval_over", "rank"]
    if samples.empty:
        return pd.DataFrame(columns=cols)
    rows, ests = [], []
    for key, grp in samples.groupby(GROUP_KEY, dropna=False, sort=True):
        topo = grp[grp["order"] == BASELINE]
        topo_runs = runs_of(topo.iloc[0]) if len(topo) else None
        for _, r in grp.iterrows():
            seed_key = stats.seed_for(*stats.seed_parts(GROUP_KEY, key), r["order"], base=seed)
            mine = runs_of(r)
            med = stats.median_estimate(mine, seed_key)
            if r["order"] == BASELINE:
                sp = stats.Estimate(1.0, 1.0, 1.0, float("nan"), (mine.n,), "none")
            elif topo_runs is not None:
                sp = stats.ratio(topo_runs, mine, seed_key + 1)
            else:
                sp = stats.NAN_ESTIMATE
            ests.append(sp)
            rows.append({**dict(zip(GROUP_KEY, key)), "order": r["order"],
                         "configs": r["configs"], "runs": mine.n, "steps": r["samples"],
                         "median_step_s": med.point, "median_ci_low": med.low,
                         "median_ci_high": med.high, "speedup_vs_topo": sp.point,
                         "speedup_ci_low": sp.low, "speedup_ci_high": sp.high,
                         "speedup_p": sp.p,
                         "interval_over": "runs" if mine.n >= 2 else "steps of 1 run"})
    table = pd.DataFrame(rows)
    table["speedup_p_holm"] = stats.holm(table["speedup_p"])
    table["verdict"] = [
        "baseline" if o == BASELINE else stats.verdict(e, p, lower_is_better=False,
                                                          min_effect=min_effect)
        for o, e, p in zip(table["order"], ests, table["speedup_p_holm"])]
    table["rank"] = (table.groupby(GROUP_KEY, dropna=False)["median_step_s"]
                     .rank(method="min").astype(int))
    return table.sort_values(GROUP_KEY + ["rank", "order"]).reset_index(drop=True)[cols]


def best_table(orders: pd.DataFrame, samples: pd.DataFrame | None = None,
               seed: int = 0, min_effect: float = stats.MIN_EFFECT) -> pd.DataFrame:
    """Per group: the best order (lowest median over runs), its speedup over topo, the
    runner-up and the verdict.

    The best order *beats* another when the ratio other / best passes the verdict rule
    above 1 (:func:`..stats.exceeds`: both have at least ``MIN_RUNS`` runs, Holm p <
    0.05 with Holm over every such comparison in the table, the interval above ``1 +
    min_effect``). ``beats runner-up``: it beats every other order; otherwise ``tie with
    ...`` lists those it does not beat, a significant difference short of the minimum
    effect in brackets (``tie with bfs (slower, within 5%)``), and with too few runs the verdict
    says ``n=...: not enough repeats``. Without ``samples`` (the :func:`order_samples`
    frame) the comparison uses the medians' intervals only.
    """
    cols = GROUP_KEY + ["orders", "runs", "best_order", "best_median_s", "speedup_vs_topo",
                        "speedup_ci_low", "speedup_ci_high", "runner_up", "runner_up_median_s",
                        "vs_runner_up", "vs_ci_low", "vs_ci_high", "vs_p_holm", "verdict",
                        "note"]
    if orders.empty:
        return pd.DataFrame(columns=cols)
    by_key = {}
    if samples is not None and not samples.empty:
        by_key = {(tuple(r[k] for k in GROUP_KEY), r["order"]): runs_of(r)
                  for _, r in samples.iterrows()}
    rows, comparisons = [], []  # comparisons: (row index, other order, estimate)
    for key, grp in orders.groupby(GROUP_KEY, dropna=False, sort=True):
        grp = grp.sort_values(["median_step_s", "order"])
        best = grp.iloc[0]
        row = {**dict(zip(GROUP_KEY, key)), "orders": len(grp), "runs": int(best["runs"]),
               "best_order": best["order"], "best_median_s": best["median_step_s"],
               "speedup_vs_topo": best["speedup_vs_topo"],
               "speedup_ci_low": best["speedup_ci_low"],
               "speedup_ci_high": best["speedup_ci_high"],
               "runner_up": "", "runner_up_median_s": float("nan"),
               "vs_runner_up": float("nan"), "vs_ci_low": float("nan"),
               "vs_ci_high": float("nan"), "vs_p_holm": float("nan"), "note": "",
               "verdict": "only one order"}
        if BASELINE not in set(grp["order"]):
            row["note"] = f"no {BASELINE} in this group: no speedup"
        if len(grp) > 1:
            ru = grp.iloc[1]
            row["runner_up"], row["runner_up_median_s"] = ru["order"], ru["median_step_s"]
            kb = (tuple(key), best["order"])
            for i, (_, o) in enumerate(grp.iloc[1:].iterrows()):
                ko = (tuple(key), o["order"])
                if kb in by_key and ko in by_key:
                    est = stats.ratio(by_key[ko], by_key[kb],
                                      stats.seed_for(*stats.seed_parts(GROUP_KEY, key),
                                                     best["order"], o["order"], base=seed))
                else:
                    est = stats.Estimate(o["median_step_s"] / best["median_step_s"],
                                         o["median_ci_low"] / best["median_ci_high"],
                                         o["median_ci_high"] / best["median_ci_low"],
                                         float("nan"), (int(best["runs"]), int(o["runs"])),
                                         "medians")
                comparisons.append((len(rows), o["order"], est))
        rows.append(row)
    adjusted = stats.holm([e.p for _, _, e in comparisons])
    per_row: dict[int, list] = {}
    for (i, other, est), p in zip(comparisons, adjusted):
        per_row.setdefault(i, []).append((other, est, p))
    for i, comps in per_row.items():
        row = rows[i]
        other, est, p = comps[0]  # the runner-up
        row.update(vs_runner_up=est.point, vs_ci_low=est.low, vs_ci_high=est.high, vs_p_holm=p)
        few = [e for _, e, _ in comps if e.min_runs < stats.MIN_RUNS]
        tied = [_tie(o, e, q, min_effect) for o, e, q in comps
                if not stats.exceeds(e, q, min_effect)]
        if few:
            row["verdict"] = (f"{stats.not_enough_runs(few[0].runs)}: best by point"
                              " estimate only")
        elif not tied:
            row["verdict"] = "beats runner-up"
        else:
            row["verdict"] = "tie with " + ", ".join(tied)
    return pd.DataFrame(rows, columns=cols)


def _tie(order: str, est: stats.Estimate, p_holm: float, min_effect: float) -> str:
    """An order the best does not beat; a significant difference short of the minimum
    effect in brackets (:func:`..stats.shortfall` of other / best)."""
    short = stats.shortfall(est, p_holm, min_effect=min_effect)
    return f"{order} ({short})" if short else order


def _geomean_ratio(pairs: list[tuple[int, int]], sub: pd.DataFrame,
                   seed: int) -> stats.Estimate:
    """Geometric mean over (numerator row, denominator row) pairs of the ratio of their
    medians over runs, with the joint bootstrap interval of the same statistic."""
    if not pairs:
        return stats.NAN_ESTIMATE
    rows = sorted({i for p in pairs for i in p})
    pos = {r: k for k, r in enumerate(rows)}
    sides = [runs_of(sub.loc[r]) for r in rows]

    def statistic(m: list) -> np.ndarray:
        logs = [np.log(m[pos[n]] / m[pos[d]]) for n, d in pairs]
        return np.exp(sum(logs) / len(logs))
    return stats.joint_estimate(sides, statistic, seed,
                                pairs=[(pos[n], pos[d]) for n, d in pairs])


def _rank_one_key(sub: pd.DataFrame, seed: int) -> pd.DataFrame:
    """:func:`rank_orders` for the rows of one key (``sub`` has ``setting``, ``median``)."""
    # Only settings that compare orders say which order is better; counting a setting
    # that ran one order (a strategy study at topo only, say) would favour that order.
    compared = sub.groupby("setting")["order"].transform("nunique") > 1
    if compared.any():
        sub = sub[compared]
    fastest = sub.groupby("setting")["median"].min()
    row_of = {(r.setting, r.placer, r.order): i for i, r in sub.iterrows()}
    pairs = []
    for (placer, order), p in sub.groupby(["placer", "order"], sort=True):
        vs_topo = [(row_of[(s, placer, BASELINE)], i) for i, s in p["setting"].items()
                   if (s, placer, BASELINE) in row_of]
        if order == BASELINE:
            est = stats.Estimate(1.0, 1.0, 1.0, float("nan"), (int(p["runs"].min()),), "none")
        else:
            est = _geomean_ratio(vs_topo, sub, stats.seed_for(placer, order, base=seed))
        pairs.append({"placer": placer, "order": order, "settings": len(p),
                      "of_settings": sub["setting"].nunique(),
                      "score": float(stats.geomean(p["median"] / p["setting"].map(fastest))),
                      "speedup_vs_topo": est.point, "speedup_ci_low": est.low,
                      "speedup_ci_high": est.high, "speedup_p": est.p,
                      "speedup_runs": est.min_runs, "min_runs": int(p["runs"].min()),
                      "rows": dict(zip(p["setting"], p.index))})
    ranked = pd.DataFrame(pairs).sort_values(["settings", "score", "placer", "order"],
                                             ascending=[False, True, True, True],
                                             ignore_index=True)
    ranked["rank"] = np.arange(1, len(ranked) + 1)
    ranked["vs_runner_up"] = ranked["vs_ci_low"] = ranked["vs_ci_high"] = float("nan")
    ranked["vs_p"] = float("nan")
    ranked["vs_runs"] = 0
    # Every row against the one ranked next (the best: against the runner-up), the
    # comparisons the recommendations' ranking draws its tiers from. Row i's seed is
    # seed + 1 + i: the best's stays seed + 1, as when only it was compared.
    for i in range(len(ranked) - 1):
        upper, lower = ranked.loc[i, "rows"], ranked.loc[i + 1, "rows"]
        common = sorted(set(upper) & set(lower))
        if common:
            est = _geomean_ratio([(lower[s], upper[s]) for s in common], sub, seed + 1 + i)
            ranked.loc[i, ["vs_runner_up", "vs_ci_low", "vs_ci_high", "vs_p"]] = (
                est.point, est.low, est.high, est.p)
            ranked.loc[i, "vs_runs"] = est.min_runs
    _vs_user_default(ranked, sub, seed)
    return ranked.drop(columns="rows")


# The splits users of torchtitan / torch.distributed.pipelining and DeepSpeed get without
# a placement tool (docs/placers.md): the recommendation is compared with the best of them.
USER_DEFAULT_PLACERS = ("even-layers", "deepspeed-uniform", "deepspeed-parameters")


def _vs_user_default(ranked: pd.DataFrame, sub: pd.DataFrame, seed: int) -> None:
    """Fills ``best_default`` and ``vs_default*`` of the best row: the highest-ranked row
    whose placer is one of :data:`USER_DEFAULT_PLACERS`, its step time over the best's
    (geometric mean over the settings both ran, with its interval); NaN / ``""`` when no
    default split ran, when the best is itself one, or without a common setting."""
    ranked["best_default"] = ""
    for col in ("vs_default", "vs_default_ci_low", "vs_default_ci_high", "vs_default_p"):
        ranked[col] = float("nan")
    ranked["vs_default_runs"] = 0
    defaults = ranked.index[ranked["placer"].isin(USER_DEFAULT_PLACERS)]
    if not len(defaults):
        return
    first = defaults[0]
    ranked.loc[0, "best_default"] = f"{ranked.loc[first, 'placer']}/{ranked.loc[first, 'order']}"
    if first == 0:
        return
    best, other = ranked.loc[0, "rows"], ranked.loc[first, "rows"]
    common = sorted(set(best) & set(other))
    if common:
        est = _geomean_ratio([(other[s], best[s]) for s in common], sub,
                             stats.seed_for("vs_default", base=seed))
        ranked.loc[0, ["vs_default", "vs_default_ci_low", "vs_default_ci_high",
                       "vs_default_p"]] = (est.point, est.low, est.high, est.p)
        ranked.loc[0, "vs_default_runs"] = est.min_runs


def rank_orders(samples: pd.DataFrame, by: list[str], seed: int = 0) -> pd.DataFrame:
    """Aggregates (placer, order) pairs over the settings of each ``by`` key.

    Returns one row per (by key, placer, order) with ``settings`` (how many it ran in),
    ``score`` (geometric mean of its median over the setting's fastest median; 1 is the
    fastest everywhere), ``speedup_vs_topo`` (geometric mean over the settings that have
    ``topo`` with the same placer) with its interval over runs, permutation p-value
    (``speedup_p``) and the fewest runs behind it (``speedup_runs``), and ``rank``
    (1 = best among the pairs present in the most settings). Settings that ran a single
    order are left out when any setting compares two or more. Every row but the last of
    a key also gets ``vs_runner_up`` = geometric mean, over the settings both ran, of the
    next row's medians over its own (the best row's: runner-up / best), with its
    interval, ``vs_p`` and ``vs_runs`` (above 1: the next row is slower); NaN without a
    common setting. The best row also gets ``best_default`` (``placer/order`` of the
    highest-ranked row whose placer is one of :data:`USER_DEFAULT_PLACERS`) and
    ``vs_default`` (that row's step time over the best's, with ``vs_default_ci_low``,
    ``_ci_high``, ``_p`` and ``_runs``; NaN when the best is that row).
    """
    if samples.empty:
        return pd.DataFrame()
    parts = []
    for key, sub in samples.groupby(by, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        sub = sub.assign(setting=sub[SETTING_KEY].astype(str).agg("|".join, axis=1),
                         median=sub["values"].map(stats.median))
        ranked = _rank_one_key(sub, stats.seed_for(*stats.seed_parts(by, key), base=seed))
        parts.append(ranked.assign(**dict(zip(by, key)))[by + list(ranked.columns)])
    return pd.concat(parts, ignore_index=True)
