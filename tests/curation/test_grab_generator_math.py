"""Ground truth of the GRAB generator: each property on analytic cases, then property-based checks (hypothesis)
against independent computations (scipy quadrature, numpy statistics, dense point sets, per-operation geometry)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from curation.grab import data_stats
from curation.grab.affine import ANGLES, SCALES, Operation, compose
from curation.grab.curves import Gaussian, Piece, Polynomial, Sine
from curation.grab.plan import SAMPLERS, format_answer
from curation.grab.properties import vertex_quadratic
from curation.grab.sampling import curve_element, series_element
from scifig_tasks.benchmarks.grab.answers import format_equation, format_number, near_tie, parse_equation

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def figure(*pieces: Piece, **extra: object) -> dict:
    return {"elements": [curve_element(piece) for piece in pieces], **extra}


def value(type_key: str, params: dict) -> object:
    return SAMPLERS[type_key].value(params)


# ---------------------------------------------------------------------------------------------------- rounding


@pytest.mark.parametrize(
    ("raw", "precision", "expected"),
    [
        (Fraction(5, 2), "integer", "3"),  # ties go away from zero
        (Fraction(-5, 2), "integer", "-3"),
        (Fraction(-3, 2), "integer", "-2"),
        (Fraction(1, 20), "1dp", "0.1"),
        (Fraction(-1, 20), "1dp", "-0.1"),
        (Fraction(-1, 30), "1dp", "0.0"),  # no negative zero
        (5, "1dp", "5.0"),
        (35, "nearest10", "40"),
        (-35, "nearest10", "-40"),
        (-4, "nearest10", "0"),
        (2.675, "1dp", "2.7"),  # a double counts as the decimal it prints as
        (0.9999999999999999, "integer", "1"),
    ],
)
def test_rounding_is_half_away_from_zero(raw: object, precision: str, expected: str) -> None:
    assert format_number(raw, precision) == expected  # type: ignore[arg-type]


def test_near_ties_of_doubles_are_detected_and_exact_values_never_are() -> None:
    assert near_tie(2.4999999999, "integer") and near_tie(0.25000000001, "1dp") and near_tie(15.0000000001, "nearest10")
    assert not near_tie(2.4, "integer") and not near_tie(Fraction(5, 2), "integer")


def test_equation_format_prints_every_coefficient_with_folded_signs() -> None:
    assert format_equation("quadratic", [-3, 1, -3]) == "y = -3x^2 + 1x - 3"
    assert format_equation("cubic", [0, -2, 5, 2]) == "y = 0x^3 - 2x^2 + 5x + 2"
    assert format_equation("sine", [2, -9, 7, 6]) == "y = 2sin(-9x + 7) + 6"
    assert format_equation("linear", [2, 0]) == "y = 2x + 0"
    assert format_equation("quartic", [1, 0, -1, 0, 4]) == "y = 1x^4 + 0x^3 - 1x^2 + 0x + 4"


@FAST
@given(st.sampled_from(["linear", "quadratic", "cubic", "quartic", "sine"]), st.data())
def test_equation_answers_parse_back(kind: str, data: st.DataObject) -> None:
    size = {"linear": 2, "quadratic": 3, "cubic": 4, "quartic": 5, "sine": 4}[kind]
    coefficients = data.draw(st.lists(st.integers(-20, 20), min_size=size, max_size=size))
    assert parse_equation(format_equation(kind, coefficients), kind) == coefficients  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------- analytic cases


def test_line_y_equals_2x_plus_3() -> None:
    params = figure(Piece.of(Polynomial.of(2, 3), -10, 10))
    assert value("properties/gradient", params) == 2
    assert value("properties/y_intercept", params) == 3
    assert value("properties/x_intercept", params) == Fraction(-3, 2)
    assert format_answer(value("properties/x_intercept", params), "integer") == "-2"  # -1.5 rounds away from zero
    assert value("function/gradient", params) == 2 and value("function/x_intercept", params) == Fraction(-3, 2)
    assert value("function/y_intercept", params) == 3


def test_mean_over_several_lines_is_exact() -> None:
    params = figure(Piece.of(Polynomial.of(2, 3), -10, 10), Piece.of(Polynomial.of(-1, 4), -10, 10))
    assert value("function/gradient", params) == Fraction(1, 2)
    assert value("function/x_intercept", params) == Fraction(5, 4)  # (-1.5 + 4) / 2
    assert value("function/y_intercept", params) == Fraction(7, 2)


def test_known_sine_in_shape_form() -> None:
    # y = 3 sin(2 pi / 4 (x - 1)) + 2
    params = figure(Piece.of(Sine.from_shape(3, 4, 1, 2), -10, 10))
    assert value("properties/amplitude", params) == 3
    assert value("properties/period", params) == 4
    assert value("properties/phase_shift", params) == 1
    assert value("properties/vertical_shift", params) == 2
    piece = Piece.from_params(params["elements"][0])
    assert piece.maximum == 5 and piece.minimum == -1 and piece.range_span == 6
    xs = np.linspace(-10, 10, 2001)
    assert np.allclose(piece.curve.evaluate(xs), 3 * np.sin(np.pi / 2 * (xs - 1)) + 2)


def test_known_sine_in_equation_form() -> None:
    sine = Sine(Fraction(2), Fraction(-9), Fraction(7), Fraction(6))  # y = 2 sin(-9x + 7) + 6
    params = figure(Piece.of(sine, -10, 10), equation="sine")
    kind, coefficients = value("properties/equation", params)
    assert format_equation(kind, coefficients) == "y = 2sin(-9x + 7) + 6"
    assert sine.amplitude == 2 and sine.vertical_shift == 6
    assert sine.period == pytest.approx(2 * math.pi / 9) and sine.phase_shift == pytest.approx(7 / 9)


def test_stationary_points_are_analytic() -> None:
    quadratic = vertex_quadratic(Fraction(1, 2), -3, 4)  # 0.5 (x + 3)^2 + 4
    assert value("properties/stationary", figure(Piece.of(quadratic, -10, 10))) == -3
    cubic = Polynomial.of(1, -Fraction(3, 2) * (-2 + 5), 3 * -2 * 5, 1)  # f' = 3 (x + 2)(x - 5)
    assert value("properties/two_stationary", figure(Piece.of(cubic, -6, 9))) == [-2, 5]
    assert format_answer([-2, 5], "list") == "[-2, 5]"


def test_gaussian_peak_and_variance() -> None:
    params = figure(Piece.of(Gaussian(4, -2, 9), -10, 10))
    assert value("properties/peak", params) == -2
    assert value("properties/function_variance", params) == 9
    assert value("function/variance", params) == 9


def test_areas_of_simple_curves() -> None:
    line = Piece.of(Polynomial.of(1, 0), -1, 2)  # y = x on [-1, 2]
    assert line.net_area == Fraction(3, 2) and line.total_area == Fraction(5, 2)
    parabola = Piece.of(Polynomial.of(1, 0, -1), -2, 2)  # x^2 - 1 on [-2, 2]
    assert parabola.net_area == Fraction(4, 3) and parabola.total_area == 4
    assert parabola.mean_value == Fraction(1, 3)
    sine = Piece.of(Sine.from_shape(1, 4, 0, 0), 0, 4)  # one full period
    assert sine.net_area == pytest.approx(0, abs=1e-12) and sine.total_area == pytest.approx(8 / math.pi)


def test_data_statistics_on_a_known_series() -> None:
    ys = [1.5, -2.0, 4.0, 0.5, 3.0]
    params = {"elements": [series_element([0.0, 1.0, 2.0, 3.0, 4.0], ys)]}
    assert value("properties/median", params) == Fraction(3, 2)
    assert value("properties/iqr", params) == Fraction(3) - Fraction(1, 2)
    assert value("properties/data_max", params) == 4 and value("properties/data_min", params) == -2
    assert value("properties/data_range", params) == 6 and value("properties/data_domain", params) == 4
    assert value("series/mean", params) == Fraction(7, 5)
    assert value("series/variance", params) == Fraction(np.var(ys)).limit_denominator(1000)


# ---------------------------------------------------------------------------------------------------- hypothesis

coefficient = st.integers(-5, 5)
domain = st.tuples(st.integers(-10, 8), st.integers(2, 12)).map(lambda pair: (pair[0], min(10, pair[0] + pair[1])))


@st.composite
def polynomials(draw: st.DrawFn) -> Piece:
    degree = draw(st.integers(1, 4))
    values = [draw(st.integers(-3, 3).filter(bool))] + [draw(coefficient) for _ in range(degree)]
    scale = draw(st.sampled_from([Fraction(1, 10), Fraction(1, 2), Fraction(1)]))
    x0, x1 = draw(domain)
    return Piece.of(Polynomial(tuple(scale * value for value in values)), x0, x1)


@st.composite
def sines(draw: st.DrawFn) -> Piece:
    period = draw(st.integers(1, 12))
    curve = Sine.from_shape(draw(st.integers(1, 8)), period, draw(st.integers(-5, 5)), draw(st.integers(-6, 6)))
    x0, x1 = draw(domain)
    return Piece.of(curve, x0, x1)


pieces_strategy = st.one_of(polynomials(), sines())


def _dense(piece: Piece, n: int = 20001) -> tuple[np.ndarray, np.ndarray]:
    xs = np.linspace(float(piece.x0), float(piece.x1), n)
    return xs, piece.curve.evaluate(xs)


@FAST
@given(pieces_strategy)
def test_areas_match_scipy_quadrature(piece: Piece) -> None:
    f = piece.curve.evaluate
    x0, x1 = float(piece.x0), float(piece.x1)
    breaks = [float(root) for root in piece.curve.roots(piece.x0, piece.x1)]
    net, _ = integrate.quad(f, x0, x1, limit=400, points=breaks or None)
    total, _ = integrate.quad(lambda x: abs(f(x)), x0, x1, limit=400, points=breaks or None)
    scale = max(1.0, abs(total))
    assert float(piece.net_area) == pytest.approx(net, abs=1e-7 * scale)
    assert float(piece.total_area) == pytest.approx(total, abs=1e-7 * scale)
    assert float(piece.mean_value) == pytest.approx(net / (x1 - x0), abs=1e-7 * scale)


@FAST
@given(pieces_strategy)
def test_extrema_bound_a_dense_sampling_and_are_reached(piece: Piece) -> None:
    _, ys = _dense(piece)
    span = max(1.0, float(ys.max() - ys.min()))
    assert float(piece.maximum) >= ys.max() - 1e-9 * span and float(piece.minimum) <= ys.min() + 1e-9 * span
    # reached: the dense sampling gets within its resolution of the exact extremum
    assert float(piece.maximum) == pytest.approx(ys.max(), abs=1e-3 * span)
    assert float(piece.minimum) == pytest.approx(ys.min(), abs=1e-3 * span)


@FAST
@given(polynomials())
def test_stationary_points_are_roots_of_the_derivative(piece: Piece) -> None:
    curve = piece.curve
    assert isinstance(curve, Polynomial)
    for point in curve.stationary_points():
        slope = float(curve.derivative().value_at(point))
        assert abs(slope) <= 1e-7 * max(1.0, *(abs(float(c)) for c in curve.coefficients))
    # numpy's roots of the derivative (a double root may come back with a tiny imaginary part)
    expected = [r.real for r in np.roots([float(c) for c in curve.derivative().trimmed]) if abs(r.imag) < 1e-6]
    found = [float(point) for point in curve.stationary_points()]
    assert all(any(abs(f - e) < 1e-5 for e in expected) for f in found)
    assert all(any(abs(f - e) < 1e-5 for f in found) for e in expected)


one_decimal = st.integers(-200, 200).map(lambda tenths: tenths / 10)


@FAST
@given(st.lists(one_decimal, min_size=2, max_size=40))
def test_data_statistics_equal_numpy(ys: list[float]) -> None:
    data = np.asarray(ys)
    assert float(data_stats.mean(ys)) == pytest.approx(data.mean(), abs=1e-9)
    assert float(data_stats.median(ys)) == pytest.approx(np.median(data), abs=1e-9)
    iqr = np.percentile(data, 75) - np.percentile(data, 25)
    assert float(data_stats.interquartile_range(ys)) == pytest.approx(iqr, abs=1e-9)
    assert float(data_stats.variance(ys)) == pytest.approx(data.var(), abs=1e-9)
    assert data_stats.extent(ys) == Fraction(str(max(ys))) - Fraction(str(min(ys)))


@FAST
@given(st.lists(st.tuples(one_decimal, one_decimal), min_size=3, max_size=40, unique_by=lambda p: p[0]))
def test_correlations_equal_scipy(points: list[tuple[float, float]]) -> None:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    if len(set(ys)) < 2:
        return
    params = {"elements": [{"type": "scatter", "x": xs, "y": ys}]}
    assert value("properties/pearson", params) == stats.pearsonr(xs, ys).statistic
    assert value("properties/spearman", params) == stats.spearmanr(xs, ys).statistic
    assert value("properties/kendall", params) == stats.kendalltau(xs, ys).statistic


@st.composite
def operations(draw: st.DrawFn, max_size: int = 9) -> list[Operation]:
    steps = []
    for _ in range(draw(st.integers(0, max_size))):
        kind = draw(st.sampled_from(["rotation", "scale", "translation", "x", "y", "y=x", "y=-x", "x=k", "y=k"]))
        shift = draw(st.integers(-10, 10))
        axis = draw(st.sampled_from(["x", "y"]))
        steps.append(
            {
                "rotation": Operation("rotation", draw(st.sampled_from(ANGLES))),
                "scale": Operation("scale", draw(st.sampled_from(SCALES)), axis),
                "translation": Operation("translation", shift, axis),
                "x": Operation("reflect_x_axis"),
                "y": Operation("reflect_y_axis"),
                "y=x": Operation("reflect_y_eq_x"),
                "y=-x": Operation("reflect_y_eq_minus_x"),
                "x=k": Operation("reflect_x_eq", shift),
                "y=k": Operation("reflect_y_eq", shift),
            }[kind]
        )
    return steps


def _apply_in_order(steps: list[Operation], points: np.ndarray) -> np.ndarray:
    for step in steps:
        points = step.apply(points)
    return points


@FAST
@given(pieces_strategy, operations())
@pytest.mark.slow
def test_composed_transforms_match_the_point_set(piece: Piece, steps: list[Operation]) -> None:
    xs, ys = _dense(piece)
    moved = _apply_in_order(steps, np.column_stack((xs, ys)))
    affine = compose(steps)
    assert np.allclose(affine.apply(np.column_stack((xs, ys))), moved, rtol=1e-9, atol=1e-6)
    params = {**figure(piece), "operations": [step.to_params() for step in steps]}
    size = max(1.0, float(np.abs(moved).max()))
    tolerance = 2e-3 * size
    assert float(value("transform/max", params)) == pytest.approx(moved[:, 1].max(), abs=tolerance)
    assert float(value("transform/min", params)) == pytest.approx(moved[:, 1].min(), abs=tolerance)
    assert float(value("transform/range", params)) == pytest.approx(np.ptp(moved[:, 1]), abs=tolerance)
    assert float(value("transform/domain", params)) == pytest.approx(np.ptp(moved[:, 0]), abs=tolerance)
    image = affine.piece(piece)
    if image is None:
        assert affine.swaps_axes
        return
    order = np.argsort(moved[:, 0])
    mx, my = moved[order, 0], moved[order, 1]
    assert np.allclose(image.curve.evaluate(mx), my, atol=1e-6 * size)
    net = float(np.trapezoid(my, mx))
    assert float(value("transform/net_area", params)) == pytest.approx(net, abs=1e-3 * size * float(np.ptp(mx)) + 1e-6)


def test_known_transforms_of_a_line() -> None:
    line = Piece.of(Polynomial.of(2, 1), 0, 2)  # y = 2x + 1 on [0, 2]: from (0, 1) to (2, 5)

    def gradient(*steps: Operation) -> object:
        return value("transform/gradient", {**figure(line), "operations": [step.to_params() for step in steps]})

    assert gradient() == 2
    assert gradient(Operation("reflect_y_eq_x")) == Fraction(1, 2)
    assert gradient(Operation("rotation", "90.0")) == Fraction(-1, 2)
    assert gradient(Operation("scale", "2.0", "y"), Operation("translation", 7, "x")) == 4
    assert gradient(Operation("scale", "0.1", "x")) == 20
    assert gradient(Operation("reflect_x_axis"), Operation("reflect_y_axis")) == 2
    moved = {**figure(line), "operations": [Operation("rotation", "90.0").to_params()]}  # (x, y) -> (-y, x)
    assert value("transform/domain", moved) == 4 and value("transform/range", moved) == 2
    assert value("transform/max", moved) == 2 and value("transform/min", moved) == 0
    reflected = {**figure(line), "operations": [Operation("reflect_y_eq", 3).to_params()]}  # y -> 6 - y
    assert value("transform/max", reflected) == 5 and value("transform/min", reflected) == 1
    assert value("transform/net_area", reflected) == Fraction(12 - 6, 1)  # 6 * 2 - (area of 2x + 1 on [0, 2] = 6)


def test_operation_wording_is_the_real_sets() -> None:
    assert Operation("rotation", "90.0").text() == "rotation by 90.0 degrees about the origin"
    assert Operation("scale", "0.5", "x").text() == "scale by 0.5 in x"
    assert Operation("translation", -3, "y").text() == "translation by -3 in y"
    assert Operation("reflect_y_eq_minus_x").text() == "reflection in the line y=-x"
    assert Operation("reflect_x_eq", 4).text() == "reflection in the line x=4"
    assert Operation("reflect_y_eq", -2).text() == "reflection in the line y=-2"
