"""Samplers of the properties task: 29 question types, 660 questions, complexity 0 (as in the published set; GRAB
paper §3: property-first sampling for intercepts, gradients and equations).
Manual: docs/curation.md, "Properties task" (answer ranges and equation coefficients).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from curation.grab import data_stats
from curation.grab.curves import Gaussian, Piece, Polynomial, Sine, as_value
from curation.grab.sampling import (
    Params,
    Sampler,
    curve_element,
    data,
    decimal,
    pieces,
    scatter_element,
    series_element,
    sweep,
)
from scifig_tasks.benchmarks.grab.answers import EquationKind, Value

QUADRATIC_SCALES = tuple(Fraction(s) * sign for s in ("0.1", "0.2", "0.25", "0.5", "1") for sign in (1, -1))
CUBIC_SCALES = tuple(Fraction(s) * sign for s in ("0.005", "0.01", "0.02", "0.05", "0.1") for sign in (1, -1))
STATIONARY_SCALES = tuple(Fraction(s) * sign for s in ("0.25", "0.5", "1", "2") for sign in (1, -1))
X_INTERCEPT_SLOPES = tuple(Fraction(s) for s in ("-3", "-2", "-1", "-0.5", "0.5", "1", "2", "3"))


def vertex_quadratic(a: Value, h: Value, k: Value) -> Polynomial:
    """``a (x - h)^2 + k`` expanded exactly."""
    a, h, k = as_value(a), as_value(h), as_value(k)
    return Polynomial((a, -2 * a * h, a * h * h + k))


def random_phase(rng: random.Random, period: int) -> int:
    """An integer phase shift in ``(-period / 2, period / 2]`` (the unique representative)."""
    return rng.randint(-((period - 1) // 2), period // 2)


def random_piece(rng: random.Random, min_length: int = 4, max_length: int = 20) -> Piece:
    """A quadratic, cubic or sine over an integer domain inside [-10, 10]."""
    length = rng.randint(min_length, max_length)
    x0 = rng.randint(-10, 10 - length)
    x1 = x0 + length
    family = rng.choice(("quadratic", "cubic", "sine"))
    if family == "quadratic":
        curve: Any = vertex_quadratic(rng.choice(QUADRATIC_SCALES), rng.randint(x0, x1), rng.randint(-10, 10))
    elif family == "cubic":
        roots = sorted(rng.randint(x0, x1) for _ in range(3))
        curve = Polynomial.from_roots(rng.choice(CUBIC_SCALES), roots)
    else:
        period = rng.randint(2, 12)
        curve = Sine.from_shape(rng.randint(1, 10), period, random_phase(rng, period), rng.randint(-5, 5))
    return Piece.of(curve, x0, x1)


def series_values(rng: random.Random, xs: list[float], level: float, slope: float, sigma: float) -> list[float]:
    """A noisy data series: ``level + slope (x - centre) + N(0, sigma)``, stored with one decimal."""
    centre = (xs[0] + xs[-1]) / 2
    return [decimal(level + slope * (x - centre) + rng.gauss(0, sigma)) for x in xs]


def _figure(elements: list[dict[str, Any]], xlim: tuple[float, float] | None) -> Params:
    return {"elements": elements, "xlim": None if xlim is None else [xlim[0], xlim[1]]}


def _curve_figure(piece: Piece, pad: float = 0) -> Params:
    return _figure([curve_element(piece)], (float(piece.x0) - pad, float(piece.x1) + pad))


def _series_figure(xs: list[float], ys: list[float], pad: float) -> Params:
    return _figure([series_element(xs, ys)], (min(xs) - pad, max(xs) + pad))


def _only_piece(params: Params) -> Piece:
    (piece,) = pieces(params)
    return piece


def _only_data(params: Params) -> tuple[list[float], list[float]]:
    (series,) = data(params)
    return series


# ---------------------------------------------------------------------------------------------------- functions


def _draw_area(rng: random.Random, complexity: int, target: Any) -> Params | None:
    return _curve_figure(random_piece(rng), pad=rng.choice((0, 1)))


def _draw_function_extrema(rng: random.Random, complexity: int, target: Any) -> Params | None:
    return _curve_figure(random_piece(rng), pad=rng.choice((0, 1)))


def _draw_function_domain(rng: random.Random, complexity: int, length: int) -> Params | None:
    x0 = rng.randint(-10, 10 - length)
    family = rng.choice(("line", "quadratic", "sine"))
    if family == "line":
        curve: Any = Polynomial.of(rng.randint(-3, 3), rng.randint(-9, 9))
    elif family == "quadratic":
        curve = vertex_quadratic(rng.choice(QUADRATIC_SCALES), rng.randint(x0, x0 + length), rng.randint(-10, 10))
    else:
        period = rng.randint(2, 10)
        curve = Sine.from_shape(rng.randint(1, 10), period, random_phase(rng, period), rng.randint(-5, 5))
    return _curve_figure(Piece.of(curve, x0, x0 + length), pad=rng.choice((1, 2, 3)))


def _draw_gradient(rng: random.Random, complexity: int, gradient: int) -> Params | None:
    return _curve_figure(Piece.of(Polynomial.of(gradient, rng.randint(-9, 9)), -10, 10))


def _draw_x_intercept(rng: random.Random, complexity: int, intercept: int) -> Params | None:
    slope = rng.choice(X_INTERCEPT_SLOPES)
    return _curve_figure(Piece.of(Polynomial((slope, -slope * intercept)), -10, 10))


def _draw_y_intercept(rng: random.Random, complexity: int, intercept: int) -> Params | None:
    return _curve_figure(Piece.of(Polynomial.of(rng.randint(-5, 5), intercept), -10, 10))


def _draw_stationary(rng: random.Random, complexity: int, x: int) -> Params | None:
    curve = vertex_quadratic(rng.choice(STATIONARY_SCALES), x, rng.randint(-9, 9))
    return _curve_figure(Piece.of(curve, -10, 10))


def _pair_target(rng: random.Random) -> tuple[int, int]:
    first = rng.randint(-9, 7)
    return first, rng.randint(first + 2, 9)


def _draw_two_stationary(rng: random.Random, complexity: int, pair: tuple[int, int]) -> Params | None:
    p, q = pair
    a = rng.choice((Fraction(1, 2), Fraction(1), Fraction(-1, 2), Fraction(-1)))
    # f'(x) = 3a (x - p)(x - q)  =>  f(x) = a x^3 - 3a (p + q) / 2 x^2 + 3a p q x + d
    curve = Polynomial((a, -3 * a * (p + q) / 2, 3 * a * p * q, Fraction(rng.randint(-9, 9))))
    margin = max(2, math.ceil((q - p) / 2))
    return _curve_figure(Piece.of(curve, p - margin, q + margin))


def _draw_peak(rng: random.Random, complexity: int, mean: int) -> Params | None:
    return _curve_figure(Piece.of(Gaussian(rng.randint(1, 10), mean, rng.randint(1, 9)), -10, 10))


def _draw_variance(rng: random.Random, complexity: int, variance: int) -> Params | None:
    return _curve_figure(Piece.of(Gaussian(rng.randint(1, 10), rng.randint(-3, 3), variance), -15, 15))


def _draw_sine(rng: random.Random, amplitude: int, period: int, phase: int, shift: int) -> Params:
    reach = max(10, period)
    return _curve_figure(Piece.of(Sine.from_shape(amplitude, period, phase, shift), -reach, reach))


def _draw_amplitude(rng: random.Random, complexity: int, amplitude: int) -> Params | None:
    period = rng.randint(2, 10)
    return _draw_sine(rng, amplitude, period, random_phase(rng, period), rng.randint(-9, 9))


def _draw_period(rng: random.Random, complexity: int, period: int) -> Params | None:
    return _draw_sine(rng, rng.randint(1, 10), period, random_phase(rng, period), rng.randint(-9, 9))


def _draw_phase(rng: random.Random, complexity: int, phase: int) -> Params | None:
    period = rng.randint(max(2, 2 * abs(phase) + 2), 2 * abs(phase) + 8)
    return _draw_sine(rng, rng.randint(1, 10), period, phase, rng.randint(-9, 9))


def _draw_vertical(rng: random.Random, complexity: int, shift: int) -> Params | None:
    period = rng.randint(2, 10)
    return _draw_sine(rng, rng.randint(1, 10), period, random_phase(rng, period), shift)


_EQUATION: dict[EquationKind, tuple[int, tuple[int, int], tuple[int, int]]] = {
    # kind: (domain half-width, leading-coefficient range, other-coefficient range)
    "linear": (10, (-5, 5), (-9, 9)),
    "quadratic": (5, (-3, 3), (-5, 5)),
    "cubic": (4, (-2, 2), (-5, 5)),
    "quartic": (3, (-2, 2), (-5, 5)),
}


def _nonzero(rng: random.Random, low: int, high: int) -> int:
    return rng.choice([value for value in range(low, high + 1) if value != 0])


def _draw_equation(rng: random.Random, complexity: int, kind: EquationKind) -> Params | None:
    if kind == "sine":
        a, b, c, d = rng.randint(1, 5), rng.randint(1, 4), rng.randint(-3, 3), rng.randint(-5, 5)
        piece = Piece.of(Sine(Fraction(a), Fraction(b), Fraction(c), Fraction(d)), -10, 10)
    else:
        width, leading, others = _EQUATION[kind]
        degree = {"linear": 1, "quadratic": 2, "cubic": 3, "quartic": 4}[kind]
        coefficients = [_nonzero(rng, *leading)] + [rng.randint(*others) for _ in range(degree)]
        if kind == "quadratic":
            coefficients[-1] = rng.randint(-9, 9)
        piece = Piece.of(Polynomial.of(*coefficients), -width, width)
    return {**_curve_figure(piece), "equation": kind}


def _equation_value(params: Params) -> tuple[EquationKind, list[int]]:
    curve = _only_piece(params).curve
    kind: EquationKind = params["equation"]
    if isinstance(curve, Sine):
        values = [curve.a, curve.b, curve.c, curve.d]
    else:
        assert isinstance(curve, Polynomial)
        values = list(curve.coefficients)
    integers = [int(value) for value in values]
    if integers != values:
        raise ValueError(f"equation coefficients are not integers: {values}")
    return kind, integers


def _line_of(params: Params) -> Polynomial:
    curve = _only_piece(params).curve
    assert isinstance(curve, Polynomial) and curve.degree <= 1, curve
    return curve


def _gradient_value(params: Params) -> Value:
    return _line_of(params).derivative().value_at(0)


def _x_intercept_value(params: Params) -> Value:
    (root,) = _line_of(params).all_real_roots()
    return root


def _stationary_value(params: Params) -> Value:
    """The quadratic's one stationary point: the root of its derivative (exact)."""
    curve = _only_piece(params).curve
    assert isinstance(curve, Polynomial)
    (point,) = curve.stationary_points()
    return point


