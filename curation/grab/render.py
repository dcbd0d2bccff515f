"""Rendering GRAB graphs with matplotlib (Agg), deterministically, like the published images (GRAB paper §3: one fixed
schema for function, series and transform graphs), with its own PNG encoder and one graph in memory at a time.
Manual: docs/curation.md, "Rendering", "PNG encoding" and "Memory of a rendering process".
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

    Pass it to :func:`release_figure` once its pixels are used (memory rule: docs/curation.md, "Memory of a rendering
    process").
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
    """Free a drawn graph's pixel buffer now, not at the garbage collector's next full pass (docs/curation.md,
    "Memory of a rendering process").

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
4x larger ones (docs/curation.md, "PNG encoding")."""
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
    (``imagecodecs.zlibng_encode``, level :data:`ZLIB_NG_LEVEL`), chunks by :func:`png_file` (docs/curation.md,
    "PNG encoding").
    """
    import imagecodecs

    pixels = np.ascontiguousarray(np.asarray(rgba, dtype=np.uint8))
    if pixels.ndim != 3 or pixels.shape[2] != 4:
        raise ValueError(f"expected an (height, width, 4) RGBA buffer, got shape {pixels.shape}")
    height, width, _ = pixels.shape
    compressed = imagecodecs.zlibng_encode(filtered_rows(pixels), level=ZLIB_NG_LEVEL)
    return png_file(width, height, dpi, compressed)


def opaque(rgba: Any) -> bool:
    """Whether an ``(height, width, 4)`` RGBA buffer's alpha is 255 everywhere: the case in which its PNG is usable
    as it is in a VLMEvalKit TSV (``scifig_tasks.core.checked_images.usable_as_stored``: VLMEvalKit drops the alpha
    channel without compositing). Read on the array, a small cost next to drawing it."""
    return bool(np.asarray(rgba)[:, :, 3].min() == 255)


def _encoded(canvas: Any) -> tuple[bytes, bool]:
    # The buffer's view is a local here: it is gone when this returns, before the figure is released.
    pixels = np.asarray(canvas.buffer_rgba())
    return encode_png(pixels, canvas.figure.dpi), opaque(pixels)


def render_checked(params: dict[str, Any], dpi: int = DEFAULT_DPI) -> tuple[bytes, bool]:
    """The RGBA PNG of one planned graph and whether its alpha is opaque everywhere (:func:`opaque`); the figure is
    released as soon as the PNG is encoded (or encoding fails)."""
    canvas = draw_figure(params, dpi)
    try:
        return _encoded(canvas)
    finally:
        release_figure(canvas)


def render_png(params: dict[str, Any], dpi: int = DEFAULT_DPI) -> bytes:
    """The RGBA PNG of one planned graph (:func:`render_checked`)."""
    return render_checked(params, dpi)[0]


def render_job(job: tuple[dict[str, Any], int]) -> bytes:
    """Worker entry point: ``(params, dpi) -> PNG bytes``."""
    params, dpi = job
    return render_png(params, dpi)


def render_checked_job(job: tuple[dict[str, Any], int]) -> tuple[bytes, bool]:
    """Worker entry point: ``(params, dpi) -> (PNG bytes, alpha opaque everywhere)``; the pass is recorded by the
    process that writes the data (which knows the datasets cache), not here."""
    params, dpi = job
    return render_checked(params, dpi)
