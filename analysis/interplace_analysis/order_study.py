"""The traversal-order study's tables and figures from simulate-only sweeps (issue 18).

The study is a sweep of simulate-only configurations (docs/cli.md, "Simulate-only
sweeps"; ``runs/configs/wang2022-order-study.toml``): the rl placer's learned placement
per model x devices x order x seed, heuristic placers beside it, written to the standard
result files that :func:`.loader.load_results` reads. This module takes the simulate-only
configurations of any number of such files and answers the study's questions:

- which order is best per model and per family, with 95% intervals over the seeds;
- how much the order changes the result: the spread of the order means against the
  spread over seeds within an order, and the **Friedman test** (orders as treatments,
  seeds as blocks: every order of one seed starts from the same placement and the same
  initial policy weights, so the design is a complete block design);
- which graph features (depth, width, branching, critical-path share) go with which
  order: Spearman's rank correlation over the models between a feature and an order's
  normalised step time.

Intervals are the analysis' percentile bootstrap (:func:`.stats.interval`, level
:data:`.stats.LEVEL`, :data:`.stats.N_RESAMPLES` resamples, seeded) over seeds, resampling
seeds jointly across orders so that paired comparisons keep the pairing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from .h5file import ResultFormatError
from .loader import Results, load_results
from . import stats
from .render import Table, to_markdown, write_table

# The study's topo (networkx 2.4 topological_sort) is our topo-lifo: the reference order.
REFERENCE_ORDER = "topo-lifo"
RESAMPLES = stats.N_RESAMPLES
LEVEL = stats.LEVEL
FEATURES = ["depth", "max_width", "mean_branching_factor", "critical_path_cost_share",
            "node_count"]
SETTING = ["cost_device", "model", "devices"]
TIE = 1e-9  # relative difference of means below which two orders tie


@dataclass
class OrderStudy:
    runs: pd.DataFrame       # one row per rl run (ok and failed); run_id, file for curves
    models: pd.DataFrame     # one row per (cost_device, model): structural features
    baselines: pd.DataFrame  # one row per heuristic placement
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    _curves: dict = field(default_factory=dict)  # run_id -> best-so-far step times

    @property
    def ok(self) -> pd.DataFrame:
        return self.runs[self.runs["status"] == "ok"]

    def curves(self, runs: pd.DataFrame) -> list[np.ndarray]:
        """The best step time so far per episode (placer_rl/best_step_time_s) of each run
        in ``runs``, read from the files when first asked for, one open per file."""
        missing = runs[~runs["run_id"].isin(self._curves.keys())]
        for path, group in missing.groupby("file", sort=False):
            with h5py.File(path, "r") as f:
                for run_id, gid in zip(group["run_id"], group["config_id"]):
                    rl = f["configs"][gid].get("placer_rl")
                    self._curves[run_id] = (np.asarray(rl["best_step_time_s"][()], dtype=float)
                                            if rl is not None and "best_step_time_s" in rl
                                            else np.zeros(0))
        return [self._curves[r] for r in runs["run_id"]]


def _cost_name(cost: str) -> str:
    # Profiles are per model: name them by their kind, not their path.
    return "cpu-profile" if str(cost).startswith("profile:") else str(cost)


def order_study_from_results(results: Results) -> OrderStudy:
    """The study in the simulate-only configurations of ``results``: rl runs, heuristic
    baselines and the graphs' features; orders skipped because they repeat an earlier
    order's node sequence become the models' ``same_orders``. Raises ResultFormatError
    when there is no simulate-only rl configuration."""
    c = results.configs
    c = c[c["simulate_only"] == 1].copy() if "simulate_only" in c else c.iloc[0:0]
    if c.empty:
        raise ResultFormatError("no simulate-only configurations (simulate_only = 1 in the "
                                "sweep spec; docs/cli.md, \"Simulate-only sweeps\")")
    c["cost_device"] = [_cost_name(x) for x in c["cost_device"]]
    twin = c["same_sequence_as"] != ""
    rl = c[(c["placer"] == "rl") & ~twin]
    if rl.empty:
        raise ResultFormatError("no simulate-only configuration of the rl placer")
    ok = rl["status"] == "ok"
    runs = pd.DataFrame({
        "run_id": rl["run_id"], "config_id": rl["config_id"], "file": rl["file"],
        "cost_device": rl["cost_device"], "model": rl["model"], "family": rl["family"],
        "order": rl["order"], "devices": rl["devices"].astype(int),
        "seed": rl["seed"].astype(int), "rl_preset": rl["rl_preset"],
        "status": np.where(ok, "ok", "failed"), "reason": rl["reason"],
        "step_time_s": np.where(ok, rl["pred_step_time_s"], np.nan),
        "start_step_time_s": rl["rl_start_step_time_s"],
        "greedy_step_time_s": rl["rl_greedy_step_time_s"],
        "placer_wall_s": rl["placer_wall_s"], "episodes_run": rl["rl_episodes_run"],
    }).reset_index(drop=True)
    heuristics = c[(c["placer"] != "rl") & ~twin]
    baselines = pd.DataFrame({
        "cost_device": heuristics["cost_device"], "model": heuristics["model"],
        "order": heuristics["order"], "devices": heuristics["devices"].astype(int),
        "placer": heuristics["placer"],
        "step_time_s": np.where(heuristics["status"] == "ok", heuristics["pred_step_time_s"],
                                np.nan),
        "reason": heuristics["reason"]}).reset_index(drop=True)
    planned = c[c["status"] == "ok"].drop_duplicates(["cost_device", "model"])
    models = planned[["cost_device", "model", "family", *FEATURES[:-1], "node_count",
                      "edge_count", "parameter_count"]].reset_index(drop=True)
    pairs = c[twin].drop_duplicates(["cost_device", "model", "order", "same_sequence_as"])
    same, distinct = [], []
    for cost, model in zip(models["cost_device"], models["model"]):
        mine = pairs[(pairs["cost_device"] == cost) & (pairs["model"] == model)]
        same.append(",".join(f"{o}={t}" for o, t in zip(mine["order"], mine["same_sequence_as"])))
        asked = c[(c["cost_device"] == cost) & (c["model"] == model)]["order"].nunique()
        distinct.append(asked - mine["order"].nunique())
    models["same_orders"], models["distinct_orders"] = same, distinct
    files = sorted(set(c["file"]))
    info = results.files.set_index("path") if not results.files.empty else pd.DataFrame()
    commands = []
    for path in files:
        spec = str(info.loc[path, "spec_path"]) if path in info.index else ""
        overrides = info.loc[path, "overrides"] if "overrides" in info and path in info.index \
            else ""  # one override per line (h5file.LIST_ATTRIBUTES)
        commands.append(" ".join(["interplace sweep", spec, *str(overrides or "").splitlines()]))
    return OrderStudy(runs, models, baselines, files=files, commands=commands)


def load_order_study(paths) -> OrderStudy:
    """Reads result files (load_results) and takes their simulate-only configurations;
    raises ResultFormatError for anything else."""
    return order_study_from_results(load_results(paths))


# ---------------------------------------------------------------------------- statistics

def _matrix(ok: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """Orders and their step times [order, seed] over the seeds every order has."""
    wide = ok.pivot_table(index="order", columns="seed", values="step_time_s", aggfunc="first")
    wide = wide.dropna(axis=1)  # a seed counts only where every order finished it
    return list(wide.index), wide.to_numpy(dtype=float)


def _boot_index(seeds: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, seeds, size=(RESAMPLES, seeds))


def _interval(replicates: np.ndarray) -> tuple[float, float]:
    return stats.interval(replicates, LEVEL)


def friedman(x: np.ndarray) -> tuple[float, float]:
    """Friedman chi-square and p over orders (rows) with seeds (columns) as blocks; NaN when
    fewer than 3 orders or 2 seeds, or when every order gave the same time in every seed."""
    from scipy import stats as st
    if x.shape[0] < 3 or x.shape[1] < 2 or np.all(x == x[:, :1]):
        return math.nan, math.nan
    res = st.friedmanchisquare(*x)
    return float(res.statistic), float(res.pvalue)


def order_table(study: OrderStudy, seed: int = 0) -> pd.DataFrame:
    """Per setting and order: seeds, mean step time with its interval, and ratio to the
    setting's best order (paired over seeds)."""
    rows = []
    for key, group in study.ok.groupby(SETTING, sort=True):
        orders, x = _matrix(group)
        if x.size == 0:
            continue
        rng = np.random.default_rng(seed)
        idx = _boot_index(x.shape[1], rng)
        means = x.mean(axis=1)
        boot = x[:, idx].mean(axis=2)  # [order, resample]
        best = int(np.argmin(means))
        ref = orders.index(REFERENCE_ORDER) if REFERENCE_ORDER in orders else None
        for i, order in enumerate(orders):
            lo, hi = _interval(boot[i])
            row = dict(zip(SETTING, key), family=group["family"].iloc[0], order=order,
                       seeds=x.shape[1], mean_ms=means[i] * 1e3, ci_low_ms=lo * 1e3,
                       ci_high_ms=hi * 1e3, min_ms=x[i].min() * 1e3,
                       seed_sd_ms=x[i].std(ddof=1) * 1e3 if x.shape[1] > 1 else math.nan,
                       vs_best=means[i] / means[best], relative=means[i] / means.mean(),
                       is_best=i == best)
            if ref is not None:
                ratio = boot[ref] / boot[i]
                row["speedup_vs_topo"] = means[ref] / means[i]
                row["speedup_low"], row["speedup_high"] = _interval(ratio)
            rows.append(row)
    return pd.DataFrame(rows)


