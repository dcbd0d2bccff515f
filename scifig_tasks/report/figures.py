"""The papers' figure types, drawn with matplotlib (Agg, no display): grouped bars with 95% Wilson error bars,
accuracy against complexity with Wilson bands (GRAB Fig. 6), radar charts by question type (Plot Twist) and
signed bars for alignment deltas (SciFIBench Fig. 7). Every function writes one PNG and returns its path; legends
stand outside the plotting area (right of it), so none covers the data.

Inside :func:`drawn_alongside` (``scifig report`` builds its pages inside it) each function returns its path at once
and the figure is drawn in another process while the report goes on: drawing was about half of a report's time.
"""

from __future__ import annotations

import functools
import math
import multiprocessing
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from scifig_tasks.report.forked import spare_cores  # noqa: E402

DPI = 110
Interval = tuple[float, float] | None
MAX_WORKERS = 3
"""Processes drawing figures beside the report's own (fewer on a machine with fewer cores)."""

Draw = TypeVar("Draw", bound=Callable[..., Path])
_DRAWERS: dict[str, Callable[..., Path]] = {}
"""Each figure function as written (what a drawing process runs), by name."""


def _drawn_there(name: str, path: Path, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Path:
    return _DRAWERS[name](path, *args, **kwargs)


class _Drawing:
    """The figures asked for inside :func:`drawn_alongside`: a queue the drawing processes are fed from, a figure to a
    process at a time as each finishes one (a figure handed to a process's own queue could no longer be drawn by the
    report's process: :func:`draw_waiting`), and the figures handed over."""

    def __init__(self, pool: ProcessPoolExecutor, workers: int) -> None:
        self.pool, self.workers = pool, workers
        self.lock = threading.RLock()  # the pool's thread feeds it too, as a figure is done
        self.queue: deque[tuple[str, Path, tuple[Any, ...], dict[str, Any]]] = deque()
        self.handed: list[Future[Path]] = []

    def add(self, name: str, path: Path, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        with self.lock:
            self.queue.append((name, path, args, kwargs))
            self.feed()

    def feed(self, _: object = None) -> None:
        """Hand the front of the queue to the drawing processes that have no figure."""
        with self.lock:
            while self.queue and sum(not future.done() for future in self.handed) < self.workers:
                future = self.pool.submit(_drawn_there, *self.queue.popleft())
                self.handed.append(future)
                future.add_done_callback(self.feed)

    def take_last(self) -> tuple[str, Path, tuple[Any, ...], dict[str, Any]] | None:
        with self.lock:
            return self.queue.pop() if self.queue else None


_drawing: _Drawing | None = None


def _alongside(draw: Draw) -> Draw:
    """``draw`` handed to a drawing process inside :func:`drawn_alongside` (its path returned at once), called here
    otherwise."""
    _DRAWERS[draw.__name__] = draw

    @functools.wraps(draw)
    def submit(path: Path, *args: Any, **kwargs: Any) -> Path:
        if _drawing is None:
            return draw(path, *args, **kwargs)
        _drawing.add(draw.__name__, path, args, kwargs)
        return path

    return submit  # type: ignore[return-value]


def still_drawing() -> int:
    """Figures asked for and not yet written."""
    if _drawing is None:
        return 0
    with _drawing.lock:
        return len(_drawing.queue) + sum(not future.done() for future in _drawing.handed)


def draw_waiting() -> int:
    """Draws here, now, the figures no drawing process has started, one at a time from the end of the queue while
    they take from its front, until none is left (the caller has nothing else to do: it would wait for them); returns
    how many it drew."""
    drawn = 0
    while _drawing is not None and (figure := _drawing.take_last()) is not None:
        _drawn_there(*figure)
        drawn += 1
    return drawn


def drawing_workers() -> int:
    """How many processes draw figures beside the report: the cores it may use besides its own, at most
    :data:`MAX_WORKERS` (:func:`scifig_tasks.report.forked.spare_cores`: none where it may not fork)."""
    return min(MAX_WORKERS, spare_cores())


@contextmanager
def drawn_alongside(workers: int | None = None) -> Iterator[None]:
    """Inside the block every figure function returns its path at once and the figure is drawn by one of ``workers``
    processes (:func:`drawing_workers` by default; none: drawn where called) while the caller goes on. Leaving the
    block draws here what no process has started (:func:`draw_waiting`) and waits until every figure is written; a
    figure that failed raises its error there."""
    global _drawing
    count = drawing_workers() if workers is None else workers
    if count < 1 or _drawing is not None:
        yield
        return
    with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork")) as pool:
        drawing = _drawing = _Drawing(pool, count)
        try:
            yield
            draw_waiting()
            for future in list(drawing.handed):
                future.result()
        finally:
            with drawing.lock:
                drawing.queue.clear()
            _drawing = None
            for future in drawing.handed:
                future.cancel()


def _colours(n: int) -> list[tuple[float, float, float, float]]:
    """``n`` colours, distinct up to 20 (tab10, then tab20 for more series)."""
    cmap, size = (plt.get_cmap("tab10"), 10) if n <= 10 else (plt.get_cmap("tab20"), 20)
    return [cmap(i % size) for i in range(n)]


def _legend(ax: plt.Axes, handles: Sequence[Any] | None = None, labels: Sequence[str] | None = None) -> None:
    """The legend outside the plot, right of it: it never covers a bar, a line or an error bar (``handles`` and
    ``labels``: those of several panels, in one legend)."""
    if handles is None or labels is None:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    else:
        ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def _save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight", facecolor="white")
    plt.close(fig)
    return path


@_alongside
def grouped_bars(
    path: Path,
    panels: Mapping[str, Mapping[str, Mapping[str, tuple[float, Interval]]]],
    ylabel: str = "accuracy (%)",
) -> Path:
    """One panel per title: bars per category, one colour per model, with error bars from the intervals.

    ``panels[title][model][category] = (accuracy fraction, (low, high) or None)``. One legend for every panel, right
    of the first (a model keeps its colour in each panel): a legend per panel repeated every model's name, and
    laying out those names was most of the drawing time.
    """
    titles = list(panels)
    fig, axes = plt.subplots(len(titles), 1, figsize=(10, 3.2 * len(titles)), squeeze=False)
    every = list(dict.fromkeys(model for title in titles for model in panels[title]))
    colours = dict(zip(every, _colours(len(every)), strict=True))
    legend: dict[str, Any] = {}
    for ax, title in zip(axes[:, 0], titles, strict=True):
        models = list(panels[title])
        categories = list(dict.fromkeys(c for model in models for c in panels[title][model]))
        width = 0.8 / max(len(models), 1)
        for index, model in enumerate(models):
            colour = colours[model]
            xs, heights, errors = [], [], [[], []]
            for position, category in enumerate(categories):
                if category not in panels[title][model]:
                    continue
                value, interval = panels[title][model][category]
                xs.append(position - 0.4 + width * (index + 0.5))
                heights.append(100 * value)
                low, high = interval if interval else (value, value)
                errors[0].append(100 * (value - low))
                errors[1].append(100 * (high - value))
            legend.setdefault(model, ax.bar(xs, heights, width * 0.95, yerr=errors, capsize=2, color=colour))
        ax.set_xticks(range(len(categories)))
        ax.set_xticklabels(
            categories, rotation=30 if len(categories) > 5 else 0, ha="right" if len(categories) > 5 else "center"
        )
        ax.set_ylim(0, 105)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    _legend(axes[0][0], list(legend.values()), list(legend))
    fig.tight_layout()
    return _save(fig, path)


@_alongside
def accuracy_vs_level(
    path: Path,
    panels: Mapping[str, Mapping[str, Mapping[int, tuple[float, Interval]]]],
    xlabel: str = "complexity",
) -> Path:
    """One panel per title: accuracy against an integer level, a line per model with its 95% Wilson band."""
    titles = list(panels)
    fig, axes = plt.subplots(1, len(titles), figsize=(4.2 * len(titles), 3.4), squeeze=False, sharey=True)
    for ax, title in zip(axes[0], titles, strict=True):
        models = list(panels[title])
        for model, colour in zip(models, _colours(len(models)), strict=True):
            points = sorted(panels[title][model].items())
            xs = [level for level, _ in points]
            ys = [100 * value for _, (value, _) in points]
            lows = [100 * (interval[0] if interval else value) for _, (value, interval) in points]
            highs = [100 * (interval[1] if interval else value) for _, (value, interval) in points]
            ax.plot(xs, ys, marker="o", color=colour, label=model)
            ax.fill_between(xs, lows, highs, color=colour, alpha=0.18, linewidth=0)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("accuracy (%)")
    _legend(axes[0][-1])
    fig.tight_layout()
    return _save(fig, path)


@_alongside
def radar_grid(
    path: Path,
    grid: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]],
) -> Path:
    """Radar charts: rows are metrics, columns chart types, axes question types, one polygon per model.

    ``grid[metric][chart][model][question_type] = accuracy fraction``.
    """
    metrics = list(grid)
    charts = list(dict.fromkeys(chart for metric in metrics for chart in grid[metric]))
    fig, axes = plt.subplots(
        len(metrics),
        len(charts),
        figsize=(3.6 * len(charts), 3.4 * len(metrics)),
        subplot_kw={"projection": "polar"},
        squeeze=False,
    )
    for row, metric in enumerate(metrics):
        for column, chart in enumerate(charts):
            ax = axes[row][column]
            models = grid[metric].get(chart, {})
            types = list(dict.fromkeys(t for model in models.values() for t in model))
            if len(types) < 3:  # a radar needs three axes: pad with empty spokes
                types += [""] * (3 - len(types))
            angles = [2 * math.pi * i / len(types) for i in range(len(types))]
            for (model, values), colour in zip(models.items(), _colours(len(models)), strict=True):
                radii = [100 * values.get(t, 0.0) for t in types]
                ax.plot(angles + angles[:1], radii + radii[:1], color=colour, label=model)
                ax.fill(angles + angles[:1], radii + radii[:1], color=colour, alpha=0.15)
            ax.set_xticks(angles)
            ax.set_xticklabels(types, fontsize=7)
            ax.set_ylim(0, 100)
            ax.set_yticks([25, 50, 75, 100])
            ax.tick_params(axis="y", labelsize=6)
            ax.set_title(f"{chart}: {metric}", fontsize=9, pad=14)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:  # right of the grid, where it covers no chart however many models it names
        fig.legend(handles, labels, loc="center left", bbox_to_anchor=(0.99, 0.5), fontsize=8)
    # a fixed spacing (every cell is the same polar chart) in place of tight_layout, a fifth of the drawing time
    fig.subplots_adjust(left=0.06, right=0.9, bottom=0.05, top=0.93, wspace=0.55, hspace=0.55)
    return _save(fig, path)


