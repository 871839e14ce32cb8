"""What the analysis does to stay fast on 100,000 configurations (issue #36), and that it
gives the values of the straightforward way."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from interplace_analysis import load_results, stats
from interplace_analysis.h5file import RANK_DATASETS, STEP_DATASETS, STEP_RANK_DATASETS, GroupReader


def test_median_fast_paths_give_numpys_values():
    rng = np.random.default_rng(3)
    for width in (1, 2, 3, 7, 8, 9, 64, 65, 300):
        for rounded in (False, True):  # ties
            a = rng.lognormal(size=(500, width))
            a = np.round(a, 1) if rounded else a
            assert np.array_equal(stats.median(a, axis=1), np.nanmedian(a, axis=1))
            assert np.array_equal(stats.median(a.T, axis=0), np.nanmedian(a.T, axis=0))
    a = rng.lognormal(size=(50, 8))
    a[3, 2] = np.nan  # a NaN: the nanmedian path
    assert np.array_equal(stats.median(a, axis=1), np.nanmedian(a, axis=1), equal_nan=True)
    assert stats.median([2.5]) == 2.5
    assert np.isnan(stats.median([float("nan")]))


def test_step_times_are_read_only_for_a_side_of_one_run():
    asked = []

    def get(run_id):
        asked.append(run_id)
        return np.array([1.0, 1.1, 0.9, 1.05, 0.95, 1.0])
    many = stats.Runs(np.array([1.0, 1.1, 0.9, 1.2]), stats.LazySteps(get, ["a", "b", "c", "d"]))
    other = stats.Runs(np.array([2.0, 2.1, 1.9]), stats.LazySteps(get, ["e", "f", "g"]))
    stats.ratio(many, other, seed=1)
    assert asked == []
    one = stats.Runs(np.array([1.0, float("nan")]), stats.LazySteps(get, ["x", "y"]))
    assert one.n == 1  # the NaN run dropped, its steps with it
    est = stats.ratio(one, other, seed=1)
    assert asked == ["x"] and est.method == "within-run"
    eager = stats.ratio(stats.Runs(np.array([1.0]), [get("x")]), other, seed=1)
    assert (est.low, est.high, est.point) == (eager.low, eager.high, eager.point)


def test_a_runs_within_run_replicates_are_drawn_once_per_seed(fixture_file, tmp_path):
    """Every comparison resting on one run's steps uses that run's one draw (seeded by the
    analysis seed, the run and its steps): the same interval in every table, a new one
    for another seed, an independent one for another file's run of the same id."""
    results = load_results([fixture_file])
    run = results.ok["run_id"].iloc[0]
    value = float(results.ok["step_time_s"].iloc[0])

    def side(r, seed):
        return stats.Runs(np.array([value]), r.lazy_step_times([run], seed))
    a = stats.median_estimate(side(results, 0), seed=11)
    b = stats.median_estimate(side(results, 0), seed=12)  # another comparison's seed
    assert a.method == "within-run" and a.low < a.point < a.high
    assert (a.low, a.high) == (b.low, b.high)
    n = stats.N_RESAMPLES
    assert np.array_equal(results.within_run_scale(run, n, seed=0),
                          results.within_run_scale(run, n, seed=0))
    assert len(results._within_run) == 1  # drawn once
    assert not np.array_equal(results.within_run_scale(run, n, seed=0),
                              results.within_run_scale(run, n, seed=1))
    # The same file loaded again: the same draw, so a run against itself is exactly 1.
    again = load_results([fixture_file])
    same = stats.ratio(side(results, 0), side(again, 0), seed=3)
    assert (same.low, same.point, same.high) == (1.0, 1.0, 1.0)
    # The run's steps changed (another measurement of the same configuration id).
    other = tmp_path / "other.h5"
    other.write_bytes(fixture_file.read_bytes())
    with h5py.File(other, "r+") as f:
        group = f["configs"][results.record(run).id]
        group["steps/step_time_s"][...] = group["steps/step_time_s"][...] * 1.01
    moved = load_results([other])
    assert not np.array_equal(results.measured_step_times(run), moved.measured_step_times(run))
    diff = stats.ratio(side(results, 0), side(moved, 0), seed=3)
    assert diff.low < 1.0 < diff.high


def test_a_large_side_is_resampled_once_and_a_small_one_per_comparison():
    rng = np.random.default_rng(0)
    small = stats.Runs(rng.lognormal(size=stats.SHARED_SIDE_RUNS))
    assert stats.share_replicates(small, seed=5).replicates is None
    big = stats.share_replicates(stats.Runs(rng.lognormal(size=stats.SHARED_SIDE_RUNS + 1)),
                                 seed=5)
    assert big.replicates is not None and big.replicates.shape == (stats.N_RESAMPLES,)
    one = stats.Runs(np.array([1.0]), [np.linspace(0.9, 1.1, 8)])
    a, b = stats.ratio(one, big, seed=1), stats.ratio(one, big, seed=2)
    assert a.method == "within-run" and 0 < a.low <= a.point <= a.high
    assert a.point == b.point  # the same shared side, the same point


def test_fast_group_read_gives_the_checked_reads_arrays(fixture_file):
    reader = GroupReader()
    with h5py.File(fixture_file, "r") as f:
        ids = list(f["configs"])
        for gid in ids:
            g = f["configs"][gid]
            names = [f"steps/{n}" for n in STEP_DATASETS + STEP_RANK_DATASETS] + \
                    [f"ranks/{n}" for n in RANK_DATASETS]
            fast = reader._fast_read(str(fixture_file), gid, tuple(names))
            want = {n: g[n][()] for n in names if n in g}
            assert fast.keys() == want.keys()
            for n in want:
                assert np.array_equal(fast[n], want[n], equal_nan=True)
                assert fast[n].dtype == want[n].dtype
            steps = reader.measured_step_times(str(fixture_file), gid)
            if "steps/step_time_s" in want:
                warm = want.get("steps/warmup", np.zeros(len(want["steps/step_time_s"])))
                assert np.array_equal(steps, want["steps/step_time_s"][warm == 0])
    reader.close()