def best_table(study: OrderStudy, seed: int = 0) -> pd.DataFrame:
    """Per setting: the best order, the runner-up, the advantage over topo-lifo with its
    interval, and the order effect (Friedman test, spread across vs within orders)."""
    rows = []
    for key, group in study.ok.groupby(SETTING, sort=True):
        orders, x = _matrix(group)
        if x.size == 0:
            continue
        rng = np.random.default_rng(seed)
        idx = _boot_index(x.shape[1], rng)
        means = x.mean(axis=1)
        rank = np.argsort(means, kind="stable")
        best, second = int(rank[0]), int(rank[1]) if len(rank) > 1 else int(rank[0])
        boot = x[:, idx].mean(axis=2)
        chi2, p = friedman(x)
        grand = x.mean()
        between = x.shape[1] * ((means - grand) ** 2).sum()
        total = ((x - grand) ** 2).sum()
        # Orders whose mean equals the best's (chains: every order gives one placement).
        tied = [orders[i] for i in rank if means[i] <= means[best] * (1 + TIE)]
        name = ("tie: all" if len(tied) == len(orders) else
                orders[best] if len(tied) == 1 else "tie: " + ",".join(tied))
        row = dict(zip(SETTING, key), family=group["family"].iloc[0], orders=len(orders),
                   seeds=x.shape[1], best_order=name, tied=len(tied), best_ms=means[best] * 1e3,
                   runner_up=orders[second],
                   best_vs_runner_up=means[second] / means[best],
                   friedman_chi2=chi2, friedman_p=p,
                   order_sd_ms=means.std(ddof=1) * 1e3 if len(orders) > 1 else math.nan,
                   seed_sd_ms=float(np.sqrt(x.var(axis=1, ddof=1).mean())) * 1e3
                   if x.shape[1] > 1 else math.nan,
                   # Below rounding noise every order gave the same times: no share.
                   order_share=between / total if total > (1e-9 * grand) ** 2 * x.size
                   else math.nan)
        lo, hi = _interval(boot[second] / boot[best])
        row["runner_up_low"], row["runner_up_high"] = lo, hi
        if REFERENCE_ORDER in orders:
            ref = orders.index(REFERENCE_ORDER)
            row["topo_ms"] = means[ref] * 1e3
            row["speedup_vs_topo"] = means[ref] / means[best]
            row["speedup_low"], row["speedup_high"] = _interval(boot[ref] / boot[best])
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------- across a family

