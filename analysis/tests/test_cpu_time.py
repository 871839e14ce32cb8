"""The runtime's CPU time beside its wall time (ranks/*_cpu_s, timeline/cpu_s): read where
a file has it, absent (NaN, no column) where it does not, and the clock of the
pass-through table (strategy_study.passthrough_table)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from resultfile import TIMELINE, Cfg, write_result_file

from interplace_analysis import load_results
from interplace_analysis import strategy_study as study


@pytest.fixture(scope="module")
def mixed_file(tmp_path_factory):
    """One group with CPU times (cpu_share 0.5) and one without, as `sweep --resume`
    leaves a file begun by an older binary."""
    cfgs = [Cfg(order="topo", index=0, timeline=TIMELINE, cpu_share=0.5),
            Cfg(order="dfs", index=1, timeline=TIMELINE)]
    return write_result_file(tmp_path_factory.mktemp("cpu") / "mixed.h5", cfgs,
                             format_version=3)


def test_cpu_times_are_read_where_present(mixed_file):
    r = load_results([mixed_file])
    c = r.configs.set_index("order")
    assert c.loc["topo", "forward_cpu_s"] == pytest.approx(0.5 * c.loc["topo", "forward_s"])
    assert c.loc["topo", "backward_cpu_s"] == pytest.approx(0.5 * c.loc["topo", "backward_s"])
    assert math.isnan(c.loc["dfs", "forward_cpu_s"])  # the older group: no CPU time
    new, old = (r.timelines[c.loc[o, "run_id"]] for o in ("topo", "dfs"))
    assert new["cpu_s"].tolist() == pytest.approx(0.5 * (new["end_s"] - new["start_s"]))
    assert "cpu_s" not in old
    ranks = r.rank_summary.set_index("run_id").loc[c.loc["topo", "run_id"]]
    assert (ranks["step_cpu_s"] > 0).all()


def test_an_older_file_still_loads(tmp_path):
    """Version 1, written before CPU times: every table builds, the CPU columns are NaN."""
    path = write_result_file(tmp_path / "old.h5", [Cfg(timeline=TIMELINE)])
    r = load_results([path])
    assert r.configs["forward_cpu_s"].isna().all()
    assert r.configs["forward_s"].notna().all()


def _timeline(full: float, through: float, full_cpu: float | None, through_cpu: float | None):
    """Rank 1 runs a full backward B0 and a pass-through b1; rank 0 only B0."""
    rows = [(0, "backward", 0.0, 1.0, "B0", 1.0),
            (1, "backward", 0.0, full, "B0", full_cpu),
            (1, "comm_wait", full, full + 0.5, "r1", 0.01),
            (1, "backward", full + 0.5, full + 0.5 + through, "b1", through_cpu)]
    frame = pd.DataFrame(rows, columns=["rank", "kind", "start_s", "end_s", "action", "cpu_s"])
    return frame if full_cpu is not None else frame.drop(columns="cpu_s")


def _table(measured: list[pd.DataFrame], simulated: pd.DataFrame) -> pd.DataFrame:
    ids = [f"r{i}" for i in range(len(measured))]
    runs = pd.DataFrame({"run_id": ids, "strategy_label": "pairwise",
                         "cost_device": "profile:p.tsv"})
    results = SimpleNamespace(timelines=dict(zip(ids, measured, strict=True)),
                              predicted_timelines={i: simulated for i in ids})
    return study.passthrough_table(runs, results, "m").frame.set_index("rank")


SIMULATED = _timeline(2.0, 1.0, None, None)  # the simulator's saving: 50%


def test_measured_saving_by_cpu_time_where_the_file_has_it():
    # Wall intervals stretched by another rank's time slices hide the saving; the CPU
    # time shows it.
    row = _table([_timeline(2.0, 2.0, 1.0, 0.52)], SIMULATED).loc[1]
    assert row["measured_clock"] == "cpu"
    assert row["measured_saving"] == pytest.approx(0.48)
    assert row["simulated_saving"] == pytest.approx(0.5)
    assert row["relative_error"] == pytest.approx(-0.04)
    assert row["within_10pct"] == "yes"
    assert row["measured_saved_s"] == pytest.approx(0.48)
    assert row["simulated_saved_s"] == pytest.approx(1.0)


def test_wall_clock_without_cpu_times():
    row = _table([_timeline(2.0, 2.0, None, None)], SIMULATED).loc[1]
    assert row["measured_clock"] == "wall"
    assert row["measured_saving"] == pytest.approx(0.0)
    assert row["relative_error"] == pytest.approx(-1.0)
    assert row["within_10pct"] == "no"


def test_saving_of_the_means_and_the_runs_range():
    t = _table([_timeline(2.0, 2.0, 1.0, 0.6), _timeline(2.0, 2.0, 1.0, 0.4)], SIMULATED)
    row = t.loc[1]
    assert row["runs"] == 2
    assert row["measured_saving"] == pytest.approx(0.5)
    assert row["measured_saving_range"] == "0.400 to 0.600"
    assert row["within_10pct"] == "yes"
    assert 0 not in t.index  # rank 0 has no pass-through pass


def test_a_nan_cpu_time_falls_back_to_the_wall_clock():
    t = _timeline(2.0, 1.0, 1.0, 0.5)
    t.loc[3, "cpu_s"] = np.nan
    assert _table([t], SIMULATED).loc[1, "measured_clock"] == "wall"


def test_runs_of_both_clocks_use_the_cpu_timed_ones():
    t = _table([_timeline(2.0, 2.0, None, None), _timeline(2.0, 2.0, 1.0, 0.5)], SIMULATED)
    row = t.loc[1]
    assert row["measured_clock"] == "cpu"
    assert row["runs"] == 1
    assert row["measured_saving"] == pytest.approx(0.5)


def test_rank_table_has_the_cpu_compute_where_present(mixed_file):
    r = load_results([mixed_file])
    runs = r.ok[r.ok["order"] == "topo"]
    t = study.rank_table(runs, r, "resnet20").frame
    assert t["compute_cpu_s"].tolist() == pytest.approx((0.5 * t["compute_s"]).tolist())
    old = study.rank_table(r.ok[r.ok["order"] == "dfs"], r, "resnet20").frame
    assert old["compute_cpu_s"].isna().all() and old["compute_s"].notna().all()
