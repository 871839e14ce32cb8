"""The report's new figures, read back from the matplotlib objects: axes, labels, units,
point counts and values against hand-computed ones."""

from __future__ import annotations

import matplotlib.collections as mcoll
import pytest
import resultfile
from resultfile import PATTERN, Cfg, write_result_file

from interplace_analysis import load_results, plots
from interplace_analysis.report import build_report, timeline_runs
from interplace_analysis.tables import scaling, simulator

MEDIAN = 1.005  # median of PATTERN


def _points(ax):
    """The data line of every errorbar series, labelled as the series (its legend)."""
    out = []
    for c in ax.containers:
        line = c.lines[0]
        line.set_label(c.get_label())
        out.append(line)
    return out


def test_predicted_vs_measured_one_point_per_configuration_by_model(results):
    sim = simulator.simulator_table(results)
    fig = plots.predicted_vs_measured(sim)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "measured step time (ms, median over runs)"
    assert ax.get_ylabel() == "predicted step time (ms, simulator)"
    pts = _points(ax)
    # coloured by model: one series per model; 9 configurations with a prediction ran
    labels = sorted(ln.get_label() for ln in pts)
    assert labels == ["gpt-small (1 configs, n>=1)", "resnet20 (8 configs, n>=1)"]
    assert sum(len(ln.get_xdata()) for ln in pts) == 9
    gpt = next(ln for ln in pts if ln.get_label().startswith("gpt"))
    assert gpt.get_xdata()[0] == pytest.approx(2 * MEDIAN * 1e3)  # scale 2.0, in ms
    assert gpt.get_ydata()[0] == pytest.approx(2200.0)  # pred_step_s 2.2
    identity = [ln for ln in ax.lines if ln.get_label() == "predicted = measured"]
    assert len(identity) == 1
    assert list(identity[0].get_xdata()) == list(identity[0].get_ydata())
    assert ax.get_xscale() == "linear"  # 0.5 .. 2.2 s is not a wide range
    # every point is labelled with its row (point) of the simulator table
    assert sorted(int(t.get_text()) for t in ax.texts) == list(range(1, 10))


def test_predicted_vs_measured_log_log_for_a_wide_range(tmp_path):
    cs = [Cfg(order="topo", scale=1.0, pred_step_s=1.0, index=0),
          Cfg(order="bfs", scale=0.01, pred_step_s=0.02, index=1)]
    r = load_results([write_result_file(tmp_path / "w.h5", cs)])
    ax = plots.predicted_vs_measured(simulator.simulator_table(r)).axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert plots.predicted_vs_measured(simulator.simulator_table(r).iloc[:0]) is None


def _scaling_file(tmp_path):
    """resnet20 topo contiguous, global at K = 1, 2, 4 (step x1, x0.6, x0.4) and local
    at K = 2, 4 (x0.5, x0.3): speedups over K=1 global are 1/scale."""
    cs = [Cfg(devices=1, scale=1.0, micro_batches=4),
          Cfg(devices=2, scale=0.6), Cfg(devices=4, scale=0.4),
          Cfg(devices=2, strategy="local", pipeline="", scale=0.5),
          Cfg(devices=4, strategy="local", pipeline="", scale=0.3),
          Cfg(model="gpt-small", family="gpt", devices=2, scale=2.0)]  # one K: no line
    for i, c in enumerate(cs):
        c.index = i
    return load_results([write_result_file(tmp_path / "k.h5", cs)])