def _twins(study: OrderStudy) -> dict[tuple[str, str], dict[str, str]]:
    """Per (cost device, model): each order not run because it gives the node sequence of
    an earlier order -> that order (the file's `same_orders`, "dfs-post=topo-lifo-rev,...")."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    if "same_orders" not in study.models:
        return out
    for cost, model, text in zip(study.models["cost_device"], study.models["model"],
                                 study.models["same_orders"]):
        pairs = [p.split("=", 1) for p in str(text).split(",") if "=" in p]
        out[(cost, model)] = {a.strip(): b.strip() for a, b in pairs}
    return out


@dataclass
class FamilyRuns:
    """One family at one cost device and device count, as a complete block design: every
    graph x every order x the seeds all of them have. An order that a graph's file did not
    run because it repeats another order's node sequence there takes that order's runs on
    that graph (the same sequence gives the same placement, seed for seed); an order run on
    no graph of the family is not a treatment of its own (`same_everywhere`)."""
    cost_device: str
    family: str
    devices: int
    graphs: list[str]
    orders: list[str]
    x: np.ndarray                     # [graph, order, seed] step times (s)
    same_everywhere: dict[str, str]   # order run on no graph -> the order it repeats
    left_out: list[str]               # graphs without every order (a failed run)


def family_runs(study: OrderStudy) -> list[FamilyRuns]:
    twins = _twins(study)
    out = []
    for (cost, family, k), group in study.ok.groupby(["cost_device", "family", "devices"],
                                                       sort=True):
        per_graph = {model: _matrix(g) for model, g in group.groupby("model", sort=True)}
        run_anywhere = sorted({o for orders, _ in per_graph.values() for o in orders})
        same: dict[str, str] = {}
        for model in per_graph:
            for o, twin in twins.get((cost, model), {}).items():
                if o not in run_anywhere:
                    same[o] = twin
        graphs, blocks, left_out = [], [], []
        for model, (orders, x) in per_graph.items():
            rows, twin_of = [], twins.get((cost, model), {})
            for o in run_anywhere:
                source, hops = o, 0
                while source not in orders and source in twin_of and hops <= len(twin_of):
                    source, hops = twin_of[source], hops + 1  # (a cycle ends unresolved)
                rows.append(orders.index(source) if source in orders else None)
            if None in rows or x.size == 0:
                left_out.append(model)
                continue
            graphs.append(model)
            blocks.append(x[rows])
        if not graphs:
            continue
        seeds = min(b.shape[1] for b in blocks)
        out.append(FamilyRuns(cost, family, int(k), graphs, run_anywhere,
                              np.stack([b[:, :seeds] for b in blocks]), same, left_out))
    return out


def _same_note(fr: FamilyRuns, order: str) -> str:
    return ",".join(sorted(o for o, twin in fr.same_everywhere.items() if twin == order))


def family_table(study: OrderStudy, seed: int = 0,
                 runs: list[FamilyRuns] | None = None) -> pd.DataFrame:
    """Per (cost device, family, devices) and order: the geometric mean over the family's
    graphs of the order's mean step time over the graph's mean over all orders (1 = an
    average order; < 1 = faster), with a 95% interval from resampling seeds (jointly over
    orders and graphs); the graphs on which the order is best (ties count for each), its
    mean Friedman rank (1 = best) and the orders it stands for (`same_as`). `runs`:
    family_runs(study) when the caller has them already."""
    from scipy import stats as st
    rows = []
    for fr in family_runs(study) if runs is None else runs:
        x = fr.x
        rng = np.random.default_rng(seed)
        idx = _boot_index(x.shape[2], rng)
        means = x.mean(axis=2)                                   # [graph, order]
        point = np.exp(np.log(means / means.mean(axis=1, keepdims=True)).mean(axis=0))
        boot = np.empty((len(fr.orders), RESAMPLES))
        for start in range(0, RESAMPLES, 1000):                  # [graph, order, resample]
            b = x[:, :, idx[start:start + 1000]].mean(axis=3)
            boot[:, start:start + 1000] = np.exp(
                np.log(b / b.mean(axis=1, keepdims=True)).mean(axis=0))
        wins = (means <= means.min(axis=1, keepdims=True) * (1 + TIE)).sum(axis=0)
        ranks = np.apply_along_axis(st.rankdata, 1, means).mean(axis=0)
        best = float(np.min(point))
        for i, order in enumerate(fr.orders):
            lo, hi = _interval(boot[i])
            rows.append(dict(cost_device=fr.cost_device, family=fr.family, devices=fr.devices,
                             order=order, same_as=_same_note(fr, order), models=len(fr.graphs),
                             seeds=x.shape[2], relative=point[i], ci_low=lo, ci_high=hi,
                             wins=int(wins[i]), mean_rank=float(ranks[i]),
                             is_best=bool(point[i] <= best * (1 + TIE))))
    return pd.DataFrame(rows)


def _variance_shares(x: np.ndarray) -> tuple[float, float]:
    """On log step times [graph, order, seed]: the share of the variance within graphs that
    lies between orders (the rest: between seeds of one order), and the share of all
    variance that lies between graphs."""
    y = np.log(x)
    graph_mean = y.mean(axis=(1, 2), keepdims=True)
    within = ((y - graph_mean) ** 2).sum()
    between_orders = x.shape[2] * ((y.mean(axis=2, keepdims=True) - graph_mean) ** 2).sum()
    total = ((y - y.mean()) ** 2).sum()
    order_share = between_orders / within if within > 0 else math.nan
    graph_share = 1 - within / total if total > 0 else math.nan
    return float(order_share), float(graph_share)


def family_tests(study: OrderStudy, seed: int = 0, runs: list[FamilyRuns] | None = None,
                 fams: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per family: the Friedman test over its graphs (orders as treatments, graphs as blocks,
    each cell the mean over seeds) with Kendall's W, the variance shares, the best order;
    and every pair of orders: the geometric mean ratio over graphs, the graphs where the
    first is faster, and the Wilcoxon signed-rank test over graphs, Holm-adjusted within
    the family. `runs`, `fams`: family_runs(study) and family_table(study, seed) when the
    caller has them already."""
    from scipy import stats as st
    runs = family_runs(study) if runs is None else runs
    fams = family_table(study, seed, runs) if fams is None else fams
    tests, pairs = [], []
    for fr in runs:
        means = fr.x.mean(axis=2)
        g, k = means.shape
        chi2, p = friedman(means.T)
        order_share, graph_share = _variance_shares(fr.x)
        f = fams[(fams["cost_device"] == fr.cost_device) & (fams["family"] == fr.family)
                 & (fams["devices"] == fr.devices)].sort_values("relative")
        rows = []
        for a in range(k):
            for b in range(a + 1, k):
                d = np.log(means[:, a]) - np.log(means[:, b])
                p_pair = (float(st.wilcoxon(d).pvalue) if g >= 2 and np.any(d != 0)
                          else math.nan)
                rows.append(dict(cost_device=fr.cost_device, family=fr.family,
                                 devices=fr.devices, order_a=fr.orders[a], order_b=fr.orders[b],
                                 graphs=g, ratio=float(np.exp(d.mean())),
                                 a_faster=int((d < 0).sum()), b_faster=int((d > 0).sum()),
                                 p=p_pair))
        adjusted = stats.holm([r["p"] for r in rows])
        for r, q in zip(rows, adjusted):
            r["p_holm"] = float(q)
            r["significant"] = bool(q < 1 - LEVEL)
        pairs += rows
        best = f.iloc[0]
        beaten = [r for r in rows if r["significant"] and best["order"] in
                  (r["order_a"], r["order_b"])]
        tests.append(dict(cost_device=fr.cost_device, family=fr.family, devices=fr.devices,
                          graphs=g, orders=k, seeds=fr.x.shape[2],
                          same_everywhere=",".join(f"{a}={b}" for a, b in
                                                   sorted(fr.same_everywhere.items())),
                          left_out=len(fr.left_out),
                          best_order=best["order"], best_relative=best["relative"],
                          best_ci_low=best["ci_low"], best_ci_high=best["ci_high"],
                          runner_up=f.iloc[1]["order"] if k > 1 else "",
                          best_beats_significantly=len(beaten), of=k - 1,
                          friedman_chi2=chi2, friedman_p=p,
                          kendall_w=chi2 / (g * (k - 1)) if k > 1 and g > 0 else math.nan,
                          order_share=order_share, graph_share=graph_share))
    return pd.DataFrame(tests), pd.DataFrame(pairs)


