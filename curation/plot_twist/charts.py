"""The data drawn in Plot Twist's synthetic charts (Plot Twist paper appendix A, tables 6-7: scatter, bar and pie
data), with our automatic review and one seeded generator per chart.
Manual: curation/plot_twist/README.md, "What is generated".
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SCATTER_POINTS = 25
BAR_COUNT = (1, 5)
BAR_VALUES = (-200, 200)
MIN_BAR = 5
PIE_COUNT = (1, 10)
MIN_SLICE = 2

FUNCTIONS: tuple[tuple[str, Callable[[int], float]], ...] = (
    ("y = x", lambda x: x),
    ("y = 2x", lambda x: 2 * x),
    ("y = 3x", lambda x: 3 * x),
    ("y = -x", lambda x: -x),
    ("y = -2x", lambda x: -2 * x),
    ("y = 0.5x", lambda x: 0.5 * x),
    ("y = x + 10", lambda x: x + 10),
    ("y = 2x - 15", lambda x: 2 * x - 15),
    ("y = 100 - 3x", lambda x: 100 - 3 * x),
    ("y = x^2", lambda x: x * x),
    ("y = -x^2 + 100", lambda x: -x * x + 100),
)
"""The simple functions the scatter points come from."""


def letters(count: int) -> tuple[str, ...]:
    """Category names ``A``, ``B``, ... used as bar tick labels and pie slice labels."""
    return tuple(chr(ord("A") + index) for index in range(count))


@dataclass(frozen=True)
class Chart:
    """One synthetic chart: its id, type and drawn data (``x``/``y`` for scatter, ``labels``/``values`` else)."""

    figure_id: str
    chart_type: str
    function: str | None = None
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    labels: tuple[str, ...] = ()
    values: tuple[int, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"figure_id": self.figure_id, "chart_type": self.chart_type}
        if self.chart_type == "scatter":
            data |= {"function": self.function, "x": list(self.x), "y": list(self.y)}
        else:
            data |= {"labels": list(self.labels), "values": list(self.values)}
        return data


def _rng(seed: int, chart_type: str, index: int) -> random.Random:
    return random.Random(f"plot_twist:{seed}:{chart_type}:{index}")


def figure_id(chart_type: str, index: int) -> str:
    return f"{chart_type}_{index:03d}"


def scatter(seed: int, index: int) -> Chart:
    """25 distinct integer x positions in a random window, y = f(x) for a random simple function."""
    rng = _rng(seed, "scatter", index)
    name, function = rng.choice(FUNCTIONS)
    low = rng.randint(-50, 20)
    span = rng.randint(40, 80)
    xs = sorted(rng.sample(range(low, low + span + 1), SCATTER_POINTS))
    ys = [function(x) for x in xs]
    return Chart(
        figure_id("scatter", index),
        "scatter",
        function=name,
        x=tuple(float(x) for x in xs),
        y=tuple(float(y) for y in ys),
    )


def bar(seed: int, index: int) -> Chart:
    """1-5 bars, integer values uniform in [-200, 200] (values shorter than :data:`MIN_BAR` redrawn)."""
    rng = _rng(seed, "bar", index)
    count = rng.randint(*BAR_COUNT)
    values = []
    while len(values) < count:
        value = rng.randint(*BAR_VALUES)
        if abs(value) >= MIN_BAR:
            values.append(value)
    return Chart(figure_id("bar", index), "bar", labels=letters(count), values=tuple(values))


def pie(seed: int, index: int) -> Chart:
    """1-10 categories, integer percentages (each >= :data:`MIN_SLICE`) summing to 100."""
    rng = _rng(seed, "pie", index)
    count = rng.randint(*PIE_COUNT)
    spare = 100 - MIN_SLICE * count
    cuts = sorted(rng.randint(0, spare) for _ in range(count - 1))
    parts = [b - a for a, b in zip([0, *cuts], [*cuts, spare], strict=True)]
    values = tuple(MIN_SLICE + part for part in parts)
    return Chart(figure_id("pie", index), "pie", labels=letters(count), values=values)


GENERATORS: dict[str, Callable[[int, int], Chart]] = {"scatter": scatter, "bar": bar, "pie": pie}


def generate(chart_type: str, seed: int, count: int) -> list[Chart]:
    """The first ``count`` charts of ``chart_type`` for ``seed``."""
    return [GENERATORS[chart_type](seed, index) for index in range(count)]
