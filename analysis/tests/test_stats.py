"""Statistics helpers against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from interplace_analysis import stats


def test_spearman_matches_the_textbook_formula_without_ties():
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    y = [2.0, 1.0, 4.0, 3.0, 5.0]  # rank differences 1, 1, 1, 1, 0
    n, d2 = 5, 4
    assert stats.spearman(x, y) == pytest.approx(1 - 6 * d2 / (n * (n * n - 1)))
    assert stats.spearman(x, x[::-1]) == pytest.approx(-1.0)
    assert stats.spearman(x, [10 ** v for v in x]) == pytest.approx(1.0)  # monotone only


def test_spearman_with_ties_uses_average_ranks():
    # ranks of y: 1, 2.5, 2.5, 4 -> Pearson with 1..4
    r = np.corrcoef([1, 2, 3, 4], [1, 2.5, 2.5, 4])[0, 1]
    assert stats.spearman([1, 2, 3, 4], [1, 7, 7, 9]) == pytest.approx(r)


def test_spearman_degenerate_inputs_are_nan():
    assert math.isnan(stats.spearman([1, 2], [1, 2]))
    assert math.isnan(stats.spearman([1, 2, 3], [5, 5, 5]))
    assert math.isnan(stats.spearman([1, 2, float("nan")], [1, 2, 3]))


def test_mape():
    assert stats.mape([1.1, 0.9, 2.0], [1.0, 1.0, 2.0]) == pytest.approx(100 * 0.2 / 3)
    assert math.isnan(stats.mape([], []))


def test_geomean_and_overlap():
    assert stats.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert stats.intervals_overlap((1, 2), (2, 3))
    assert not stats.intervals_overlap((1, 2), (2.1, 3))
    assert stats.intervals_overlap((1, 2), (float("nan"), 3))


def test_the_one_median_means_the_two_middle_values_of_an_even_count():
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert stats.median([1.0, 2.0, 2.0, 100.0]) == 2.0
    assert stats.median([1.0, float("nan"), 3.0]) == 2.0  # NaN dropped
    assert math.isnan(stats.median([])) and math.isnan(stats.median([float("nan")]))
    assert stats.median(np.array([[1.0, 5.0], [2.0, 7.0]]), axis=0).tolist() == [1.5, 6.0]


def test_every_median_of_the_package_is_the_one_median():
    """No module computes a median another way (np.median/.median() outside stats)."""
    from pathlib import Path
    pkg = Path(stats.__file__).parent
    for f in pkg.rglob("*.py"):
        if f.name == "stats.py":
            continue
        text = f.read_text()
        assert "np.median" not in text and "nanmedian" not in text, f
        assert ".median()" not in text, f


def _runs(center, n, seed, sd=0.03):
    rng = np.random.default_rng(seed)
    return stats.Runs(center * np.exp(rng.normal(0, sd, n)),
                      [center * np.exp(rng.normal(0, 0.01, 8)) for _ in range(n)])


def test_ratio_over_runs_uses_scipy_and_brackets_the_point():
    a, b = _runs(2.0, 6, 1), _runs(1.0, 6, 2)
    est = stats.ratio(a, b, seed=7)
    assert est.point == pytest.approx(np.median(a.values) / np.median(b.values))
    assert est.method == "runs" and est.runs == (6, 6)
    assert est.low < est.point < est.high
    assert 1.8 < est.low and est.high < 2.2
    assert est.p == pytest.approx(2 / 924)  # complete separation of 6 runs against 6
    assert stats.ratio(a, b, seed=7) == est
    assert stats.ratio(a, b, seed=8) != est


def test_single_run_falls_back_to_the_within_run_block_bootstrap():
    one = stats.Runs([1.0], [np.array([1.0, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.04])])
    est = stats.ratio(one, one, seed=3)
    assert est.method == "within-run" and est.runs == (1, 1)
    assert est.point == 1.0 and est.low < 1.0 < est.high
    assert stats.verdict(est, 0.0) == "not enough runs (n=1 vs 1: not enough repeats)"


def test_block_bootstrap_keeps_blocks_of_consecutive_steps():
    steps = np.arange(27, dtype=float)  # blocks of ceil(27^(1/3)) = 3
    rng = np.random.default_rng(0)
    reps = stats.block_bootstrap_medians(steps, rng, n_resamples=50)
    assert reps.shape == (50,)
    assert np.all((reps >= 1) & (reps <= 25))


def test_median_estimate_of_constant_runs_is_a_point():
    est = stats.median_estimate(stats.Runs(np.full(5, 3.0)), seed=1)
    assert (est.point, est.low, est.high) == (3.0, 3.0, 3.0)
    assert math.isnan(stats.median_estimate(stats.Runs(np.zeros(0)), seed=1).point)


def test_holm_matches_hand_computation():
    p = [0.01, 0.04, 0.03, float("nan"), 0.005]
    # sorted: 0.005 (x4) 0.01 (x3) 0.03 (x2) 0.04 (x1), running maximum
    assert stats.holm(p)[[4, 0, 2, 1]].tolist() == pytest.approx([0.02, 0.03, 0.06, 0.06])
    assert math.isnan(stats.holm(p)[3])
    assert stats.holm([0.9, 0.8]).tolist() == [1.0, 1.0]


def test_verdict_rule_needs_three_runs_an_interval_without_1_and_holm():
    fast = stats.Estimate(0.8, 0.75, 0.85, 0.001, (3, 3), "runs")
    assert stats.verdict(fast, 0.003) == "faster"
    assert stats.verdict(fast, 0.003, lower_is_better=False) == "slower"
    assert stats.verdict(fast, 0.06) == "same"  # Holm took it away
    assert stats.verdict(stats.Estimate(0.8, 0.75, 0.85, 0.001, (3, 2), "runs"), 0.003) == \
        "not enough runs (n=3 vs 2: not enough repeats)"
    assert stats.verdict(stats.Estimate(0.99, 0.95, 1.03, 0.5, (5, 5), "runs"), 0.5) == "same"


def _est(low, high, runs=(5, 5)):
    return stats.Estimate(math.sqrt(low * high), low, high, 0.001, runs, "runs")


def test_the_band_is_symmetric_in_log_ratio():
    lo, hi = stats.band(0.05)
    assert hi == 1.05 and lo == pytest.approx(0.952381) and lo * hi == pytest.approx(1.0)
    assert stats.band(0.0) == (1.0, 1.0)
    assert stats.effect_text(0.05) == "5%" and stats.effect_text(0.025) == "2.5%"


def test_verdict_needs_the_whole_interval_beyond_the_band_for_step_times():
    lo, hi = stats.band(0.05)
    below, above = np.nextafter(lo, 0.0), np.nextafter(hi, 2.0)
    # faster: the high end just below 1 / 1.05; on the edge it is not shown beyond
    assert stats.verdict(_est(0.90, below), 0.003) == "faster"
    assert stats.verdict(_est(0.90, lo), 0.003) == "same (faster, not shown beyond 5%)"
    # slower: the low end just above 1.05
    assert stats.verdict(_est(above, 1.2), 0.003) == "slower"
    assert stats.verdict(_est(hi, 1.2), 0.003) == "same (slower, not shown beyond 5%)"
    # significant, but the whole interval inside the band: smaller than 5%
    assert stats.verdict(_est(lo, 0.99), 0.003) == "same (faster, within 5%)"
    assert stats.verdict(_est(1.01, hi), 0.003) == "same (slower, within 5%)"
    # beyond the band, but not significant: plain same; too few runs: no verdict
    assert stats.verdict(_est(0.80, 0.90), 0.06) == "same"
    assert stats.verdict(_est(0.80, 0.90, (5, 2)), 0.003) == \
        "not enough runs (n=5 vs 2: not enough repeats)"


def test_for_throughput_the_band_is_the_same_and_the_direction_flips():
    lo, hi = stats.band(0.05)
    below, above = np.nextafter(lo, 0.0), np.nextafter(hi, 2.0)
    assert stats.verdict(_est(above, 1.2), 0.003, lower_is_better=False) == "faster"
    assert stats.verdict(_est(hi, 1.2), 0.003, lower_is_better=False) == \
        "same (faster, not shown beyond 5%)"
    assert stats.verdict(_est(0.90, below), 0.003, lower_is_better=False) == "slower"
    assert stats.verdict(_est(1.01, 1.04), 0.003, lower_is_better=False) == \
        "same (faster, within 5%)"
    # Step time down 4.9% [4.9%, 7%] is throughput up 5.2% [5.2%, 7.5%]: one verdict for
    # both, where a band [0.95, 1.05] would call the throughput and not the step time.
    step = _est(0.93, 0.951)
    thr = _est(1 / step.high, 1 / step.low)
    assert stats.verdict(step, 0.003) == stats.verdict(thr, 0.003, False) == "faster"


def test_swapping_the_sides_only_swaps_the_direction():
    def swap(v: str) -> str:
        return v.replace("faster", "@").replace("slower", "faster").replace("@", "slower")
    rng = np.random.default_rng(2)
    seen = set()
    for low, width in zip(rng.uniform(0.85, 1.1, 300), rng.uniform(0.0, 0.1, 300)):
        est = _est(low, low + width)
        swapped = _est(1 / est.high, 1 / est.low)
        v = stats.verdict(est, 0.01)
        assert stats.verdict(swapped, 0.01) == swap(v), (est, v)
        seen.add(v)
    assert {"faster", "slower", "same", "same (faster, within 5%)",
            "same (slower, not shown beyond 5%)"} <= seen


def test_min_effect_0_is_the_rule_without_a_band():
    small = _est(0.97, 0.99)
    assert stats.verdict(small, 0.003) == "same (faster, within 5%)"
    assert stats.verdict(small, 0.003, min_effect=0.0) == "faster"
    assert stats.evidence(_est(1.0, 1.02), 0.003, 0.0) == stats.NOISE


def test_exceeds_is_the_rule_above_1_only():
    assert stats.exceeds(_est(1.06, 1.2), 0.003)
    assert not stats.exceeds(_est(1.03, 1.2), 0.003)  # not wholly beyond 5%
    assert stats.exceeds(_est(1.03, 1.2), 0.003, min_effect=0.02)
    assert not stats.exceeds(_est(0.8, 0.9), 0.003)  # beyond, but below 1
    assert not stats.exceeds(_est(1.06, 1.2), 0.2)  # Holm took it away


def test_permutation_p_is_exact_over_runs():
    def ratio_p(a, b):
        return stats.ratio(stats.Runs(a), stats.Runs(b), seed=1).p
    # complete separation: 2 of the C(6,3) = 20 splits are as extreme -> 0.1, never < 0.05
    assert ratio_p([1.0, 1.01, 1.02], [1.2, 1.21, 1.22]) == pytest.approx(2 / 20)
    assert math.isnan(ratio_p([1.0], [1.2, 1.3]))  # one run: nothing to permute
    assert ratio_p([1.0, 1.01, 1.02, 1.03, 1.04], [1.2, 1.21, 1.22, 1.23, 1.24]) == \
        pytest.approx(2 / 252)
    assert ratio_p([1.0, 1.2, 1.1], [1.1, 1.0, 1.2]) == pytest.approx(1.0)


def test_the_exact_permutation_p_is_scipys_to_the_bit():
    """One pair of few runs: permutation_p enumerates the splits itself (scipy's set-up
    dominated large tables); the p-values must be scipy's exact test's, ties included."""
    from scipy import stats as sps

    def scipy_p(a, b):
        def stat(x, y, axis=-1):
            return np.abs(np.mean(x, axis=axis) - np.mean(y, axis=axis))
        return float(sps.permutation_test((a, b), stat, permutation_type="independent",
                                          vectorized=True, n_resamples=stats.N_PERMUTATIONS,
                                          alternative="greater", rng=0).pvalue)
    rng = np.random.default_rng(0)
    cases = 0
    for n1, n2 in [(2, 2), (2, 5), (3, 3), (4, 6), (5, 5), (7, 2), (6, 7)]:
        for values in ("equal", "ties", "apart", "close"):
            if values == "equal":
                a, b = np.full(n1, 0.7), np.full(n2, 0.7)
            elif values == "ties":
                a, b = rng.choice([0.0, 0.5, 1.0], n1), rng.choice([0.0, 0.5, 1.0], n2)
            else:
                shift = 0.5 if values == "apart" else 0.01
                a, b = rng.normal(0, 0.1, n1), rng.normal(shift, 0.1, n2)
            assert stats._exact_permutation_p(a, b) == scipy_p(a, b), (n1, n2, values)
            cases += 1
    assert cases == 28
    # permutation_p takes that path exactly when scipy's test would be exact
    runs = [stats.Runs(np.exp(rng.normal(0, 0.1, 7))), stats.Runs(np.exp(rng.normal(0, 0.1, 6)))]
    logs = [np.log(r.values) for r in runs]
    assert stats.permutation_p(runs, [(0, 1)], seed=3) == scipy_p(*logs)


def test_a_to_a_comparisons_rarely_call_a_difference():
    """Runs of one distribution on both sides: the verdict rule's false-positive rate
    stays at or below 5% (a bootstrap p-value on 3 runs gave about 10%;
    here 4 runs a side)."""
    rng = np.random.default_rng(0)
    calls = 0
    for trial in range(200):
        a, b = np.exp(rng.normal(0, 0.05, (2, 4)))
        est = stats.ratio(stats.Runs(a), stats.Runs(b), seed=trial)
        calls += stats.verdict(est, est.p) in ("faster", "slower")
    assert calls <= 10


def test_stratified_permutation_for_a_geometric_mean_of_ratios():
    sides = [stats.Runs([1.2, 1.21, 1.22, 1.23, 1.24]), stats.Runs([1.0, 1.01, 1.02, 1.03, 1.04]),
             stats.Runs([2.4, 2.41, 2.42, 2.43, 2.44]), stats.Runs([2.0, 2.01, 2.02, 2.03, 2.04])]
    est = stats.joint_estimate(
        sides, lambda m: np.sqrt(m[0] / m[1] * m[2] / m[3]), seed=3, pairs=[(0, 1), (2, 3)])
    assert est.point == pytest.approx(np.sqrt(1.22 / 1.02 * 2.42 / 2.02))
    # complete separation in both pairs: only 4 of the (252^2) stratified relabellings
    # are as extreme, so the sampled p is its floor 1 / (N + 1)
    assert est.p == pytest.approx(1 / (stats.N_PERMUTATIONS + 1)) and est.low > 1.15


def test_accuracy_comparisons_refused_at_chance_or_when_identical():
    assert stats.accuracy_refusal("fashion-mnist", {"global": 0.80, "local": 0.75}) == ""
    assert stats.accuracy_refusal("fashion-mnist", {"global": 0.22, "local": 0.14}) \
        .startswith("at chance level (local")
    assert stats.accuracy_refusal("text", {"global/gpipe": 0.0964, "local": 0.0964}) \
        .startswith("identical across strategies")
    assert stats.accuracy_refusal("synthetic", {"a": 0.5}) == "accuracy missing"


def test_seed_for_is_stable():
    assert stats.seed_for("a", 1) == stats.seed_for("a", 1)
    assert stats.seed_for("a", 1) != stats.seed_for("a", 2)