def family_baselines(study: OrderStudy) -> pd.DataFrame:
    """Per family and order: the learned placement (mean over seeds) against the fastest
    heuristic on the same graph and order: median, min and max over the graphs of
    rl / heuristic - 1 (negative: rl faster), and which heuristic was fastest most often;
    order "(best of each)": rl's fastest order against the fastest heuristic in any order."""
    if study.baselines.empty:
        return pd.DataFrame()
    ok = study.baselines[np.isfinite(study.baselines["step_time_s"])]
    ok = ok[ok["step_time_s"] > 0]
    fastest = ok.loc[ok.groupby(["cost_device", "model", "devices", "order"])["step_time_s"]
                     .idxmin()]
    rl = study.ok.groupby(["cost_device", "model", "devices", "order", "family"])[
        "step_time_s"].mean().rename("rl_s").reset_index()
    both = rl.merge(fastest.rename(columns={"step_time_s": "heuristic_s"}),
                    on=["cost_device", "model", "devices", "order"])
    # "(best of each)": rl's fastest order against the fastest heuristic in any order.
    keys = ["cost_device", "model", "devices", "family"]
    best = both.loc[both.groupby(keys)["rl_s"].idxmin(), keys + ["rl_s"]].merge(
        both.loc[both.groupby(keys)["heuristic_s"].idxmin(), keys + ["heuristic_s", "placer"]],
        on=keys)
    both = pd.concat([both, best.assign(order="(best of each)")], ignore_index=True)
    both["vs"] = both["rl_s"] / both["heuristic_s"] - 1
    rows = []
    for (cost, family, k, order), g in both.groupby(
            ["cost_device", "family", "devices", "order"], sort=True):
        rows.append(dict(cost_device=cost, family=family, devices=k, order=order,
                         models=len(g),
                         rl_vs_best_heuristic_median=float(stats.median(g["vs"].to_numpy())),
                         rl_vs_best_heuristic_min=g["vs"].min(),
                         rl_vs_best_heuristic_max=g["vs"].max(),
                         rl_faster_on=int((g["vs"] < 0).sum()),
                         fastest_heuristic=g["placer"].mode().iloc[0]))
    return pd.DataFrame(rows)


