"""Rendering GRAB graphs with matplotlib (Agg), deterministically, like the published images.

* Function, series and transform graphs use one **fixed schema**: figure 6 x 5 in, x and y limits [-10, 10], ticks
  every 2 (labelled, font size 10), gridlines every 1 (stronger every 2), curves in the tab10 colours in order, the
  same margins and resolution for every graph.
* Properties graphs **randomise** figure size, font size, line style, marker and colour from the defined sets
  below (drawn in the plan stage and stored with the parameters); their x-limits are set by the question (e.g. the
  function's domain with a margin) and their y-limits by matplotlib's autoscaling.
* Resolution: ``dpi`` (default :data:`DEFAULT_DPI` = 1000, so a fixed-schema graph is 6000 x 5000 px, comparable
  to the published 5836 x 4842 RGBA images). Output is an RGBA PNG.

Encoding (:func:`encode_png`): the Agg canvas's RGBA buffer is written as an 8-bit RGBA PNG: numpy filters every row
(:func:`filtered_rows`: PNG filter Up, or Sub where that leaves fewer pixels changed), zlib-ng deflates the scanlines
(``imagecodecs.zlibng_encode``, level :data:`ZLIB_NG_LEVEL`) and the chunks (``IHDR``, ``pHYs`` with the dpi,
``IDAT``, ``IEND``) are written here: the same pixels, mode, size and dpi as ``Figure.savefig(format="png")``
(matplotlib hands the same buffer to Pillow). Rule: the fastest configuration whose files are no larger than the
former encoder's (the same rows deflated by Python's zlib with its run-length strategy; mean bytes per graph at most
3 % above) at no more than its time (median seconds per graph); file size is output, so "a library replaces code
written here when it is >= 1.5x faster at equal output" compares configurations within that size bound. Measured
(``python -m tests.perf.bench_png_encoder``: 8 graphs at dpi 1000, two runs on a loaded, shared 2-core machine):
0.12-0.13 s a graph, 0.22-0.27x the former encoder's time, 296 kB a graph against 305 kB. zlib-ng's levels 2, 3 and 6
take 0.12-0.16 s (level 3: the smaller files of the two fastest); its level 1 writes 4.3x larger files. No library
alone meets both bounds: libpng with filter Up on every row (the encoder before this one) takes 0.6x the former
encoder's time but writes 1.8x its bytes (552 kB a graph); libpng choosing Sub or Up per row is as small (308 kB) at
1.3-1.5x its time, Pillow at 1.9x or more.

Determinism: every input comes from the plan and the PNG holds no text chunk (no ``Software`` or time stamp), so the
same parameters and versions (matplotlib, imagecodecs with its zlib-ng) give byte-identical files in any process.
zlib-ng, like zlib, promises the same compressed bytes only for the same version (and CPU architecture).

Memory (:func:`release_figure`): a process holds one graph at a time. At dpi 1000 a graph's Agg pixel buffer is 120-190
MB; encoding holds the filtered scanlines and a row comparison besides (+143 MiB to a process's peak for a 6000 x 5000
graph; libpng's row-by-row encoding added 1 MiB, at 1.8x the file size), and a rendering process's peak does not grow
with the number of graphs (goal: <= 1 GiB per build worker, ~0.6-0.7 GiB measured with the former encoder's same copy;
``tests/perf/bench_grab_generator.py`` prints the peak). A drawn figure is a web of
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


FILTER_SUB = 1
FILTER_UP = 2
SUB_CANDIDATE_SHARE = 32
"""A row is tried with filter Sub only when more than 1/``SUB_CANDIDATE_SHARE`` of its pixels differ from the row
above (the other rows keep Up, which leaves them almost all zeros)."""
ZLIB_NG_LEVEL = 3
"""zlib-ng's level for the scanlines: of its fastest levels (2 and 3) the one with the smaller files; level 1 writes
4x larger ones (module docstring)."""
IDAT_SIZE = 1 << 16
"""Bytes of compressed data per ``IDAT`` chunk (the last one holds the rest)."""


def filtered_rows(rgba: np.ndarray) -> np.ndarray:
    """PNG scanlines of an ``(height, width, 4)`` uint8 image: each row's filter type byte, then the row filtered.

    Filter Up (difference to the row above; the first row's "above" is zeros), or Sub (difference to the pixel on
    the left) where more than 1/32 of the row's pixels differ from the row above and Sub leaves fewer non-zero
    pixels than Up. Counts are of whole pixels (4 bytes compared at once), for the whole image in a few numpy passes.
    """
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
        out[sub, 5:] = chosen[:, 4:] - chosen[:, :-4]
    return out


def png_chunk(kind: bytes, data: bytes | memoryview) -> bytes:
    """One PNG chunk: length, type, data and the CRC-32 of type and data."""
    return struct.pack(">I", len(data)) + kind + bytes(data) + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def png_file(width: int, height: int, dpi: float, compressed: bytes | memoryview) -> bytes:
    """An 8-bit RGBA PNG around zlib-compressed scanlines: ``IHDR``, ``pHYs`` (pixels per metre rounded as Pillow
    writes them for ``savefig``, unit metre), ``IDAT`` chunks of :data:`IDAT_SIZE` bytes, ``IEND``; no text chunk."""
    data = memoryview(compressed)
    per_metre = int(dpi / 0.0254 + 0.5)
    parts = [
        PNG_SIGNATURE,
        png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)),
        png_chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)),
    ]
    parts += [png_chunk(b"IDAT", data[start : start + IDAT_SIZE]) for start in range(0, len(data), IDAT_SIZE)]
    parts.append(png_chunk(b"IEND", b""))
    return b"".join(parts)


def encode_png(rgba: Any, dpi: float) -> bytes:
    """An 8-bit RGBA PNG of an ``(height, width, 4)`` uint8 buffer, with the resolution ``dpi`` in ``pHYs``.

    Decodes to exactly ``rgba`` (mode RGBA). Rows filtered by :func:`filtered_rows`, deflated by zlib-ng
    (``imagecodecs.zlibng_encode``, level :data:`ZLIB_NG_LEVEL`), chunks by :func:`png_file` (module docstring).
    """
    import imagecodecs

    pixels = np.ascontiguousarray(np.asarray(rgba, dtype=np.uint8))
    if pixels.ndim != 3 or pixels.shape[2] != 4:
        raise ValueError(f"expected an (height, width, 4) RGBA buffer, got shape {pixels.shape}")
    height, width, _ = pixels.shape
    compressed = imagecodecs.zlibng_encode(filtered_rows(pixels), level=ZLIB_NG_LEVEL)
    return png_file(width, height, dpi, compressed)


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
