"""Rendering GRAB graphs with matplotlib (Agg), deterministically, like the published images.

* Function, series and transform graphs use one **fixed schema**: figure 6 x 5 in, x and y limits [-10, 10], ticks
  every 2 (labelled, font size 10), gridlines every 1 (stronger every 2), curves in the tab10 colours in order, the
  same margins and resolution for every graph.
* Properties graphs **randomise** figure size, font size, line style, marker and colour from the defined sets
  below (drawn in the plan stage and stored with the parameters); their x-limits are set by the question (e.g. the
  function's domain with a margin) and their y-limits by matplotlib's autoscaling.
* Resolution: ``dpi`` (default :data:`DEFAULT_DPI` = 1000, so a fixed-schema graph is 6000 x 5000 px, comparable
  to the published 5836 x 4842 RGBA images). Output is an RGBA PNG.

Encoding (:func:`encode_png`): the Agg canvas's RGBA buffer is written as an 8-bit RGBA PNG (chunks ``IHDR``,
``pHYs`` with the dpi, ``IDAT``, ``IEND``), the same pixels, mode, size and dpi as ``Figure.savefig(format="png")``
(matplotlib hands the same buffer to Pillow), ~2.4x faster: each row is stored with the PNG filter "Up"
(difference to the row above), or "Sub" (difference to the pixel on the left) where that changes fewer pixels (the
edges of horizontal lines), and the rows are deflated with zlib's run-length strategy. Pillow instead tries all five
filters on every row and deflates at zlib's default level. On these mostly white graphs at 1000 dpi that is ~0.65 s
of CPU a graph against ~0.27 s here (``tests/perf/bench_grab_generator.py``), for files 2-4% larger (~300-500
kB). Only the bytes differ from ``savefig``'s: every decoded pixel is the same.

Determinism: every input comes from the plan and the PNG holds no text chunk (no ``Software`` or time stamp), so the
same parameters and versions (matplotlib, zlib) give byte-identical files in any process.

Memory (:func:`release_figure`): a process holds one graph at a time. At dpi 1000 a graph's Agg pixel buffer is 120-190
MB and encoding it needs about as much again, so a rendering process peaks at ~0.6-0.7 GiB whatever the number of graphs
(goal: <= 1 GiB per build worker; ``tests/perf/bench_grab_generator.py`` prints the peak). A drawn figure is a web of
reference cycles (figure and canvas, artists and axes), which reference counting alone never frees: left to the garbage
collector's rare full passes, finished graphs' buffers pile up (1.7-2.5 GiB per process after 40-160 graphs). So every
path that draws a graph releases it as soon as its PNG is encoded: the figure's axes and artists are cleared and the
canvas drops its renderer, the only remaining holder of the buffer, which reference counting then frees at once.
"""

from __future__ import annotations

import gc
import random
import struct
import weakref
import zlib
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


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
IDAT_SIZE = 1 << 16
"""Bytes of compressed image data per ``IDAT`` chunk."""
FILTER_SUB = 1
FILTER_UP = 2
SUB_CANDIDATE_SHARE = 32
"""Rows where more than 1/32 of the pixels differ from the pixel above are the only ones tried with filter Sub."""


