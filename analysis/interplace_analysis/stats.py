"""Statistics of the tables: one median, intervals over *runs*, Holm, verdicts.

Units. A *run* is one execution of a configuration (one ``/configs`` group; a spec with
``repeats = N`` gives N runs of each configuration, see :mod:`.loader`). A run is
summarised by the median of its measured steps (warm-up excluded): consecutive steps of
one run share caches, a node and its neighbours, so they are not independent samples of
what another run would measure, and their spread is not run-to-run variation.

Intervals. Between runs, a quantity (the median over runs of a per-run value, a ratio
of two such medians, a geometric mean of ratios) gets a 95% percentile bootstrap interval
from :func:`scipy.stats.bootstrap` that resamples *runs* (each side independently,
``N_RESAMPLES`` resamples, seeded). When a side has a single run there is nothing to
resample: that side falls back to a moving-block bootstrap of its measured steps
(:func:`block_bootstrap_medians`, blocks of ``ceil(S**(1/3))`` consecutive steps, which
keeps short-range correlation inside a block); such an interval is within-run jitter
only, ``method`` says ``within-run`` and the verdict rule below refuses it.

p-values. A permutation test over runs (:func:`permutation_p`): under "no difference"
the runs of the two sides are exchangeable, so the p-value is the share of relabellings
of the runs whose |difference of mean log values| is at least the observed one (exact
enumeration with :func:`scipy.stats.permutation_test` when feasible). Not a bootstrap
p-value: with 3 runs a side, a bootstrap test calls every complete separation of the
runs (10% of all outcomes when nothing changed) "significant"; the permutation p cannot
go below 0.1 there, so a verdict needs more runs in practice (4 vs 4: p >= 0.029;
5 vs 5: p >= 0.008; Holm divides the threshold further).
Within one table the p-values of all comparisons are adjusted together with Holm's
step-down method (:func:`holm`), which controls the family-wise error rate at ``ALPHA``.

Verdict of a ratio (:func:`evidence`, :func:`verdict`; every table calls these, none
decides on its own): a difference is claimed only when both sides have at least
``MIN_RUNS`` runs, the Holm-adjusted p-value is below ``ALPHA`` and the whole 95% interval
lies beyond the band ``[1 / (1 + d), 1 + d]`` of the minimum effect ``d`` (``MIN_EFFECT``,
``--min-effect``): its low end above ``1 + d`` or its high end below ``1 / (1 + d)``.
Significance alone is not enough: two sweeps of one build drift by 1-3% against each other
(the machine, not the code), and with enough runs such a drift is significant, so a
verdict also needs an effect worth naming (as asv reports a change only beyond its
``--factor``, 10% by default, and significant). The band is symmetric in log ratio:
swapping the two sides (a ratio r becomes 1 / r, its interval likewise) turns ``faster``
into ``slower`` and changes nothing else, and a throughput ratio, about the inverse of the
step-time ratio, meets the same band (with ``[1 - d, 1 + d]`` a 4.9% drop in step time
would be within 5% and the 5.2% gain in throughput it makes beyond). A significant
difference whose interval is not wholly beyond the band is ``same`` with what was seen in
brackets (``same (faster, within 5%)``). With enough runs and no significance the verdict
is ``same``; with fewer runs it is ``not enough runs`` (whatever the interval says).
``d = 0`` is the rule without a minimum effect (the interval excludes 1).
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

N_RESAMPLES = 2000
N_PERMUTATIONS = 9999
LEVEL = 0.95
ALPHA = 0.05
MIN_RUNS = 3  # runs per side before a difference may be called
# The smallest change of a ratio that a verdict names (the band [1 / 1.05, 1.05]). Two
# sweeps of one build on the 2-core VM differ by 1-3% per (model, strategy) family, a
# drift no number of repeats averages away (the runs of one configuration spread by 4-16%,
# median of max / min - 1, results/2026-12-01-sim-validation.md: the intervals carry
# that); 5% clears the drift with room.
MIN_EFFECT = 0.05


def median(values: Sequence[float] | np.ndarray, axis: int | None = None):
    """The package's one median: NaN values dropped; the middle value of an odd count,
    the mean of the two middle values of an even count (``numpy.median``); NaN when
    nothing is left. The C++ side has the same definition (kernels/median.hpp).
    With ``axis``, an array of medians along that axis (same rules per slice)."""
    if axis is not None:
        a = np.asarray(values, dtype=float)
        if not np.isnan(a).any():  # the same values as nanmedian, faster
            n = a.shape[axis] if a.ndim else 0
            if 0 < n <= 64:  # short rows (bootstrap replicates of a few steps): a sort
                srt = np.sort(a, axis=axis)
                mid = np.take(srt, n // 2, axis=axis)
                # (a + b) / 2 of the two middle values: numpy's median exactly
                return mid if n % 2 else (np.take(srt, n // 2 - 1, axis=axis) + mid) / 2
            return np.median(a, axis=axis)
        with warnings.catch_warnings():  # an all-NaN slice gives NaN, as it should
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmedian(a, axis=axis)
    a = np.asarray(values, dtype=float).ravel()
    if a.size == 1:  # one run: its value (NaN stays NaN)
        return float(a[0])
    a = a[~np.isnan(a)]
    return float(np.median(a)) if a.size else float("nan")


def seed_for(*key: object, base: int = 0) -> int:
    """A stable seed from a key (crc32 of its text), so results are reproducible."""
    return (base + zlib.crc32("|".join(map(str, key)).encode())) % (2**32)


# The resolution of the runtime's step timer (std::chrono::steady_clock, nanoseconds): two
# step times closer than this are one measurement.
TIMER_RESOLUTION_S = 1e-9


def steps_fingerprint(steps: np.ndarray) -> int:
    """A run's measured steps as a seed part (crc32), at the timer's resolution: step
    times that differ only in their last float digits (the same values computed with
    another CPU's vector exp or sum) give the same fingerprint, so a seed drawn from it
    does not jump to an unrelated resample over a rounding difference."""
    a = np.asarray(steps, dtype=float)
    ticks = np.where(np.isfinite(a), np.rint(np.nan_to_num(a) / TIMER_RESOLUTION_S), -1)
    return zlib.crc32(ticks.astype(np.int64).tobytes())


def seed_parts(names: Sequence[str], key: Sequence[object]) -> tuple:
    """A group key's values for ``seed_for``, without ``data_parallel`` where it is 1 (no
    replicas, as the configuration id leaves it out): groups seed as before the tables
    grouped by it, so reports of older files keep their intervals."""
    return tuple(v for n, v in zip(names, key) if not (n == "data_parallel" and v == 1))


class LazySteps(Sequence):
    """Per run, its measured step times, read (by ``get(run_id)``) only when indexed: the
    single-run fallback needs one run's steps, most comparisons none, so a table over
    many runs reads no per-step data for sides with two or more runs.

    ``draws(run_id, n_resamples)``, when given, is the run's within-run replicates
    (:func:`within_run_scale`) drawn once per run and kept by the caller (the loaded
    results): every comparison of a report that falls back to a run's steps uses the same
    replicates of that run instead of drawing them anew."""

    def __init__(self, get: Callable[[str], np.ndarray], run_ids: Sequence[str],
                 draws: Callable[[str, int], np.ndarray] | None = None) -> None:
        self._get = get
        self._ids = list(run_ids)
        self._draws = draws

    def scale(self, i: int, n_resamples: int) -> np.ndarray | None:
        """Run ``i``'s shared within-run replicates, or None when there are none."""
        return None if self._draws is None else self._draws(self._ids[i], n_resamples)

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [np.asarray(self._get(r), dtype=float) for r in self._ids[i]]
        return np.asarray(self._get(self._ids[i]), dtype=float)

    def subset(self, keep: Sequence[bool]) -> LazySteps:
        return LazySteps(self._get, [r for r, k in zip(self._ids, keep) if k], self._draws)


