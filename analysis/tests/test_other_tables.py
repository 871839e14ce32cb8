"""Tables 3 (graph features), 4 (simulator), 5 (recommendations) and the failures."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from interplace_analysis.tables import (failures, graph_features, recommendations, simulator,
                                        strategies, traversal)

# (predicted, measured median) per ok configuration of the fixture
SIM = [(1.1, 1.005), (0.8, 0.804), (0.95, 0.9045), (1.3, 1.206), (1.0, 1.005),
       (1.0, 0.9975), (0.45, 0.5025), (0.62, 0.603), (2.2, 2.01)]


def _avg_ranks(v):
    v = np.asarray(v)
    return np.array([np.sum(v < x) + (np.sum(v == x) + 1) / 2 for x in v])


def test_graph_features_beside_best_order(results):
    t = graph_features.graph_feature_table(results).set_index("model")
    assert t.loc["resnet20", "node_count"] == 70 and t.loc["gpt-small", "max_width"] == 4
    assert t.loc["resnet20", "critical_path_cost_share"] == pytest.approx(0.97)
    assert t.loc["resnet20", "best_order"] == "dfs-pre"
    assert t.loc["resnet20", "best_placer"] == "contiguous"
    assert t.loc["resnet20", "speedup_vs_topo"] == pytest.approx(1.25)
    assert t.loc["gpt-small", "best_order"] == "bfs"
    assert math.isnan(t.loc["gpt-small", "speedup_vs_topo"])


def test_simulator_errors_mape_and_spearman(results):
    t = simulator.simulator_table(results)
    assert len(t) == len(SIM)
    pred, meas = np.array(SIM).T
    got = dict(zip(t["pred_step_time_s"].round(6), t["sim_error"]))
    assert got[1.3] == pytest.approx(1.3 / 1.206 - 1)
    s = simulator.simulator_summary(t).set_index("scope")
    assert s.loc["all", "configs"] == 9
    assert s.loc["all", "mape_pct"] == pytest.approx(100 * np.mean(np.abs(pred / meas - 1)))
    rp, rm = _avg_ranks(pred), _avg_ranks(meas)
    assert s.loc["all", "spearman"] == pytest.approx(np.corrcoef(rp, rm)[0, 1])
    assert "model=gpt-small" in s.index and math.isnan(s.loc["model=gpt-small", "spearman"])
    # within the one group of >= 3 orders (resnet20 contiguous global): predictions
    # 1.1, 0.8, 0.95, 1.3 rank exactly as the measured 1.005, 0.804, 0.9045, 1.206
    within = s.loc["within traversal groups (mean of 1)"]
    assert within["configs"] == 4 and within["spearman"] == pytest.approx(1.0)


def test_simulator_summary_keeps_each_cost_source_apart(results):
    """A roofline's error is no calibrated prediction's: each source has its own rows."""
    t = simulator.simulator_table(results)
    assert set(t["cost_source"]) == {"roofline (cpu-core)"}
    assert simulator.cost_source("profile:auto") == "measured in job"
    assert simulator.cost_source("profile:/p/resnet20.tsv") == "profile"
    t.loc[t.index[:3], "cost_source"] = "measured in job"
    s = simulator.simulator_summary(t).set_index("scope")
    measured, roofline = s.loc["costs: measured in job"], s.loc["costs: roofline (cpu-core)"]
    assert measured["configs"] == 3 and roofline["configs"] == len(t) - 3
    first = t.iloc[:3]
    assert measured["mape_pct"] == pytest.approx(
        100 * np.mean(np.abs(first["pred_step_time_s"] / first["step_time_s"] - 1)))


@pytest.fixture(scope="module")
def recs(results):
    def make(tolerance=0.01):
        ranked = traversal.rank_orders(traversal.order_samples(results), ["family"])
        return recommendations.recommendation_table(
            ranked, strategies.strategy_table(results), ["gpt", "resnet"], tolerance
        ).set_index("family")
    return make


def test_recommendation_says_whether_the_measurement_confirmed_the_prediction(results):
    """The prediction column: the simulator's runner-up / best ratio, and a gap it
    predicted beyond the minimum effect that the measurement did not show, said as such."""
    ranked = traversal.rank_orders(traversal.order_samples(results), ["family"])
    strat = strategies.strategy_table(results)
    sim = simulator.simulator_table(results)
    plain = recommendations.recommendation_table(ranked, strat, ["gpt", "resnet"])
    assert set(plain["prediction"]) == {""}  # no simulator table given
    rec = recommendations.recommendation_table(ranked, strat, ["gpt", "resnet"],
                                               simulated=sim).set_index("family")
    best = rec.loc["resnet"]
    ru_placer, ru_order = best["runner_up"].split("/")
    # Predict the runner-up 30% slower than the best in every setting both ran.
    fam = sim["family"] == "resnet"
    is_best = fam & (sim["placer"] == best["placer"]) & (sim["order"] == best["order"])
    is_ru = fam & (sim["placer"] == ru_placer) & (sim["order"] == ru_order)
    keys = [k for k in traversal.SETTING_KEY]
    at = sim[is_best].set_index(keys)["pred_step_time_s"]
    sim.loc[is_ru, "pred_step_time_s"] = [1.3 * at[tuple(r)] for r in sim.loc[is_ru, keys].values]
    text = recommendations.recommendation_table(
        ranked, strat, ["resnet"], simulated=sim).set_index("family").loc["resnet", "prediction"]
    confirmed = best["confidence"].startswith(("high", "medium: beats"))
    assert text.startswith("simulator: runner-up x1.30 slower")
    assert ("confirmed" in text) and (("NOT confirmed" in text) != confirmed), text


def test_recommendation_per_family(recs):
    r = recs()
    res = r.loc["resnet"]
    assert (res["order"], res["placer"]) == ("dfs-pre", "contiguous")
    assert res["confidence"].startswith("low: n=1: not enough repeats")  # one run each
    assert res["order_evidence"].startswith("x1.25 [")
    assert "runner-up contiguous/bfs x1.12 [" in res["order_evidence"]
    assert res["strategy"] == "pairwise"  # x1.67 at 0.005 cost; local costs 0.10
    assert res["strategy_speedup"] == pytest.approx(1 / 0.6)
    assert res["strategy_accuracy_cost"] == pytest.approx(0.005)
    gpt = r.loc["gpt"]
    assert gpt["order"] == "bfs" and gpt["confidence"].startswith("insufficient data")
    assert gpt["strategy"] == "global" and "no strategy comparison" in gpt["strategy_evidence"]


def test_accuracy_tolerance_decides_the_strategy(recs):
    assert recs(0.2).loc["resnet", "strategy"] == "local"
    strict = recs(0.001).loc["resnet"]
    assert strict["strategy"] == "global/gpipe"
    assert strict["strategy_evidence"].startswith("no faster strategy within 0.001 accuracy")
    assert "local x2.00, cost +0.100" in strict["strategy_evidence"]


RUNS5 = dict(min_runs=5, speedup_runs=5, vs_runs=5, speedup_p=0.001, vs_p=0.001)


def test_confidence_wording_for_a_tie():
    ranked = pd.DataFrame([
        dict(family="f", placer="p", order="dfs-pre", settings=1, of_settings=1,
             **RUNS5,
             speedup_vs_topo=1.3, speedup_ci_low=1.2, speedup_ci_high=1.4, vs_runner_up=1.01,
             vs_ci_low=0.98, vs_ci_high=1.04, rank=1),
        dict(family="f", placer="p", order="bfs", settings=1, of_settings=1,
             **RUNS5,
             speedup_vs_topo=1.29, speedup_ci_low=1.2, speedup_ci_high=1.4,
             vs_runner_up=np.nan, vs_ci_low=np.nan, vs_ci_high=np.nan, rank=2)])
    r = recommendations.recommendation_table(ranked, pd.DataFrame(), ["f"]).iloc[0]
    assert r["confidence"] == "medium: faster than topo, tie with p/bfs"
    ranked.loc[0, ["speedup_ci_low"]] = 0.95
    r = recommendations.recommendation_table(ranked, pd.DataFrame(), ["f"]).iloc[0]
    assert r["confidence"] == "low: within noise or 5% of the runner-up and topo"


def test_confidence_needs_gains_beyond_the_minimum_effect():
    """Best 3% ahead of the runner-up and 4% of topo, tight intervals, tiny p: beyond
    noise, not beyond 5%, so no more than low; without a minimum effect, high."""
    ranked = pd.DataFrame([
        dict(family="f", placer="p", order="dfs-pre", settings=1, of_settings=1, **RUNS5,
             speedup_vs_topo=1.04, speedup_ci_low=1.02, speedup_ci_high=1.06,
             vs_runner_up=1.03, vs_ci_low=1.01, vs_ci_high=1.04, rank=1),
        dict(family="f", placer="p", order="bfs", settings=1, of_settings=1, **RUNS5,
             speedup_vs_topo=1.01, speedup_ci_low=0.99, speedup_ci_high=1.03,
             vs_runner_up=np.nan, vs_ci_low=np.nan, vs_ci_high=np.nan, rank=2)])
    r = recommendations.recommendation_table(ranked, pd.DataFrame(), ["f"]).iloc[0]
    assert r["confidence"] == "low: within noise or 5% of the runner-up and topo"
    r = recommendations.recommendation_table(ranked, pd.DataFrame(), ["f"],
                                             min_effect=0.0).iloc[0]
    assert r["confidence"] == "high: faster than the runner-up and topo beyond noise and 0%"
    ranked.loc[0, ["speedup_ci_low", "speedup_ci_high"]] = 1.06, 1.1
    r = recommendations.recommendation_table(ranked, pd.DataFrame(), ["f"]).iloc[0]
    assert r["confidence"] == "medium: faster than topo, tie with p/bfs"


def test_failures_listed_with_reason(results):
    t = failures.failure_table(results)
    assert t["status"].tolist() == ["failed", "missing", "skipped"]
    assert t["reason"].iloc[0] == "rank 1: out of memory"
    assert t["index"].tolist() == [10, 9, 11]


def test_confidence_wording_when_topo_is_best():
    ranked = pd.DataFrame([
        dict(family="f", placer="p", order="topo", settings=1, of_settings=1,
             **RUNS5,
             speedup_vs_topo=1.0, speedup_ci_low=1.0, speedup_ci_high=1.0, vs_runner_up=1.2,
             vs_ci_low=1.1, vs_ci_high=1.3, rank=1),
        dict(family="f", placer="p", order="bfs", settings=1, of_settings=1,
             **RUNS5,
             speedup_vs_topo=0.8, speedup_ci_low=0.75, speedup_ci_high=0.85,
             vs_runner_up=np.nan, vs_ci_low=np.nan, vs_ci_high=np.nan, rank=2)])
    r = recommendations.recommendation_table(ranked, pd.DataFrame(), ["f"]).iloc[0]
    assert r["confidence"] == "high: topo is faster than the runner-up beyond noise and 5%"
    assert r["order_evidence"].startswith("is topo; runner-up p/bfs x1.20 [1.10, 1.30] slower")
    ranked.loc[0, "vs_ci_low"] = 0.99
    r = recommendations.recommendation_table(ranked, pd.DataFrame(), ["f"]).iloc[0]
    assert r["confidence"] == "low: topo is within noise or 5% of the runner-up"
    ranked.loc[0, "vs_ci_low"] = 1.1
    ranked.loc[0, "vs_p"] = 0.2  # interval above 1 but Holm-adjusted p too large
    r = recommendations.recommendation_table(ranked, pd.DataFrame(), ["f"]).iloc[0]
    assert r["confidence"] == "low: topo is within noise or 5% of the runner-up"
    ranked.loc[0, "vs_p"] = 0.001
    ranked.loc[:, "min_runs"] = 2
    r = recommendations.recommendation_table(ranked, pd.DataFrame(), ["f"]).iloc[0]
    assert r["confidence"].startswith("low: n=2: not enough repeats")


def test_simulator_one_row_per_configuration_over_its_runs(tmp_path):
    from resultfile import Cfg, repeated, write_result_file

    from interplace_analysis import load_results
    runs = repeated(Cfg(pred_step_s=1.1), 3, seed=4)
    r = load_results([write_result_file(tmp_path / "s.h5", runs)])
    t = simulator.simulator_table(r)
    assert len(t) == 1 and t.loc[0, "runs"] == 3
    measured = np.median([np.median(c.measured()) for c in runs])
    assert t.loc[0, "step_time_s"] == pytest.approx(measured)
    assert t.loc[0, "sim_error"] == pytest.approx(1.1 / measured - 1)
