"""Function families of GRAB graphs (polynomial, sine, Gaussian) and their exact analytics: ground truth computed from
the drawn parameters (GRAB paper §3: one family per graph on the fixed schema).
Manual: docs/curation.md, "Function families and their exact analytics".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from scifig_tasks.benchmarks.grab.answers import Value, exact

TWO_PI = 2 * math.pi
RENDER_POINTS = 400


def as_value(number: Any) -> Value:
    """A JSON number or ``"p/q"`` string as an exact value (decimal JSON floats are read as the decimal they print)."""
    if isinstance(number, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(number, int | Fraction):
        return Fraction(number)
    return exact(number)


def to_json(number: Value) -> int | float | str:
    """An exact value as JSON: an int, a float whose ``repr`` is the exact decimal, else ``"p/q"``."""
    if isinstance(number, float):
        return number
    value = Fraction(number)
    if value.denominator == 1:
        return int(value)
    denominator = value.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    if denominator == 1:
        as_float = float(value)
        if exact(as_float) == value:
            return as_float
    return f"{value.numerator}/{value.denominator}"


def _max(values: Sequence[Value]) -> Value:
    return max(values, key=float)


def _min(values: Sequence[Value]) -> Value:
    return min(values, key=float)


class Curve(Protocol):
    """What a function family provides."""

    def to_params(self) -> dict[str, Any]: ...

    def evaluate(self, xs: np.ndarray) -> np.ndarray: ...

    def value_at(self, x: Value) -> Value: ...

    def critical_points(self, x0: Value, x1: Value) -> list[Value]: ...

    def roots(self, x0: Value, x1: Value) -> list[Value]: ...

    def antiderivative_at(self, x: Value) -> Value: ...

    def affine(self, alpha: Fraction, shift_x: Fraction, beta: Fraction, shift_y: Fraction) -> Curve: ...

    def render_samples(self, x0: float, x1: float) -> int: ...


# ---------------------------------------------------------------------------------------------------- polynomial


def _poly_value(coefficients: Sequence[Fraction], x: Value) -> Value:
    total: Value = 0
    for coefficient in coefficients:
        total = total * x + coefficient
    return total


def _poly_mul(left: Sequence[Fraction], right: Sequence[Fraction]) -> list[Fraction]:
    out = [Fraction(0)] * (len(left) + len(right) - 1)
    for i, a in enumerate(left):
        for j, b in enumerate(right):
            out[i + j] += a * b
    return out


def _poly_add(left: Sequence[Fraction], right: Sequence[Fraction]) -> list[Fraction]:
    size = max(len(left), len(right))
    padded_left = [Fraction(0)] * (size - len(left)) + list(left)
    padded_right = [Fraction(0)] * (size - len(right)) + list(right)
    return [a + b for a, b in zip(padded_left, padded_right, strict=True)]


def _rational_sqrt(value: Fraction) -> Fraction | None:
    if value < 0:
        return None
    top, bottom = math.isqrt(value.numerator), math.isqrt(value.denominator)
    if top * top == value.numerator and bottom * bottom == value.denominator:
        return Fraction(top, bottom)
    return None


@dataclass(frozen=True)
class Polynomial:
    """``y = c[0] x^n + ... + c[n]`` with exact coefficients (highest power first)."""

    coefficients: tuple[Fraction, ...]

    @classmethod
    def of(cls, *coefficients: Value) -> Polynomial:
        return cls(tuple(as_value(value) for value in coefficients))

    @classmethod
    def from_roots(cls, scale: Value, roots: Sequence[Value]) -> Polynomial:
        coefficients = [as_value(scale)]
        for root in roots:
            coefficients = _poly_mul(coefficients, [Fraction(1), -as_value(root)])
        return cls(tuple(coefficients))

    @property
    def trimmed(self) -> tuple[Fraction, ...]:
        """Coefficients without leading zeros (at least one)."""
        index = 0
        while index < len(self.coefficients) - 1 and self.coefficients[index] == 0:
            index += 1
        return self.coefficients[index:]

    @property
    def degree(self) -> int:
        return len(self.trimmed) - 1

    def to_params(self) -> dict[str, Any]:
        return {"family": "polynomial", "coefficients": [to_json(value) for value in self.coefficients]}

    def evaluate(self, xs: np.ndarray) -> np.ndarray:
        return np.polyval([float(value) for value in self.coefficients], xs)

    def value_at(self, x: Value) -> Value:
        return _poly_value(self.coefficients, x)

    def derivative(self) -> Polynomial:
        trimmed = self.trimmed
        degree = len(trimmed) - 1
        if degree == 0:
            return Polynomial((Fraction(0),))
        return Polynomial(tuple(value * (degree - index) for index, value in enumerate(trimmed[:-1])))

    def antiderivative_at(self, x: Value) -> Value:
        degree = len(self.coefficients) - 1
        integrated = [value / (degree - index + 1) for index, value in enumerate(self.coefficients)] + [Fraction(0)]
        return _poly_value(integrated, x)

    def all_real_roots(self) -> list[Value]:
        """Real roots, ascending: exact for degree <= 2 when the discriminant has a rational root, else doubles."""
        trimmed = self.trimmed
        degree = len(trimmed) - 1
        if degree <= 0:
            return []
        if degree == 1:
            return [-trimmed[1] / trimmed[0]]
        if degree == 2:
            a, b, c = trimmed
            discriminant = b * b - 4 * a * c
            if discriminant < 0:
                return []
            root = _rational_sqrt(discriminant)
            if root is not None:
                found = {(-b - root) / (2 * a), (-b + root) / (2 * a)}
                return sorted(found)
            sq = math.sqrt(float(discriminant))
            # The numerically stable pair of the quadratic formula.
            q = -0.5 * (float(b) + math.copysign(sq, float(b)))
            pair = sorted({q / float(a), float(c) / q}) if q != 0 else [0.0]
            return list(pair)
        found = []
        for candidate in np.roots([float(value) for value in trimmed]):
            if abs(candidate.imag) > 1e-7 * max(1.0, abs(candidate.real)):
                continue
            found.append(self._polish(float(candidate.real)))
        unique: list[float] = []
        for value in sorted(found):
            if not unique or abs(value - unique[-1]) > 1e-9:
                unique.append(value)
        return list(unique)

    def _polish(self, x: float) -> float:
        derivative = self.derivative()
        for _ in range(50):
            slope = float(derivative.value_at(x))
            if slope == 0:
                break
            step = float(self.value_at(x)) / slope
            x -= step
            if abs(step) < 1e-15 * max(1.0, abs(x)):
                break
        return x

    def roots(self, x0: Value, x1: Value) -> list[Value]:
        return [root for root in self.all_real_roots() if float(x0) < float(root) < float(x1)]

    def critical_points(self, x0: Value, x1: Value) -> list[Value]:
        return [point for point in self.derivative().all_real_roots() if float(x0) < float(point) < float(x1)]

    def stationary_points(self) -> list[Value]:
        return self.derivative().all_real_roots()

    def affine(self, alpha: Fraction, shift_x: Fraction, beta: Fraction, shift_y: Fraction) -> Polynomial:
        """``y' = beta * p((x' - shift_x) / alpha) + shift_y``."""
        inner = [1 / alpha, -shift_x / alpha]
        out: list[Fraction] = [Fraction(0)]
        for coefficient in self.coefficients:
            out = _poly_add(_poly_mul(out, inner), [coefficient])
        out = [beta * value for value in out]
        out[-1] += shift_y
        return Polynomial(tuple(out[-len(self.coefficients) :]))

    def render_samples(self, x0: float, x1: float) -> int:
        return RENDER_POINTS


# ---------------------------------------------------------------------------------------------------- sine


@dataclass(frozen=True)
class Sine:
    """``y = a sin(b x + c) + d``; the exact shape values are kept when the sine was drawn from them."""

    a: Value
    b: Value
    c: Value
    d: Value
    period_exact: Value | None = None
    phase_exact: Value | None = None

    @classmethod
    def from_shape(cls, amplitude: Value, period: Value, phase_shift: Value, vertical_shift: Value) -> Sine:
        b = TWO_PI / float(period)
        return cls(as_value(amplitude), b, -b * float(phase_shift), as_value(vertical_shift), period, phase_shift)

    @property
    def amplitude(self) -> Value:
        return abs(self.a)

    @property
    def period(self) -> Value:
        return self.period_exact if self.period_exact is not None else TWO_PI / abs(float(self.b))

    @property
    def phase_shift(self) -> Value:
        """``h`` of ``a sin(b (x - h)) + d`` (``-c / b``)."""
        return self.phase_exact if self.phase_exact is not None else -float(self.c) / float(self.b)

    @property
    def vertical_shift(self) -> Value:
        return self.d

    def to_params(self) -> dict[str, Any]:
        if self.period_exact is not None and self.phase_exact is not None:
            return {
                "family": "sine",
                "amplitude": to_json(self.a),
                "period": to_json(self.period_exact),
                "phase_shift": to_json(self.phase_exact),
                "vertical_shift": to_json(self.d),
            }
        return {
            "family": "sine",
            "a": to_json(self.a),
            "b": to_json(self.b),
            "c": to_json(self.c),
            "d": to_json(self.d),
        }

    def evaluate(self, xs: np.ndarray) -> np.ndarray:
        return float(self.a) * np.sin(float(self.b) * xs + float(self.c)) + float(self.d)

    def value_at(self, x: Value) -> Value:
        return float(self.a) * math.sin(float(self.b) * float(x) + float(self.c)) + float(self.d)

    def _solutions(self, targets: Sequence[float], x0: Value, x1: Value) -> list[float]:
        """All x in the open interval with ``b x + c`` equal to a target modulo 2 pi."""
        b, c = float(self.b), float(self.c)
        low, high = sorted((b * float(x0) + c, b * float(x1) + c))
        found = []
        for target in targets:
            k = math.ceil((low - target) / TWO_PI)
            while target + k * TWO_PI <= high:
                x = (target + k * TWO_PI - c) / b
                if float(x0) < x < float(x1):
                    found.append(x)
                k += 1
        return sorted(found)

    def critical_points(self, x0: Value, x1: Value) -> list[Value]:
        if self.a == 0:
            return []
        return list(self._solutions([math.pi / 2, 3 * math.pi / 2], x0, x1))

    def peak_values(self, x0: Value, x1: Value) -> list[Value]:
        """Exact values ``d +- |a|`` reached inside the open domain."""
        values: list[Value] = []
        if self.a == 0:
            return values
        for target, sign in ((math.pi / 2, 1), (3 * math.pi / 2, -1)):
            if self._solutions([target], x0, x1):
                values.append(self.d + sign * self.a)
        return values

    def roots(self, x0: Value, x1: Value) -> list[Value]:
        if self.a == 0:
            return []
        ratio = -float(self.d) / float(self.a)
        if abs(ratio) > 1:
            return []
        base = math.asin(ratio)
        return list(self._solutions(sorted({base, math.pi - base}), x0, x1))

    def antiderivative_at(self, x: Value) -> Value:
        return -float(self.a) / float(self.b) * math.cos(float(self.b) * float(x) + float(self.c)) + float(
            self.d
        ) * float(x)

    def affine(self, alpha: Fraction, shift_x: Fraction, beta: Fraction, shift_y: Fraction) -> Sine:
        b = float(self.b) / float(alpha)
        c = float(self.c) - float(self.b) * float(shift_x) / float(alpha)
        return Sine(beta * as_value(self.a), b, c, beta * as_value(self.d) + shift_y)

    def render_samples(self, x0: float, x1: float) -> int:
        cycles = abs(x1 - x0) / float(self.period)
        return int(min(4000, max(RENDER_POINTS, math.ceil(80 * cycles))))


# ---------------------------------------------------------------------------------------------------- gaussian


@dataclass(frozen=True)
class Gaussian:
    """``y = height * exp(-(x - mean)^2 / (2 variance))``."""

    height: Value
    mean: Value
    variance: Value

    def to_params(self) -> dict[str, Any]:
        return {
            "family": "gaussian",
            "height": to_json(self.height),
            "mean": to_json(self.mean),
            "variance": to_json(self.variance),
        }

    def evaluate(self, xs: np.ndarray) -> np.ndarray:
        return float(self.height) * np.exp(-((xs - float(self.mean)) ** 2) / (2 * float(self.variance)))

    def value_at(self, x: Value) -> Value:
        if x == self.mean:
            return self.height
        return float(self.height) * math.exp(-((float(x) - float(self.mean)) ** 2) / (2 * float(self.variance)))

    def critical_points(self, x0: Value, x1: Value) -> list[Value]:
        return [self.mean] if float(x0) < float(self.mean) < float(x1) else []

    def roots(self, x0: Value, x1: Value) -> list[Value]:
        return []

    def antiderivative_at(self, x: Value) -> Value:
        sigma = math.sqrt(float(self.variance))
        return (
            float(self.height)
            * sigma
            * math.sqrt(math.pi / 2)
            * math.erf((float(x) - float(self.mean)) / (sigma * math.sqrt(2)))
        )

    def affine(self, alpha: Fraction, shift_x: Fraction, beta: Fraction, shift_y: Fraction) -> Curve:
        raise NotImplementedError("gaussian curves are not transformed by the generator")

    def render_samples(self, x0: float, x1: float) -> int:
        return RENDER_POINTS


def curve_from_params(params: Mapping[str, Any]) -> Curve:
    """Rebuild a curve from its ``to_params`` dictionary (the generating parameters stored in the metadata)."""
    family = params.get("family")
    if family == "polynomial":
        return Polynomial.of(*params["coefficients"])
    if family == "sine":
        if "period" in params:
            return Sine.from_shape(
                params["amplitude"],
                as_value(params["period"]),
                as_value(params["phase_shift"]),
                params["vertical_shift"],
            )
        return Sine(*(params[key] if isinstance(params[key], float) else as_value(params[key]) for key in "abcd"))
    if family == "gaussian":
        return Gaussian(as_value(params["height"]), as_value(params["mean"]), as_value(params["variance"]))
    raise ValueError(f"unknown curve family {family!r} in {dict(params)}")


# ---------------------------------------------------------------------------------------------------- pieces


@dataclass(frozen=True)
class Piece:
    """A curve drawn over the closed domain ``[x0, x1]``, and its properties over that domain."""

    curve: Curve
    x0: Fraction
    x1: Fraction

    @classmethod
    def of(cls, curve: Curve, x0: Value, x1: Value) -> Piece:
        low, high = as_value(x0), as_value(x1)
        if not low < high:
            raise ValueError(f"empty domain [{x0}, {x1}]")
        return cls(curve, low, high)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Piece:
        x0, x1 = params["domain"]
        return cls.of(curve_from_params(params), x0, x1)

    def to_params(self) -> dict[str, Any]:
        return {**self.curve.to_params(), "domain": [to_json(self.x0), to_json(self.x1)]}

    @property
    def domain_length(self) -> Fraction:
        return self.x1 - self.x0

    @cached_property
    def bounds(self) -> tuple[Value, Value]:
        """``(minimum, maximum)`` over the closed domain: end points and interior critical points."""
        values = [self.curve.value_at(self.x0), self.curve.value_at(self.x1)]
        if isinstance(self.curve, Sine):
            values += self.curve.peak_values(self.x0, self.x1)
        else:
            values += [self.curve.value_at(point) for point in self.curve.critical_points(self.x0, self.x1)]
        return _min(values), _max(values)

    @property
    def maximum(self) -> Value:
        return self.bounds[1]

    @property
    def minimum(self) -> Value:
        return self.bounds[0]

    @property
    def range_span(self) -> Value:
        return self.maximum - self.minimum

    @property
    def net_area(self) -> Value:
        """Signed area between the curve and the x-axis over the domain (exact antiderivative)."""
        return self.curve.antiderivative_at(self.x1) - self.curve.antiderivative_at(self.x0)

    @property
    def total_area(self) -> Value:
        """Unsigned area: the domain is split at the roots and the pieces' absolute areas are summed."""
        cuts: list[Value] = [self.x0, *self.curve.roots(self.x0, self.x1), self.x1]
        total: Value = 0
        for left, right in zip(cuts, cuts[1:], strict=False):
            total += abs(self.curve.antiderivative_at(right) - self.curve.antiderivative_at(left))
        return total

    @property
    def mean_value(self) -> Value:
        """Average value over the domain: net area / domain length."""
        return self.net_area / self.domain_length

    def fits(self, low: float, high: float) -> bool:
        """True when the whole piece lies within ``low <= y <= high``."""
        return low <= float(self.minimum) and float(self.maximum) <= high

    def sample(self) -> tuple[np.ndarray, np.ndarray]:
        """The polyline drawn for this piece."""
        xs = np.linspace(float(self.x0), float(self.x1), self.curve.render_samples(float(self.x0), float(self.x1)))
        return xs, self.curve.evaluate(xs)
