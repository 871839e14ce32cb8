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
    return study.build(load_results([study_file]), times)


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
        study.build(load_results([study_file])).figures)
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
