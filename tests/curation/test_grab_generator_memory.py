"""GRAB's memory rule (docs/curation.md, "Memory of a rendering process"): a rendering process holds one graph at a
time, so
each graph's Agg pixel buffer is freed as soon as its PNG is encoded, by reference counting (the garbage collector is
switched off here to show it), and a full collection frees it where a reference cycle still holds it."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from curation.grab import render
from curation.grab.plan import cached_plan, select

DPI = 30


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic garbage collector off (collections are then only the explicit ones)."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def drawn_renderers(monkeypatch: pytest.MonkeyPatch) -> list[weakref.ref[Any]]:
    """Weak references to the renderer (the holder of the pixel buffer) of every graph ``render`` draws from now."""
    refs: list[weakref.ref[Any]] = []
    draw_figure = render.draw_figure

    def recording(params: dict[str, Any], dpi: int = render.DEFAULT_DPI) -> Any:
        canvas = draw_figure(params, dpi)
        refs.append(weakref.ref(canvas.get_renderer()))
        return canvas

    monkeypatch.setattr(render, "draw_figure", recording)
    return refs


@pytest.mark.parametrize("index", [0, 1, 2, 4, 5])  # properties x 2 (random styles), function, series, transform
def test_render_png_frees_the_pixel_buffer_without_the_collector(
    index: int, monkeypatch: pytest.MonkeyPatch, no_collector: None
) -> None:
    item = select(cached_plan(0), None, 6)[index]
    renderers = drawn_renderers(monkeypatch)
    collections: list[int] = []
    monkeypatch.setattr(render.gc, "collect", lambda *args: collections.append(1) or 0)
    png = render.render_job((item.params, DPI))
    assert png.startswith(render.PNG_SIGNATURE)
    assert len(renderers) == 1 and renderers[0]() is None  # freed on return
    assert collections == []  # by reference counting alone


def test_release_collects_when_a_reference_cycle_still_holds_the_buffer(no_collector: None) -> None:
    item = select(cached_plan(0), None, 1)[0]
    canvas = render.draw_figure(item.params, DPI)
    renderer = weakref.ref(canvas.get_renderer())
    cycle: list[Any] = [canvas.get_renderer()]
    cycle.append(cycle)
    del cycle
    render.release_figure(canvas)
    assert renderer() is None
    assert canvas.figure.axes == []


def test_a_released_canvas_draws_again_with_a_new_buffer(no_collector: None) -> None:
    item = select(cached_plan(0), None, 1)[0]
    canvas = render.draw_figure(item.params, DPI)
    first = weakref.ref(canvas.get_renderer())
    render.release_figure(canvas)
    assert first() is None
    canvas.draw()  # an empty figure now: only its white background
    pixels = bytes(canvas.buffer_rgba())
    assert set(pixels) == {255}
    render.release_figure(canvas)
