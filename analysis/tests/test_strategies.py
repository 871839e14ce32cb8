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


def _best_global_table(tmp_path):
    """global/gpipe (1.0 x PATTERN, 4 MiB), global/1f1b (0.8, 2 MiB), global/zb-h1 (0.4,
    but 8 MiB), pairwise (0.5, 3 MiB) and local (0.7, 1 MiB): five runs each."""
    from resultfile import Cfg, repeated, write_result_file

    from interplace_analysis import load_results
    mib = 1 << 20
    cs = []
    for i, (strategy, pipeline, factor, peak) in enumerate([
            ("global", "gpipe", 1.0, 4), ("global", "1f1b", 0.8, 2), ("global", "zb-h1", 0.4, 8),
            ("pairwise", "", 0.5, 3), ("local", "", 0.7, 1)]):
        cs += repeated(Cfg(strategy=strategy, pipeline=pipeline, peak_memory=peak * mib), 5,
                       seed=i, factor=factor, run_sd=0.01, step_sd=0.005)
    path = write_result_file(tmp_path / "best.h5", cs)
    return strategies.strategy_table(load_results([path])).set_index("strategy_label")


def test_the_best_global_schedule_that_fits_the_memory(tmp_path):
    t = _best_global_table(tmp_path)
    # pairwise (3 MiB): zb-h1 is faster but needs 8 MiB; 1f1b (2 MiB) beats gpipe (4 MiB).
    assert t.loc["pairwise", "best_global"] == "global/1f1b"
    assert t.loc["pairwise", "vs_best_global"] == pytest.approx(0.8 / 0.5, rel=0.03)
    assert t.loc["pairwise", "vs_best_global_verdict"] == "faster"
    assert t.loc["pairwise", "best_global_memory"] == "within the configuration's"
    # zb-h1 is the best global schedule under its own memory, and the baseline still gpipe.
    assert t.loc["global/zb-h1", "best_global"] == "global/zb-h1"
    assert t.loc["global/zb-h1", "vs_best_global_verdict"] == "best global"
    assert t.loc["global/zb-h1", "speedup"] == pytest.approx(1 / 0.4, rel=0.03)
    assert t.loc["global/gpipe", "best_global"] == "global/1f1b"
    assert t.loc["global/gpipe", "vs_best_global_verdict"] == "slower"
    # local (1 MiB): no global schedule fits; compared with nothing rather than all.
    assert t.loc["local", "best_global"] == ""
    assert t.loc["local", "vs_best_global_verdict"] == "no global schedule fits its memory"
    assert np.isnan(t.loc["local", "vs_best_global"])


def test_without_recorded_memory_every_global_schedule_qualifies(tmp_path):
    from resultfile import Cfg, repeated, write_result_file

    from interplace_analysis import load_results
    cs = []
    for i, (strategy, pipeline, factor) in enumerate([
            ("global", "gpipe", 1.0), ("global", "zb-h1", 0.4), ("pairwise", "", 0.5)]):
        cs += repeated(Cfg(strategy=strategy, pipeline=pipeline), 5, seed=i, factor=factor,
                       run_sd=0.01, step_sd=0.005)
    path = write_result_file(tmp_path / "nomem.h5", cs)
    import h5py
    with h5py.File(path, "r+") as f:
        for g in f["configs"].values():
            del g["ranks/peak_memory_bytes"]
    t = strategies.strategy_table(load_results([path])).set_index("strategy_label")
    assert t.loc["pairwise", "best_global"] == "global/zb-h1"
    assert t.loc["pairwise", "best_global_memory"] == "not recorded: any global schedule"
    assert t.loc["pairwise", "vs_best_global_verdict"] == "slower"
