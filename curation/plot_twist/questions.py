"""Plot Twist questions and their ground truth (Plot Twist paper tables 6-7: Table 6's templates word for word,
ground truth from what is drawn).
Manual: curation/plot_twist/README.md, "What is generated" (questions, ground truth).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from curation.plot_twist.charts import Chart
from scifig_tasks.benchmarks.plot_twist.rules import QUESTION_TYPES, range_margin

QUESTIONS: dict[str, dict[str, str]] = {
    "scatter": {
        "x_max_point": "What is the maximum x value among the set of points plotted in the figure?",
        "x_min_point": "What is the minimum x value among the set of points plotted in the figure?",
        "y_max_point": "What is the maximum y value among the set of points plotted in the figure?",
        "y_min_point": "What is the minimum y value among the set of points plotted in the figure?",
        "x_max_axis": "What is the approximate maximum value for the range on the x-axis?",
        "x_min_axis": "What is the approximate minimum value for the range on the x-axis?",
        "y_max_axis": "What is the approximate maximum value for the range on the y-axis?",
        "y_min_axis": "What is the approximate minimum value for the range on the y-axis?",
    },
    "bar": {
        "max_bar": "What is the maximum value among the set of bars plotted in the figure?",
        "min_bar": "What is the minimum value among the set of bars plotted in the figure?",
        "count_bars": "How many bars are in the figure?",
        "y_max_axis": "What is the maximum value for the range on the y-axis?",
        "y_min_axis": "What is the minimum value for the range on the y-axis?",
    },
    "pie": {
        "max_category": "What is the maximum value among the set of categories in the figure?",
        "min_category": "What is the minimum value among the set of categories in the figure?",
        "count_categories": "How many categories are presented?",
    },
}

TITLE_STATEMENTS: dict[str, str] = {
    "x_max_point": "The maximum x value among the points is {}",
    "x_min_point": "The minimum x value among the points is {}",
    "y_max_point": "The maximum y value among the points is {}",
    "y_min_point": "The minimum y value among the points is {}",
    "x_max_axis": "The x-axis range ends at about {}",
    "x_min_axis": "The x-axis range starts at about {}",
    "y_max_axis": "The y-axis range ends at about {}",
    "y_min_axis": "The y-axis range starts at about {}",
    "max_bar": "The maximum bar value is {}",
    "min_bar": "The minimum bar value is {}",
    "count_bars": "There are {} bars",
    "max_category": "The largest category is {}%",
    "min_category": "The smallest category is {}%",
    "count_categories": "There are {} categories",
}
"""Titles of the ``title_correct`` / ``title_misleading`` variants: the question's answer stated as a fact."""

BASE_TITLES = {"scatter": "Scatter plot", "bar": "Bar chart", "pie": "Pie chart"}
"""The neutral title every base chart carries (the ``title_none`` variant removes it)."""


@dataclass(frozen=True)
class Axes:
    """Limits of the rendered axes in data units; ``x_range``/``y_range`` are their spans."""

    xlim: tuple[float, float]
    ylim: tuple[float, float]

    @property
    def x_range(self) -> float:
        return self.xlim[1] - self.xlim[0]

    @property
    def y_range(self) -> float:
        return self.ylim[1] - self.ylim[0]


@dataclass(frozen=True)
class Question:
    """One question about a chart with its gold answer (a number) and the axis spans of its rendering."""

    chart_type: str
    question_type: str
    question: str
    value: float
    x_range: float
    y_range: float

    @property
    def answer(self) -> str:
        return format_number(self.value)


def format_number(value: float) -> str:
    """Answers as written in the data: integers without a decimal point, otherwise at most 2 decimals."""
    text = f"{round(value, 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def answer_values(chart: Chart, axes: Axes) -> dict[str, float]:
    """Gold value of every question type of ``chart``: from the data, axis answers from the rendered limits."""
    if chart.chart_type == "scatter":
        return {
            "x_max_point": max(chart.x),
            "x_min_point": min(chart.x),
            "y_max_point": max(chart.y),
            "y_min_point": min(chart.y),
            "x_max_axis": round(axes.xlim[1], 2),
            "x_min_axis": round(axes.xlim[0], 2),
            "y_max_axis": round(axes.ylim[1], 2),
            "y_min_axis": round(axes.ylim[0], 2),
        }
    if chart.chart_type == "bar":
        return {
            "max_bar": float(max(chart.values)),
            "min_bar": float(min(chart.values)),
            "count_bars": float(len(chart.values)),
            "y_max_axis": round(axes.ylim[1], 2),
            "y_min_axis": round(axes.ylim[0], 2),
        }
    if chart.chart_type == "pie":
        return {
            "max_category": float(max(chart.values)),
            "min_category": float(min(chart.values)),
            "count_categories": float(len(chart.values)),
        }
    raise ValueError(f"unknown chart type {chart.chart_type!r}")


def questions_for(chart: Chart, axes: Axes) -> list[Question]:
    """The chart's questions in the order of :data:`scifig_tasks.benchmarks.plot_twist.rules.QUESTION_TYPES`."""
    values = answer_values(chart, axes)
    return [
        Question(chart.chart_type, kind, QUESTIONS[chart.chart_type][kind], values[kind], axes.x_range, axes.y_range)
        for kind in QUESTION_TYPES[chart.chart_type]
    ]


def misleading_value(question: Question, rng: random.Random) -> float:
    """A wrong value for a misleading title: wrong under all three metrics (outside the relaxed 5% band and the
    range margin), of the same kind as the gold (a count stays a positive integer, a percentage stays in 1..99)."""
    gold = question.value
    margin = range_margin(question.chart_type, question.question_type, question.x_range, question.y_range) or 0.0
    if question.question_type.startswith("count"):
        step = math.floor(max(margin, 0.05 * gold)) + 1  # the smallest whole distance outside both bands
        choices = [gold + d for d in (step, step + 1)] + [gold - d for d in (step, step + 1) if gold - d >= 1]
        return float(rng.choice(choices))
    if question.chart_type == "pie":
        delta = rng.randint(10, 30)
        return float(gold - delta if gold + delta > 99 or (gold - delta >= 1 and rng.random() < 0.5) else gold + delta)
    delta = max(3 * margin, 0.25 * abs(gold), 1.0)
    wrong = gold + delta if rng.random() < 0.5 else gold - delta
    return float(round(wrong)) if float(gold).is_integer() else round(wrong, 2)


def title_for(question: Question, value: float) -> str:
    """A title stating ``value`` as the answer to ``question``."""
    return TITLE_STATEMENTS[question.question_type].format(format_number(value))