def feature_table(study: OrderStudy, best: pd.DataFrame) -> pd.DataFrame:
    """Per model: its structural features, the best order and how much order mattered."""
    feats = study.models[["cost_device", "model", "family", *FEATURES]]
    cols = ["cost_device", "model", "devices", "best_order", "speedup_vs_topo", "order_share",
            "friedman_p"]
    return feats.merge(best[cols], on=["cost_device", "model"], how="inner").sort_values(
        ["cost_device", "devices", "depth"])


def feature_correlations(study: OrderStudy, orders: pd.DataFrame,
                         best: pd.DataFrame | None = None) -> pd.DataFrame:
    """Spearman's rho over the models between each feature and each order's mean step time
    relative to the mean over the model's orders (`target` relative), and, with `best`, the
    order effect itself: `order_share` (best_table's) and `spread` (the slowest order's mean
    over the fastest's). Per cost device and devices over every model (`scope` all) and
    within each family of 4+ models; 3+ distinct values of each variable. p is
    Holm-adjusted over every row."""
    from scipy import stats as st
    feats = study.models.set_index(["cost_device", "model"])
    family_of = feats["family"]
    rows = []

    def correlate(base: dict, models: list, y: list) -> None:
        for scope in ["all", *sorted({family_of[(base["cost_device"], m)] for m in models})]:
            keep = [i for i, m in enumerate(models)
                    if scope == "all" or family_of[(base["cost_device"], m)] == scope]
            if len(keep) < 4 or (scope != "all" and len(keep) == len(models)):
                continue
            ys = [y[i] for i in keep]
            for feature in FEATURES:
                x = [feats.loc[(base["cost_device"], models[i]), feature] for i in keep]
                # Models where every order ties give y = 1 whatever the feature: with fewer
                # than 3 distinct values a rank correlation of +-1 says nothing.
                if len(set(x)) < 3 or len(set(np.round(ys, 9))) < 3:
                    continue
                res = st.spearmanr(x, ys)
                rows.append(dict(base, scope=scope, feature=feature, models=len(keep),
                                 spearman_rho=float(res.statistic), p=float(res.pvalue)))

    for (cost, k, order), g in orders.groupby(["cost_device", "devices", "order"], sort=True):
        correlate(dict(cost_device=cost, devices=k, target="relative", order=order),
                  list(g["model"]), list(g["relative"]))
    if best is not None:
        spread = orders.groupby(SETTING)["vs_best"].max()
        for (cost, k), g in best.groupby(["cost_device", "devices"], sort=True):
            g = g[np.isfinite(g["order_share"])]
            models = list(g["model"])
            correlate(dict(cost_device=cost, devices=k, target="order_share", order=""),
                      models, list(g["order_share"]))
            correlate(dict(cost_device=cost, devices=k, target="spread", order=""), models,
                      [spread[(cost, m, k)] for m in models])
    out = pd.DataFrame(rows)
    if len(out):
        out["p_holm"] = stats.holm(out["p"].to_numpy())
    return out


