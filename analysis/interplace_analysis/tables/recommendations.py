"""Table 5: one recommendation per model family, with its evidence and a confidence.

* **Order and placer**: the (placer, order) pair :func:`.traversal.rank_orders` ranks
  first over all the family's settings. Evidence: its speedup over ``topo`` with the
  same placer (geometric mean over settings) and the bootstrap interval.
* **Confidence**, from two comparisons: the runner-up's step time over the best's
  (``vs runner-up``) and the speedup over topo. Each is "beyond noise and 5%" (the
  minimum effect, 5% by default) when it passes the verdict rule of :mod:`..stats` above 1
  (:func:`..stats.exceeds`: Holm-adjusted p < 0.05 over the table, at least 3 runs per
  configuration, the interval over runs above 1 + the minimum effect); with fewer runs
  the confidence is ``low: n=...: not enough repeats`` whatever the intervals say.
  - ``high``: the runner-up is slower beyond noise and 5%, and so is topo;
  - ``medium``: only one of the two holds;
  - ``low``: the best is within noise or 5% of both, any of them will do;
  - when the best *is* topo, only the runner-up counts: ``high`` or ``low``;
  - ``insufficient data``: a single pair measured.
* **Ranking**: every (placer, order) pair of the family in tiers, in the ranked order: a
  tier ends where the next pair is slower than the pair ranked just above it by the
  verdict rule (:func:`..stats.exceeds` on the geometric-mean ratio over the settings
  both ran); each gap quotes that ratio with its interval: ``topo, dfs-pre ahead of
  dfs-post x1.22 [1.12, 1.35]``. With one tier it says why: not enough repeats, too noisy
  for a verdict (below), or neighbours within noise or the minimum effect. A tier is not
  a claim that its members are equal, only that no gap between neighbours was shown.
* **Run spread**: per family, the median and largest over its configurations with two or
  more runs of max / min - 1 of their runs' median step times. When no comparison of the
  family reached a verdict although all had ``MIN_RUNS`` runs, and that median spread is
  larger than the minimum effect, the ranking says ``too noisy for a verdict``.
* Holm: every comparison above (each pair against the next one, best vs topo) is
  adjusted together over the whole table; best vs runner-up is the ranking's first
  comparison, so the confidence and the ranking never disagree on it.
* **Strategy**: the highest geometric-mean throughput gain over the global strategy
  among the strategies whose mean accuracy cost (:mod:`.strategies`) is at most
  ``tolerance`` (default 0.01, one percentage point of accuracy); ``global`` when
  nothing was compared or nothing else is accurate enough. A strategy whose accuracy
  comparison was refused (chance level, identical accuracies) has no known cost and is
  not recommended; the evidence says why.
* **vs best default**: the recommendation against the best-ranked split users get today
  without a placement tool (the placers of :data:`.traversal.USER_DEFAULT_PLACERS`:
  torchtitan's even split of blocks, DeepSpeed's uniform and parameters partitions), when
  any ran: that split's step time over the recommendation's (geometric mean over the
  settings both ran, interval over runs) and the verdict rule: ``beats it`` / ``ties`` /
  ``loses to it``; Holm over these comparisons of the table, as a family of their own.
* **Prediction** (given the simulator table): what the simulator predicted for the same
  comparison, the geometric mean over the settings both pairs ran of the runner-up's
  predicted step time over the best's, and whether the measurement confirmed it: a gap
  the simulator predicted beyond the minimum effect that the measurement did not show is
  said, not hidden.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import stats
from ..frames import is_global_label
from .traversal import BASELINE, SETTING_KEY

COLUMNS = ["family", "order", "placer", "ranking", "order_evidence", "confidence", "run_spread",
           "prediction", "runs",
           "strategy", "strategy_evidence", "speedup_vs_topo", "speedup_ci_low", "speedup_ci_high",
           "speedup_p_holm", "vs_runner_up", "vs_ci_low", "vs_ci_high", "vs_p_holm",
           "runner_up", "strategy_speedup", "strategy_accuracy_cost", "run_spread_median",
           "run_spread_max", "run_spread_configs", "vs_best_default", "best_default",
           "vs_default", "vs_default_ci_low", "vs_default_ci_high", "vs_default_p_holm"]


def _fmt_ci(point: float, lo: float, hi: float) -> str:
    if math.isnan(point):
        return "n/a"
    return f"x{point:.2f} [{lo:.2f}, {hi:.2f}]"


def _get(row: pd.Series, name: str, default: float = float("nan")) -> float:
    v = row.get(name, default)
    return default if v is None else float(v)


def _estimate(row: pd.Series, prefix: str) -> stats.Estimate:
    """A ratio of the ranked table (:func:`.traversal.rank_orders`): ``vs``, the next
    row's step time over this row's, or ``speedup``, topo's over this row's; its p-value
    is the caller's (Holm-adjusted over the table)."""
    point = "vs_runner_up" if prefix == "vs" else "speedup_vs_topo"
    runs = _get(row, f"{prefix}_runs", 0)
    return stats.Estimate(_get(row, point), _get(row, f"{prefix}_ci_low"),
                          _get(row, f"{prefix}_ci_high"), float("nan"),
                          (0 if math.isnan(runs) else int(runs),), "runs")


