"""Plots: what is drawn (data of the artists), not only that a PNG appears."""

from __future__ import annotations

import matplotlib.collections as mcoll
import numpy as np
import pytest
import resultfile
from resultfile import PATTERN

from interplace_analysis import plots
from interplace_analysis.tables import strategies


def test_step_time_by_order_one_panel_per_group_orders_by_median(results):
    fig = plots.step_time_by_order(results, "resnet20")
    # contiguous and greedy-eft with global/gpipe; local and pairwise ran topo only
    assert len(fig.axes) == 2
    assert "greedy-eft" in fig.axes[1].get_title()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    # orders by median, each with its n (runs)
    assert labels == ["dfs-pre\nn=1", "bfs\nn=1", "topo\nn=1", "lexical\nn=1"]
    assert "contiguous" in ax.get_title()
    assert ax.get_ylabel() == "step time (ms)"
    # the points are the medians in ms, in that order, each labelled with its value
    (points,) = [ln for ln in ax.lines if ln.get_marker() == "o"]
    assert list(points.get_ydata()) == pytest.approx([804.0, 904.5, 1005.0, 1206.0])
    assert [t.get_text() for t in ax.texts] == ["804", "904.5", "1005", "1206"]
    # an interval is drawn around each point (one run: the block bootstrap of its steps)
    bars = [c for c in ax.collections if isinstance(c, mcoll.LineCollection)]
    segs = [seg for c in bars for seg in c.get_segments()]
    assert len(segs) == 4
    for seg, mid in zip(segs, [804.0, 904.5, 1005.0, 1206.0]):
        assert seg[0][1] <= mid <= seg[1][1] and seg[1][1] > seg[0][1]
    assert plots.step_time_by_order(results, "no-such-model") is None
    assert len(plots.step_time_by_order(results, "gpt-small").axes) == 1  # one order only


def test_throughput_vs_accuracy_points(results):
    fig = plots.throughput_vs_accuracy(strategies.strategy_table(results), "resnet20")
    ax = fig.axes[0]
    points = {c.get_label(): tuple(c.get_offsets()[0]) for c in ax.collections}
    assert points["local (n=1)"] == pytest.approx((2 * 8 * 32 / sum(PATTERN), 0.75))
    assert points["pairwise (n=1)"][1] == pytest.approx(0.845)
    assert "evaluation accuracy" in ax.get_ylabel()
    assert "samples/s" in ax.get_xlabel()
    assert sorted(t.get_text() for t in ax.texts) == [
        "global/gpipe topo/contiguous", "local topo/contiguous", "pairwise topo/contiguous"]
    assert not ax.containers  # without the results: no intervals
    # with them, a samples/s interval around each point (one run: over its steps)
    ax = plots.throughput_vs_accuracy(strategies.strategy_table(results), "resnet20",
                                      results).axes[0]
    assert len(ax.containers) == 3
    for c in ax.containers:
        (bar,) = c.lines[2]
        (x0, _), (x1, _) = bar.get_segments()[0]
        assert x0 < x1


def test_loss_curves_by_step_and_by_time(results):
    cs = resultfile.fixture_configs()
    ids = [cs[0].config_id(), cs[6].config_id()]  # global topo, local topo
    fig = plots.loss_curves(results, ids, "t", equal_time_s=4.02)
    by_step, by_time = fig.axes
    assert by_time.lines[-1].get_xdata()[0] == pytest.approx(4.02)  # the equal-time marker
    g = by_step.lines[0]
    assert list(g.get_xdata()) == list(range(1, 9))
    ticks = by_step.xaxis.get_major_locator()()
    assert all(float(t).is_integer() for t in ticks)  # steps are whole numbers
    assert list(g.get_ydata()) == pytest.approx([2.0 - 0.1 * s for s in range(1, 9)])
    assert list(by_time.lines[1].get_xdata()) == pytest.approx(list(0.5 * np.cumsum(PATTERN)))
    assert plots.loss_curves(results, [], "t") is None


def test_idle_intervals():
    import pandas as pd
    ev = pd.DataFrame({"start_s": [0.6, 0.0], "end_s": [1.0, 0.3]})
    gaps = plots.idle_intervals(ev, 1.04)
    assert [v for gap in gaps for v in gap] == pytest.approx([0.3, 0.3, 1.0, 0.04])
    assert plots.idle_intervals(ev.iloc[:0], 0.5) == [(0.0, 0.5)]


def test_timeline_bars_per_kind_and_idle(results):
    cid = resultfile.fixture_configs()[0].config_id()
    fig = plots.timeline(results, cid)
    ax = fig.axes[0]
    bars = [c for c in ax.collections if isinstance(c, mcoll.PolyCollection)]
    # rank 0: forward, backward, idle; rank 1: backward, comm_wait, forward, optimizer, idle
    assert len(bars) == 8
    legend = sorted(t.get_text() for t in ax.get_legend().get_texts())
    assert legend == ["backward", "comm_wait", "forward", "idle", "optimizer"]
    idle = [c for c in bars if tuple(c.get_facecolor()[0][:3]) == pytest.approx(
        (0.827, 0.827, 0.827), abs=1e-3)]
    spans = sorted(round(float(p.vertices[:, 0].max() - p.vertices[:, 0].min()), 6)
                   for c in idle for p in c.get_paths())
    # in ms: rank 0 idle 300 (300..600) and 40 (1000..1040); rank 1 idle 140 (900..1040)
    assert spans == pytest.approx([40.0, 140.0, 300.0])
    assert "(ms)" in ax.get_xlabel()
    other = resultfile.fixture_configs()[1].config_id()
    assert plots.timeline(results, other) is None  # no timeline recorded
