"""Samplers of the function task: 13 question types, 710 questions (as in the published set; GRAB paper §3: the mean
of a property over ``complexity + 1`` functions).
Manual: docs/curation.md, "Function task" (families and value ranges per type).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from fractions import Fraction

from curation.grab.curves import Gaussian, Piece, Polynomial, Sine
from curation.grab.properties import QUADRATIC_SCALES, random_phase, vertex_quadratic
from curation.grab.sampling import FIXED_LIMIT, Params, Sampler, curve_element, mean_of, pieces
from scifig_tasks.benchmarks.grab.answers import Value

PieceDraw = Callable[[random.Random], Piece | None]
LINE_SLOPES = tuple(Fraction(s) for s in ("-3", "-2", "-1", "-0.5", "0.5", "1", "2", "3"))


def _fits(piece: Piece) -> Piece | None:
    return piece if piece.fits(-FIXED_LIMIT, FIXED_LIMIT) else None


def fixed_quadratic(rng: random.Random) -> Piece | None:
    """A quadratic ``a (x - h)^2 + k`` inside the fixed schema, its vertex strictly inside its domain."""
    h, k, a = rng.randint(-8, 8), rng.randint(-8, 8), rng.choice(QUADRATIC_SCALES)
    # The curve leaves the y-limits at distance sqrt(room / |a|) from the vertex: keep the domain inside that.
    room = FIXED_LIMIT - k if a > 0 else FIXED_LIMIT + k
    reach = math.isqrt(math.floor(room / abs(a)))
    if reach < 1:
        return None
    x0, x1 = rng.randint(max(-10, h - reach), h - 1), rng.randint(h + 1, min(10, h + reach))
    return _fits(Piece.of(vertex_quadratic(a, h, k), x0, x1))


def fixed_sine(rng: random.Random) -> Piece | None:
    """A sine with integer amplitude 1..5, period 2..10 and vertical shift, over a domain of length >= 4."""
    amplitude, period = rng.randint(1, 5), rng.randint(2, 10)
    shift = rng.randint(amplitude - FIXED_LIMIT, FIXED_LIMIT - amplitude)
    x0 = rng.randint(-10, 6)
    curve = Sine.from_shape(amplitude, period, random_phase(rng, period), shift)
    return _fits(Piece.of(curve, x0, rng.randint(x0 + 4, 10)))


def fixed_segment(rng: random.Random) -> Piece | None:
    """A line segment with an integer domain of length >= 2 inside the fixed schema."""
    slope = rng.choice((*LINE_SLOPES, Fraction(0)))
    x0 = rng.randint(-10, 8)
    return _fits(Piece.of(Polynomial((slope, Fraction(rng.randint(-8, 8)))), x0, rng.randint(x0 + 2, 10)))


def fixed_gaussian(rng: random.Random) -> Piece | None:
    return Piece.of(Gaussian(rng.randint(2, 9), rng.randint(-6, 6), rng.randint(1, 10)), -10, 10)


def _full_line(slope: Value, intercept: Value) -> Piece:
    return Piece.of(Polynomial((Fraction(slope), Fraction(intercept))), -10, 10)


def _gradient_line(rng: random.Random) -> Piece | None:
    return _full_line(rng.randint(-5, 5), rng.randint(-9, 9))


def _x_intercept_line(rng: random.Random) -> Piece | None:
    slope = rng.choice(LINE_SLOPES)
    return _full_line(slope, -slope * rng.randint(-9, 9))


def _y_intercept_line(rng: random.Random) -> Piece | None:
    return _full_line(rng.randint(-3, 3), rng.randint(-9, 9))


def draw_pieces(rng: random.Random, count: int, families: tuple[PieceDraw, ...]) -> list[Piece] | None:
    """``count`` distinct pieces of one family chosen for the graph (``None`` if they could not be drawn)."""
    family = rng.choice(families)
    chosen: dict[str, Piece] = {}
    for _ in range(count * 50):
        piece = family(rng)
        if piece is not None:
            chosen.setdefault(json.dumps(piece.to_params(), sort_keys=True), piece)
        if len(chosen) == count:
            return list(chosen.values())
    return None


def _sampler(families: tuple[PieceDraw, ...], per_piece: Callable[[Piece], Value]) -> Sampler:
    def draw(rng: random.Random, complexity: int, target: object) -> Params | None:
        drawn = draw_pieces(rng, complexity + 1, families)
        return None if drawn is None else {"elements": [curve_element(piece) for piece in drawn]}

    def value(params: Params) -> Value:
        return mean_of([per_piece(piece) for piece in pieces(params)])

    return Sampler(draw=draw, value=value)


def _slope(piece: Piece) -> Value:
    return piece.curve.derivative().value_at(0)  # type: ignore[attr-defined]


def _root(piece: Piece) -> Value:
    (root,) = piece.curve.all_real_roots()  # type: ignore[attr-defined]
    return root


def _vertex(piece: Piece) -> Value:
    (point,) = piece.curve.critical_points(piece.x0, piece.x1)
    return point


def _sine(piece: Piece) -> Sine:
    assert isinstance(piece.curve, Sine)
    return piece.curve


def _gaussian(piece: Piece) -> Gaussian:
    assert isinstance(piece.curve, Gaussian)
    return piece.curve


SHAPED = (fixed_quadratic, fixed_sine)

SAMPLERS: dict[str, Sampler] = {
    "function/net_area": _sampler(SHAPED, lambda piece: piece.net_area),
    "function/total_area": _sampler(SHAPED, lambda piece: piece.total_area),
    "function/max": _sampler(SHAPED, lambda piece: piece.maximum),
    "function/min": _sampler(SHAPED, lambda piece: piece.minimum),
    "function/gradient": _sampler((_gradient_line,), _slope),
    "function/x_intercept": _sampler((_x_intercept_line,), _root),
    "function/y_intercept": _sampler((_y_intercept_line,), lambda piece: piece.curve.value_at(0)),
    "function/variance": _sampler((fixed_gaussian,), lambda piece: _gaussian(piece).variance),
    "function/domain": _sampler((fixed_segment, fixed_quadratic, fixed_sine), lambda piece: piece.domain_length),
    "function/range": _sampler(SHAPED, lambda piece: piece.range_span),
    "function/function_mean": _sampler((fixed_quadratic, fixed_segment), lambda piece: piece.mean_value),
    "function/stationary": _sampler((fixed_quadratic,), _vertex),
    "function/amplitude": _sampler((fixed_sine,), lambda piece: _sine(piece).amplitude),
    "function/period": _sampler((fixed_sine,), lambda piece: _sine(piece).period),
    "function/vertical_shift": _sampler((fixed_sine,), lambda piece: _sine(piece).vertical_shift),
}