def _beyond(row: pd.Series, prefix: str, p_holm: float, min_effect: float) -> bool:
    """The verdict rule (:func:`..stats.exceeds`) for a ratio of the ranked table that
    should exceed 1."""
    return stats.exceeds(_estimate(row, prefix), p_holm, min_effect)


def _order_choice(ranked: pd.DataFrame, p_vs: float, p_topo: float,
                  min_effect: float) -> dict:
    if ranked.empty:
        return {"order": "-", "placer": "-", "order_evidence": "no successful runs",
                "confidence": "insufficient data", "runs": 0}
    best = ranked.iloc[0]
    runs = int(_get(best, "min_runs", 0))
    out = {"order": best["order"], "placer": best["placer"],
           "speedup_vs_topo": best["speedup_vs_topo"], "speedup_ci_low": best["speedup_ci_low"],
           "speedup_ci_high": best["speedup_ci_high"], "speedup_p_holm": p_topo,
           "vs_runner_up": best["vs_runner_up"], "vs_ci_low": best["vs_ci_low"],
           "vs_ci_high": best["vs_ci_high"], "vs_p_holm": p_vs, "runner_up": "",
           "runs": runs}
    if best["order"] == BASELINE:
        sp_text, gain = f"is {BASELINE}", True
    elif math.isnan(best["speedup_vs_topo"]):
        sp_text, gain = f"no {BASELINE} measured with {best['placer']}", None
    else:
        sp = _fmt_ci(best["speedup_vs_topo"], best["speedup_ci_low"], best["speedup_ci_high"])
        sp_text = f"{sp} vs {BASELINE}"
        gain = _beyond(best, "speedup", p_topo, min_effect)
    if len(ranked) == 1:
        out.update(order_evidence=sp_text + f"; only pair measured; n={runs}",
                   confidence="insufficient data (one order/placer)")
        return out
    ru = ranked.iloc[1]
    out["runner_up"] = f"{ru['placer']}/{ru['order']}"
    ru_text = (f"runner-up {out['runner_up']} "
               f"{_fmt_ci(best['vs_runner_up'], best['vs_ci_low'], best['vs_ci_high'])} slower")
    beats = _beyond(best, "vs", p_vs, min_effect)
    beyond, within = (f"beyond noise and {stats.effect_text(min_effect)}",
                      f"within noise or {stats.effect_text(min_effect)}")
    settings = f"{int(best['settings'])}/{int(best['of_settings'])} settings"
    fewest = min(runs, int(_get(ru, "min_runs", 0)))
    out["runs"] = fewest
    out["order_evidence"] = f"{sp_text}; {ru_text}; {settings}; n={fewest} run(s) at least"
    if fewest < stats.MIN_RUNS:
        out["confidence"] = (f"low: n={fewest}: not enough repeats (a verdict needs"
                             f" {stats.MIN_RUNS} runs per configuration)")
    elif best["order"] == BASELINE:
        out["confidence"] = (f"high: {BASELINE} is faster than the runner-up {beyond}"
                             if beats else f"low: {BASELINE} is {within} of the runner-up")
    elif gain is None:
        out["confidence"] = (f"medium: beats the runner-up {beyond}, no topo baseline"
                             if beats else f"low: {within} of the runner-up, no topo baseline")
    elif beats and gain:
        out["confidence"] = f"high: faster than the runner-up and topo {beyond}"
    elif beats:
        out["confidence"] = f"medium: beats the runner-up, but {within} of topo"
    elif gain:
        out["confidence"] = f"medium: faster than topo, tie with {out['runner_up']}"
    else:
        out["confidence"] = f"low: {within} of the runner-up and topo"
    return out