@_alongside
def signed_bars(path: Path, series: Mapping[str, Mapping[str, float]], ylabel: str) -> Path:
    """Bars above/below zero per variant, one colour per model (``series[model][variant] = points``)."""
    models = list(series)
    variants = list(dict.fromkeys(v for model in models for v in series[model]))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(variants)), 3.4))
    width = 0.8 / max(len(models), 1)
    for index, (model, colour) in enumerate(zip(models, _colours(len(models)), strict=True)):
        xs = [p - 0.4 + width * (index + 0.5) for p, v in enumerate(variants) if v in series[model]]
        ys = [series[model][v] for v in variants if v in series[model]]
        ax.bar(xs, ys, width * 0.95, color=colour, label=model)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(variants)))
    ax.set_xticklabels(variants, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    _legend(ax)
    return _save(fig, path)  # no tight_layout: one plot, whose margins the saved bounding box sets


@_alongside
def simple_bars(path: Path, values: Mapping[str, Mapping[str, float]], ylabel: str, ylim: Sequence[float]) -> Path:
    """Grouped bars without intervals (``values[model][label]``), e.g. captioning scores."""
    models = list(values)
    labels = list(dict.fromkeys(k for model in models for k in values[model]))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(labels)), 3.4))
    width = 0.8 / max(len(models), 1)
    for index, (model, colour) in enumerate(zip(models, _colours(len(models)), strict=True)):
        xs = [p - 0.4 + width * (index + 0.5) for p, k in enumerate(labels) if k in values[model]]
        ax.bar(xs, [values[model][k] for k in labels if k in values[model]], width * 0.95, color=colour, label=model)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=8, rotation=20)
    ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    _legend(ax)
    return _save(fig, path)  # no tight_layout: one plot, whose margins the saved bounding box sets
