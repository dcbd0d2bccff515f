"""GRAB answer strings: the one implementation of the answer formats and of the rounding convention.

GRAB paper: answers in the precision the question states (integer, 1 d.p., nearest 10, a list, an equation); the
rounding rule, half away from zero, is ours (the paper states none). An answer is written in ASCII digits and the
ASCII minus: the patterns below read no other (``re.ASCII``: a bare digit class would match the digits of every script).
Manual: tasks/README.md, 'Answer formats and rounding'.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Literal

from scifig_tasks.benchmarks.grab.rules import Precision, precision_of

Value = int | Fraction | float
"""A ground-truth value: exact (int, Fraction) or a double."""

EquationKind = Literal["linear", "quadratic", "cubic", "quartic", "sine"]

EQUATION_TEMPLATES: dict[EquationKind, str] = {
    "linear": "y = <m>x + <c>",
    "quadratic": "y = <a>x^2 + <b>x + <c>",
    "cubic": "y = <a>x^3 + <b>x^2 + <c>x + <d>",
    "quartic": "y = <a>x^4 + <b>x^3 + <c>x^2 + <d>x + <e>",
    "sine": "y = <a>sin(<b>x + <c>) + <d>",
}
"""The answer form each equation question states (as in the published set)."""

STEPS: dict[str, Fraction] = {"integer": Fraction(1), "1dp": Fraction(1, 10), "nearest10": Fraction(10)}
"""The rounding quantum of each scalar precision."""

TIE_TOLERANCE = 1e-6
"""A double closer than this (in units of the quantum) to a rounding tie is ambiguous; the generator rejects it."""


def exact(value: Value | str) -> Fraction:
    """The exact rational of ``value``; a double or a decimal string counts as the decimal it prints as."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot format a non-finite value {value!r}")
        return Fraction(Decimal(repr(value)))
    return Fraction(value)


def round_half_away(value: Value, step: Fraction) -> Fraction:
    """``value`` rounded to a multiple of ``step``, ties away from zero (exact for ints and Fractions)."""
    units = exact(value) / step
    whole, remainder = divmod(abs(units.numerator), units.denominator)
    magnitude = whole + (1 if 2 * remainder >= units.denominator else 0)
    return (magnitude if units >= 0 else -magnitude) * step


def near_tie(value: Value, precision: Precision) -> bool:
    """True when a double lies within :data:`TIE_TOLERANCE` of a rounding tie of ``precision`` (never for exact)."""
    if not isinstance(value, float) or precision not in STEPS:
        return False
    units = value / float(STEPS[precision])
    return abs(abs(units - math.floor(units)) - 0.5) < TIE_TOLERANCE


def format_number(value: Value, precision: Precision) -> str:
    """A scalar answer in the format of ``precision`` (``integer``, ``1dp`` or ``nearest10``)."""
    if precision not in STEPS:
        raise ValueError(f"precision {precision!r} is not a scalar format (expected one of {', '.join(STEPS)})")
    rounded = round_half_away(value, STEPS[precision])
    if precision == "1dp":
        tenths = int(rounded * 10)
        sign = "-" if tenths < 0 else ""
        return f"{sign}{abs(tenths) // 10}.{abs(tenths) % 10}"
    return str(int(rounded))


def format_list(values: Sequence[int]) -> str:
    """The two-stationary-points answer ``[x1, x2]`` (integers, ascending)."""
    if len(values) != 2 or not values[0] < values[1]:
        raise ValueError(f"expected two ascending values, got {list(values)}")
    return f"[{int(values[0])}, {int(values[1])}]"


def _signed(value: int) -> str:
    return f"- {-value}" if value < 0 else f"+ {value}"