def run_spread(ok: pd.DataFrame) -> pd.DataFrame:
    """Per family, how far the runs of one configuration spread on the machine that ran
    them: for each configuration (``config_key``) with two or more ``ok`` runs, max / min
    - 1 of its runs' median step times; ``run_spread_median`` and ``run_spread_max`` over
    the family's configurations, ``run_spread_configs`` how many. (A range: it grows with
    the runs a configuration has, so it is stated, not tested.)"""
    cols = ["family", "run_spread_median", "run_spread_max", "run_spread_configs"]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    per = ok.groupby(["family", "config_key"])["step_time_s"].agg(["min", "max", "size"])
    per = per[per["size"] >= 2]
    spread = (per["max"] / per["min"] - 1).groupby(level="family")
    return pd.DataFrame({"run_spread_median": spread.agg(stats.median),
                         "run_spread_max": spread.max(),
                         "run_spread_configs": spread.size()}).reset_index()[cols]


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


def _spread_text(spread: dict | None) -> str:
    if not spread or not spread.get("run_spread_configs"):
        return "n/a: no configuration with 2 or more runs"
    k = int(spread["run_spread_configs"])
    return (f"{_pct(spread['run_spread_median'])} median, {_pct(spread['run_spread_max'])}"
            f" largest over {k} configuration{'s' if k > 1 else ''} (max / min - 1 of each"
            f" one's runs)")


def _too_noisy(gaps: list[stats.Estimate], spread: dict | None, min_effect: float) -> str:
    """The statement for a family where no comparison reached a verdict although every
    one had the runs for it: when its configurations' runs spread (median of max / min - 1)
    by more than the minimum effect, the noise, not the number of repeats, is what
    stands in the way; ``""`` otherwise."""
    if not spread or not spread.get("run_spread_configs"):
        return ""
    median = spread["run_spread_median"]
    if not median > min_effect:
        return ""
    measured = [max(e.point, 1 / e.point) - 1 for e in gaps if not math.isnan(e.point)]
    largest = max(measured, default=float("nan"))
    than = (f" and every gap measured between neighbours (largest {_pct(largest)})"
            if median > largest else "")
    return (f"too noisy for a verdict: runs of one configuration spread by {_pct(median)}"
            f" (median; largest {_pct(spread['run_spread_max'])}), more than the"
            f" {stats.effect_text(min_effect)} minimum effect{than}")


def _labels(ranked: pd.DataFrame) -> list[str]:
    """The ranked pairs as the ranking names them: the order alone when the family has
    one placer, ``placer/order`` otherwise."""
    one_placer = ranked["placer"].nunique() == 1
    return [o if one_placer else f"{p}/{o}" for p, o in zip(ranked["placer"], ranked["order"])]


