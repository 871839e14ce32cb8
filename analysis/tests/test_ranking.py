"""The recommendation table's ranking (tiers split only by verdicts) and its statement of
the machine's run-to-run spread."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from resultfile import Cfg, repeated, write_result_file

from interplace_analysis import load_results
from interplace_analysis.report import build_report
from interplace_analysis.tables import recommendations

ORDERS = ("topo", "dfs-pre", "dfs-post")


def _recommendation(tmp_path, factors, runs, run_sd=0.03, step_sd=0.01) -> pd.Series:
    """The recommendation row of one family whose three orders ran ``runs`` times each at
    ``factors`` x the fixture's step times, in one setting."""
    cs = []
    for i, (order, factor) in enumerate(zip(ORDERS, factors)):
        cs += repeated(Cfg(order=order, index=i), runs, seed=10 + i, factor=factor,
                       run_sd=run_sd, step_sd=step_sd)
    results = load_results([write_result_file(tmp_path / "r.h5", cs)])
    return build_report(results, seed=0).table("recommendations").iloc[0]


def test_two_orders_tie_and_the_third_is_slower(tmp_path):
    r = _recommendation(tmp_path, (1.0, 1.0, 1.4), runs=5)
    m = re.fullmatch(r"(topo, dfs-pre|dfs-pre, topo) ahead of dfs-post"
                     r" x(\d\.\d\d) \[(\d\.\d\d), (\d\.\d\d)\]", r["ranking"])
    assert m, r["ranking"]
    point, low, high = map(float, m.groups()[1:])
    assert point == pytest.approx(1.4, abs=0.05) and 1.05 < low < point < high
    # The confidence reads the same comparison (best vs runner-up, Holm over the table's
    # comparisons): a tie, as the ranking says, so no more than low.
    assert r["confidence"].startswith("low: "), r["confidence"]
    assert r["run_spread_configs"] == 3 and 0 < r["run_spread_median"] < 0.2
    assert r["run_spread"].startswith(f"{100 * r['run_spread_median']:.1f}% median")


def test_orders_that_all_tie_make_one_tier(tmp_path):
    r = _recommendation(tmp_path, (1.0, 1.0, 1.0), runs=5, run_sd=0.005)
    assert r["ranking"] == "no confident gap (neighbours within noise or 5%)"
    assert r["run_spread_max"] < 0.05


def test_noisy_runs_are_said_to_be_too_noisy_for_a_verdict(tmp_path):
    r = _recommendation(tmp_path, (1.0, 1.0, 1.15), runs=5, run_sd=0.25)
    spread = r["run_spread_median"]
    assert spread > 0.05
    assert r["ranking"].startswith(
        "no confident gap: too noisy for a verdict: runs of one configuration spread by"
        f" {100 * spread:.1f}% (median; largest {100 * r['run_spread_max']:.1f}%), more"
        " than the 5% minimum effect"), r["ranking"]
    assert r["confidence"].startswith("low")


def test_fewer_runs_than_a_verdict_needs_claim_no_gap(tmp_path):
    r = _recommendation(tmp_path, (1.0, 1.0, 1.4), runs=2)
    assert r["ranking"] == ("no confident gap: n=2: not enough repeats (a verdict needs 3"
                            " runs per configuration)")


def _ranked(p: float, runs: int = 5) -> pd.DataFrame:
    """Three pairs of one placer: a and b tie, c 1.4x slower than b with an interval
    wholly beyond 5%; every comparison's p-value ``p``."""
    def row(order, vs, low, high):
        return dict(family="f", placer="p", order=order, settings=1, of_settings=1,
                    min_runs=runs, speedup_runs=runs, vs_runs=runs, speedup_p=p, vs_p=p,
                    speedup_vs_topo=1.0, speedup_ci_low=0.97, speedup_ci_high=1.03,
                    vs_runner_up=vs, vs_ci_low=low, vs_ci_high=high)
    return pd.DataFrame([row("a", 1.01, 0.98, 1.04), row("b", 1.4, 1.3, 1.5),
                         row("c", np.nan, np.nan, np.nan)])


def test_a_gap_needs_the_holm_adjusted_p_value():
    """Three comparisons (two neighbours, best vs topo) at p = 0.01: Holm gives 0.03, a
    gap; at p = 0.02 Holm gives 0.06 (though the interval lies beyond 5%), no gap."""
    rank = recommendations.recommendation_table(_ranked(0.01), pd.DataFrame(), ["f"])
    assert rank.loc[0, "ranking"] == "a, b ahead of c x1.40 [1.30, 1.50]"
    rank = recommendations.recommendation_table(_ranked(0.02), pd.DataFrame(), ["f"])
    assert rank.loc[0, "ranking"] == "no confident gap (neighbours within noise or 5%)"
    assert rank.loc[0, "run_spread"] == "n/a: no configuration with 2 or more runs"