def _two_stationary_value(params: Params) -> list[int]:
    curve = _only_piece(params).curve
    assert isinstance(curve, Polynomial)
    points = curve.stationary_points()
    if len(points) != 2 or any(Fraction(point).denominator != 1 for point in points):
        raise ValueError(f"expected two integer stationary points, got {points}")
    return [int(point) for point in points]


def _gaussian(params: Params) -> Gaussian:
    curve = _only_piece(params).curve
    assert isinstance(curve, Gaussian)
    return curve


def _sine(params: Params) -> Sine:
    curve = _only_piece(params).curve
    assert isinstance(curve, Sine)
    return curve


# ---------------------------------------------------------------------------------------------------- data


def _draw_data(rng: random.Random, level: tuple[float, float], sigma: tuple[float, float]) -> Params:
    n = rng.randint(8, 20)
    x0 = rng.randint(-10, 10 - n + 1)
    xs = [float(x0 + index) for index in range(n)]
    ys = series_values(rng, xs, rng.uniform(*level), rng.uniform(-1.0, 1.0), rng.uniform(*sigma))
    return _series_figure(xs, ys, pad=rng.choice((0.5, 1.0)))


def _draw_data_extrema(rng: random.Random, complexity: int, target: Any) -> Params | None:
    return _draw_data(rng, (-15.0, 15.0), (0.5, 4.0))