def baseline_table(study: OrderStudy, orders: pd.DataFrame) -> pd.DataFrame:
    """The learned placement (mean over seeds, and best seed) beside the heuristics."""
    if study.baselines.empty:
        return pd.DataFrame()
    b = study.baselines.pivot_table(index=["cost_device", "model", "devices", "order"],
                                    columns="placer", values="step_time_s").reset_index()
    b.columns = [c if c in ("cost_device", "model", "devices", "order") else f"{c}_ms"
                 for c in b.columns]
    for c in b.columns:
        if c.endswith("_ms"):
            b[c] = b[c] * 1e3
    cols = ["cost_device", "model", "devices", "order", "mean_ms", "min_ms"]
    out = orders[cols].rename(columns={"mean_ms": "rl_mean_ms", "min_ms": "rl_best_seed_ms"})
    return out.merge(b, on=["cost_device", "model", "devices", "order"], how="left")


def wall_table(study: OrderStudy) -> pd.DataFrame:
    ok = study.ok
    g = ok.groupby(["cost_device", "model", "devices"], sort=True)
    return g.agg(runs=("placer_wall_s", "size"), episodes=("episodes_run", "median"),
                 median_wall_s=("placer_wall_s", "median"), total_wall_s=("placer_wall_s", "sum")
                 ).reset_index()


# ------------------------------------------------------------------------------- figures

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


# Above this many models a setting gets family figures, not a panel per model.
GRID_MODELS = 16


def heatmap(orders: pd.DataFrame, cost: str, k: int):
    """Models x orders, each cell the order's mean over the setting's best order (up to
    GRID_MODELS * 2 models)."""
    plt = _plt()
    d = orders[(orders["cost_device"] == cost) & (orders["devices"] == k)]
    if d.empty or d["model"].nunique() > 2 * GRID_MODELS:
        return None
    m = d.pivot_table(index="model", columns="order", values="vs_best")
    fig, ax = plt.subplots(figsize=(1.2 * m.shape[1] + 3, 0.45 * m.shape[0] + 1.8))
    im = ax.imshow(m.to_numpy(), cmap="viridis_r", aspect="auto")
    ax.set_xticks(range(m.shape[1]), m.columns, rotation=35, ha="right")
    ax.set_yticks(range(m.shape[0]), m.index)
    for (i, j), v in np.ndenumerate(m.to_numpy()):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize=7,
                    color="white" if v > (np.nanmin(m.to_numpy()) + np.nanmax(m.to_numpy())) / 2
                    else "black")
    fig.colorbar(im, ax=ax, label="mean step time / best order's")
    ax.set_title(f"rl placer, mean over seeds: order vs best ({cost}, K={k})")
    fig.tight_layout()
    return fig


def _model_grid(study: OrderStudy, cost: str, k: int, row_height: float):
    """The runs of one cost device and K, their models (sorted), and a figure with one
    panel per model, four per row, the spare panels hidden; None without runs or with more
    than GRID_MODELS models."""
    plt = _plt()
    ok = study.ok
    d = ok[(ok["cost_device"] == cost) & (ok["devices"] == k)]
    models = sorted(set(d["model"]))
    if not models or len(models) > GRID_MODELS:
        return None
    cols = min(4, len(models))
    rows = math.ceil(len(models) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, row_height * rows), squeeze=False)
    for ax in list(axes.flat)[len(models):]:
        ax.axis("off")
    return d, models, fig, axes


def _curve_panel(ax, title: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("episode", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)


def _orders_legend(fig, axes, title: str, rect: tuple):
    """One legend of the orders below the panels, the title above; returns the figure."""
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(7, len(labels)), fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=rect)
    return fig