def test_curve_arrays_are_the_measured_curve(results):
    for run_id in results.ok["run_id"]:
        curve = results.measured_curve(run_id)
        arrays = results.curve_arrays(run_id)
        for col in ("step", "loss", "accuracy", "elapsed_s"):
            assert np.array_equal(curve[col].to_numpy(), arrays[col], equal_nan=True)


def test_compare_of_many_configurations_finds_each_ones_runs(tmp_path):
    import resultfile
    from interplace_analysis.compare import compare_results
    cs = []
    for i, c in enumerate(resultfile.fixture_configs()):
        cs += resultfile.repeated(c, 3, seed=i) if c.status == "ok" else [c]
    path = resultfile.write_result_file(tmp_path / "r.h5", cs, format_version=3)
    r = load_results([path])
    c = compare_results(r, load_results([path]))
    assert len(c.configs) == r.ok["config_key"].nunique()
    assert (c.configs["step_ratio"] == 1.0).all()
    assert set(c.unmatched["where"]) <= {"no ok run in BASE"}


def test_a_large_sides_permutation_p_samples_the_smaller_sides_share():
    rng = np.random.default_rng(4)
    big = stats.Runs(rng.lognormal(0.0, 0.05, size=stats.SHARED_SIDE_RUNS * 5))
    same = stats.Runs(rng.lognormal(0.0, 0.05, size=5))
    slower = stats.Runs(rng.lognormal(np.log(1.3), 0.05, size=5))
    p_same = stats.permutation_p([same, big], [(0, 1)], seed=1)
    p_slower = stats.permutation_p([slower, big], [(0, 1)], seed=1)
    assert p_same > 0.05
    assert p_slower == 1 / (stats.N_PERMUTATIONS + 1)
    est = stats.ratio(slower, stats.share_replicates(big, seed=2), seed=3)
    assert est.method == "runs" and est.low > 1.2 and est.runs == (5, big.n)


def _drawn_permutation_p(pairs, rng, n_resamples=20000):
    """The stratified test drawn relabelling by relabelling (the definition)."""
    observed = abs(np.mean([a.mean() - b.mean() for a, b in pairs]))
    total = np.zeros(n_resamples)
    for a, b in pairs:
        shuffled = rng.permuted(np.tile(np.concatenate([a, b]), (n_resamples, 1)), axis=1)
        total += shuffled[:, :a.size].mean(axis=1) - shuffled[:, a.size:].mean(axis=1)
    return (1 + np.sum(np.abs(total / len(pairs)) >= observed * (1 - 1e-9))) / (n_resamples + 1)


@pytest.mark.parametrize("shift,sizes", [(0.0, [(250, 280)]), (0.008, [(250, 280)]),
                                         (0.012, [(210, 400)]),
                                         (0.005, [(220, 230), (300, 260)])])
def test_two_large_sides_take_the_permutation_tests_normal_limit(shift, sizes):
    """Both sides beyond SHARED_SIDE_RUNS: the normal limit of the relabellings, within the
    drawn test's own noise of it (20,000 draws: sd of p <= 0.0035), on skewed data."""
    rng = np.random.default_rng(5)
    logs = [(shift + 0.02 * rng.gamma(2.0, size=n1), 0.02 * rng.gamma(2.0, size=n2))
            for n1, n2 in sizes]  # skewed log values
    sides = [stats.Runs(np.exp(v)) for pair in logs for v in pair]
    index = [(2 * k, 2 * k + 1) for k in range(len(logs))]
    p = stats.permutation_p(sides, index, seed=1)
    drawn = _drawn_permutation_p([(np.log(sides[i].values), np.log(sides[j].values))
                                  for i, j in index], np.random.default_rng(7))
    assert abs(p - drawn) < 0.015, (p, drawn)
    if shift == 0.0:
        assert p > 0.05
    if shift >= 0.008:
        assert p < 0.05


def test_the_normal_limit_of_constant_sides_is_no_difference():
    same = stats.Runs(np.full(stats.SHARED_SIDE_RUNS + 1, 2.0))
    assert stats.permutation_p([same, same], [(0, 1)], seed=1) == 1.0


def test_the_permutation_tests_batch_changes_no_p_value(monkeypatch):
    rng = np.random.default_rng(1)
    a, b = stats.Runs(rng.lognormal(0, 0.05, 40)), stats.Runs(rng.lognormal(0.01, 0.05, 150))
    p = stats.permutation_p([a, b], [(0, 1)], seed=3)
    for batch in (None, 7):
        monkeypatch.setattr(stats, "PERMUTATION_BATCH", batch)
        assert stats.permutation_p([a, b], [(0, 1)], seed=3) == p


def test_the_multi_pair_permutation_batch_changes_no_p_value(monkeypatch):
    rng = np.random.default_rng(2)
    sides = [stats.Runs(rng.lognormal(0, 0.05, n)) for n in (30, 40, 25, 35)]
    p = stats.permutation_p(sides, [(0, 1), (2, 3)], seed=4)
    for batch in (None, 7):
        monkeypatch.setattr(stats, "PERMUTATION_BATCH", batch)
        assert stats.permutation_p(sides, [(0, 1), (2, 3)], seed=4) == p