def _draw_data_spread(rng: random.Random, complexity: int, target: Any) -> Params | None:
    return _draw_data(rng, (-10.0, 10.0), (0.5, 12.0))


def _draw_data_centre(rng: random.Random, complexity: int, target: Any) -> Params | None:
    return _draw_data(rng, (-12.0, 12.0), (0.5, 5.0))


def _draw_data_domain(rng: random.Random, complexity: int, length: int) -> Params | None:
    x0 = rng.randint(-10, 10 - length)
    inner = {decimal(rng.uniform(x0, x0 + length)) for _ in range(rng.randint(4, 12))} - {float(x0), float(x0 + length)}
    xs = sorted({float(x0), float(x0 + length), *inner})
    ys = series_values(rng, xs, rng.uniform(-8, 8), rng.uniform(-1, 1), rng.uniform(0.5, 3))
    return _series_figure(xs, ys, pad=rng.choice((1.0, 2.0)))


def _draw_correlated(rng: random.Random, complexity: int, target: Any) -> Params | None:
    rho = rng.uniform(-1.0, 1.0)
    n = rng.randint(15, 50)
    noise = math.sqrt(max(0.0, 1 - rho * rho))
    xs, ys = [], []
    for _ in range(n):
        first, second = rng.gauss(0, 1), rng.gauss(0, 1)
        xs.append(decimal(5 + 2 * first, 2))
        ys.append(decimal(5 + 2 * (rho * first + noise * second), 2))
    if len(set(xs)) < 3 or len(set(ys)) < 3:
        return None
    return _figure([scatter_element(xs, ys)], None)