@dataclass
class Runs:
    """One side of a comparison: one value per run, and each run's measured step times
    (needed only for the single-run fallback).

    ``inverse``: the value is proportional to 1 / step time (a throughput), so the
    within-run fallback scales it by the inverse of the step-time replicates.
    """

    values: np.ndarray
    steps: list[np.ndarray] | LazySteps = field(default_factory=list)
    inverse: bool = False
    # Replicates of the median over runs drawn once (:func:`share_replicates`), used by
    # every comparison against this side that resamples sides independently.
    replicates: np.ndarray | None = None

    def __post_init__(self) -> None:
        v = np.asarray(self.values, dtype=float).ravel()
        keep = ~np.isnan(v)
        self.values = v[keep]
        if isinstance(self.steps, LazySteps):
            if len(self.steps) == len(keep):
                self.steps = self.steps.subset(keep)
        elif self.steps and len(self.steps) == len(keep):
            self.steps = [np.asarray(s, dtype=float) for s, k in zip(self.steps, keep) if k]

    @property
    def n(self) -> int:
        return int(self.values.size)

    @property
    def point(self) -> float:
        if getattr(self, "_point", None) is None:  # values are not changed after init
            self._point = median(self.values)
        return self._point


@dataclass
class Estimate:
    """A statistic, its interval, its permutation p-value against ``null`` and how many
    runs each side had. ``method``: ``runs`` (scipy bootstrap over runs), ``within-run``
    (some side had one run: block bootstrap of its steps) or ``none``."""

    point: float
    low: float
    high: float
    p: float
    runs: tuple[int, ...]
    method: str

    @property
    def min_runs(self) -> int:
        return min(self.runs) if self.runs else 0


