"""GRAB's PNG encoding: a hand-written encoder against the libraries' encoders at equal output, in one run.

The rule it decides: a hand-written encoder stays only if it is >= 1.5x faster (median seconds per graph) than the
best configuration of a library that produces an equal PNG; otherwise the library encodes. Equal output: the PNG
decodes (Pillow) to the same pixels (array compared exactly), mode, size and ``dpi`` (the ``pHYs`` chunk) as the
hand-written one. File sizes are printed beside, not part of equality.

Contenders, each given the same Agg RGBA buffer of a real GRAB graph drawn by the generator
(``curation.grab.render.draw_figure``, default ``--dpi`` 1000, the generator's default: 6000 x 5000 px for the
fixed-schema graphs):

* ``hand-written``: :func:`handwritten_png` below, kept here as the baseline: numpy filters each row with PNG
  filter Up, or Sub where that changes fewer pixels, zlib deflates the rows with its run-length strategy and the
  chunks (``IHDR``, ``pHYs``, ``IDAT``, ``IEND``) are written by hand;
* ``module``: ``curation.grab.render.encode_png``, what the generator uses now;
* ``Pillow``: ``Image.frombuffer(...).save(format="png", dpi=..., optimize=False)`` at several ``compress_level``
  values, with zlib's default strategy and with ``compress_type`` = run-length (``Z_RLE``);
* ``imagecodecs``: ``imagecodecs.png_encode`` (libpng) at several ``level`` / ``strategy`` / ``filter`` values.
  It writes no ``pHYs`` chunk, so its output is not equal as it comes (the row "no pHYs" shows it); the "+pHYs"
  rows insert the 21-byte chunk after ``IHDR`` (:func:`with_phys`, timed with the encoder).

Timing: per graph, the contenders run in turn (one warm-up each, then ``--repeat`` rounds, contenders interleaved
within a round), each graph's time is the median of its rounds; printed: the median over graphs of those times, the
median over graphs of the ratio contender / hand-written, the mean bytes per graph, and whether every graph's output
is equal. The verdict line applies the rule against the fastest equal library configuration.

Run from the repository root: ``python -m tests.perf.bench_png_encoder`` (options ``--graphs`` (default 5: a
balanced subset of the plan, every question type family), ``--dpi``, ``--repeat`` (default 3), ``--seed``). The
default run takes 5-8 minutes on one core.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import struct
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import imagecodecs
import numpy as np
from PIL import Image

from curation.grab import plan as plan_module
from curation.grab.render import DEFAULT_DPI, draw_figure, encode_png, release_figure

RULE = 1.5
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# --- the hand-written encoder (the generator's until the library replaced it), the baseline ---

IDAT_SIZE = 1 << 16
FILTER_SUB = 1
FILTER_UP = 2
SUB_CANDIDATE_SHARE = 32


def filtered_rows(rgba: np.ndarray) -> np.ndarray:
    """PNG scanlines: filter Up per row, or Sub where more than 1/32 of the pixels differ from above and Sub changes
    fewer pixels than Up."""
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


def _chunk(kind: bytes, data: bytes | memoryview) -> bytes:
    return struct.pack(">I", len(data)) + kind + bytes(data) + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def handwritten_png(rgba: Any, dpi: float) -> bytes:
    """8-bit RGBA PNG with ``pHYs``: rows filtered by :func:`filtered_rows`, deflated with ``Z_RLE``."""
    pixels = np.ascontiguousarray(np.asarray(rgba, dtype=np.uint8))
    height, width, _ = pixels.shape
    deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, 8, zlib.Z_RLE)
    data = memoryview(deflate.compress(filtered_rows(pixels)) + deflate.flush())
    per_metre = int(dpi / 0.0254 + 0.5)
    parts = [
        PNG_SIGNATURE,
        _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)),
        _chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)),
    ]
    parts += [_chunk(b"IDAT", data[start : start + IDAT_SIZE]) for start in range(0, len(data), IDAT_SIZE)]
    parts.append(_chunk(b"IEND", b""))
    return b"".join(parts)


# --- the libraries ---


def with_phys(png: bytes, dpi: float) -> bytes:
    """``png`` with a ``pHYs`` chunk (pixels per metre, rounded as Pillow writes them) inserted after ``IHDR``."""
    per_metre = int(dpi / 0.0254 + 0.5)
    ihdr_end = 8 + 8 + 13 + 4  # signature, IHDR length + type, 13 data bytes, CRC
    return png[:ihdr_end] + _chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)) + png[ihdr_end:]


def pillow(level: int, strategy: int | None) -> Callable[[Any, float], bytes]:
    def encode(rgba: Any, dpi: float) -> bytes:
        height, width, _ = rgba.shape
        out = io.BytesIO()
        image = Image.frombuffer("RGBA", (width, height), rgba, "raw", "RGBA", 0, 1)
        options: dict[str, Any] = {"compress_level": level, "optimize": False, "dpi": (dpi, dpi)}
        if strategy is not None:
            options["compress_type"] = strategy
        image.save(out, format="png", **options)
        return out.getvalue()

    return encode


def codecs(phys: bool, **options: Any) -> Callable[[Any, float], bytes]:
    def encode(rgba: Any, dpi: float) -> bytes:
        png = imagecodecs.png_encode(rgba, **options)
        return with_phys(png, dpi) if phys else png

    return encode


FILTER = imagecodecs.PNG.FILTER
STRATEGY = imagecodecs.PNG.STRATEGY
HANDWRITTEN = "hand-written (baseline)"
MODULE = "module: render.encode_png"
CONTENDERS: dict[str, tuple[str, Callable[[Any, float], bytes]]] = {
    HANDWRITTEN: ("hand-written", handwritten_png),
    MODULE: ("module", encode_png),
    **{f"Pillow level {level}": ("library", pillow(level, None)) for level in (0, 1, 3, 6, 9)},
    **{f"Pillow level {level} Z_RLE": ("library", pillow(level, zlib.Z_RLE)) for level in (1, 6)},
    "imagecodecs default, no pHYs": ("library", codecs(False)),
    "imagecodecs default +pHYs": ("library", codecs(True)),
    **{f"imagecodecs level {level} +pHYs": ("library", codecs(True, level=level)) for level in (0, 1, 9)},
    "imagecodecs level 1 RLE +pHYs": ("library", codecs(True, level=1, strategy=STRATEGY.RLE)),
    "imagecodecs Up, level 1 +pHYs": ("library", codecs(True, level=1, filter=FILTER.UP)),
    "imagecodecs Up, level 1 RLE +pHYs": (
        "library",
        codecs(True, level=1, strategy=STRATEGY.RLE, filter=FILTER.UP),
    ),
    "imagecodecs Up, level 6 RLE +pHYs": (
        "library",
        codecs(True, level=6, strategy=STRATEGY.RLE, filter=FILTER.UP),
    ),
    "imagecodecs Sub|Up, level 1 RLE +pHYs": (
        "library",
        codecs(True, level=1, strategy=STRATEGY.RLE, filter=FILTER.SUB | FILTER.UP),
    ),
}


@dataclass
class Figures:
    """Per-graph seconds, ratios to the hand-written encoder, bytes, and whether every output was equal."""

    seconds: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    equal: bool = True


def decoded(png: bytes) -> tuple[str, tuple[int, int], Any, np.ndarray]:
    with Image.open(io.BytesIO(png)) as image:
        image.load()
        return image.mode, image.size, image.info.get("dpi"), np.asarray(image)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", type=int, default=5)
    parser.add_argument("--dpi", type=int, default=DEFAULT_DPI)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    items = plan_module.select(plan_module.cached_plan(args.seed), None, args.graphs)
    print(
        f"PNG encoders on {len(items)} GRAB graphs at dpi {args.dpi}, {args.repeat} rounds each"
        f" (Pillow {Image.__version__}, imagecodecs {imagecodecs.__version__}, libpng {imagecodecs.png_version()},"
        f" zlib {zlib.ZLIB_RUNTIME_VERSION}; load average {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    figures = {name: Figures() for name in CONTENDERS}
    for number, item in enumerate(items, 1):
        canvas = draw_figure(item.params, args.dpi)
        rgba, dpi = np.asarray(canvas.buffer_rgba()), canvas.figure.dpi
        reference = decoded(handwritten_png(rgba, dpi))
        times: dict[str, list[float]] = {name: [] for name in CONTENDERS}
        for name, (_, encode) in CONTENDERS.items():  # warm-up, and the equality check outside the clock
            png = encode(rgba, dpi)
            mode, size, png_dpi, pixels = decoded(png)
            same = (mode, size, png_dpi) == reference[:3] and np.array_equal(pixels, reference[3])
            figures[name].equal &= same
            figures[name].sizes.append(len(png))
            del png, pixels
        for _ in range(args.repeat):
            for name, (_, encode) in CONTENDERS.items():
                start = time.perf_counter()
                encode(rgba, dpi)
                times[name].append(time.perf_counter() - start)
        base = statistics.median(times[HANDWRITTEN])
        for name, seconds in times.items():
            figures[name].seconds.append(statistics.median(seconds))
            figures[name].ratios.append(statistics.median(seconds) / base)
        del rgba
        release_figure(canvas)
        print(f"  graph {number}/{len(items)} ({item.type_key}): {reference[1][0]} x {reference[1][1]} px", flush=True)

    print()
    print(f"  {'encoder / configuration':<40} {'s/graph':>8} {'vs hand':>8} {'kB/graph':>9}  equal output")
    for name, got in figures.items():
        print(
            f"  {name:<40} {statistics.median(got.seconds):8.3f} {statistics.median(got.ratios):7.2f}x"
            f" {statistics.mean(got.sizes) / 1000:9.1f}  {'yes' if got.equal else 'NO'}"
        )
    library = {name: got for name, got in figures.items() if CONTENDERS[name][0] == "library" and got.equal}
    best = min(library, key=lambda name: statistics.median(library[name].ratios))
    advantage = statistics.median(library[best].ratios)  # library seconds / hand-written seconds
    kept = advantage >= RULE
    print(
        f"\n  verdict: the hand-written encoder is {advantage:.2f}x as fast as the fastest equal library configuration"
        f" ({best}); rule >= {RULE}x: {'kept' if kept else 'replaced by the library'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