def _ranking(ranked: pd.DataFrame, p_next: np.ndarray, topo_gain: bool,
             spread: dict | None, min_effect: float) -> str:
    """The family's (placer, order) pairs in tiers (docs/analysis.md, "The ranking"): in
    the ranked order, a new tier starts at a pair whose step time over the pair ranked
    just above it passes the verdict rule above 1 (:func:`..stats.exceeds`, ``p_next``
    Holm-adjusted over the table); each gap quotes that ratio and its interval. One tier
    says why: too few runs, too noisy (:func:`_too_noisy`, only when no comparison of the
    family, ``topo_gain`` included, reached a verdict) or neighbours within noise."""
    if ranked.empty:
        return "no successful runs"
    labels = _labels(ranked)
    if len(ranked) == 1:
        return f"only {labels[0]} measured"
    gaps = [_estimate(ranked.iloc[i], "vs") for i in range(len(ranked) - 1)]
    found = [stats.evidence(e, p, min_effect) for e, p in zip(gaps, p_next)]
    splits = [stats.exceeds(e, p, min_effect) for e, p in zip(gaps, p_next)]
    if any(splits):
        tiers, between = [[labels[0]]], []
        for label, split, est in zip(labels[1:], splits, gaps):
            if split:
                tiers.append([])
                between.append(est)
            tiers[-1].append(label)
        text = ", ".join(tiers[0])
        for tier, est in zip(tiers[1:], between):
            text += f" ahead of {', '.join(tier)} {_fmt_ci(est.point, est.low, est.high)}"
        return text
    if stats.FEW_RUNS in found:
        fewest = min(e.min_runs for e, f in zip(gaps, found) if f == stats.FEW_RUNS)
        return (f"no confident gap: n={fewest}: not enough repeats (a verdict needs"
                f" {stats.MIN_RUNS} runs per configuration)")
    if set(found) == {stats.NO_ESTIMATE}:
        return "no confident gap: no two neighbours ran a common setting"
    noisy = "" if topo_gain else _too_noisy(gaps, spread, min_effect)
    return (f"no confident gap: {noisy}" if noisy else
            f"no confident gap (neighbours within noise or {stats.effect_text(min_effect)})")


def _strategy_summary(strat: pd.DataFrame) -> pd.DataFrame:
    """Per strategy label: geometric-mean speedup over global, mean accuracy cost (NaN
    when any of its comparisons was refused, with the reasons), configurations, fewest
    runs, and whether every speedup was ``faster`` by the verdict rule (the strategies
    table's ``speedup_verdict``, minimum effect included)."""
    rows = []
    for label, g in strat.groupby("strategy_label", sort=True):
        sp = g["speedup"].dropna()
        refused = sorted({r for r in g.get("accuracy_refused", pd.Series(dtype=str)) if r})
        verdicts = set(g.get("speedup_verdict", pd.Series(dtype=str)))
        rows.append({"label": label, "speedup": float(stats.geomean(sp)) if len(sp) else np.nan,
                     "cost": np.nan if refused else float(g["accuracy_cost"].mean()),
                     "refused": "; ".join(refused), "configs": len(g),
                     "runs": int(g["runs"].min()) if "runs" in g else 1,
                     "faster": verdicts == {"faster"},
                     "metric": g["accuracy_metric"].iloc[0],
                     "is_global": is_global_label(label)})
    return pd.DataFrame(rows)


def _describe(r) -> str:
    cost = f"accuracy cost refused ({r.refused})" if r.refused else f"cost {r.cost:+.3f}"
    return f"{r.label} x{r.speedup:.2f}, {cost}, n={r.runs}"