NAN_ESTIMATE = Estimate(float("nan"), float("nan"), float("nan"), float("nan"), (), "none")


def block_bootstrap_medians(steps: np.ndarray, rng: np.random.Generator,
                            n_resamples: int = N_RESAMPLES) -> np.ndarray:
    """Medians of ``n_resamples`` moving-block resamples of one run's measured steps.

    Blocks of ``l = ceil(S**(1/3))`` consecutive steps start at uniformly drawn
    positions; ``ceil(S / l)`` of them are concatenated and cut to S steps."""
    x = np.asarray(steps, dtype=float)
    x = x[~np.isnan(x)]
    s = x.size
    if s == 0:
        return np.full(n_resamples, np.nan)
    length = min(s, max(1, math.ceil(s ** (1.0 / 3.0))))
    blocks = math.ceil(s / length)
    starts = rng.integers(0, s - length + 1, size=(n_resamples, blocks))
    idx = (starts[:, :, None] + np.arange(length)).reshape(n_resamples, -1)[:, :s]
    return median(x[idx], axis=1)


def within_run_scale(steps: np.ndarray, rng: np.random.Generator,
                     n_resamples: int = N_RESAMPLES) -> np.ndarray:
    """One run's within-run replicates as factors of its median step:
    :func:`block_bootstrap_medians` over the median of ``steps``; a per-run value that is
    proportional to the step time (or its inverse) is multiplied (divided) by them."""
    return block_bootstrap_medians(steps, rng, n_resamples) / median(steps)


# A side of more runs than this (a strategy group's baseline over thousands of seeds) is
# resampled once per table group (:func:`share_replicates`), not once per comparison:
# drawing n_resamples x n indices for each of n comparisons costs O(n^2).
SHARED_SIDE_RUNS = 200
# Relabellings evaluated at once by scipy's permutation test: bounds its memory (9999 x a
# pool of 45,000 runs would be 3.6 GB) without changing a value (scipy draws them one by
# one whatever the batch).
PERMUTATION_BATCH = 500