def _draw_points(rng: random.Random, complexity: int, count: int) -> Params | None:
    points: list[tuple[float, float]] = []
    for _ in range(count * 200):
        if len(points) == count:
            break
        x, y = decimal(rng.uniform(-10, 10)), decimal(rng.uniform(-10, 10))
        if all((x - px) ** 2 + (y - py) ** 2 >= 0.8**2 for px, py in points):
            points.append((x, y))
    if len(points) < count:
        return None
    xs, ys = zip(*points, strict=True)
    return _figure([scatter_element(list(xs), list(ys))], (-11.0, 11.0))


def _draw_series_count(rng: random.Random, complexity: int, count: int) -> Params | None:
    elements = []
    for _ in range(count):
        x0, x1 = rng.randint(-10, -4), rng.randint(4, 10)
        xs = [float(x) for x in range(x0, x1 + 1)]
        ys = series_values(rng, xs, rng.uniform(-8, 8), rng.uniform(-0.8, 0.8), rng.uniform(0.2, 1.5))
        elements.append(series_element(xs, ys))
    return _figure(elements, (-11.0, 11.0))


def _correlation(kind: data_stats.Correlation) -> Sampler:
    def value(params: Params) -> float:
        xs, ys = _only_data(params)
        return data_stats.correlation(kind, xs, ys)

    return Sampler(draw=_draw_correlated, value=value, value_range=(-1.0, 1.0))


def _ys(params: Params) -> list[float]:
    return _only_data(params)[1]


def _xs(params: Params) -> list[float]:
    return _only_data(params)[0]


def _sweep(low: int, high: int, repeat: int = 1) -> Callable[[random.Random, int], list[int]]:
    """Property-first targets: the sweep ``low..high`` (``repeat`` times), then uniform draws from the same range."""

    def targets(rng: random.Random, n: int) -> list[int]:
        return sweep(list(range(low, high + 1)) * repeat, n, rng, lambda r: r.randint(low, high))

    return targets


