"""Samplers of the transform task: 7 question types, 310 questions (as in the published set; GRAB paper §3: a
property of the curve after ``complexity`` listed operations).
Manual: docs/curation.md, "Transform task".
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from curation.grab.affine import Affine, Operation, compose, deal_families, operation_of, random_operation
from curation.grab.curves import Piece, Polynomial
from curation.grab.functions import fixed_quadratic, fixed_segment, fixed_sine
from curation.grab.sampling import FIXED_LIMIT, Params, Sampler, curve_element, pieces
from scifig_tasks.benchmarks.grab.answers import Value

VALUE_RANGE = (-1000.0, 1000.0)


def gradient_segment(rng: random.Random) -> Piece | None:
    """A line segment with integer slope -5..5 and intercept -9..9, cut to where it is inside the schema."""
    slope, intercept = rng.randint(-5, 5), rng.randint(-9, 9)
    if slope == 0:
        low, high = -10, 10
    else:
        ends = sorted(((-FIXED_LIMIT - intercept) / slope, (FIXED_LIMIT - intercept) / slope))
        low, high = max(-10, math.ceil(ends[0])), min(10, math.floor(ends[1]))
    if high - low < 2:
        return None
    x0 = rng.randint(low, high - 2)
    return Piece.of(Polynomial.of(slope, intercept), x0, rng.randint(x0 + 2, high))


def operations(params: Params) -> list[Operation]:
    return [Operation.from_params(step) for step in params["operations"]]


def transformed(params: Params) -> tuple[Piece, Affine]:
    (piece,) = pieces(params)
    return piece, compose(operations(params))


def box(params: Params) -> tuple[Any, Any, Any, Any]:
    """``(x_min, x_max, y_min, y_max)`` of the transformed curve."""
    piece, affine = transformed(params)
    return affine.box(piece.x0, piece.x1, piece.minimum, piece.maximum)


def _extent(bounds: tuple[Any, ...]) -> Value:
    low, high = bounds
    return high - low


def _function_of_x(params: Params) -> Piece:
    piece, affine = transformed(params)
    image = affine.piece(piece)
    if image is None:
        raise ValueError("the transformed curve is not a function of x")
    return image


def _gradient(params: Params) -> Value:
    image = _function_of_x(params)
    assert isinstance(image.curve, Polynomial) and image.curve.degree <= 1
    return image.curve.derivative().value_at(0)


def _sampler(
    families: tuple[Callable[[random.Random], Piece | None], ...],
    value: Callable[[Params], Value],
    needs_function: bool = False,
) -> Sampler:
    def draw(rng: random.Random, complexity: int, target: object) -> Params | None:
        piece = rng.choice(families)(rng)
        if piece is None:
            return None
        if target is None:
            steps = [random_operation(rng) for _ in range(complexity)]
        else:  # the families dealt to this question (plan slots), in order
            steps = [operation_of(family, rng) for family in target]  # type: ignore[attr-defined]
        if needs_function and compose(steps).piece(piece) is None:
            return None
        return {"elements": [curve_element(piece)], "operations": [step.to_params() for step in steps]}

    return Sampler(draw=draw, value=value, value_range=VALUE_RANGE, slots=deal_families)


ANY = (fixed_quadratic, fixed_sine, fixed_segment)

SAMPLERS: dict[str, Sampler] = {
    "transform/net_area": _sampler(ANY, lambda p: _function_of_x(p).net_area, needs_function=True),
    "transform/total_area": _sampler(ANY, lambda p: _function_of_x(p).total_area, needs_function=True),
    "transform/max": _sampler(ANY, lambda p: box(p)[3]),
    "transform/min": _sampler(ANY, lambda p: box(p)[2]),
    "transform/gradient": _sampler((gradient_segment,), _gradient, needs_function=True),
    "transform/domain": _sampler(ANY, lambda p: _extent(box(p)[0:2])),
    "transform/range": _sampler(ANY, lambda p: _extent(box(p)[2:4])),
}
