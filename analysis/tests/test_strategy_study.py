"""The strategies study (strategy_study.py, `strategies` subcommand): final accuracy over
seeds with t intervals, paired differences, comparable times, per-rank table, curves."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from resultfile import PATTERN, Cfg, write_result_file
from scipy import stats as sps

from interplace_analysis import load_results
from interplace_analysis import strategy_study as study
from interplace_analysis.cli import main
from interplace_analysis.exported import from_results

# Final test accuracy per (label, seed): pairwise is 2 points above local on every seed.
ACC = {("e2e", 1): 0.90, ("e2e", 2): 0.91, ("e2e", 3): 0.92,
       ("local", 1): 0.80, ("local", 2): 0.83, ("local", 3): 0.81,
       ("pairwise", 1): 0.82, ("pairwise", 2): 0.85, ("pairwise", 3): 0.83}


def _cfg(label: str, seed: int, index: int) -> Cfg:
    strategy, pipeline = ("global", "e2e") if label == "e2e" else (label, "gpipe")
    acc = ACC[(label, seed)]
    # Two epochs of 4 steps each: evaluations after steps 3 and 7.
    return Cfg(strategy=strategy, pipeline=pipeline, devices=2, seed=seed, index=index,
               micro_batches=1 if label == "e2e" else 4, eval_accuracy=acc,
               scale=1.0 if label == "e2e" else 0.5,
               evaluations=[(1.0, 3, 1.0, acc - 0.1, 64), (2.0, 7, 0.5, acc, 64)])


@pytest.fixture(scope="module")
def study_file(tmp_path_factory):
    cfgs = [_cfg(label, seed, i) for i, (label, seed) in enumerate(ACC)]
    return write_result_file(tmp_path_factory.mktemp("study") / "study.h5", cfgs)


@pytest.fixture(scope="module")
def report(study_file):
    times = pd.DataFrame({"model": ["resnet20"] * 3,
                          "strategy_label": ["e2e", "local", "pairwise"],
                          "step_time_s": [2.0, 1.0, 1.2], "source": ["sim"] * 3,
                          "capped_step_time_s": [2.0, 0.5, 0.6]})
    return study.build_for_results(load_results([study_file]), times)


def _table(report, prefix):
    return next(t for t in report.tables if t.name.startswith(prefix)).frame


def test_loader_reads_the_evaluations(study_file):
    ev = load_results([study_file]).evaluations
    assert len(ev) == 2 * len(ACC)
    assert set(ev["strategy_label"]) == {"e2e", "local", "pairwise"}
    assert ev[ev["epoch"] == 2.0]["accuracy"].sort_values().tolist() == pytest.approx(
        sorted(ACC.values()))


def test_accuracy_mean_and_t_interval(report):
    t = _table(report, "accuracy_").set_index("strategy")
    assert t.index.tolist() == ["e2e", "local", "pairwise"]  # baselines first
    v = [0.80, 0.83, 0.81]
    half = sps.t.ppf(0.975, 2) * pd.Series(v).std() / math.sqrt(3)
    assert t.loc["local", "mean"] == pytest.approx(sum(v) / 3)
    assert t.loc["local", "high"] - t.loc["local", "mean"] == pytest.approx(half)
    assert t.loc["local", "seeds"] == 3


def test_paired_difference(report):
    d = _table(report, "accuracy_differences").set_index(["a", "b"])
    # pairwise - local is exactly 2 points on every seed: a zero-width interval above 0.
    assert d.loc[("pairwise", "local"), "mean"] == pytest.approx(0.02)
    assert d.loc[("pairwise", "local"), "low"] == pytest.approx(0.02)
    assert d.loc[("pairwise", "local"), "verdict"] == "pairwise better"
    assert d.loc[("pairwise", "e2e"), "verdict"] == "pairwise worse"
    assert ("nwise:3", "local") not in d.index  # no such runs


def test_comparison_pairs_one_family_with_reach_against_reach():
    labels = ["e2e", "global/1f1b", "global/zb-h1", "local", "nwise:4", "pairwise", "nwise:3",
              "pairwise+sum"]
    baselines = ["local", "e2e", "global/1f1b"]
    assert study.comparison_pairs(labels) == (
        [("pairwise", b) for b in baselines]
        + [("nwise:3", b) for b in baselines] + [("nwise:3", "pairwise")]
        + [("nwise:4", b) for b in baselines] + [("nwise:4", "pairwise"), ("nwise:4", "nwise:3")]
        + [("local", "e2e"), ("global/1f1b", "e2e")])
    # Without interlocking runs only the baselines' pairs remain.
    assert study.comparison_pairs(["e2e", "local"]) == [("local", "e2e"), ("global/1f1b", "e2e")]


def test_times_use_the_comparable_step_time(report):
    t = _table(report, "time_").set_index("strategy")
    assert t.loc["local", "steps_per_epoch"] == pytest.approx(4)
    assert t.loc["local", "comparable_epoch_s"] == pytest.approx(4.0)
    assert t.loc["pairwise", "epoch_time_vs_e2e"] == pytest.approx(1.2 / 2.0)
    assert t.loc["pairwise", "capped_epoch_s"] == pytest.approx(4 * 0.6)  # a what-if column
    # The loss differences: every run has eval_loss 0.5 in the fixture.
    d = _table(report, "loss_differences").set_index(["a", "b"])
    assert d.loc[("pairwise", "local"), "mean"] == pytest.approx(0.0)
    assert t.loc["e2e", "measured_step_s"] == pytest.approx(sorted(PATTERN)[len(PATTERN) // 2],
                                                           rel=0.2)
    r = _table(report, "ranks_")
    assert set(r["rank"]) == {0, 1}
    assert r["utilisation"].max() <= 1.0


def test_curves_and_cli(study_file, tmp_path, capsys):
    assert {"accuracy_vs_epoch_resnet20", "accuracy_vs_time_resnet20"} <= set(
        study.build_for_results(load_results([study_file])).figures)
    csv = tmp_path / "times.csv"
    csv.write_text("model,strategy_label,step_time_s,source\nresnet20,e2e,2.0,sim\n")
    out = tmp_path / "out"
    assert main(["strategies", str(study_file), "--out", str(out), "--step-times", str(csv),
                 "--quiet"]) == 0
    assert (out / "strategies.md").read_text().count("![") == 2
    assert (out / "tables" / "accuracy_resnet20.csv").exists()
    bad = tmp_path / "bad.csv"
    bad.write_text("model,step\nresnet20,1\n")
    assert main(["strategies", str(study_file), "--out", str(out), "--step-times",
                 str(bad)]) == 2
    assert "missing columns" in capsys.readouterr().err


# Validation accuracy per (label, seed) at epochs 1, 2, 3: local peaks at epoch 2 on seed 1.
VALIDATION = {"e2e": (0.85, 0.90, 0.91), "local": (0.70, 0.80, 0.79)}


def _validated(label: str, seed: int, index: int) -> Cfg:
    strategy, pipeline = ("global", "e2e") if label == "e2e" else (label, "gpipe")
    v = VALIDATION[label]
    if seed == 2:  # seed 2 peaks at the last epoch
        v = (v[0], v[1], v[1] + 0.02)
    test = [a - 0.01 * seed for a in v]
    return Cfg(strategy=strategy, pipeline=pipeline, devices=2, seed=seed, index=index,
               micro_batches=1 if label == "e2e" else 4, eval_accuracy=test[-1],
               evaluations=[(e + 1.0, 4 * e + 3, 0.5, test[e], 64, 0.4, v[e], 32)
                            for e in range(3)])


def test_the_validation_split_selects_the_epoch(tmp_path):
    cfgs = [_validated(label, seed, i)
            for i, (label, seed) in enumerate((lab, s) for lab in VALIDATION for s in (1, 2, 3))]
    results = load_results([write_result_file(tmp_path / "v.h5", cfgs)])
    ev = results.evaluations
    assert ev["validation_samples"].eq(32).all()
    assert ev["validation_accuracy"].notna().all()
    r = study.build_for_results(results)
    t = _table(r, "selected_").set_index("strategy")
    # local peaks at epoch 2 (0.80 before 0.79), seed 2 at epoch 3 (0.82); e2e at epoch 3.
    assert t.loc["local", "selected_epoch"] == "2, 3, 2"
    assert t.loc["e2e", "selected_epoch"] == "3, 3, 3"
    # The test accuracy of the selected evaluation, not of the last one.
    local = [0.80 - 0.01, 0.82 - 0.02, 0.80 - 0.03]
    assert t.loc["local", "mean"] == pytest.approx(sum(local) / 3)
    assert t.loc["local", "last_below_best_pp"].startswith("0.67")  # (1 + 0 + 1) / 3 points
    d = _table(r, "selected_accuracy_differences").set_index(["a", "b"])
    assert d.loc[("local", "e2e"), "seeds"] == 3
    assert d.loc[("local", "e2e"), "verdict"] == "local worse"
    assert 0.0 <= d.loc[("local", "e2e"), "p"] <= d.loc[("local", "e2e"), "p_holm"] <= 1.0


def test_older_files_have_no_validation_columns(study_file):
    ev = load_results([study_file]).evaluations
    assert ev["validation_accuracy"].isna().all()
    assert ev["validation_samples"].eq(0).all()
    assert not any(t.name.startswith("selected_") for t in
                   study.build_for_results(load_results([study_file])).tables)


def test_holm_can_withdraw_a_verdict():
    # Three pairs with p near 0.03 each: each alone below 0.05, none after Holm.
    runs = pd.DataFrame({
        "strategy_label": ["a"] * 4 + ["b"] * 4 + ["c"] * 4 + ["d"] * 4,
        "seed": [1, 2, 3, 4] * 4,
        "eval_accuracy": [0.50, 0.51, 0.52, 0.53, 0.48, 0.47, 0.51, 0.50,
                          0.49, 0.48, 0.50, 0.52, 0.47, 0.49, 0.50, 0.51]})
    d = study.difference_table(runs, "m", [("a", "b"), ("a", "c"), ("a", "d")]).frame
    assert (d["p_holm"] >= d["p"]).all()
    assert d["p_holm"].max() <= 1.0
    withdrawn = d[(d["p"] < 0.05) & (d["p_holm"] >= 0.05)]
    assert not withdrawn.empty
    assert withdrawn["verdict"].eq("no difference shown after Holm").all()


def test_time_to_reach_the_worst_strategys_final_accuracy(report):
    t = _table(report, "time_to_target").set_index("strategy")
    # Target: local's mean final accuracy (0.80 + 0.83 + 0.81) / 3; e2e reaches it after
    # epoch 2 on seeds 1 and 2 (8 steps) and epoch 1 on seed 3 (0.82: 4 steps), local only
    # on seed 2, pairwise on every seed at epoch 2.
    assert t.loc["e2e", "reached"] == "3 of 3"
    assert t.loc["local", "reached"] == "1 of 3"
    assert t.loc["e2e", "time_s"] == pytest.approx((8 + 8 + 4) / 3 * 2.0)
    assert t.loc["pairwise", "time_s"] == pytest.approx(8 * 1.2)
    assert t.loc["pairwise", "time_vs_e2e"] == pytest.approx(8 * 1.2 / ((8 + 8 + 4) / 3 * 2.0))
    assert math.isnan(t.loc["pairwise", "time_vs_best_global"])  # no global pipeline here


def test_time_to_reach_a_training_loss(tmp_path):
    # No evaluations: the running mean of the training loss. e2e's loss falls by 0.1 a
    # step, local's by 0.05, so the target is local's final running mean.
    cfgs = [Cfg(strategy=strategy, pipeline=pipeline, devices=2, seed=seed,
                index=3 * i + seed, micro_batches=micro, loss_slope=slope)
            for i, (strategy, pipeline, micro, slope) in enumerate(
                (("global", "e2e", 1, 0.1), ("local", "gpipe", 4, 0.05),
                 ("global", "1f1b", 4, 0.1)))
            for seed in (1, 2, 3)]
    results = load_results([write_result_file(tmp_path / "l.h5", cfgs)])
    runs = study._runs(from_results(results))
    times = {"e2e": 1.0, "local": 0.5, "global/1f1b": 0.8}
    t = study.time_to_target_table(runs, results.evaluations, results.curves, "resnet20", times, "sim", window=2).frame
    t = t.set_index("strategy")
    steps = len(PATTERN) + 1  # warm-up step 0 and the measured ones
    last = steps - 1
    target = 2.0 - 0.05 * (last - 0.5)  # local's final running mean of 2
    # e2e's running mean 2 - 0.1 (s - 0.5) reaches it at the first step s at or past:
    first = math.ceil((2.0 - target) / 0.1 + 0.5)
    assert t.loc["e2e", "time_s"] == pytest.approx((first + 1) * 1.0)
    assert t.loc["local", "time_s"] == pytest.approx(steps * 0.5)
    assert t.loc["global/1f1b", "time_vs_best_global"] == pytest.approx(1.0)
    assert t.loc["local", "time_vs_best_global"] == pytest.approx(steps * 0.5 / ((first + 1) * 0.8))
    assert "global/zb-h1" not in t.index  # no step time for it: no row

    # A faster global schedule with a step time and no runs: 1F1B's steps at its own step
    # time, and it becomes the best global schedule.
    times["global/zb-h1"] = 0.6
    t = study.time_to_target_table(runs, results.evaluations, results.curves, "resnet20", times, "sim", window=2).frame
    t = t.set_index("strategy")
    assert t.loc["global/zb-h1", "curve"] == "global/1f1b"
    assert t.loc["global/1f1b", "curve"] == "global/1f1b"
    assert t.loc["global/zb-h1", "reached"] == t.loc["global/1f1b", "reached"]
    assert t.loc["global/zb-h1", "time_s"] == pytest.approx((first + 1) * 0.6)
    assert t.loc["global/zb-h1", "time_vs_best_global"] == pytest.approx(1.0)
    assert t.loc["global/1f1b", "time_vs_best_global"] == pytest.approx(0.8 / 0.6)
    assert t.loc["local", "time_vs_best_global"] == pytest.approx(steps * 0.5 / ((first + 1) * 0.6))
