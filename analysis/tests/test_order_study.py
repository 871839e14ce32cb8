"""The order-study analysis (interplace_analysis.order_study) on result files written here
in the format of docs/results-format.md, as a simulate-only sweep lays them out, with
planted effects: the tables must find them, and must not find effects that are not
there."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from interplace_analysis import order_study as st
from interplace_analysis.cli import main
from interplace_analysis.h5file import ResultFormatError

from resultfile import Cfg, write_result_file

ORDERS = ["lexical", "topo-lifo", "dfs-pre"]


def write_study(path, times, models=None, episodes=4, cost="h100", same=None,
                heuristic_s=0.01):
    """times: {(model, order, seed): step seconds} of the rl placer, devices 3, beside
    greedy-eft at `heuristic_s` (seed 1); same: {model: "dfs-post=topo-lifo,..."}: those
    orders skipped on the model, naming the order they repeat."""
    models = models or sorted({m for m, _, _ in times})
    seeds = sorted({s for _, _, s in times})
    base = dict(devices=3, micro_batches=1, with_data=False, simulate_only=True,
                rl_preset="wang2022", cost_preset=cost)
    configs = []

    def add(model, order, placer, seed, **kw):
        j = models.index(model)
        graph = {feat: 10 * (j + 1) + i for i, feat in enumerate(st.FEATURES)}
        graph["edge_count"] = graph["node_count"] + 1
        configs.append(Cfg(model=model, family=model.split("-")[0], order=order,
                           placer=placer, seed=seed, index=len(configs),
                           **{"graph": graph, **base, **kw}))

    for (model, order, seed), t in sorted(times.items()):
        add(model, order, "rl", seed, pred_step_s=t,
            rl_curve=list(t * np.linspace(1.5, 1.0, episodes)))
    for model, order in sorted({(m, o) for m, o, _ in times}):
        add(model, order, "greedy-eft", 1, pred_step_s=heuristic_s)
    for model, text in (same or {}).items():
        for pair in text.split(","):
            order, twin = pair.split("=")
            for seed in seeds:
                add(model, order, "rl", seed, status="skipped", same_sequence_as=twin,
                    reason=f"the same node sequence as order '{twin}' (placed once)",
                    graph={})
    write_result_file(path, configs, format_version=3)


def planted(models=("resnet-a", "resnet-b", "gpt-a", "gpt-b"), effect=None, seeds=10, rng=0):
    """Step times with seed noise (sd 2%) and `effect[(model, order)]` multiplying the mean;
    each seed's start is shared by every order (a block effect)."""
    gen = np.random.default_rng(rng)
    effect = effect or {}
    times = {}
    for m in models:
        block = gen.normal(1.0, 0.05, seeds)
        for o in ORDERS:
            noise = gen.normal(1.0, 0.02, seeds)
            for s in range(seeds):
                times[(m, o, s + 1)] = 0.01 * effect.get((m, o), 1.0) * block[s] * noise[s]
    return times


def test_planted_best_order_found_with_interval(tmp_path):
    eff = {(m, "dfs-pre"): 0.8 for m in ("resnet-a", "resnet-b")}
    write_study(tmp_path / "s.h5", planted(effect=eff))
    study = st.load_order_study([tmp_path / "s.h5"])
    best = st.best_table(study).set_index("model")
    for m in ("resnet-a", "resnet-b"):
        assert best.loc[m, "best_order"] == "dfs-pre"
        # 1 / 0.8 = 1.25 faster than topo-lifo; the interval holds it and excludes 1.
        assert best.loc[m, "speedup_low"] < 1.25 < best.loc[m, "speedup_high"]
        assert best.loc[m, "speedup_low"] > 1.1
        assert best.loc[m, "friedman_p"] < 0.001
        assert best.loc[m, "order_share"] > 0.5
    fam = st.family_table(study)
    winner = fam[(fam["family"] == "resnet") & fam["is_best"]]
    assert list(winner["order"]) == ["dfs-pre"] and winner["ci_high"].iloc[0] < 0.95


def test_no_effect_is_not_significant(tmp_path):
    write_study(tmp_path / "s.h5", planted(rng=3))
    best = st.best_table(st.load_order_study([tmp_path / "s.h5"]))
    assert (best["friedman_p"] > 0.01).all(), best[["model", "friedman_p"]]
    # Intervals of the advantage over topo-lifo include 1 (no order is really better).
    assert ((best["speedup_low"] <= 1.0) & (1.0 <= best["speedup_high"])).all()