def _strategy_choice(strat: pd.DataFrame, tolerance: float, min_effect: float) -> dict:
    if strat.empty:
        return {"strategy": "global", "strategy_evidence": "no strategy comparison measured"}
    agg = _strategy_summary(strat)
    listed = "; ".join(_describe(r) for r in agg[~agg["is_global"]].itertuples())
    base = agg[agg["is_global"]]
    if base.empty:
        return {"strategy": "global", "strategy_evidence": "no global run to compare with;"
                                                           f" measured: {listed}"}
    eligible = agg[~agg["is_global"] & (agg["cost"] <= tolerance) & (agg["speedup"] > 1)]
    if eligible.empty:
        return {"strategy": base["label"].iloc[0], "strategy_speedup": 1.0,
                "strategy_accuracy_cost": 0.0,
                "strategy_evidence": f"no faster strategy within {tolerance:.3g} accuracy of"
                                     f" global with a usable accuracy comparison: {listed}"}
    best = eligible.sort_values(["speedup", "cost"], ascending=[False, True]).iloc[0]
    others = "; ".join(_describe(r) for r in
                       agg[~agg["is_global"] & (agg["label"] != best["label"])].itertuples())
    if best["runs"] < stats.MIN_RUNS:
        sure = f"low confidence: n={best['runs']}: not enough repeats"
    elif best["faster"]:
        sure = f"faster beyond noise and {stats.effect_text(min_effect)} in every setting"
    else:
        sure = ("low confidence: not faster beyond noise and"
                f" {stats.effect_text(min_effect)} in every setting")
    evidence = (f"x{best['speedup']:.2f} samples/s vs global ({sure}), accuracy cost"
                f" {best['cost']:+.3f} ({best['metric']}, {best['configs']} configuration(s),"
                f" n={best['runs']})")
    return {"strategy": best["label"], "strategy_speedup": best["speedup"],
            "strategy_accuracy_cost": best["cost"],
            "strategy_evidence": evidence + (f"; others: {others}" if others else "")}


def _predicted_ratio(sim: pd.DataFrame, family: str, best: tuple[str, str],
                     other: tuple[str, str]) -> float:
    """Geometric mean over the settings both (placer, order) pairs ran of other's predicted
    step time over best's; NaN without a common setting."""
    fam = sim[sim["family"] == family]
    if fam.empty:
        return float("nan")
    fam = fam.assign(setting=fam[SETTING_KEY].astype(str).agg("|".join, axis=1))
    pred = fam.groupby(["placer", "order", "setting"])["pred_step_time_s"].agg(stats.median)
    logs = []
    for setting in pred.index.get_level_values("setting").unique():
        a, b = (*best, setting), (*other, setting)
        if a in pred.index and b in pred.index and pred[a] > 0 and pred[b] > 0:
            logs.append(math.log(pred[b] / pred[a]))
    return math.exp(sum(logs) / len(logs)) if logs else float("nan")


def _prediction_check(sim: pd.DataFrame | None, family: str, choice: dict,
                      beats: bool, min_effect: float) -> str:
    """The simulator's view of best vs runner-up, and whether the measurement agreed."""
    if sim is None or sim.empty or not choice.get("runner_up"):
        return ""
    ru_placer, ru_order = choice["runner_up"].split("/", 1)
    ratio = _predicted_ratio(sim, family, (choice["placer"], choice["order"]),
                             (ru_placer, ru_order))
    if math.isnan(ratio):
        return "no prediction for both"
    band = stats.effect_text(min_effect)
    said = f"simulator: runner-up x{ratio:.2f}"
    if ratio > 1.0 + min_effect:
        return said + (" slower, confirmed" if beats else
                       f" slower, NOT confirmed: measured within noise or {band}")
    if ratio < 1.0 / (1.0 + min_effect):
        return said + (", i.e. predicted faster than the best measured"
                       + ("" if beats else "; measured a tie"))
    return said + f" (a tie within {band})" + (", measured beyond it" if beats else "")


