"""GRAB's default rule: the answer as a whole, at the precision the question states.

The GRAB paper (§4.2.3) scores exact matching between the output and the ground truth; the authors' code cuts the
output to the answer's length first, so ``"39"`` counts as ``"3"`` and ``"15.3"`` as ``"15"`` (that rule is
:func:`scifig_tasks.benchmarks.grab.rules.exact_match`, the ``grab_paper`` tasks). Here the model's answer must equal
the ground truth as a whole: a number equal to the answer's number (integer, 1 d.p., nearest 10: the ground truth is
written at that precision, the model's number is compared as it stands, never rounded), both numbers of ``[x1, x2]``,
every coefficient of an equation.

The answer is read by rules that never guess: the whole output when it is one answer in the question's format, else
the answer the output commits to -- stated after ``answer is`` / ``answer:`` / ``\\boxed{}``, or opening the output,
each followed by no other number in its sentence -- when every such statement gives the same value. An output that
states none, or states several, is unresolved: counted wrong and flagged, never guessed. Manual: tasks/README.md,
'The answer as a whole'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from scifig_tasks.benchmarks.grab.answers import equation_kind
from scifig_tasks.benchmarks.grab.rules import Precision, precision_of

Reading = Literal["whole", "stated", "unresolved"]
"""How the answer was read: the whole output, an answer the output commits to, or none (wrong, flagged)."""

Value = tuple[Fraction, ...]
"""An answer as numbers: one for a scalar, two for ``[x1, x2]``, the coefficients of an equation."""

_MINUS = str.maketrans({"\u2212": "-", "\u2013": "-"})
_POWERS = {"\u00b2": "^2", "\u00b3": "^3", "\u2074": "^4", "*": "", " ": "", "X": "x"}
_NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_END = r"(?=$|[\s,;:!?)\]}'\"*`$]|\.(?!\d))"
"""Where an answer token may end: not inside a longer number or a word (``15.3``, ``15cm`` are not ``15``)."""
_TOKENS: dict[str, re.Pattern[str]] = {
    "number": re.compile(rf"{_NUM}{_END}"),
    "list": re.compile(rf"\[\s*{_NUM}\s*,\s*{_NUM}\s*\]|\(\s*{_NUM}\s*,\s*{_NUM}\s*\)|{_NUM}\s*,\s*{_NUM}{_END}"),
    "equation": re.compile(r"y\s*=(?:[\sxX.^()+\-*/\d\u00b2\u00b3\u2074]|sin)+"),
}
MAX_DIGITS = 64
"""A longer number is no answer to a GRAB question (the longest answer has 4 digits): not read, never converted."""
_MARKERS = re.compile(r"(?:final\s+answer|answer)\s*(?:is|:|=)?\s*[:=]?\s*|\\boxed\{", re.IGNORECASE)
_SENTENCE_END = re.compile(r"\n|[.!?;](?=\s|$)")
_WRAPPING = re.compile(r"^[\s*`$\"']+|[\s*`$\"'}]+$")


@dataclass(frozen=True)
class WholeAnswer:
    """One output read and scored by the whole-answer rule."""

    correct: bool
    reading: Reading
    answer: str | None
    """The answer read (as the output writes it), or None when unresolved."""
    reason: str = ""
    """Why an output is unresolved (empty otherwise)."""


def _shape(precision: Precision) -> str:
    return precision if precision in ("list", "equation") else "number"


def _numbers(text: str) -> Value:
    return tuple(Fraction(number) for number in re.findall(_NUM, text))


def _polynomial(rhs: str, degree: int) -> Value | None:
    """Coefficients (highest power first) of ``rhs`` written as a sum of terms ``c x^p``; None if it is not one."""
    coefficients = [Fraction(0)] * (degree + 1)
    terms = re.findall(r"([+-]?)(\d+(?:\.\d+)?)?(?:(x)(?:\^(\d+))?)?", rhs)
    rebuilt = "".join(sign + number + x + (f"^{power}" if power else "") for sign, number, x, power in terms)
    if rebuilt != rhs or not rhs or any(sign and not (number or x) for sign, number, x, _ in terms):
        return None
    seen: set[int] = set()
    for sign, number, x, power in terms:
        if not (number or x):
            continue
        exponent = (int(power) if power else 1) if x else 0
        if exponent > degree or exponent in seen:
            return None
        seen.add(exponent)
        value = Fraction(number) if number else Fraction(1)
        coefficients[degree - exponent] = -value if sign == "-" else value
    return tuple(coefficients)


_SINE = re.compile(r"([+-]?\d*(?:\.\d+)?)sin\(([+-]?\d*(?:\.\d+)?)x([+-]\d+(?:\.\d+)?)?\)([+-]\d+(?:\.\d+)?)?")


def _coefficient(text: str) -> Fraction:
    return Fraction(-1) if text == "-" else Fraction(1) if text in ("", "+") else Fraction(text)


def equation_value(text: str, question: str) -> Value | None:
    """The coefficients of an equation ``y = ...`` in the form the question asks (omitted ``1`` and zero terms
    allowed: ``y = x^2 - 3`` is ``y = 1x^2 + 0x - 3``); None when it is not an equation of that form."""
    compact = text.translate(_MINUS)
    for written, plain in _POWERS.items():
        compact = compact.replace(written, plain)
    compact = compact.replace("+-", "-").replace("-+", "-").replace("--", "+")
    if not compact.startswith("y="):
        return None
    rhs, kind = compact[2:], equation_kind(question)
    if kind == "sine":
        match = _SINE.fullmatch(rhs)
        if match is None:
            return None
        a, b, c, d = match.groups()
        return (_coefficient(a), _coefficient(b), Fraction(c or 0), Fraction(d or 0))
    return _polynomial(rhs, {"linear": 1, "quadratic": 2, "cubic": 3, "quartic": 4}[kind])


def value_of(text: str, question: str) -> Value | None:
    """``text`` as an answer to ``question`` in its format, or None when it is not one answer in that format."""
    precision = precision_of(question)
    if any(len(digits) > MAX_DIGITS for digits in re.findall(r"\d+", text)):
        return None
    text = _WRAPPING.sub("", text.translate(_MINUS)).removesuffix(".").strip()
    if precision == "equation":
        return equation_value(text, question)
    token = _TOKENS[_shape(precision)]
    if token.fullmatch(text) is None:
        return None
    return _numbers(text)


def _statement(text: str, start: int, question: str) -> tuple[str, Value] | None:
    """The answer written at ``start`` when nothing else numeric follows it in its sentence."""
    match = _TOKENS[_shape(precision_of(question))].match(text, start)
    if match is None:
        return None
    written = match.group(0).rstrip()
    value = value_of(written, question)
    if value is None:
        return None
    rest = "" if written.endswith(".") else text[start + len(written) :]  # "15." ends its sentence
    end = _SENTENCE_END.search(rest)
    if re.search(r"\d", rest[: end.start() if end else len(rest)]):
        return None  # "15 or 16", "15, since x = 3": not one answer
    return written, value


def read_answer(output: str, question: str) -> tuple[Reading, str | None, Value | None, str]:
    """How the output answers ``question``: (reading, the answer as written, its value, why unresolved)."""
    text = output.translate(_MINUS).strip()
    whole = value_of(text, question)
    if whole is not None:
        return "whole", text, whole, ""
    stated = [_statement(text, match.end(), question) for match in _MARKERS.finditer(text)]
    stated.append(_statement(text, 0, question))
    found = [item for item in stated if item is not None]
    values = {value for _, value in found}
    if len(values) == 1:
        return "stated", found[-1][0], found[-1][1], ""
    if not values:
        return "unresolved", None, None, "no answer in the question's format stated alone"
    return "unresolved", None, None, f"{len(values)} different answers stated"


def truth_value(answer: str, question: str) -> Value:
    """The ground truth as numbers; raises when it is not written in its question's format."""
    value = value_of(answer, question)
    if value is None:
        raise ValueError(f"GRAB ground truth {answer!r} is not in the format its question asks for")
    return value


def score(output: str, answer: str, question: str) -> WholeAnswer:
    """The whole-answer verdict of one output (an ``ok`` output: empty and failed ones are scored before)."""
    reading, written, value, reason = read_answer(output, question)
    correct = value is not None and value == truth_value(answer, question)
    return WholeAnswer(correct, reading, written, reason)