def share_replicates(side: Runs, seed: int, n_resamples: int = N_RESAMPLES) -> Runs:
    """When ``side`` has more than :data:`SHARED_SIDE_RUNS` runs, draws the replicates of
    its median over runs once (runs resampled with replacement, seeded by ``seed``), to be
    reused by every comparison of the table against it in the within-run path of
    :func:`joint_estimate` (where sides are resampled independently anyway). Those
    intervals then differ from drawing the side anew per comparison by Monte-Carlo
    noise only; sides of fewer runs are untouched (every file so far)."""
    if side.n > SHARED_SIDE_RUNS and side.replicates is None:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, side.n, size=(n_resamples, side.n))
        side.replicates = median(side.values[idx], axis=1)
    return side


def _replicate_medians(side: Runs, rng: np.random.Generator, n_resamples: int) -> np.ndarray:
    """Replicates of ``median(side.values)``: runs resampled, or the block fallback."""
    if side.n >= 2 and side.replicates is not None and side.replicates.size == n_resamples:
        return side.replicates
    if side.n >= 2:
        idx = rng.integers(0, side.n, size=(n_resamples, side.n))
        return median(side.values[idx], axis=1)
    if side.n == 1 and side.steps:
        scale = side.steps.scale(0, n_resamples) if isinstance(side.steps, LazySteps) \
            else None
        if scale is None:
            scale = within_run_scale(side.steps[0], rng, n_resamples)
        return side.values[0] / scale if side.inverse else side.values[0] * scale
    return np.full(n_resamples, side.point)


