"""Plot Twist generator: the charts contain what their questions claim, checked on the rendered figure objects
(matplotlib artists, Vega scene graphs), and the built file is what the renderers draw.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import datasets
import pytest
from matplotlib.collections import PathCollection
from matplotlib.markers import MarkerStyle
from matplotlib.patches import Rectangle, Wedge
from PIL import Image

from curation.plot_twist import build, charts, render_mpl, render_vega
from curation.plot_twist.cli import main as curate_main
from curation.plot_twist.questions import BASE_TITLES, TITLE_STATEMENTS, Axes, questions_for
from curation.plot_twist.render import Job, render_job
from scifig_tasks.benchmarks.plot_twist import rules as pt
from scifig_tasks.benchmarks.plot_twist.source import PLOT_TWIST
from scifig_tasks.core.data import load_benchmark

SEEDS = (0, 7)
PLOTS = 6  # per chart type and seed in the object-level checks


def all_charts() -> list[charts.Chart]:
    return [chart for seed in SEEDS for kind in pt.CHART_TYPES for chart in charts.generate(kind, seed, PLOTS)]


def answers(chart: charts.Chart, axes) -> dict[str, float]:
    return {q.question_type: float(q.answer) for q in questions_for(chart, axes)}


@pytest.fixture(scope="module")
def small_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plot_twist") / "set"
    assert curate_main(["--out", str(out), "--plots-per-type", "2", "--variant-plots", "1", "--workers", "2"]) == 0
    return out / "test.parquet"


@pytest.fixture(scope="module")
def rows(small_set: Path) -> list[dict]:
    dataset = datasets.Dataset.from_parquet(str(small_set)).cast_column("image", datasets.Image(decode=False))
    return dataset.to_list()


# ---- question wording: the paper's Table 6 -----------------------------------------------------------------------

# Table 6 ("Question templates for synthetic dataset"), each "maximum/minimum" and "x/y" spelled out; the scatter
# point questions add "x" / "y" after maximum/minimum (eight questions per scatter plot, one template in the table)
TABLE_6 = {
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


def test_question_templates_are_table_6() -> None:
    axes = Axes((0.0, 10.0), (-50.0, 50.0))
    for kind in pt.CHART_TYPES:
        chart = charts.generate(kind, 0, 1)[0]
        assert {q.question_type: q.question for q in questions_for(chart, axes)} == TABLE_6[kind]


# ---- what the matplotlib figures contain ---------------------------------------------------------------------------


@pytest.mark.parametrize("chart", all_charts(), ids=lambda chart: chart.figure_id)
def test_matplotlib_figure_contains_what_the_questions_claim(chart: charts.Chart) -> None:
    figure = render_mpl.draw(chart, render_mpl.Style(BASE_TITLES[chart.chart_type]))
    (axes,) = figure.axes
    gold = answers(chart, render_mpl.limits(figure))
    assert axes.get_title() == BASE_TITLES[chart.chart_type]
    if chart.chart_type in ("scatter", "bar"):
        x0, x1 = (float(limit) for limit in axes.get_xlim())  # Python's round, not numpy's, on the limits
        y0, y1 = (float(limit) for limit in axes.get_ylim())
        assert (gold["y_min_axis"], gold["y_max_axis"]) == (round(y0, 2), round(y1, 2))
    if chart.chart_type == "scatter":
        (points,) = [c for c in axes.collections if isinstance(c, PathCollection)]
        offsets = points.get_offsets()
        assert len(offsets) == 25 == len({tuple(p) for p in offsets.tolist()})
        assert gold["x_max_point"] == offsets[:, 0].max() and gold["x_min_point"] == offsets[:, 0].min()
        assert gold["y_max_point"] == offsets[:, 1].max() and gold["y_min_point"] == offsets[:, 1].min()
        assert (gold["x_min_axis"], gold["x_max_axis"]) == (round(x0, 2), round(x1, 2))
        assert x0 < offsets[:, 0].min() and offsets[:, 0].max() < x1  # every point inside the drawn axes
        assert tuple(points.get_facecolor()[0][:3]) == pytest.approx((0.1216, 0.4667, 0.7059), abs=1e-3)  # C0 blue
    elif chart.chart_type == "bar":
        bars = [patch for patch in axes.patches if isinstance(patch, Rectangle)]
        heights = [bar.get_height() for bar in bars]
        assert gold["count_bars"] == len(bars) and 1 <= len(bars) <= 5
        assert gold["max_bar"] == max(heights) and gold["min_bar"] == min(heights)
        assert all(-200 <= height <= 200 and abs(height) >= charts.MIN_BAR for height in heights)
        assert y0 <= min(0, *heights) and max(0, *heights) <= y1
        assert [label.get_text() for label in axes.get_xticklabels()] == list(charts.letters(len(bars)))
    else:
        wedges = [patch for patch in axes.patches if isinstance(patch, Wedge)]
        written = [text.get_text() for text in axes.texts if text.get_text().endswith("%")]
        values = [int(text[:-1]) for text in written]
        assert gold["count_categories"] == len(wedges) == len(written) and 1 <= len(wedges) <= 10
        assert sum(values) == 100
        assert gold["max_category"] == max(values) and gold["min_category"] == min(values)
        spans = [(wedge.theta2 - wedge.theta1) / 3.6 for wedge in wedges]
        assert spans == pytest.approx(values)  # each slice is drawn at the percentage written on it


@pytest.mark.parametrize("chart", all_charts()[:: PLOTS // 2], ids=lambda chart: chart.figure_id)
def test_vegalite_rendering_contains_what_the_questions_claim(chart: charts.Chart) -> None:
    """Axis answers are checked against the drawn marks (pixel positions), not against the axis labels they come
    from: the plot area spans 0..WIDTH / 0..HEIGHT pixels, and two marks give the pixel -> value map."""
    graph = render_vega.scenegraph(chart)
    gold = answers(chart, render_vega.axes_of(chart, graph))
    width, height = render_vega.WIDTH, render_vega.HEIGHT
    if chart.chart_type == "scatter":
        symbols = render_vega.marks(graph, "symbol")
        assert len(symbols) == 25
        drawn = sorted((item["x"], item["y"]) for item in symbols)
        (px0, py0), (px1, py1) = drawn[0], drawn[-1]
        to_x = lambda pixel: chart.x[0] + (pixel - px0) * (chart.x[-1] - chart.x[0]) / (px1 - px0)  # noqa: E731
        to_y = lambda pixel: chart.y[0] + (pixel - py0) * (chart.y[-1] - chart.y[0]) / (py1 - py0)  # noqa: E731
        assert gold["x_min_axis"] == pytest.approx(to_x(0), abs=0.02)
        assert gold["x_max_axis"] == pytest.approx(to_x(width), abs=0.02)
        assert gold["y_min_axis"] == pytest.approx(min(to_y(0), to_y(height)), abs=0.02)
        assert gold["y_max_axis"] == pytest.approx(max(to_y(0), to_y(height)), abs=0.02)
        assert gold["x_min_axis"] <= gold["x_min_point"] and gold["x_max_point"] <= gold["x_max_axis"]
    elif chart.chart_type == "bar":
        rects = render_vega.marks(graph, "rect")
        assert len(rects) == gold["count_bars"]
        # a bar of value v spans from pixel(0) to pixel(v); pixels grow downwards
        tallest = max(zip(rects, chart.values, strict=True), key=lambda pair: abs(pair[1]))
        rect, value = tallest
        per_unit = rect["height"] / abs(value)
        zero = rect["y"] + rect["height"] if value > 0 else rect["y"]
        assert gold["y_max_axis"] == pytest.approx(zero / per_unit, abs=0.02)
        assert gold["y_min_axis"] == pytest.approx(-(height - zero) / per_unit, abs=0.02)
        assert gold["y_min_axis"] <= gold["min_bar"] and gold["max_bar"] <= gold["y_max_axis"]
    else:
        assert len(render_vega.marks(graph, "arc")) == gold["count_categories"]
        written = sorted(int(item["text"][:-1]) for item in render_vega.marks(graph, "text"))
        assert written == sorted(chart.values)
        assert gold["max_category"] == written[-1] and gold["min_category"] == written[0]


# ---- variants ------------------------------------------------------------------------------------------------------


def test_presentation_variants_change_only_the_presentation() -> None:
    chart = charts.scatter(0, 3)
    base = render_mpl.draw(chart, render_mpl.Style("Scatter plot"))
    base_limits = render_mpl.limits(base)
    for marker in ("x", "D", "o", "+"):
        figure = render_mpl.draw(chart, render_mpl.Style("Scatter plot", marker=marker))
        (points,) = figure.axes[0].collections
        style = MarkerStyle(marker)
        drawn = style.get_path().transformed(style.get_transform())
        assert points.get_paths()[0].vertices.tolist() == drawn.vertices.tolist()
        assert render_mpl.limits(figure) == base_limits
        assert points.get_offsets().tolist() == base.axes[0].collections[0].get_offsets().tolist()
    grid = render_mpl.draw(chart, render_mpl.Style("Scatter plot", grid=True)).axes[0]
    assert all(line.get_visible() for line in grid.get_xgridlines() + grid.get_ygridlines())
    assert not any(line.get_visible() for line in base.axes[0].get_xgridlines())
    untitled = render_mpl.draw(chart, render_mpl.Style(None))
    assert untitled.axes[0].get_title() == "" and render_mpl.limits(untitled) == base_limits


@pytest.mark.slow
@pytest.mark.cli
def test_built_set_rows_match_their_renderings(rows: list[dict]) -> None:
    by_variant: dict[str, list[dict]] = {}
    for row in rows:
        by_variant.setdefault(row["variant"], []).append(row)
    # 2 plots per type: base 2 * (8 + 5 + 3); variants re-render the first plot of each type
    assert len(by_variant["base"]) == 32
    assert {v: len(r) for v, r in by_variant.items() if v != "base"} == {
        "title_none": 16,
        "title_correct": 16,
        "title_misleading": 16,
        "marker_x": 8,
        "marker_diamond": 8,
        "marker_circle": 8,
        "marker_plus": 8,
        "grid": 13,
        "vegalite": 16,
    }
    assert len({row["q_id"] for row in rows}) == len(rows)
    for row in rows:
        assert row["question"] == TABLE_6[row["chart_type"]][row["question_type"]]
        meta = json.loads(row["metadata"])
        chart = charts.Chart(
            meta["figure_id"],
            meta["chart_type"],
            function=meta.get("function"),
            x=tuple(meta.get("x", ())),
            y=tuple(meta.get("y", ())),
            labels=tuple(meta.get("labels", ())),
            values=tuple(meta.get("values", ())),
        )
        job = Job(chart, meta["library"], render_mpl.Style(meta["title"], meta["marker"], meta["grid"]))
        png, axes = render_job(job)
        assert png == row["image"]["bytes"], row["q_id"]  # the stored image is exactly this rendering
        (question,) = [q for q in questions_for(chart, axes) if q.question_type == row["question_type"]]
        assert (row["answer"], row["x_range"], row["y_range"]) == (question.answer, question.x_range, question.y_range)
        assert row["x_range"] > 0 and row["y_range"] > 0
        if row["variant"] in ("title_correct", "title_misleading"):
            before, after = TITLE_STATEMENTS[row["question_type"]].split("{}")
            assert meta["title"].startswith(before) and meta["title"].endswith(after)
            stated = meta["title"][len(before) : len(meta["title"]) - len(after)]
            if row["variant"] == "title_correct":
                assert stated == row["answer"]
            else:
                margin = pt.range_margin(row["chart_type"], row["question_type"], row["x_range"], row["y_range"])
                assert pt.score_answer(stated, row["answer"], margin) == pt.WRONG, (row["q_id"], stated)
        else:
            assert meta["title"] == (None if row["variant"] == "title_none" else BASE_TITLES[row["chart_type"]])
        if row["variant"] in ("marker_x", "marker_diamond", "marker_circle", "marker_plus"):
            assert meta["marker"] == build.MARKERS[row["variant"]]
    assert Image.open(io.BytesIO(rows[0]["image"]["bytes"])).size == (640, 480)


@pytest.mark.slow
@pytest.mark.cli
def test_built_set_is_valid_local_data_and_reproducible(
    small_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCIFIG_PLOT_TWIST_DATA", str(small_set.parent))
    loaded = load_benchmark(PLOT_TWIST)
    assert len(loaded) == 141 and set(loaded.unique("variant")) == set(pt.VARIANTS)
    again = build.build_plot_twist(tmp_path / "again", plots_per_type=2, variant_plots=1, workers=1, progress=False)
    assert (again.out / "test.parquet").read_bytes() == small_set.read_bytes()  # seeded, worker-independent
    other = charts.generate("bar", 1, 3)
    assert other != charts.generate("bar", 0, 3) and other == charts.generate("bar", 1, 3)


def test_default_composition_reproduces_the_paper_subset_sizes() -> None:
    questions = {kind: build.PAPER_PLOTS[kind] * len(pt.QUESTION_TYPES[kind]) for kind in pt.CHART_TYPES}
    assert questions == {"scatter": 336, "bar": 250, "pie": 141}
    composed = build.compose(build.PAPER_PLOTS, seed=0)
    assert {kind: len(group) for kind, group in composed.items()} == build.PAPER_PLOTS
    counts = [len(chart.values) for chart in composed["bar"]]
    assert set(counts) == {1, 2, 3, 4, 5}
    assert all(sum(chart.values) == 100 for chart in composed["pie"])
    assert {chart.function for chart in composed["scatter"]} <= {name for name, _ in charts.FUNCTIONS}


@pytest.mark.cli
def test_curate_cli_rejects_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert curate_main(["--out", str(tmp_path / "x"), "--variants", "sepia"]) == 2
    assert "unknown variant(s) sepia" in capsys.readouterr().err
    assert curate_main(["--out", str(tmp_path / "x"), "--plots-per-type", "0"]) == 2
