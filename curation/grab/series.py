"""Samplers of the series task: 11 question types, 490 questions (as in the published set).

A graph shows ``complexity + 1`` noisy data series on the fixed schema (x and y in [-10, 10]); the question asks for
the mean of a statistic over them (``Estimate the mean {property} of the data series shown in the plot.``).
Each series has integer x values ``x0, x0 + 1, ..., x1`` (domain length 4..20, so 5..21 points) and
``y = level + slope (x - centre) + N(0, sigma)`` stored with one decimal, inside the y-limits. Parameters: level
-6..6, slope -1..1 (-1.5..1.5 for correlations), sigma 0.2..3 (0.3..4 for correlations). Statistics follow
:mod:`curation.grab.data_stats` (exact except the correlations, from scipy).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from curation.grab import data_stats
from curation.grab.properties import series_values
from curation.grab.sampling import FIXED_LIMIT, Params, Sampler, data, mean_of, series_element
from scifig_tasks.benchmarks.grab.answers import Value

Statistic = Callable[[list[float], list[float]], Value]


def draw_series(
    rng: random.Random, slope: tuple[float, float] = (-1.0, 1.0), sigma: tuple[float, float] = (0.2, 3.0)
) -> tuple[list[float], list[float]] | None:
    """One data series inside the fixed schema (``None`` when the noise took it outside the y-limits)."""
    length = rng.randint(4, 20)
    x0 = rng.randint(-10, 10 - length)
    xs = [float(x) for x in range(x0, x0 + length + 1)]
    ys = series_values(rng, xs, rng.uniform(-6, 6), rng.uniform(*slope), rng.uniform(*sigma))
    if max(abs(y) for y in ys) > FIXED_LIMIT or len(set(ys)) < 2:
        return None
    return xs, ys


def _sampler(statistic: Statistic, correlation: bool = False) -> Sampler:
    slope, sigma = ((-1.5, 1.5), (0.3, 4.0)) if correlation else ((-1.0, 1.0), (0.2, 3.0))

    def draw(rng: random.Random, complexity: int, target: object) -> Params | None:
        elements = []
        for _ in range(complexity + 1):
            for _attempt in range(50):
                series = draw_series(rng, slope, sigma)
                if series is not None:
                    break
            else:
                return None
            elements.append(series_element(*series))
        return {"elements": elements}

    def value(params: Params) -> Value:
        return mean_of([statistic(xs, ys) for xs, ys in data(params)])

    return Sampler(draw=draw, value=value)


def _correlation(kind: data_stats.Correlation) -> Sampler:
    return _sampler(lambda xs, ys: data_stats.correlation(kind, xs, ys), correlation=True)


SAMPLERS: dict[str, Sampler] = {
    "series/kendall": _correlation("kendall"),
    "series/pearson": _correlation("pearson"),
    "series/spearman": _correlation("spearman"),
    "series/max": _sampler(lambda xs, ys: data_stats.maximum(ys)),
    "series/min": _sampler(lambda xs, ys: data_stats.minimum(ys)),
    "series/mean": _sampler(lambda xs, ys: data_stats.mean(ys)),
    "series/iqr": _sampler(lambda xs, ys: data_stats.interquartile_range(ys)),
    "series/median": _sampler(lambda xs, ys: data_stats.median(ys)),
    "series/variance": _sampler(lambda xs, ys: data_stats.variance(ys)),
    "series/domain": _sampler(lambda xs, ys: data_stats.extent(xs)),
    "series/range": _sampler(lambda xs, ys: data_stats.extent(ys)),
}
