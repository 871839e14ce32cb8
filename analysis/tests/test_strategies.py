"""Table 2 (strategies) on the fixture: resnet20 topo contiguous K=2 with global/gpipe
(PATTERN), local (0.5 x PATTERN) and pairwise (0.6 x PATTERN); loss = 2 - 0.1 step."""

from __future__ import annotations

import numpy as np
import pytest
from resultfile import PATTERN

from interplace_analysis.tables import strategies


@pytest.fixture(scope="module")
def table(results):
    return strategies.strategy_table(results).set_index("strategy_label")


def test_only_groups_with_several_strategies(table):
    assert sorted(table.index) == ["global/gpipe", "local", "pairwise"]
    assert set(table["model"]) == {"resnet20"} and set(table["order"]) == {"topo"}


def test_throughput_speedup_and_utilisation(table):
    assert table.loc["global/gpipe", "samples_per_s"] == pytest.approx(8 * 32 / sum(PATTERN))
    assert table.loc["local", "speedup"] == pytest.approx(2.0)
    assert table.loc["pairwise", "speedup"] == pytest.approx(1 / 0.6)
    assert table.loc["local", "utilisation"] == pytest.approx(0.95)
    assert table.loc["pairwise", "idle_fraction"] == pytest.approx(0.1)


def test_equal_steps(table):
    assert set(table["equal_step"]) == {8}
    assert table["loss_at_equal_step"].tolist() == pytest.approx([1.2] * 3)
    assert table.loc["local", "accuracy_at_equal_step"] == pytest.approx(0.7)


def test_equal_wall_time_is_where_the_shortest_run_ends(table):
    t_eq = 0.5 * sum(PATTERN)  # local, the fastest
    assert table["equal_time_s"].tolist() == pytest.approx([t_eq] * 3)
    ends = np.cumsum(PATTERN)  # global: measured steps 1..8 end at these times
    assert table.loc["global/gpipe", "step_at_equal_time"] == 4  # ends[3] = 4.01 <= 4.02
    frac = (t_eq - ends[3]) / (ends[4] - ends[3])
    assert table.loc["global/gpipe", "loss_at_equal_time"] == pytest.approx(1.6 - 0.1 * frac)
    pw = 0.6 * ends
    assert table.loc["pairwise", "step_at_equal_time"] == 6
    frac = (t_eq - pw[5]) / (pw[6] - pw[5])
    assert table.loc["pairwise", "loss_at_equal_time"] == pytest.approx(1.4 - 0.1 * frac)
    assert table.loc["pairwise", "accuracy_at_equal_time"] == pytest.approx(
        0.795 * (6 + frac) / 8)
    assert table.loc["local", "step_at_equal_time"] == 8
    assert table.loc["local", "loss_at_equal_time"] == pytest.approx(1.2)


def test_accuracy_cost_against_global_on_eval_accuracy(table):
    assert set(table["accuracy_metric"]) == {"eval"}
    assert set(table["baseline"]) == {"global/gpipe"}
    assert table.loc["local", "accuracy_cost"] == pytest.approx(0.10)
    assert table.loc["pairwise", "accuracy_cost"] == pytest.approx(0.005)
    assert table.loc["global/gpipe", "accuracy_cost"] == pytest.approx(0.0)


def test_training_accuracy_when_no_evaluation(tmp_path):
    from resultfile import Cfg, write_result_file

    from interplace_analysis import load_results
    cs = [Cfg(final_accuracy=0.8), Cfg(strategy="local", pipeline="", scale=0.5,
                                       final_accuracy=0.6)]
    t = strategies.strategy_table(load_results([write_result_file(tmp_path / "s.h5", cs)]))
    t = t.set_index("strategy_label")
    assert set(t["accuracy_metric"]) == {"train@equal_step"}
    assert t.loc["local", "accuracy_cost"] == pytest.approx(0.2)


def test_no_global_baseline_leaves_cost_unknown(tmp_path):
    from resultfile import Cfg, write_result_file

    from interplace_analysis import load_results
    cs = [Cfg(strategy="local", pipeline=""), Cfg(strategy="pairwise", pipeline="")]
    t = strategies.strategy_table(load_results([write_result_file(tmp_path / "s.h5", cs)]))
    assert len(t) == 2 and t["accuracy_cost"].isna().all() and t["speedup"].isna().all()