def test_speedup_vs_devices_relative_to_the_smallest_k(tmp_path):
    r = _scaling_file(tmp_path)
    table = scaling.scaling_table(r)
    assert set(table["model"]) == {"resnet20"}
    got = {(row["strategy_label"], row["devices"]): row["speedup"]
           for _, row in table.iterrows()}
    assert got == pytest.approx({("global/gpipe", 1): 1.0, ("global/gpipe", 2): 1 / 0.6,
                                 ("global/gpipe", 4): 1 / 0.4, ("local", 2): 1 / 0.5,
                                 ("local", 4): 1 / 0.3})
    assert set(table.loc[table["strategy_label"] == "local", "base_strategy"]) == {
        "global/gpipe"}  # no local at K=1: the plain backprop baseline
    fig = plots.speedup_vs_devices(table, "resnet20")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "devices (K ranks)"
    assert ax.get_ylabel() == "speedup over K=1 (step time ratio)"
    assert [float(t) for t in ax.get_xticks()] == [1.0, 2.0, 4.0]
    lines = {ln.get_label(): ln for ln in _points(ax)}
    assert sorted(lines) == ["global/gpipe topo/contiguous M=4 B=32 (n>=1)",
                             "local topo/contiguous M=4 B=32 (n>=1)"]
    g = lines["global/gpipe topo/contiguous M=4 B=32 (n>=1)"]
    assert list(g.get_xdata()) == [1, 2, 4]
    assert list(g.get_ydata()) == pytest.approx([1.0, 1 / 0.6, 2.5])
    assert len(lines["local topo/contiguous M=4 B=32 (n>=1)"].get_xdata()) == 2
    linear = next(ln for ln in ax.lines if ln.get_label() == "linear")
    assert list(linear.get_ydata()) == [1.0, 2.0, 4.0]
    assert "x2.5" in [t.get_text() for t in ax.texts]  # points labelled
    # an interval around every point
    segs = [s for c in ax.collections if isinstance(c, mcoll.LineCollection)
            for s in c.get_segments()]
    assert len(segs) == 5
    assert plots.speedup_vs_devices(table, "gpt-small") is None


def test_accuracy_vs_time_one_colour_per_strategy(results):
    cs = resultfile.fixture_configs()
    ids = [cs[0].config_id(), cs[6].config_id(), cs[7].config_id()]  # global, local, pairwise
    fig = plots.accuracy_vs_time(results, ids, "resnet20 K=2 topo contiguous")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "measured wall time (s)"
    assert "accuracy" in ax.get_ylabel()
    assert [ln.get_label() for ln in ax.lines] == ["global/gpipe (n=1)", "local (n=1)",
                                                   "pairwise (n=1)"]
    assert all(len(ln.get_xdata()) == len(PATTERN) for ln in ax.lines)
    local = ax.lines[1]  # local: scale 0.5, accuracy rising linearly to 0.7 at step 8
    assert list(local.get_xdata()) == pytest.approx(list(0.5 * __import__("numpy").cumsum(
        PATTERN)))
    assert local.get_ydata()[-1] == pytest.approx(0.7)
    assert plots.accuracy_vs_time(results, [], "t") is None


def _timeline_file(tmp_path):
    tl1 = [(0, "forward", 0.0, 0.2), (0, "backward", 0.2, 0.5)]
    cs = [Cfg(devices=1, scale=0.1, timeline=tl1),  # fastest of all: must not be chosen
          Cfg(devices=2, scale=1.0, timeline=resultfile.TIMELINE),
          Cfg(devices=2, strategy="local", pipeline="", scale=0.5,
              timeline=resultfile.TIMELINE),
          Cfg(devices=2, order="bfs", scale=0.9, timeline=resultfile.TIMELINE)]
    for i, c in enumerate(cs):
        c.index = i
    return cs, load_results([write_result_file(tmp_path / "t.h5", cs)])


def test_timeline_compares_strategies_of_one_placement_never_one_rank(tmp_path):
    cs, r = _timeline_file(tmp_path)
    chosen = timeline_runs(r)
    assert len(chosen) == 1
    title, runs = chosen[0]
    # the topo placement ran global and local; the bfs one only global
    assert runs == [cs[1].config_id(), cs[2].config_id()]
    assert "topo contiguous K=2" in title
    assert cs[0].config_id() not in runs
    fig = plots.timeline_comparison(r, runs, title)
    assert len(fig.axes) == 2
    assert [ax.get_title().split(":")[0] for ax in fig.axes] == ["global/gpipe", "local"]
    for ax in fig.axes:
        assert [t.get_text() for t in ax.get_yticklabels()] == ["rank 0", "rank 1"]
    assert "(ms)" in fig.axes[-1].get_xlabel()
    with pytest.raises(ValueError, match="single rank"):
        plots.timeline_comparison(r, [cs[0].config_id()], "one rank")


def test_only_one_rank_timelines_give_no_timeline_figure(tmp_path):
    cs = [Cfg(devices=1, scale=0.1, timeline=[(0, "forward", 0.0, 0.2)], index=0),
          Cfg(devices=1, strategy="local", pipeline="", scale=0.1,
              timeline=[(0, "forward", 0.0, 0.2)], index=1)]
    r = load_results([write_result_file(tmp_path / "one.h5", cs)])
    assert timeline_runs(r) == []
    rep = build_report(r)
    assert rep.table("efficiency")["devices"].tolist() == [1, 1]
