"""Rendering GRAB graphs with matplotlib (Agg), deterministically (grab spec, "Published data": images).

* Function, series and transform graphs use one **fixed schema**: figure 6 x 5 in, x and y limits [-10, 10], ticks
  every 2 (labelled, font size 10), gridlines every 1 (stronger every 2), curves in the tab10 colours in order, the
  same margins and resolution for every graph.
* Properties graphs **randomise** figure size, font size, line style, marker and colour from the defined sets
  below (drawn in the plan stage and stored with the parameters); their x-limits are set by the question (e.g. the
  function's domain with a margin) and their y-limits by matplotlib's autoscaling.
* Resolution: ``dpi`` (default :data:`DEFAULT_DPI` = 1000, so a fixed-schema graph is 6000 x 5000 px, comparable
  to the published 5836 x 4842 RGBA images). Output is an RGBA PNG.

Determinism: every input comes from the plan; PNGs are written without the ``Software`` text chunk, so the same
parameters and versions give byte-identical files in any process.
"""

from __future__ import annotations

import io
import random
from typing import Any

import numpy as np

from curation.grab.curves import Piece

DEFAULT_DPI = 1000
FIXED_FIGSIZE = (6.0, 5.0)
FIXED_FONT_SIZE = 10
FIXED_LIMITS = (-10.0, 10.0)

FIGSIZES: tuple[tuple[float, float], ...] = ((5.0, 4.0), (6.0, 5.0), (6.4, 4.8), (7.0, 5.0), (8.0, 6.0))
FONT_SIZES: tuple[int, ...] = (8, 10, 12, 14)
LINE_STYLES: tuple[str, ...] = ("-", "--", "-.", ":")
MARKERS: tuple[str, ...] = ("o", "s", "^", "D")
COLOURS: tuple[str, ...] = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
"""matplotlib's tab10, the colour order of every graph (series are distinguished by colour)."""
GRID_COLOUR = "#b0b0b0"


def random_style(rng: random.Random) -> dict[str, Any]:
    """A properties-graph style drawn from the defined sets."""
    return {
        "figsize": list(rng.choice(FIGSIZES)),
        "fontsize": rng.choice(FONT_SIZES),
        "linestyle": rng.choice(LINE_STYLES),
        "marker": rng.choice(MARKERS),
        "colour": rng.choice(COLOURS),
    }


def figure_settings(params: dict[str, Any]) -> tuple[tuple[float, float], int]:
    """Figure size (inches) and font size of a planned graph."""
    style = params["style"]
    if style == "fixed":
        return FIXED_FIGSIZE, FIXED_FONT_SIZE
    width, height = style["figsize"]
    return (float(width), float(height)), int(style["fontsize"])


def _margins(figsize: tuple[float, float], fontsize: int) -> dict[str, float]:
    # Room for tick labels of up to ~6 characters at this font size, in figure fractions.
    points_to_inches = fontsize / 72
    width, height = figsize
    return {
        "left": (0.25 + 4.2 * points_to_inches) / width,
        "right": 1 - 0.2 / width,
        "bottom": (0.2 + 2.0 * points_to_inches) / height,
        "top": 1 - 0.2 / height,
    }


def fixed_grid(axes: Any) -> None:
    """The fixed schema's axes: limits [-10, 10], labelled ticks every 2, gridlines every 1 (stronger every 2).

    Gridlines are two line collections rather than minor ticks: the same picture at a fraction of the cost.
    """
    low, high = FIXED_LIMITS
    ticks = np.arange(low, high + 1, 2)
    axes.set_xticks(ticks)
    axes.set_yticks(ticks)
    grid = np.arange(low, high + 1)
    for selected, width, alpha in ((grid % 2 != 0, 0.5, 0.3), (grid % 2 == 0, 0.8, 0.6)):
        axes.vlines(grid[selected], low, high, colors=GRID_COLOUR, linewidth=width, alpha=alpha, zorder=0.5)
        axes.hlines(grid[selected], low, high, colors=GRID_COLOUR, linewidth=width, alpha=alpha, zorder=0.5)
    axes.set_xlim(low, high)
    axes.set_ylim(low, high)


def draw(axes: Any, params: dict[str, Any]) -> None:
    """Draw a planned graph's elements on ``axes`` (limits, ticks and grid included)."""
    fixed = params["style"] == "fixed"
    style = {} if fixed else params["style"]
    for index, element in enumerate(params["elements"]):
        colour = COLOURS[index % len(COLOURS)] if fixed or len(params["elements"]) > 1 else style["colour"]
        linestyle = "-" if fixed else style["linestyle"]
        marker = "o" if fixed else style["marker"]
        if element["type"] == "curve":
            xs, ys = Piece.from_params(element).sample()
            axes.plot(xs, ys, color=colour, linestyle=linestyle, linewidth=1.5)
        elif element["type"] == "series":
            axes.plot(
                element["x"],
                element["y"],
                color=colour,
                linestyle=linestyle,
                linewidth=1.0,
                marker=marker,
                markersize=3,
            )
        elif element["type"] == "scatter":
            axes.scatter(element["x"], element["y"], color=colour, marker=marker, s=14)
        else:
            raise ValueError(f"unknown figure element {element['type']!r}")
    if fixed:
        fixed_grid(axes)
    else:
        if params.get("xlim") is not None:
            axes.set_xlim(*params["xlim"])
        axes.grid(True, linewidth=0.8, alpha=0.6)


def render_png(params: dict[str, Any], dpi: int = DEFAULT_DPI) -> bytes:
    """The RGBA PNG of one planned graph."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figsize, fontsize = figure_settings(params)
    figure = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(figure)
    figure.subplots_adjust(**_margins(figsize, fontsize))
    axes = figure.add_subplot()
    axes.tick_params(labelsize=fontsize)
    draw(axes, params)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def render_job(job: tuple[dict[str, Any], int]) -> bytes:
    """Worker entry point: ``(params, dpi) -> PNG bytes``."""
    params, dpi = job
    return render_png(params, dpi)
