"""Statistics of GRAB data series and point sets, computed exactly from the stored data (the paper states no
conventions; ours: linear-interpolation IQR, population variance, scipy correlations).
Manual: docs/curation.md, "Statistics of data series".
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Literal

import numpy as np
from scipy import stats

Correlation = Literal["pearson", "spearman", "kendall"]


def scaled(values: Sequence[object]) -> tuple[list[int], int]:
    """The values as exact integers times ``10 ** -places``: ``(integers, 10 ** places)``."""
    decimals = [Decimal(repr(value)) if isinstance(value, float) else Decimal(str(value)) for value in values]
    if not decimals:
        raise ValueError("statistics of an empty data series")
    if not all(value.is_finite() for value in decimals):
        raise ValueError(f"non-finite data value in {list(values)}")
    places = max(0, -min(int(value.as_tuple().exponent) for value in decimals))
    with localcontext() as context:
        context.prec = 100
        return [int(value.scaleb(places)) for value in decimals], 10**places


def mean(values: Sequence[object]) -> Fraction:
    data, scale = scaled(values)
    return Fraction(sum(data), len(data) * scale)


def quantile(values: Sequence[object], q: Fraction) -> Fraction:
    """Linear-interpolation quantile (numpy ``method="linear"``), exact."""
    data, scale = scaled(values)
    data.sort()
    position = (len(data) - 1) * Fraction(q)
    low = int(position)
    if low >= len(data) - 1:
        return Fraction(data[-1], scale)
    return (data[low] + (position - low) * (data[low + 1] - data[low])) / scale


def median(values: Sequence[object]) -> Fraction:
    return quantile(values, Fraction(1, 2))


def interquartile_range(values: Sequence[object]) -> Fraction:
    return quantile(values, Fraction(3, 4)) - quantile(values, Fraction(1, 4))


def variance(values: Sequence[object]) -> Fraction:
    """Population variance (``ddof=0``): ``(n sum x^2 - (sum x)^2) / n^2``."""
    data, scale = scaled(values)
    n, total = len(data), sum(data)
    return Fraction(n * sum(value * value for value in data) - total * total, n * n * scale * scale)


def extent(values: Sequence[object]) -> Fraction:
    data, scale = scaled(values)
    return Fraction(max(data) - min(data), scale)


def maximum(values: Sequence[object]) -> Fraction:
    data, scale = scaled(values)
    return Fraction(max(data), scale)


def minimum(values: Sequence[object]) -> Fraction:
    data, scale = scaled(values)
    return Fraction(min(data), scale)


def correlation(kind: Correlation, xs: Sequence[float], ys: Sequence[float]) -> float:
    """Pearson, Spearman or Kendall (tau-b) coefficient of the points, from scipy."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if kind == "pearson":
        return float(stats.pearsonr(x, y).statistic)
    if kind == "spearman":
        return float(stats.spearmanr(x, y).statistic)
    if kind == "kendall":
        return float(stats.kendalltau(x, y).statistic)
    raise ValueError(f"unknown correlation {kind!r}")
