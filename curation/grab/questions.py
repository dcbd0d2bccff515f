"""GRAB question types: one table (task, category, wording, count, precision counts) and the question text (GRAB
paper §3 and the published dataset, its quirks kept).
Manual: docs/curation.md, "Question types and wording".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scifig_tasks.benchmarks.grab.answers import EQUATION_TEMPLATES, EquationKind
from scifig_tasks.benchmarks.grab.description import TASK_QUESTIONS

INTEGER = " Give your answer as an integer."
ONE_DP = " Give your answer to 1 decimal place."
NEAREST10 = " Give your answer to the nearest 10."
LIST_FORM = (
    " Write your answer in the form [x_coordinate1, x_coordinate2], where x_coordinate1 < x_coordinate2."
    " Give your answer as an integer."
)
SENTENCES: dict[str, str] = {"integer": INTEGER, "1dp": ONE_DP, "nearest10": NEAREST10, "list": LIST_FORM}


def equation_form(kind: EquationKind) -> str:
    return f" Write your answer in the form {EQUATION_TEMPLATES[kind]}. Each variable is as an integer."


@dataclass(frozen=True)
class QuestionType:
    """One published question type. ``wording`` is the full stem (properties) or the property name (other tasks)."""

    key: str
    task: str
    category: str
    wording: str
    precisions: tuple[tuple[str, int], ...]

    @property
    def count(self) -> int:
        return sum(count for _, count in self.precisions)


def _q(key: str, task: str, category: str, wording: str, *precisions: tuple[str, int]) -> QuestionType:
    return QuestionType(f"{task}/{key}", task, category, wording, tuple(precisions))


P, F, S, T = "properties", "function", "series", "transform"
AREA, CORR, COUNT, EXT = "Area Bounded", "Correlation", "Counting", "Extrema"
FUNCS, IG, SPREAD, RANGE = "Functions", "Intercepts and Gradients", "Measures of Spread", "Range"
STAT, TRIG = "Stationary Points", "Trigonometric"
NET = "net area bounded by the function and the x-axis"
TOTAL = "total area bounded by the function and the x-axis"

QUESTION_TYPES: tuple[QuestionType, ...] = (
    # properties (660)
    _q("net_area", P, AREA, "What is the net area bounded by the function and x-axis?", ("nearest10", 15)),
    _q("total_area", P, AREA, "What is the total area bounded by the function and x-axis?", ("nearest10", 15)),
    _q("kendall", P, CORR, "What is the Kendall rank correlation coefficient of the data?", ("1dp", 10)),
    _q("pearson", P, CORR, "What is the Pearson's correlation coefficient of the data?", ("1dp", 10)),
    _q("spearman", P, CORR, "What is the Spearman's rank correlation coefficient of the data?", ("1dp", 10)),
    _q("count_points", P, COUNT, "How many points are shown in the figure?", ("integer", 30)),
    _q("count_series", P, COUNT, "How many series are shown in the figure?", ("integer", 30)),
    _q("data_max", P, EXT, "What is the maximum value of the data?", ("integer", 15)),
    _q("function_max", P, EXT, "What is the maximum value of the function?", ("integer", 15)),
    _q("data_min", P, EXT, "What is the minimum value of the data?", ("integer", 15)),
    _q("function_min", P, EXT, "What is the minimum value of the function?", ("integer", 15)),
    _q("equation", P, FUNCS, "What is the equation of the function?", ("equation", 30)),
    _q("gradient", P, IG, "What is the value of the gradient of the function?", ("integer", 30)),
    _q("x_intercept", P, IG, "What is the value of the x-intercept of the function?", ("integer", 30)),
    _q("y_intercept", P, IG, "What is the value of the y-intercept of the function?", ("integer", 30)),
    _q("iqr", P, SPREAD, "What is the interquartile range of the data?", ("integer", 30)),
    _q("peak", P, SPREAD, "What is the location of the peak of the function?", ("integer", 30)),
    _q("median", P, SPREAD, "What is the median of the data?", ("integer", 30)),
    _q("function_variance", P, SPREAD, "What is the variance of the function?", ("integer", 30)),
    _q("data_domain", P, RANGE, "What is the domain length of the data?", ("integer", 15)),
    _q("function_domain", P, RANGE, "What is the domain length of the function?", ("integer", 15)),
    _q("data_range", P, RANGE, "What is the range span of the data?", ("integer", 15)),
    _q("function_range", P, RANGE, "What is the range span of the function?", ("integer", 15)),
    _q(
        "two_stationary",
        P,
        STAT,
        "What are the x-values of the two stationary points of the function?",
        ("list", 30),
    ),
    _q("stationary", P, STAT, "What is the x-value of the stationary point of the function?", ("integer", 30)),
    _q("amplitude", P, TRIG, "What is the amplitude of the function?", ("integer", 30)),
    _q("period", P, TRIG, "What is the period of the function?", ("integer", 30)),
    _q("phase_shift", P, TRIG, "What is the phase shift of the function?", ("integer", 30)),
    _q("vertical_shift", P, TRIG, "What is the vertical shift of the function?", ("integer", 30)),
    # function (710)
    _q("net_area", F, AREA, NET, ("integer", 30)),
    _q("total_area", F, AREA, TOTAL, ("integer", 30)),
    _q("max", F, EXT, "maximum value", ("integer", 37), ("1dp", 13)),
    _q("min", F, EXT, "minimum value", ("integer", 26), ("1dp", 24)),
    _q("gradient", F, IG, "gradient", ("integer", 31), ("1dp", 19)),
    _q("x_intercept", F, IG, "x-intercept", ("integer", 34), ("1dp", 16)),
    _q("y_intercept", F, IG, "y-intercept", ("integer", 32), ("1dp", 18)),
    _q("variance", F, SPREAD, "variance", ("integer", 32), ("1dp", 18)),
    _q("domain", F, RANGE, "domain length", ("integer", 34), ("1dp", 16)),
    _q("range", F, RANGE, "range span", ("integer", 38), ("1dp", 12)),
    _q("function_mean", F, STAT, "function mean", ("integer", 32), ("1dp", 18)),
    _q("stationary", F, STAT, "stationary point x-coordinate", ("integer", 39), ("1dp", 11)),
    _q("amplitude", F, TRIG, "amplitude", ("integer", 27), ("1dp", 23)),
    _q("period", F, TRIG, "period", ("integer", 38), ("1dp", 12)),
    _q("vertical_shift", F, TRIG, "vertical shift", ("integer", 31), ("1dp", 19)),
    # series (490)
    _q("kendall", S, CORR, "Kendall rank correlation coefficient", ("1dp", 30)),
    _q("pearson", S, CORR, "Pearson correlation coefficient", ("1dp", 30)),
    _q("spearman", S, CORR, "Spearman correlation coefficient", ("1dp", 30)),
    _q("max", S, EXT, "maximum value", ("integer", 29), ("1dp", 21)),
    _q("min", S, EXT, "minimum value", ("integer", 32), ("1dp", 18)),
    _q("mean", S, SPREAD, "data mean", ("integer", 30), ("1dp", 20)),
    _q("iqr", S, SPREAD, "interquartile range", ("integer", 31), ("1dp", 19)),
    _q("median", S, SPREAD, "median", ("integer", 38), ("1dp", 12)),
    _q("variance", S, SPREAD, "variance", ("integer", 35), ("1dp", 15)),
    _q("domain", S, RANGE, "domain length", ("integer", 34), ("1dp", 16)),
    _q("range", S, RANGE, "range span", ("integer", 33), ("1dp", 17)),
    # transform (310)
    _q("net_area", T, AREA, NET, ("integer", 30)),
    _q("total_area", T, AREA, TOTAL, ("integer", 30)),
    _q("max", T, EXT, "maximum value", ("integer", 26), ("1dp", 24)),
    _q("min", T, EXT, "minimum value", ("integer", 33), ("1dp", 17)),
    _q("gradient", T, IG, "gradient", ("integer", 36), ("1dp", 14)),
    _q("domain", T, RANGE, "domain length", ("integer", 32), ("1dp", 18)),
    _q("range", T, RANGE, "range span", ("integer", 35), ("1dp", 15)),
)

TASK_ORDER: tuple[str, ...] = (P, F, S, T)
TASK_COUNTS: dict[str, int] = dict(TASK_QUESTIONS)  # as published

EQUATION_MIX: tuple[tuple[EquationKind, int], ...] = (
    ("linear", 9),
    ("quadratic", 2),
    ("cubic", 7),
    ("quartic", 4),
    ("sine", 8),
)
"""Equation kinds of the 30 "What is the equation of the function?" questions, as in the real set."""


def question_text(
    qtype: QuestionType,
    precision: str,
    operations: Sequence[str] = (),
    equation: EquationKind | None = None,
) -> str:
    """The question exactly as the real set words it."""
    if qtype.task == P:
        if precision == "equation":
            if equation is None:
                raise ValueError(f"{qtype.key}: an equation question needs its equation kind")
            return qtype.wording + equation_form(equation)
        return qtype.wording + SENTENCES[precision]
    sentence = SENTENCES[precision]
    if qtype.task == F:
        return f"Estimate the mean {qtype.wording} of the functions shown in the plot.{sentence}"
    if qtype.task == S:
        return f"Estimate the mean {qtype.wording} of the data series shown in the plot.{sentence}"
    if not operations:
        return f"Estimate the {qtype.wording} of the function shown in the plot.\n{sentence.lstrip()}"
    steps = "".join(f"{number}. {text};\n" for number, text in enumerate(operations, start=1))
    return (
        f"Estimate the {qtype.wording} of the function shown in the plot after it has been transformed by the "
        f"following operations:\n{steps}{sentence.lstrip()}"
    )
