"""Vega-Lite rendering of Plot Twist charts (the "another plotting library" robustness variant; the paper used the
JavaScript libraries plotly, highcharts and amcharts): the same data, Vega-Lite's default look, rendered offline by
``vl-convert-python`` (bundled Vega runtime; no browser, no network).

Axis-range answers are read from the rendered scene graph: each axis's tick labels and their pixel positions give
the linear pixel -> value map, and the axis domain line gives the pixel extent, so the limits are those Vega drew
(its "nice" rounding and zero-inclusion included). For the band (category) axis of a bar chart ``x_range`` is the
number of bands; a pie has no axes, so its spans are the unit-circle square (2 x 2; the pie margin does not use them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from curation.plot_twist.charts import Chart
from curation.plot_twist.questions import BASE_TITLES, Axes
from curation.plot_twist.render_mpl import pie_label

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
WIDTH, HEIGHT = 400, 300
SCALE = 1.5
PIE_SPANS = (2.0, 2.0)


def spec(chart: Chart, title: str | None = None) -> dict[str, Any]:
    """The Vega-Lite specification of ``chart`` (title: the base title unless given)."""
    base: dict[str, Any] = {
        "$schema": SCHEMA,
        "title": BASE_TITLES[chart.chart_type] if title is None else title,
        "width": WIDTH,
        "height": HEIGHT,
    }
    if chart.chart_type == "scatter":
        rows = [{"x": x, "y": y} for x, y in zip(chart.x, chart.y, strict=True)]
        return base | {
            "data": {"values": rows},
            "mark": "point",
            "encoding": {
                "x": {"field": "x", "type": "quantitative"},
                "y": {"field": "y", "type": "quantitative"},
            },
        }
    rows = [
        {"category": label, "value": value, "text": pie_label(value)}
        for label, value in zip(chart.labels, chart.values, strict=True)
    ]
    if chart.chart_type == "bar":
        return base | {
            "data": {"values": rows},
            "mark": "bar",
            "encoding": {
                "x": {"field": "category", "type": "nominal", "axis": {"labelAngle": 0}},
                "y": {"field": "value", "type": "quantitative"},
            },
        }
    if chart.chart_type == "pie":
        radius = min(WIDTH, HEIGHT) / 2
        return base | {
            "data": {"values": rows},
            "encoding": {
                "theta": {"field": "value", "type": "quantitative", "stack": True},
                "color": {"field": "category", "type": "nominal"},
                "order": {"field": "category"},
            },
            "layer": [
                {"mark": {"type": "arc", "outerRadius": radius}},
                {
                    "mark": {"type": "text", "radius": radius * 0.7, "fontSize": 12},
                    "encoding": {"text": {"field": "text"}, "color": {"value": "black"}},
                },
            ],
        }
    raise ValueError(f"unknown chart type {chart.chart_type!r}")


def scenegraph(chart: Chart, title: str | None = None) -> dict[str, Any]:
    import vl_convert

    return vl_convert.vegalite_to_scenegraph(spec(chart, title))


def render(chart: Chart, title: str | None = None) -> tuple[bytes, Axes]:
    """PNG bytes and the axis limits read from the rendered scene graph."""
    import vl_convert

    chart_spec = spec(chart, title)
    png = vl_convert.vegalite_to_png(chart_spec, scale=SCALE)
    return png, axes_of(chart, vl_convert.vegalite_to_scenegraph(chart_spec))


def marks(graph: dict[str, Any], marktype: str) -> list[dict[str, Any]]:
    """The items of the data marks (role ``mark``) of one mark type: ``symbol``, ``rect``, ``arc`` or ``text``."""
    return [item for node in _nodes(graph["scenegraph"]) if _is_mark(node, marktype) for item in node["items"]]


def _is_mark(node: dict[str, Any], marktype: str) -> bool:
    return node.get("marktype") == marktype and node.get("role") == "mark"


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for child in node.get("items") or []:
            yield from _nodes(child)


def _number(text: str) -> float:
    return float(text.replace("\u2212", "-").replace(",", ""))


def axis_limits(graph: dict[str, Any], orient: str) -> tuple[float, float]:
    """(min, max) value of the quantitative axis with ``orient`` (``bottom`` or ``left``), read from its labels."""
    for node in _nodes(graph["scenegraph"]):
        if node.get("orient") != orient:
            continue
        labels = [
            item for child in node.get("items", []) if child.get("role") == "axis-label" for item in child["items"]
        ]
        domain = [
            item for child in node.get("items", []) if child.get("role") == "axis-domain" for item in child["items"]
        ]
        if len(labels) < 2 or not domain:
            continue
        coordinate = "x" if orient == "bottom" else "y"
        points = [(float(label[coordinate]), _number(label["text"])) for label in labels]
        (p0, v0), (p1, v1) = points[0], points[-1]
        slope = (v1 - v0) / (p1 - p0)
        line = domain[0]
        ends = (float(line.get(coordinate, 0.0)), float(line.get(f"{coordinate}2", line.get(coordinate, 0.0))))
        values = sorted(v0 + slope * (pixel - p0) for pixel in ends)
        return (round(values[0], 9), round(values[1], 9))
    raise ValueError(f"the rendered Vega-Lite chart has no quantitative {orient} axis with labels")


def axes_of(chart: Chart, graph: dict[str, Any]) -> Axes:
    """Axis limits (data units) of a rendered chart; see the module docstring for bar and pie spans."""
    if chart.chart_type == "scatter":
        return Axes(axis_limits(graph, "bottom"), axis_limits(graph, "left"))
    if chart.chart_type == "bar":
        return Axes((-0.5, len(chart.values) - 0.5), axis_limits(graph, "left"))
    return Axes((-PIE_SPANS[0] / 2, PIE_SPANS[0] / 2), (-PIE_SPANS[1] / 2, PIE_SPANS[1] / 2))
