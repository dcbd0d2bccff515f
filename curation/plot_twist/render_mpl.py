"""Matplotlib rendering of Plot Twist charts: matplotlib defaults (unless a robustness
variant says otherwise), plus the presentation changes of the robustness variants.

* Scatter: ``axes.scatter(x, y)`` -- default blue ``o`` markers --, axis labels ``x`` / ``y``.
* Bar: ``axes.bar(labels, values)`` with category tick labels ``A``, ``B``, ...
* Pie: ``axes.pie(values, labels=labels, autopct=...)`` with each slice's percentage written on it.
* :class:`Style`: title (the neutral base title, none, or a stated answer), scatter marker, grid.

Rendering uses matplotlib's built-in defaults (``rcParamsDefault``), not the user's matplotlibrc, so the images and
the axis limits the answers are read from do not depend on the machine.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from curation.plot_twist.charts import Chart
from curation.plot_twist.questions import Axes

DPI = 100


@dataclass(frozen=True)
class Style:
    """Presentation of one rendering: ``title`` (``None``: no title), scatter ``marker`` (``None``: default), grid."""

    title: str | None
    marker: str | None = None
    grid: bool = False


def pie_label(percent: float) -> str:
    """The text written on a pie slice (its integer percentage)."""
    return f"{round(percent)}%"


def draw(chart: Chart, style: Style) -> Any:
    """A matplotlib ``Figure`` (Agg canvas) with ``chart`` drawn in ``style``; axis limits are final on return."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(matplotlib.rcParamsDefault):
        figure = Figure(dpi=DPI)
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        if chart.chart_type == "scatter":
            kwargs = {} if style.marker is None else {"marker": style.marker}
            axes.scatter(chart.x, chart.y, **kwargs)
            axes.set_xlabel("x")
            axes.set_ylabel("y")
        elif chart.chart_type == "bar":
            axes.bar(chart.labels, chart.values)
        elif chart.chart_type == "pie":
            axes.pie(chart.values, labels=chart.labels, autopct=pie_label)
        else:
            raise ValueError(f"unknown chart type {chart.chart_type!r}")
        if style.title is not None:
            axes.set_title(style.title)
        if style.grid:
            axes.grid(True)
        limits(figure)  # autoscale now, under the default rcParams
    return figure


def limits(figure: Any) -> Axes:
    """The rendered axes' limits in data units."""
    axes = figure.axes[0]
    x0, x1 = axes.get_xlim()
    y0, y1 = axes.get_ylim()
    return Axes((float(x0), float(x1)), (float(y0), float(y1)))


def to_png(figure: Any) -> bytes:
    """PNG bytes of a drawn figure (saved under the default rcParams too)."""
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context(matplotlib.rcParamsDefault):
        figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def render(chart: Chart, style: Style) -> tuple[bytes, Axes]:
    """PNG bytes and axis limits of ``chart`` drawn in ``style``."""
    figure = draw(chart, style)
    return to_png(figure), limits(figure)