def format_equation(kind: EquationKind, coefficients: Sequence[int]) -> str:
    """An equation answer: every coefficient printed, the first with its own sign, later ones folded."""
    values = [int(value) for value in coefficients]
    if any(value != coefficient for value, coefficient in zip(values, coefficients, strict=True)):
        raise ValueError(f"equation coefficients must be integers, got {list(coefficients)}")
    if kind == "sine":
        if len(values) != 4:
            raise ValueError(f"a sine equation has 4 coefficients, got {values}")
        a, b, c, d = values
        return f"y = {a}sin({b}x {_signed(c)}) {_signed(d)}"
    degree = {"linear": 1, "quadratic": 2, "cubic": 3, "quartic": 4}[kind]
    if len(values) != degree + 1:
        raise ValueError(f"a {kind} equation has {degree + 1} coefficients, got {values}")
    terms = []
    for index, value in enumerate(values):
        power = degree - index
        variable = "" if power == 0 else "x" if power == 1 else f"x^{power}"
        terms.append(f"{value}{variable}" if index == 0 else f"{_signed(value)}{variable}")
    return "y = " + " ".join(terms)


def _equation_pattern(kind: EquationKind) -> re.Pattern[str]:
    first, later = r"(-?\d+)", r"([+-]) (\d+)"
    if kind == "sine":
        return re.compile(rf"y = {first}sin\({first}x {later}\) {later}", re.ASCII)
    degree = {"linear": 1, "quadratic": 2, "cubic": 3, "quartic": 4}[kind]
    parts = []
    for index in range(degree + 1):
        power = degree - index
        variable = "" if power == 0 else "x" if power == 1 else rf"x\^{power}"
        parts.append((first if index == 0 else later) + variable)
    return re.compile(" ".join(["y ="] + parts), re.ASCII)


def equation_kind(question: str) -> EquationKind:
    """The equation form a question asks for, read from its ``Write your answer in the form y = ...`` sentence."""
    for kind, template in EQUATION_TEMPLATES.items():
        if f"in the form {template}." in question:
            return kind
    raise ValueError(f"question states no known equation form: {question[-120:]!r}")


def parse_equation(answer: str, kind: EquationKind) -> list[int]:
    """The integer coefficients of an equation answer written by :func:`format_equation`."""
    match = _equation_pattern(kind).fullmatch(answer.strip())
    if match is None:
        raise ValueError(f"{answer!r} is not a {kind} equation in the GRAB answer format")
    groups = list(match.groups())
    values = [int(groups[0])]
    if kind == "sine":
        values.append(int(groups[1]))
        rest = groups[2:]
    else:
        rest = groups[1:]
    for sign, magnitude in zip(rest[::2], rest[1::2], strict=True):
        values.append(-int(magnitude) if sign == "-" else int(magnitude))
    return values


def parse_list(answer: str) -> list[int]:
    """The two integers of a ``[x1, x2]`` answer."""
    match = re.fullmatch(r"\[(-?\d+), (-?\d+)\]", answer.strip(), re.ASCII)
    if match is None:
        raise ValueError(f"{answer!r} is not a [x1, x2] answer")
    return [int(match.group(1)), int(match.group(2))]


ANSWER_PATTERNS: dict[str, re.Pattern[str]] = {
    "integer": re.compile(r"-?\d+", re.ASCII),
    "1dp": re.compile(r"-?\d+\.\d", re.ASCII),
    "nearest10": re.compile(r"-?\d*0", re.ASCII),
    "list": re.compile(r"\[-?\d+, -?\d+\]", re.ASCII),
}
"""Each scalar and list format, in ASCII digits."""


def matches_format(answer: str, question: str) -> bool:
    """True when ``answer`` is written in the format its question's precision sentence asks for."""
    precision = precision_of(question)
    if precision == "equation":
        try:
            parse_equation(answer, equation_kind(question))
        except ValueError:
            return False
        return True
    if not ANSWER_PATTERNS[precision].fullmatch(answer) or answer in ("-0", "-0.0"):
        return False
    if precision == "list":
        first, second = parse_list(answer)
        return first < second
    return True