def learning_curves(study: OrderStudy, cost: str, k: int):
    """Median over seeds of the best step time so far, per episode, per order and model."""
    grid = _model_grid(study, cost, k, row_height=2.6)
    if grid is None:
        return None
    d, models, fig, axes = grid
    for ax, model in zip(axes.flat, models):
        for order, g in d[d["model"] == model].groupby("order", sort=True):
            curves = np.array(study.curves(g))
            if curves.size == 0:
                continue
            ax.plot(np.arange(1, curves.shape[1] + 1), stats.median(curves, axis=0) * 1e3,
                    label=order, lw=1)
        _curve_panel(ax, model, "best so far (ms)")
    return _orders_legend(fig, axes, f"rl learning curves, median over seeds ({cost}, K={k})",
                          rect=(0, 0.06, 1, 0.96))


def family_curves(study: OrderStudy, cost: str, k: int):
    """Per family and order: the best step time so far per episode over the run's final
    one, median over the family's graphs and seeds (with the 10-90% band)."""
    plt = _plt()
    ok = study.ok
    d = ok[(ok["cost_device"] == cost) & (ok["devices"] == k)]
    families = sorted(set(d["family"]))
    if not families or d["model"].nunique() <= GRID_MODELS:
        return None
    fig, axes = plt.subplots(1, len(families), figsize=(3.6 * len(families), 3.2),
                             squeeze=False)
    for ax, family in zip(axes.flat, families):
        for order, g in d[d["family"] == family].groupby("order", sort=True):
            curves = study.curves(g)
            length = min((len(c) for c in curves), default=0)
            if length == 0:
                continue
            rel = np.array([c[:length] / c[length - 1] for c in curves])
            x = np.arange(1, length + 1)
            ax.plot(x, stats.median(rel, axis=0), label=order, lw=1)
            lo, hi = np.quantile(rel, [0.1, 0.9], axis=0)
            ax.fill_between(x, lo, hi, alpha=0.1)
        _curve_panel(ax, family, "best so far / final best")
    return _orders_legend(fig, axes, f"rl learning curves per family ({cost}, K={k})",
                          rect=(0, 0.1, 1, 0.94))


