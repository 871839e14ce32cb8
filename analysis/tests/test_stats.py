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


def test_ratio_ci_is_seeded_and_brackets_the_point():
    rng = np.random.default_rng(5)
    a = 1.0 + 0.05 * rng.standard_normal(40)
    b = 0.5 + 0.02 * rng.standard_normal(40)
    point, lo, hi = stats.ratio_ci(a, b, seed=7)
    assert point == pytest.approx(np.median(a) / np.median(b))
    assert lo < point < hi
    assert 1.8 < lo and hi < 2.2
    assert stats.ratio_ci(a, b, seed=7) == (point, lo, hi)
    assert stats.ratio_ci(a, b, seed=8) != (point, lo, hi)


def test_median_ci_of_constant_sample_is_a_point():
    assert stats.median_ci(np.full(5, 3.0), seed=1) == (3.0, 3.0, 3.0)
    assert all(math.isnan(v) for v in stats.median_ci(np.zeros(0), seed=1))


def test_seed_for_is_stable():
    assert stats.seed_for("a", 1) == stats.seed_for("a", 1)
    assert stats.seed_for("a", 1) != stats.seed_for("a", 2)