def draw_figure(params: dict[str, Any], dpi: int = DEFAULT_DPI) -> Any:
    """The Agg canvas of one planned graph, drawn (its pixels are ``canvas.buffer_rgba()``).

    Pass it to :func:`release_figure` once its pixels are used (memory rule in the module docstring).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figsize, fontsize = figure_settings(params)
    figure = Figure(figsize=figsize, dpi=dpi)
    canvas = FigureCanvasAgg(figure)
    figure.subplots_adjust(**_margins(figsize, fontsize))
    axes = figure.add_subplot()
    axes.tick_params(labelsize=fontsize)
    draw(axes, params)
    canvas.draw()
    return canvas


def release_figure(canvas: Any) -> None:
    """Free a drawn graph's pixel buffer now, not at the garbage collector's next full pass (module docstring, memory).

    The figure's axes and artists are cleared (drawn texts keep a reference to the renderer) and the canvas drops its
    renderer, the holder of the Agg buffer, and returns to its never-drawn state (a later draw makes a new renderer).
    Reference counting then frees the buffer at once; should anything else still hold the renderer in a reference
    cycle (another matplotlib version), a full collection frees it before this returns. Only a reference the caller
    keeps (e.g. a ``buffer_rgba()`` view) keeps the buffer alive.
    """
    state = vars(canvas)
    renderer = state.get("renderer")
    held = None if renderer is None else weakref.ref(renderer)
    del renderer
    canvas.figure.clear()
    state.pop("renderer", None)
    state.pop("_lastKey", None)  # FigureCanvasAgg's class default (None) again: the next draw makes a new renderer
    if held is not None and held() is not None:
        gc.collect()


def filtered_rows(rgba: np.ndarray) -> np.ndarray:
    """PNG scanlines of an ``(height, width, 4)`` uint8 image: per row the filter type byte, then the filtered bytes.

    Filter "Up" (PNG type 2: byte minus the byte above; the first row has none above, so it is stored as is), or
    "Sub" (type 1: byte minus the byte 4 to the left, one pixel) for the rows where more than 1/32 of the pixels
    (:data:`SUB_CANDIDATE_SHARE`) differ from the pixel above and fewer differ from their left neighbour (the first
    pixel counts as changed unless it is 0): the edges of horizontal lines, which Up would leave as a repeating
    4-byte pattern that run-length coding cannot shorten. Restricting Sub to those rows halves the filtering time
    and loses ~1% in size. Both filters are exact: decoding restores every byte.
    """
    rgba = np.ascontiguousarray(rgba, dtype=np.uint8)  # no copy for the Agg buffer
    height, width, _ = rgba.shape
    rows = rgba.reshape(height, width * 4)
    pixels = rgba.view(np.uint32).reshape(height, width)
    out = np.empty((height, 1 + width * 4), dtype=np.uint8)
    out[:, 0] = FILTER_UP
    out[0, 1:] = rows[0]
    np.subtract(rows[1:], rows[:-1], out=out[1:, 1:])
    changed_up = np.empty(height, dtype=np.int64)
    changed_up[0] = np.count_nonzero(pixels[0])
    changed_up[1:] = np.count_nonzero(pixels[1:] != pixels[:-1], axis=1)
    candidates = np.flatnonzero(changed_up * SUB_CANDIDATE_SHARE > width)
    tried = pixels[candidates]
    changed_sub = np.count_nonzero(tried[:, 1:] != tried[:, :-1], axis=1) + (tried[:, 0] != 0)
    sub = candidates[changed_sub < changed_up[candidates]]
    if sub.size:
        chosen = rows[sub]
        out[sub, 0] = FILTER_SUB
        out[sub, 1:5] = chosen[:, :4]
        out[sub, 5:] = chosen[:, 4:] - chosen[:, :-4]  # uint8 arithmetic: modulo 256, as PNG filters are
    return out


def _chunk(kind: bytes, data: bytes | memoryview) -> bytes:
    return struct.pack(">I", len(data)) + kind + bytes(data) + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def encode_png(rgba: Any, dpi: float) -> bytes:
    """An 8-bit RGBA PNG of an ``(height, width, 4)`` uint8 buffer, with the resolution ``dpi`` in ``pHYs``.

    Decodes to exactly ``rgba`` (mode RGBA); ``pHYs`` holds pixels per metre rounded as Pillow writes them for
    ``savefig``. No text chunks.
    """
    pixels = np.ascontiguousarray(np.asarray(rgba, dtype=np.uint8))
    if pixels.ndim != 3 or pixels.shape[2] != 4:
        raise ValueError(f"expected an (height, width, 4) RGBA buffer, got shape {pixels.shape}")
    height, width, _ = pixels.shape
    # Z_RLE finds runs of one byte only (the level does not change its output): on these filtered, mostly white
    # rows it is as fast as level 1 and within ~3% of level 6's size (level 1: 2.3x larger; level 6: 2x slower).
    deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, 8, zlib.Z_RLE)
    data = memoryview(deflate.compress(filtered_rows(pixels)) + deflate.flush())
    per_metre = int(dpi / 0.0254 + 0.5)
    parts = [
        PNG_SIGNATURE,
        _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)),  # 8 bits, RGBA, no interlace
        _chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)),  # unit: metre
    ]
    parts += [_chunk(b"IDAT", data[start : start + IDAT_SIZE]) for start in range(0, len(data), IDAT_SIZE)]
    parts.append(_chunk(b"IEND", b""))
    return b"".join(parts)


def render_png(params: dict[str, Any], dpi: int = DEFAULT_DPI) -> bytes:
    """The RGBA PNG of one planned graph; the figure is released as soon as the PNG is encoded (or encoding fails)."""
    canvas = draw_figure(params, dpi)
    try:
        return encode_png(canvas.buffer_rgba(), canvas.figure.dpi)
    finally:
        release_figure(canvas)


def render_job(job: tuple[dict[str, Any], int]) -> bytes:
    """Worker entry point: ``(params, dpi) -> PNG bytes``."""
    params, dpi = job
    return render_png(params, dpi)