def seeds_by_order(study: OrderStudy, cost: str, k: int):
    """Every seed's step time per order, per model (relative to the model's best mean)."""
    grid = _model_grid(study, cost, k, row_height=2.8)
    if grid is None:
        return None
    d, models, fig, axes = grid
    for ax, model in zip(axes.flat, models):
        g = d[d["model"] == model]
        orders = sorted(set(g["order"]))
        best = g.groupby("order")["step_time_s"].mean().min()
        for i, order in enumerate(orders):
            y = g[g["order"] == order]["step_time_s"].to_numpy() / best
            ax.plot(np.full(len(y), i) + np.linspace(-0.15, 0.15, len(y)), y, ".", ms=3)
            ax.plot([i - 0.25, i + 0.25], [y.mean()] * 2, "k-", lw=1)
        ax.set_xticks(range(len(orders)), orders, rotation=45, ha="right", fontsize=7)
        ax.set_title(model, fontsize=9)
        ax.set_ylabel("step / best mean", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"rl placer per seed (dots) and mean (bar) by order ({cost}, K={k})",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return fig


def family_orders(runs: list[FamilyRuns], fams: pd.DataFrame, cost: str, k: int):
    """Per family: each graph's order mean over its mean over orders (dots), their box, and
    the family's geometric mean with its interval over seeds (black)."""
    plt = _plt()
    runs = [fr for fr in runs if fr.cost_device == cost and fr.devices == k]
    if not runs:
        return None
    fams = fams.set_index(["cost_device", "family", "devices", "order"])
    fig, axes = plt.subplots(1, len(runs), figsize=(3.6 * len(runs), 3.6), squeeze=False)
    for ax, fr in zip(axes.flat, runs):
        means = fr.x.mean(axis=2)
        rel = means / means.mean(axis=1, keepdims=True)
        ax.boxplot(rel, positions=range(len(fr.orders)), widths=0.5, showfliers=False)
        for i, order in enumerate(fr.orders):
            ax.plot(np.full(len(rel), i) + np.linspace(-0.2, 0.2, len(rel)), rel[:, i], ".",
                    ms=2, alpha=0.5)
            row = fams.loc[(cost, fr.family, k, order)]
            ax.errorbar([i + 0.32], [row["relative"]], fmt="k_", ms=8,
                        yerr=[[row["relative"] - row["ci_low"]], [row["ci_high"] - row["relative"]]])
        labels = [o + ("=" + _same_note(fr, o) if _same_note(fr, o) else "") for o in fr.orders]
        ax.set_xticks(range(len(fr.orders)), labels, rotation=40, ha="right", fontsize=7)
        ax.axhline(1.0, color="grey", lw=0.5)
        ax.set_title(f"{fr.family} ({len(fr.graphs)} graphs, {fr.x.shape[2]} seeds)", fontsize=9)
        ax.set_ylabel("order mean / graph's mean over orders", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"rl placer: step time by order across each family ({cost}, K={k})",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


# -------------------------------------------------------------------------------- report

def build_tables(study: OrderStudy, seed: int = 0) -> list[Table]:
    orders = order_table(study, seed)
    best = best_table(study, seed)
    runs = family_runs(study)
    fams = family_table(study, seed, runs)
    tests, pairs = family_tests(study, seed, runs, fams)
    return [
        Table("order_study_best", "Best order per model (mean over seeds; intervals: 95% "
              "bootstrap over seeds; order effect: Friedman test, seeds as blocks)", best,
              ["cost_device", "model", "devices", "seeds", "best_order", "best_ms",
               "speedup_vs_topo", "speedup_low", "speedup_high", "runner_up",
               "best_vs_runner_up", "runner_up_low", "runner_up_high", "order_share",
               "friedman_p"]),
        Table("order_study_family", "Order per family: geometric mean over the family's "
              "graphs of mean step time / the graph's mean over orders (< 1: faster; "
              "interval: 95% bootstrap over seeds); wins: graphs where the order is best; "
              "same_as: orders that give its node sequence on every graph (counted once)", fams,
              ["cost_device", "family", "devices", "order", "same_as", "models", "seeds",
               "relative", "ci_low", "ci_high", "wins", "mean_rank", "is_best"]),
        Table("order_study_family_tests", "The order effect across each family: Friedman test "
              "with graphs as blocks (cells: means over seeds), Kendall's W, the share of the "
              "within-graph variance of log step time between orders (order_share) and the "
              "share of all variance between graphs (graph_share); the best order, its "
              "interval, and how many of the other orders it beats after Holm (pairs table)",
              tests),
        Table("order_study_family_pairs", "Pairs of orders across each family: geometric mean "
              "over graphs of a's mean / b's (< 1: a faster), graphs where each is faster, "
              "Wilcoxon signed-rank p over graphs, Holm-adjusted within the family", pairs),
        Table("order_study_family_baselines", "rl (mean over seeds) against the fastest "
              "heuristic on the same graph and order: rl / heuristic - 1 over the family's "
              "graphs (negative: rl faster); (best of each): rl's fastest order against the "
              "fastest heuristic in any order", family_baselines(study)),
        Table("order_study_orders", "Step time per model and order (ms; speedup = topo-lifo / "
              "order)", orders,
              ["cost_device", "model", "devices", "order", "seeds", "mean_ms", "ci_low_ms",
               "ci_high_ms", "min_ms", "seed_sd_ms", "vs_best", "speedup_vs_topo"]),
        Table("order_study_spread", "How much order matters: SD of the order means vs SD over "
              "seeds within an order; order_share = between-order sum of squares / total",
              best, ["cost_device", "model", "devices", "orders", "seeds", "order_sd_ms",
                     "seed_sd_ms", "order_share", "friedman_chi2", "friedman_p"]),
        Table("order_study_features", "Graph features and the best order",
              feature_table(study, best),
              ["cost_device", "model", "family", "devices", *FEATURES, "best_order",
               "speedup_vs_topo", "order_share", "friedman_p"]),
        Table("order_study_feature_correlations", "Spearman's rho over models (scope: all of "
              "them, or one family): feature vs target; target relative: the order's mean "
              "step time / the mean over the model's orders (negative: the order gains on "
              "deeper/wider/... graphs); order_share and spread (slowest order / fastest): "
              "how much order matters; p Holm-adjusted over all rows",
              feature_correlations(study, orders, best)),
        Table("order_study_baselines", "Learned placement vs heuristic placers (ms)",
              baseline_table(study, orders)),
        Table("order_study_wall", "rl placer wall time (s, on the machine that ran the study)",
              wall_table(study)),
    ]


def write_report(study: OrderStudy, out: Path, seed: int = 0, command: str = "") -> str:
    from .plots import save
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tables = build_tables(study, seed)
    lines = ["# Traversal-order study: the rl placer per order", ""]
    if command:
        lines += [f"Made with `{command}` from:", ""]
    for f, c in zip(study.files, study.commands):
        lines.append(f"- `{f}`: `{c}`")
    lines.append("")
    for i, t in enumerate(tables, 1):
        write_table(t, out / "tables")
        lines.append(to_markdown(t, f"Table {i}."))
    figs = []
    orders_frame = next(t.frame for t in tables if t.name == "order_study_orders")
    fams_frame = next(t.frame for t in tables if t.name == "order_study_family")
    runs = family_runs(study)
    for cost, k in sorted(set(zip(study.ok["cost_device"], study.ok["devices"]))):
        for name, fn in (("families", lambda: family_orders(runs, fams_frame, cost, k)),
                         ("family_curves", lambda: family_curves(study, cost, k)),
                         ("heatmap", lambda: heatmap(orders_frame, cost, k)),
                         ("curves", lambda: learning_curves(study, cost, k)),
                         ("seeds", lambda: seeds_by_order(study, cost, k))):
            fig = fn()
            if fig is not None:
                path = save(fig, out / "plots" / f"order_study_{name}_{cost}_k{k}.png")
                figs.append(path)
                lines.append(f"![{name} {cost} K={k}](plots/{path.name})")
    text = "\n".join(lines) + "\n"
    (out / "report.md").write_text(text)
    return text