def test_the_too_noisy_statement_needs_the_runs_and_a_spread_beyond_the_minimum_effect():
    spread = pd.DataFrame([dict(family="f", run_spread_median=0.12, run_spread_max=0.4,
                                run_spread_configs=3)])
    noisy = recommendations.recommendation_table(_ranked(0.02), pd.DataFrame(), ["f"],
                                                 spread=spread).loc[0, "ranking"]
    assert noisy == ("no confident gap: too noisy for a verdict: runs of one configuration"
                     " spread by 12.0% (median; largest 40.0%), more than the 5% minimum"
                     " effect")  # the 40% gap measured is larger than the spread: not said
    quiet = spread.assign(run_spread_median=0.04)
    assert recommendations.recommendation_table(
        _ranked(0.02), pd.DataFrame(), ["f"], spread=quiet).loc[0, "ranking"] == \
        "no confident gap (neighbours within noise or 5%)"
    few = recommendations.recommendation_table(_ranked(0.02, runs=2), pd.DataFrame(), ["f"],
                                               spread=spread).loc[0, "ranking"]
    assert few.startswith("no confident gap: n=2: not enough repeats")


def test_run_spread_is_max_over_min_of_a_configurations_runs():
    ok = pd.DataFrame(dict(family=["f"] * 5 + ["g"], config_key=["x", "x", "y", "y", "z", "w"],
                           step_time_s=[1.0, 1.1, 2.0, 2.6, 5.0, 1.0]))
    s = recommendations.run_spread(ok).set_index("family")
    assert s.loc["f", "run_spread_median"] == pytest.approx((0.1 + 0.3) / 2)
    assert s.loc["f", "run_spread_max"] == pytest.approx(0.3)
    assert s.loc["f", "run_spread_configs"] == 2  # z has one run
    assert "g" not in s.index


def _vs_default(tmp_path, factors: dict[str, float], runs: int = 5) -> pd.Series:
    """The recommendation row of one family whose placers ran ``runs`` times each at
    ``factors[placer]`` x the fixture's step times, in one setting (topo)."""
    cs = []
    for i, (placer, factor) in enumerate(factors.items()):
        cs += repeated(Cfg(placer=placer, index=i), runs, seed=20 + i, factor=factor,
                       run_sd=0.01, step_sd=0.005)
    results = load_results([write_result_file(tmp_path / "r.h5", cs)])
    return build_report(results, seed=0).table("recommendations").iloc[0]


def test_the_recommendation_against_the_best_default_split(tmp_path):
    r = _vs_default(tmp_path, {"balanced": 1.0, "even-layers": 1.3, "deepspeed-uniform": 1.6})
    assert r["placer"] == "balanced" and r["best_default"] == "even-layers/topo"
    m = re.fullmatch(r"even-layers/topo x(\d\.\d\d) \[(\d\.\d\d), (\d\.\d\d)\]: beats it"
                     r" beyond noise and 5%", r["vs_best_default"])
    assert m, r["vs_best_default"]
    point, low, high = map(float, m.groups())
    assert point == pytest.approx(1.3, abs=0.05) and 1.05 < low < point < high
    assert r["vs_default_p_holm"] < 0.05


def test_a_default_split_as_fast_as_the_recommendation_ties(tmp_path):
    r = _vs_default(tmp_path, {"balanced": 1.0, "even-layers": 1.01})
    if r["placer"] == "even-layers":  # the noise may rank it first
        assert r["vs_best_default"] == "the best is a default split (even-layers/topo)"
    else:
        assert r["vs_best_default"].endswith(": ties (within noise or 5%)"), r["vs_best_default"]


def test_the_default_comparison_needs_repeats_and_a_default(tmp_path):
    few = _vs_default(tmp_path, {"balanced": 1.0, "deepspeed-parameters": 1.3}, runs=2)
    assert few["vs_best_default"].endswith(": n=2: not enough repeats"), few["vs_best_default"]
    (tmp_path / "none").mkdir()
    none = _vs_default(tmp_path / "none", {"balanced": 1.0, "contiguous": 1.3})
    assert none["vs_best_default"] == "no default split ran"