def test_identical_orders_give_no_test(tmp_path):
    times = {(m, o, s): 0.01 for m in ("gpt-a",) for o in ORDERS for s in range(1, 5)}
    write_study(tmp_path / "s.h5", times)
    best = st.best_table(st.load_order_study([tmp_path / "s.h5"]))
    assert np.isnan(best["friedman_p"].iloc[0]) and best["speedup_vs_topo"].iloc[0] == 1.0
    assert best["best_order"].iloc[0] == "tie: all" and best["tied"].iloc[0] == 3


def test_feature_correlation_sign(tmp_path):
    # dfs-pre gains more the deeper the model (depth grows with the model's index).
    models = [f"resnet-{i}" for i in range(6)]
    eff = {(m, "dfs-pre"): 1.0 - 0.05 * i for i, m in enumerate(models)}
    write_study(tmp_path / "s.h5", planted(models=models, effect=eff))
    study = st.load_order_study([tmp_path / "s.h5"])
    corr = st.feature_correlations(study, st.order_table(study))
    row = corr[(corr["order"] == "dfs-pre") & (corr["feature"] == "depth")].iloc[0]
    assert row["spearman_rho"] < -0.8 and row["models"] == 6


def test_report_cli_writes_tables_and_plots(tmp_path, capsys):
    write_study(tmp_path / "a.h5", planted(models=("resnet-a", "gpt-a")))
    write_study(tmp_path / "b.h5", planted(models=("resnet-a",)), cost="profile:p/<model>.tsv")
    out = tmp_path / "rep"
    assert main(["order-study", str(tmp_path / "a.h5"), str(tmp_path / "b.h5"), "--out",
                 str(out), "--quiet"]) == 0
    csv = pd.read_csv(out / "tables" / "order_study_best.csv")
    assert set(csv["cost_device"]) == {"h100", "cpu-profile"} and len(csv) == 3
    assert (out / "plots" / "order_study_curves_h100_k3.png").is_file()
    assert "Friedman" in (out / "report.md").read_text()


def test_bad_files_fail_clearly(tmp_path, capsys):
    (tmp_path / "x.h5").write_text("not hdf5")
    assert main(["order-study", str(tmp_path / "x.h5"), "--out", str(tmp_path / "o")]) == 2
    assert "not an HDF5 file" in capsys.readouterr().err
    # A sweep that trained (no simulate-only configuration) is not a study.
    write_result_file(tmp_path / "t.h5", [Cfg()])
    with pytest.raises(ResultFormatError, match="no simulate-only configurations"):
        st.load_order_study([tmp_path / "t.h5"])
    assert main(["order-study", str(tmp_path / "t.h5"), "--out", str(tmp_path / "o")]) == 2
    assert "simulate_only = 1" in capsys.readouterr().err
    # Simulate-only, but no rl placer: nothing learned to compare orders by.
    write_result_file(tmp_path / "h.h5", [Cfg(simulate_only=True, with_data=False,
                                              pred_step_s=0.01, placer="greedy-eft")])
    with pytest.raises(ResultFormatError, match="no simulate-only configuration of the rl"):
        st.load_order_study([tmp_path / "h.h5"])


def test_study_rows_come_from_the_configurations(tmp_path):
    """Runs, baselines, features and the skipped orders as the sweep wrote them."""
    times = {("enas-a", o, s): 0.01 + 0.001 * s for o in ORDERS for s in (1, 2)}
    write_study(tmp_path / "s.h5", times, same={"enas-a": "dfs-post=topo-lifo"})
    study = st.load_order_study([tmp_path / "s.h5"])
    assert len(study.runs) == 6 and set(study.runs["status"]) == {"ok"}
    assert sorted(study.runs["step_time_s"]) == sorted(times.values())
    assert list(study.baselines["placer"]) == ["greedy-eft"] * 3
    (m,) = study.models.to_dict("records")
    assert m["same_orders"] == "dfs-post=topo-lifo" and m["distinct_orders"] == 3
    assert m["depth"] == 10.0 and m["node_count"] == 14.0
    curves = study.curves(study.ok)
    assert all(len(c) == 4 and c[-1] == t for c, t in zip(curves, study.ok["step_time_s"]))
    assert study.commands == ["interplace sweep runs/configs/fixture.toml steps=9"]


def family_study(tmp_path, effect=0.9, graphs=8, rng=0, **kwargs):
    models = [f"enas-{i}" for i in range(graphs)]
    eff = {(m, "dfs-pre"): effect for m in models}
    write_study(tmp_path / "f.h5", planted(models=models, effect=eff, rng=rng), **kwargs)
    return st.load_order_study([tmp_path / "f.h5"])