def interval(replicates: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (NaN when there are none)."""
    r = np.asarray(replicates, dtype=float)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(r, [tail, 100.0 - tail])
    return float(lo), float(hi)


def permutation_p(sides: Sequence[Runs], pairs: Sequence[tuple[int, int]], seed: int,
                  n_resamples: int = N_PERMUTATIONS) -> float:
    """Two-sided permutation p-value of "no difference" over runs.

    Test statistic: ``|mean over pairs of (mean log value of the numerator's runs - mean
    log value of the denominator's runs)|``, the log of a geometric-mean ratio. (The
    tables show ratios of *medians*; the test uses mean logs because the medians of a
    few runs tie under relabelling, which would make the test needlessly coarse.) Under
    the null the runs of the two sides of each (numerator, denominator) pair are
    exchangeable: labels are permuted within each pair (stratified, so settings or
    configurations are not mixed). One pair: :func:`scipy.stats.permutation_test`,
    exact when the number of distinct splits is at most ``n_resamples`` (that case is
    enumerated here, :func:`_exact_permutation_p`, with scipy's values); several:
    ``n_resamples`` random stratified permutations, ``p = (1 + #{T* >= T}) /
    (n_resamples + 1)``. NaN unless both sides of every pair have 2 or more runs. The
    smallest possible p is 2 / C(n1 + n2, n1): 0.1 for 3 runs against 3, 0.029 for 4
    against 4, 0.008 for 5 against 5."""
    sides = list(sides)
    if not pairs or any(sides[i].n < 2 or sides[j].n < 2 for i, j in pairs):
        return float("nan")
    logs = [np.log(s.values) for s in sides]
    if any(not np.all(np.isfinite(v)) for v in logs):
        return float("nan")
    if all(min(sides[i].n, sides[j].n) > SHARED_SIDE_RUNS for i, j in pairs):
        return _normal_permutation_p([(logs[i], logs[j]) for i, j in pairs])
    rng = np.random.default_rng(seed)
    small, large = sorted((sides[pairs[0][0]].n, sides[pairs[0][1]].n))
    if len(pairs) == 1 and large > SHARED_SIDE_RUNS and small * small <= small + large:
        return _subset_permutation_p(logs[pairs[0][0]], logs[pairs[0][1]], rng, n_resamples)
    if len(pairs) == 1:
        i, j = pairs[0]
        if math.comb(sides[i].n + sides[j].n, sides[i].n) <= n_resamples:
            return _exact_permutation_p(logs[i], logs[j])

        def stat(a, b, axis=-1):
            return np.abs(np.mean(a, axis=axis) - np.mean(b, axis=axis))
        res = sps.permutation_test((logs[i], logs[j]), stat, permutation_type="independent",
                                   vectorized=True, n_resamples=n_resamples,
                                   alternative="greater", rng=rng, batch=PERMUTATION_BATCH)
        return float(res.pvalue)
    observed = abs(np.mean([logs[i].mean() - logs[j].mean() for i, j in pairs]))
    total = np.zeros(n_resamples)
    for i, j in pairs:
        pooled = np.concatenate([logs[i], logs[j]])
        ni = sides[i].n
        # In batches of rows (memory bounded); rows are shuffled one after another, so
        # the draws are those of one call over all rows.
        for start in range(0, n_resamples, PERMUTATION_BATCH or n_resamples):
            rows = min(PERMUTATION_BATCH or n_resamples, n_resamples - start)
            shuffled = rng.permuted(np.tile(pooled, (rows, 1)), axis=1)
            total[start:start + rows] += (shuffled[:, :ni].mean(axis=1)
                                          - shuffled[:, ni:].mean(axis=1))
    t = np.abs(total / len(pairs))
    return float((1 + np.sum(t >= observed * (1 - 1e-9))) / (n_resamples + 1))


@functools.lru_cache(maxsize=64)
def _all_splits(n_first: int, n_second: int) -> np.ndarray:
    """Every split of the indices 0..n-1 into a first group of ``n_first`` and the rest,
    one row each: the first group's indices, then the rest's, both ascending, rows in
    :func:`itertools.combinations` order (scipy's enumeration of an exact test)."""
    n = n_first + n_second
    rows = []
    for first in itertools.combinations(range(n), n_first):
        chosen = set(first)
        rows.append(list(first) + [k for k in range(n) if k not in chosen])
    out = np.asarray(rows, dtype=np.intp).reshape(len(rows), n)
    out.setflags(write=False)
    return out


def _exact_permutation_p(a: np.ndarray, b: np.ndarray) -> float:
    """The p-value :func:`scipy.stats.permutation_test` gives for one pair when it
    enumerates every split (statistic |mean a - mean b|, ``alternative="greater"``):
    the share of splits whose statistic reaches the observed one, less scipy's tolerance
    of 100 machine epsilons relative, the observed split included. The same splits, the
    same arithmetic and the same comparison, without scipy's per-call set-up (a table of
    thousands of rows spent most of its p-value time there)."""
    def stat(x, y):
        return np.abs(np.mean(x, axis=-1) - np.mean(y, axis=-1))
    observed = stat(a, b)
    splits = _all_splits(a.size, b.size)
    pooled = np.concatenate([a, b])[splits]
    null = stat(pooled[:, :a.size], pooled[:, a.size:])
    gamma = abs(np.finfo(float).eps * 100 * observed)
    return float(np.count_nonzero(null >= observed - gamma) / splits.shape[0])


def _normal_permutation_p(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """:func:`permutation_p` when both sides of every pair have more than
    SHARED_SIDE_RUNS runs: the relabellings' distribution of the statistic by its normal
    limit instead of 9999 draws (each a permutation of the whole pool: 0.2 s for two
    sides of 625 runs, and a traversal table has dozens). Under random relabelling
    within a pair of n1 and n2 runs (pool of N, sample variance S^2 with N - 1), the
    difference of the two means has mean 0 and variance S^2 (1 / n1 + 1 / n2) exactly,
    and is asymptotically normal (the combinatorial central limit theorem, Wald-Wolfowitz
    and Hajek); pairs are relabelled independently, so the mean over P pairs has the sum
    of their variances over P^2. p = 2 (1 - Phi(|T| / sd)): it agrees with the drawn
    test to within the draws' own noise at these sizes (tested) and, unlike it, is not
    floored at 1 / 10000. Constant pools (sd 0) can show no difference: p = 1."""
    observed = abs(np.mean([a.mean() - b.mean() for a, b in pairs]))
    var = sum(np.var(np.concatenate([a, b]), ddof=1) * (1 / a.size + 1 / b.size)
              for a, b in pairs) / len(pairs) ** 2
    if var <= 0:
        return 1.0
    return float(min(1.0, 2 * sps.norm.sf(observed / math.sqrt(var))))


def _subset_permutation_p(a: np.ndarray, b: np.ndarray, rng: np.random.Generator,
                          n_resamples: int) -> float:
    """:func:`permutation_p` of one pair when a side has more than SHARED_SIDE_RUNS runs:
    the same test (statistic |mean a - mean b| of the log values, random relabellings of
    the pooled runs), each relabelling drawn as the smaller side's share of the pool (a
    uniform subset, by rejecting draws with a repeated index) so that one costs the
    smaller side's size, not the pool's; p = (1 + #{T* >= T}) / (n_resamples + 1). Only
    for a smaller side of k runs with k^2 <= the pool (most draws have no repeat); when
    both sides are large, :func:`_normal_permutation_p`."""
    small, large = (a, b) if a.size <= b.size else (b, a)
    pool = np.concatenate([small, large])
    n, k = pool.size, small.size
    total = pool.sum()
    observed = abs(small.mean() - large.mean())
    idx = rng.integers(0, n, size=(n_resamples, k))
    while True:  # rows with a repeated index are drawn again (rare for k << n)
        srt = np.sort(idx, axis=1)
        bad = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1)) if k > 1 else []
        if len(bad) == 0:
            break
        idx[bad] = rng.integers(0, n, size=(len(bad), k))
    chosen = pool[idx].sum(axis=1)
    t = np.abs(chosen / k - (total - chosen) / (n - k))
    return float((1 + np.sum(t >= observed * (1 - 1e-9))) / (n_resamples + 1))


def joint_estimate(sides: Sequence[Runs], statistic: Callable[[list], np.ndarray], seed: int,
                   null: float = 1.0, n_resamples: int = N_RESAMPLES,
                   pairs: Sequence[tuple[int, int]] | None = None) -> Estimate:
    """``statistic([median of each side])`` with its interval and p-value.

    ``pairs``: the (numerator, denominator) sides the ratio statistic compares (default
    ``[(0, 1)]`` for two sides), for the permutation p-value (:func:`permutation_p`;
    NaN when ``null`` is NaN).

    ``statistic`` takes a list of arrays (one per side, the medians over that side's
    runs, broadcastable against each other) and returns an array of the same shape.
    With two or more runs on every side the replicates come from
    :func:`scipy.stats.bootstrap` (independent resampling of each side's runs,
    percentile interval); otherwise every side is replicated by
    :func:`_replicate_medians` (a single run: the within-run block bootstrap)."""
    sides = list(sides)
    runs = tuple(s.n for s in sides)
    if not sides or min(runs) == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), float("nan"), runs, "none")
    point = float(np.asarray(statistic([np.asarray(s.point) for s in sides])))
    rng = np.random.default_rng(seed)
    shared = any(s.replicates is not None for s in sides)
    if min(runs) >= 2 and shared:
        # A side of thousands of runs (share_replicates): each side resampled on its own,
        # the large one once per table group, as the bootstrap's independent resampling
        # of the sides does, without n_resamples x n draws per comparison.
        reps = np.asarray(statistic([_replicate_medians(s, rng, n_resamples) for s in sides]),
                          dtype=float)
        method = "runs"
    elif min(runs) >= 2:
        def stat(*samples, axis=-1):
            return statistic([median(x, axis=axis) for x in samples])
        with warnings.catch_warnings():  # constant data: a degenerate but valid interval
            warnings.simplefilter("ignore")
            res = sps.bootstrap(tuple(s.values for s in sides), stat, n_resamples=n_resamples,
                                confidence_level=LEVEL, method="percentile", paired=False,
                                vectorized=True, rng=rng)
        reps = np.asarray(res.bootstrap_distribution, dtype=float)
        method = "runs"
    else:
        reps = np.asarray(statistic([_replicate_medians(s, rng, n_resamples) for s in sides]),
                          dtype=float)
        method = "within-run"
    lo, hi = interval(reps)
    if np.all(reps[np.isfinite(reps)] == point):  # no spread at all: a point
        lo = hi = point
    if pairs is None:
        pairs = [(0, 1)] if len(sides) == 2 else []
    p = float("nan") if math.isnan(null) else permutation_p(sides, pairs, seed + 7)
    return Estimate(point, lo, hi, p, runs, method)


def ratio(numerator: Runs, denominator: Runs, seed: int) -> Estimate:
    """median(numerator runs) / median(denominator runs), interval, p-value vs 1."""
    return joint_estimate([numerator, denominator], lambda m: m[0] / m[1], seed)


def median_estimate(side: Runs, seed: int) -> Estimate:
    """The median over runs and its interval (p-value not meaningful: NaN)."""
    est = joint_estimate([side], lambda m: m[0], seed, null=float("nan"))
    return est


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment: the k-th smallest of m p-values becomes
    ``max_{j <= k} min(1, (m - j + 1) p_(j))``. NaN p-values are not counted in m and
    stay NaN."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    running = 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (m - j) * p[i]))
        out[i] = running
    return out


def not_enough_runs(runs: Sequence[int]) -> str:
    return "n=" + " vs ".join(str(n) for n in runs) + ": not enough repeats"


def effect_text(min_effect: float) -> str:
    """The minimum effect as the tables write it: 0.05 -> ``5%``."""
    return f"{100 * min_effect:g}%"


def band(min_effect: float = MIN_EFFECT) -> tuple[float, float]:
    """The ratios within the minimum effect: ``[1 / (1 + d), 1 + d]``."""
    return 1.0 / (1.0 + min_effect), 1.0 + min_effect


# What :func:`evidence` finds, from no estimate to a difference worth naming.
NO_ESTIMATE, FEW_RUNS, NOISE, WITHIN, NOT_BEYOND, BEYOND = (
    "n/a", "few runs", "noise", "within", "not beyond", "beyond")


def evidence(est: Estimate, p_holm: float, min_effect: float = MIN_EFFECT) -> str:
    """The verdict rule, without a direction: ``BEYOND`` when both sides have
    ``MIN_RUNS`` runs, Holm p < ``ALPHA`` and the interval lies wholly outside
    :func:`band`; a significant difference (interval excluding 1) that falls short is
    ``WITHIN`` (interval inside the band: smaller than the minimum effect) or
    ``NOT_BEYOND`` (the interval crosses an edge of the band); ``NOISE`` when not
    significant, ``FEW_RUNS`` with fewer runs, ``NO_ESTIMATE`` without a ratio."""
    if math.isnan(est.point):
        return NO_ESTIMATE
    if est.min_runs < MIN_RUNS:
        return FEW_RUNS
    if math.isnan(p_holm) or p_holm >= ALPHA or not (est.low > 1.0 or est.high < 1.0):
        return NOISE
    lo, hi = band(min_effect)
    if est.low > hi or est.high < lo:
        return BEYOND
    return WITHIN if lo <= est.low and est.high <= hi else NOT_BEYOND


def _direction(est: Estimate, lower_is_better: bool) -> str:
    """``faster`` or ``slower``: the side of 1 a significant interval lies on."""
    return "faster" if (est.high < 1.0) == lower_is_better else "slower"


def shortfall(est: Estimate, p_holm: float, lower_is_better: bool = True,
              min_effect: float = MIN_EFFECT) -> str:
    """What a significant difference short of the minimum effect showed (``faster,
    within 5%``, ``slower, not shown beyond 5%``), so that no table hides it; ``""``
    for any other outcome of :func:`evidence`."""
    found = evidence(est, p_holm, min_effect)
    if found not in (WITHIN, NOT_BEYOND):
        return ""
    short = "within" if found == WITHIN else "not shown beyond"
    return f"{_direction(est, lower_is_better)}, {short} {effect_text(min_effect)}"


def verdict(est: Estimate, p_holm: float, lower_is_better: bool = True,
            min_effect: float = MIN_EFFECT) -> str:
    """``faster``/``slower``/``same``/``not enough runs (...)`` of a ratio NEW/BASE by
    :func:`evidence`; a significant difference short of the minimum effect is ``same
    (faster, within 5%)`` or ``same (faster, not shown beyond 5%)`` (:func:`shortfall`).

    ``lower_is_better``: True for step times (a ratio below 1 is faster), False for
    throughput and speedups. The direction is the side of 1 the interval lies on."""
    found = evidence(est, p_holm, min_effect)
    if found == NO_ESTIMATE:
        return "n/a"
    if found == FEW_RUNS:
        return f"not enough runs ({not_enough_runs(est.runs)})"
    if found == BEYOND:
        return _direction(est, lower_is_better)
    short = shortfall(est, p_holm, lower_is_better, min_effect)
    return f"same ({short})" if short else "same"


def exceeds(est: Estimate, p_holm: float, min_effect: float = MIN_EFFECT) -> bool:
    """The verdict rule for a ratio that should exceed 1 (a speedup, the runner-up's
    time over the best's): a difference worth naming, and above 1."""
    return evidence(est, p_holm, min_effect) == BEYOND and est.low > 1.0


# Accuracy comparisons ---------------------------------------------------------------------

# Classes per data set (runs/src/data/dataset_names.cpp); ``synthetic`` depends on the
# model, so only the "identical" rule applies to it.
DATASET_CLASSES = {"fashion-mnist": 10, "text": 256}
CHANCE_MARGIN = 0.05  # accuracy within this of 1/classes counts as chance level
IDENTICAL_TOLERANCE = 1e-9


def accuracy_refusal(dataset: str, accuracies: dict[str, float]) -> str:
    """Why an accuracy difference between these strategies must not be read as a cost,
    or ``""`` when it may. ``accuracies``: per strategy label, its accuracy (median
    over runs). Refused when any is at chance level (at most 1/classes +
    ``CHANCE_MARGIN``) or when all are identical (a network stuck at the majority class
    gives the same accuracy whatever the strategy)."""
    vals = {k: v for k, v in accuracies.items() if v is not None and not math.isnan(v)}
    if len(vals) < 2:
        return "accuracy missing"
    classes = DATASET_CLASSES.get(str(dataset))
    if classes:
        limit = 1.0 / classes + CHANCE_MARGIN
        at_chance = sorted(k for k, v in vals.items() if v <= limit)
        if at_chance:
            return (f"at chance level ({', '.join(at_chance)} <= 1/{classes} +"
                    f" {CHANCE_MARGIN:g})")
    if max(vals.values()) - min(vals.values()) <= IDENTICAL_TOLERANCE:
        return f"identical across strategies ({next(iter(vals.values())):.4g}: majority class?)"
    return ""


# Older helpers kept for the simulator and other tables -----------------------------------

def geomean(values: Sequence[float] | np.ndarray, axis: int = 0) -> np.ndarray | float:
    """Geometric mean (the right mean for ratios such as speedups)."""
    v = np.asarray(values, dtype=float)
    return np.exp(np.mean(np.log(v), axis=axis))


def intervals_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when two intervals share a point (or either is unknown)."""
    if any(np.isnan(v) for v in (*a, *b)):
        return True
    return a[0] <= b[1] and b[0] <= a[1]


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation: Pearson correlation of the average ranks.

    Pairs with a NaN are dropped; fewer than 3 pairs or a constant side give NaN.
    """
    df = pd.DataFrame({"x": x, "y": y}).dropna()
    if len(df) < 3:
        return float("nan")
    rx, ry = df["x"].rank(method="average"), df["y"].rank(method="average")
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def mape(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Mean absolute percentage error of ``predicted`` against ``measured`` (in %)."""
    df = pd.DataFrame({"p": predicted, "m": measured}).dropna()
    df = df[df["m"] != 0]
    if df.empty:
        return float("nan")
    return float((np.abs(df["p"] / df["m"] - 1.0)).mean() * 100.0)