def _default_comparison(best: pd.Series, p_holm: float, min_effect: float) -> str:
    """How the recommendation compares with the best split users get by default (the
    ranked table's ``best_default`` / ``vs_default``), by the verdict rule."""
    name = best.get("best_default", "") or ""
    if not name:
        return "no default split ran"
    if math.isnan(_get(best, "vs_default")):
        placer = name.split("/", 1)[0]
        return (f"the best is a default split ({name})" if placer == best["placer"]
                else f"{name}: no common setting")
    est = stats.Estimate(_get(best, "vs_default"), _get(best, "vs_default_ci_low"),
                         _get(best, "vs_default_ci_high"), p_holm,
                         (int(_get(best, "vs_default_runs", 0)),), "runs")
    found = stats.evidence(est, p_holm, min_effect)
    said = f"{name} {_fmt_ci(est.point, est.low, est.high)}"
    band = stats.effect_text(min_effect)
    if found == stats.FEW_RUNS:
        return f"{said}: {stats.not_enough_runs(est.runs)}"
    if found == stats.BEYOND:
        return said + (f": beats it beyond noise and {band}" if est.low > 1.0
                       else f": loses to it beyond noise and {band}")
    return said + f": ties (within noise or {band})"


def recommendation_table(ranked: pd.DataFrame, strategies: pd.DataFrame, families: list[str],
                         tolerance: float = 0.01,
                         min_effect: float = stats.MIN_EFFECT,
                         simulated: pd.DataFrame | None = None,
                         spread: pd.DataFrame | None = None) -> pd.DataFrame:
    """``ranked``: :func:`.traversal.rank_orders` by family; ``strategies``: Table 2 (its
    verdicts made with the same ``min_effect``); ``simulated``: the simulator table
    (:mod:`.simulator`), for the ``prediction`` column; ``spread``: :func:`run_spread`,
    for the ``run_spread`` column and the ranking's "too noisy" statement.

    Holm: the p-values of every comparison the table makes (each ranked pair against the
    next, the first of them best vs runner-up, and best vs topo) are adjusted together
    over the whole table, so the confidence and the ranking read one verdict per
    comparison."""
    per_fam = {fam: (ranked[ranked["family"] == fam] if not ranked.empty else ranked)
               for fam in families}
    spreads = {} if spread is None else {r["family"]: r for r in spread.to_dict("records")}
    pv, starts = [], []
    for fam in families:
        r = per_fam[fam]
        starts.append(len(pv))
        pv += [_get(r.iloc[i], "vs_p") for i in range(len(r) - 1)]
        pv.append(_get(r.iloc[0], "speedup_p") if len(r) else np.nan)
    adjusted = stats.holm(pv)
    # The comparisons with the default splits are a second family, adjusted over the table.
    p_default = stats.holm([_get(per_fam[f].iloc[0], "vs_default_p") if len(per_fam[f])
                            else np.nan for f in families])
    rows = []
    for i, fam in enumerate(families):
        s = strategies[strategies["family"] == fam] if not strategies.empty else strategies
        r = per_fam[fam]
        p_next = adjusted[starts[i]:starts[i] + max(len(r) - 1, 0)]
        p_topo = adjusted[starts[i] + len(p_next)]
        choice = _order_choice(r, p_next[0] if len(p_next) else np.nan, p_topo, min_effect)
        beats = choice.get("confidence", "").startswith(("high", "medium: beats"))
        choice["prediction"] = _prediction_check(simulated, fam, choice, beats, min_effect)
        topo_gain = len(r) > 0 and _beyond(r.iloc[0], "speedup", p_topo, min_effect)
        fam_spread = spreads.get(fam)
        choice["ranking"] = _ranking(r, p_next, topo_gain, fam_spread, min_effect)
        choice["run_spread"] = _spread_text(fam_spread)
        for col in ("run_spread_median", "run_spread_max", "run_spread_configs"):
            choice[col] = fam_spread[col] if fam_spread else np.nan
        if len(r):
            best = r.iloc[0]
            choice["vs_best_default"] = _default_comparison(best, p_default[i], min_effect)
            choice["best_default"] = best.get("best_default", "")
            for col in ("vs_default", "vs_default_ci_low", "vs_default_ci_high"):
                choice[col] = _get(best, col)
            choice["vs_default_p_holm"] = p_default[i]
        rows.append({"family": fam, **choice, **_strategy_choice(s, tolerance, min_effect)})
    return pd.DataFrame(rows).reindex(columns=COLUMNS)