def test_family_effect_found_across_graphs(tmp_path):
    study = family_study(tmp_path)
    tests, pairs = st.family_tests(study)
    row = tests.iloc[0]
    assert row["family"] == "enas" and row["graphs"] == 8 and row["orders"] == 3
    assert row["best_order"] == "dfs-pre" and row["best_ci_high"] < 0.97
    # Every graph ranks dfs-pre first: the smallest Friedman p for 8 blocks and 3 orders.
    assert row["friedman_p"] < 0.01 and row["kendall_w"] > 0.5
    assert row["best_beats_significantly"] == 2 and row["of"] == 2
    assert row["order_share"] > 0.5
    against = pairs[(pairs["order_a"] == "dfs-pre") | (pairs["order_b"] == "dfs-pre")]
    assert against["significant"].all() and (against["p_holm"] >= against["p"]).all()
    fam = st.family_table(study).set_index("order")
    assert fam.loc["dfs-pre", "wins"] == 8 and fam.loc["dfs-pre", "mean_rank"] == 1.0


def test_no_family_effect_is_not_significant(tmp_path):
    tests, pairs = st.family_tests(family_study(tmp_path, effect=1.0, rng=1))
    assert tests.iloc[0]["friedman_p"] > 0.01 and not pairs["significant"].any()
    assert tests.iloc[0]["order_share"] < 0.3


def test_repeated_orders_count_once_across_a_family(tmp_path):
    """dfs-post repeats topo-lifo on every graph: not a treatment of its own; bfs-by-name
    repeats lexical on one graph only: a treatment that takes lexical's runs there."""
    models = [f"nmt-{i}" for i in range(5)]
    times = {k: v for k, v in planted(models=models).items()}
    for m in models:
        for s in range(1, 11):
            times[(m, "bfs-by-name", s)] = times[(m, "lexical", s)] * 1.1
    del_keys = [k for k in times if k[0] == "nmt-0" and k[1] == "bfs-by-name"]
    for k in del_keys:
        del times[k]
    same = {m: "dfs-post=topo-lifo" for m in models}
    same["nmt-0"] = "dfs-post=topo-lifo,bfs-by-name=lexical"
    write_study(tmp_path / "r.h5", times, same=same)
    study = st.load_order_study([tmp_path / "r.h5"])
    (fr,) = st.family_runs(study)
    assert fr.orders == ["bfs-by-name", "dfs-pre", "lexical", "topo-lifo"]
    assert fr.same_everywhere == {"dfs-post": "topo-lifo"} and fr.graphs == models
    g0 = fr.graphs.index("nmt-0")
    np.testing.assert_array_equal(fr.x[g0, 0], fr.x[g0, 2])
    fam = st.family_table(study).set_index("order")
    assert fam.loc["topo-lifo", "same_as"] == "dfs-post" and "dfs-post" not in fam.index
    tests, pairs = st.family_tests(study)
    assert tests.iloc[0]["orders"] == 4 and len(pairs) == 6
    assert tests.iloc[0]["same_everywhere"] == "dfs-post=topo-lifo"


def test_family_baselines_and_report(tmp_path, capsys):
    # rl at about 10 ms (dfs-pre 9 ms), heuristics at 9.5 ms.
    study = family_study(tmp_path, heuristic_s=0.0095)
    b = st.family_baselines(study).set_index("order")
    assert b.loc["dfs-pre", "rl_vs_best_heuristic_median"] < -0.02
    assert b.loc["lexical", "rl_vs_best_heuristic_median"] > 0.02
    assert b.loc["dfs-pre", "rl_faster_on"] == 8 and b.loc["dfs-pre", "models"] == 8
    assert b.loc["(best of each)", "rl_vs_best_heuristic_median"] < -0.02
    corr = st.feature_correlations(study, st.order_table(study), st.best_table(study))
    assert {"relative", "order_share", "spread"} <= set(corr["target"])
    out = tmp_path / "rep"
    assert main(["order-study", str(tmp_path / "f.h5"), "--out", str(out), "--quiet"]) == 0
    assert (out / "tables" / "order_study_family_tests.csv").is_file()
    assert (out / "plots" / "order_study_families_h100_k3.png").is_file()


def test_report_and_compare_name_simulate_only_configurations(tmp_path, capsys):
    """report and compare read a study's file as any other result file and say why its
    configurations are in none of their step-time tables."""
    write_study(tmp_path / "s.h5", planted(models=("gpt-a",), seeds=2))
    out = tmp_path / "rep"
    assert main(["report", str(tmp_path / "s.h5"), "--out", str(out), "--quiet"]) == 0
    assert "are simulate-only configurations" in (out / "report.md").read_text()
    assert main(["compare", str(tmp_path / "s.h5"), str(tmp_path / "s.h5"),
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    wheres = {u["where"] for u in doc["unmatched"]}
    assert wheres == {f"simulate-only in {tmp_path / 's.h5'} (no measured steps)"}, wheres