SAMPLERS: dict[str, Sampler] = {
    "properties/net_area": Sampler(_draw_area, lambda p: _only_piece(p).net_area, value_range=(-200, 200)),
    "properties/total_area": Sampler(_draw_area, lambda p: _only_piece(p).total_area, value_range=(0, 300)),
    "properties/kendall": _correlation("kendall"),
    "properties/pearson": _correlation("pearson"),
    "properties/spearman": _correlation("spearman"),
    "properties/count_points": Sampler(
        _draw_points,
        lambda p: len(_xs(p)),
        targets=_sweep(5, 30),
    ),
    "properties/count_series": Sampler(
        _draw_series_count,
        lambda p: len(data(p)),
        targets=_sweep(1, 10, repeat=3),
    ),
    "properties/data_max": Sampler(_draw_data_extrema, lambda p: data_stats.maximum(_ys(p)), value_range=(-20, 20)),
    "properties/function_max": Sampler(_draw_function_extrema, lambda p: _only_piece(p).maximum, value_range=(-20, 20)),
    "properties/data_min": Sampler(_draw_data_extrema, lambda p: data_stats.minimum(_ys(p)), value_range=(-20, 20)),
    "properties/function_min": Sampler(_draw_function_extrema, lambda p: _only_piece(p).minimum, value_range=(-20, 20)),
    "properties/equation": Sampler(_draw_equation, _equation_value),  # targets set by the plan (EQUATION_MIX)
    "properties/gradient": Sampler(_draw_gradient, _gradient_value, targets=_sweep(-5, 5)),
    "properties/x_intercept": Sampler(
        _draw_x_intercept,
        _x_intercept_value,
        targets=_sweep(-9, 9),
    ),
    "properties/y_intercept": Sampler(
        _draw_y_intercept,
        lambda p: _line_of(p).value_at(0),
        targets=_sweep(-9, 9),
    ),
    "properties/iqr": Sampler(_draw_data_spread, lambda p: data_stats.interquartile_range(_ys(p)), value_range=(1, 20)),
    "properties/peak": Sampler(_draw_peak, lambda p: _gaussian(p).mean, targets=_sweep(-9, 9)),
    "properties/median": Sampler(_draw_data_centre, lambda p: data_stats.median(_ys(p)), value_range=(-10, 10)),
    "properties/function_variance": Sampler(
        _draw_variance,
        lambda p: _gaussian(p).variance,
        targets=_sweep(1, 25),
    ),
    "properties/data_domain": Sampler(
        _draw_data_domain, lambda p: data_stats.extent(_xs(p)), targets=lambda rng, n: rng.sample(range(2, 21), n)
    ),
    "properties/function_domain": Sampler(
        _draw_function_domain,
        lambda p: _only_piece(p).domain_length,
        targets=lambda rng, n: rng.sample(range(2, 21), n),
    ),
    "properties/data_range": Sampler(_draw_data_extrema, lambda p: data_stats.extent(_ys(p)), value_range=(1, 30)),
    "properties/function_range": Sampler(
        _draw_function_extrema, lambda p: _only_piece(p).range_span, value_range=(1, 30)
    ),
    "properties/two_stationary": Sampler(
        _draw_two_stationary, _two_stationary_value, targets=lambda rng, n: [_pair_target(rng) for _ in range(n)]
    ),
    "properties/stationary": Sampler(
        _draw_stationary,
        _stationary_value,
        targets=_sweep(-9, 9),
    ),
    "properties/amplitude": Sampler(
        _draw_amplitude,
        lambda p: _sine(p).amplitude,
        targets=_sweep(1, 10, repeat=3),
    ),
    "properties/period": Sampler(
        _draw_period,
        lambda p: _sine(p).period,
        targets=_sweep(1, 10, repeat=3),
    ),
    "properties/phase_shift": Sampler(
        _draw_phase,
        lambda p: _sine(p).phase_shift,
        targets=_sweep(-5, 5),
    ),
    "properties/vertical_shift": Sampler(
        _draw_vertical,
        lambda p: _sine(p).vertical_shift,
        targets=_sweep(-9, 9),
    ),
}
