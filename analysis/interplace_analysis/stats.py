"""Small statistics the tables need, in numpy and pandas only (no scipy).

Bootstrap: every configuration's measured steps are resampled with replacement,
independently, and a statistic of the resampled *medians* (a speedup, a ratio of
geometric means) is computed per replicate; the 95% interval is the 2.5th and 97.5th
percentile of those replicates. Step times within a run are not independent (warm
caches, a slow node), so the interval is about run-to-run noise of the steps only:
treat it as a lower bound on the real uncertainty.

Seeds come from the caller's key (``seed_for``), so a table's numbers do not depend
on which other groups happened to be computed before it.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

N_RESAMPLES = 2000
LEVEL = 0.95


def seed_for(*key: object, base: int = 0) -> int:
    """A stable seed from a key (crc32 of its text), so results are reproducible."""
    return (base + zlib.crc32("|".join(map(str, key)).encode())) % (2**32)


def bootstrap_medians(samples: Sequence[np.ndarray], seed: int,
                      n_resamples: int = N_RESAMPLES) -> list[np.ndarray]:
    """For each sample, the medians of ``n_resamples`` resamples (shape [n_resamples])."""
    rng = np.random.default_rng(seed)
    out = []
    for x in samples:
        x = np.asarray(x, dtype=float)
        if x.size == 0:
            out.append(np.full(n_resamples, np.nan))
            continue
        idx = rng.integers(0, x.size, size=(n_resamples, x.size))
        out.append(np.median(x[idx], axis=1))
    return out


def interval(replicates: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (NaN when there are none)."""
    r = np.asarray(replicates, dtype=float)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(r, [tail, 100.0 - tail])
    return float(lo), float(hi)


def median_ci(x: np.ndarray, seed: int) -> tuple[float, float, float]:
    """Median of ``x`` and its bootstrap interval."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    (reps,) = bootstrap_medians([x], seed)
    return (float(np.median(x)), *interval(reps))


def ratio_ci(numerator: np.ndarray, denominator: np.ndarray,
             seed: int) -> tuple[float, float, float]:
    """median(numerator) / median(denominator) and its bootstrap interval.

    With step times, ``ratio_ci(t_topo, t_order)`` is the speedup of an order over topo.
    """
    num, den = np.asarray(numerator, float), np.asarray(denominator, float)
    if num.size == 0 or den.size == 0:
        return float("nan"), float("nan"), float("nan")
    rn, rd = bootstrap_medians([num, den], seed)
    return (float(np.median(num) / np.median(den)), *interval(rn / rd))


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
