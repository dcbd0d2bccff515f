"""GRAB's PNG encoding: the former hand-written encoder, the generator's and the libraries' encoders, in one run.

What it decides: the generator's encoder (``curation.grab.render.encode_png``) is the fastest configuration whose
output is equal to the former hand-written encoder's and no larger, at no more than its time:

* equal output: the PNG decodes (Pillow) to the same pixels (array compared exactly), mode, size and ``dpi`` (the
  ``pHYs`` chunk) as the baseline's;
* size: mean bytes per graph at most :data:`SIZE_MARGIN` (3 %) above the baseline's (file size is output too: it is
  what the data set, every base64 request and every VLMEvalKit TSV carry);
* time: median seconds per graph no more than the baseline's.

Among the configurations that meet all three the fastest is chosen (times within :data:`TIE`, 5 %, of the
fastest's count as equal, and the smallest files among those win); the line "rule" then applies the project's rule
for code written here (a library replaces it when >= 1.5x faster at equal output) against the fastest configuration
made of library calls alone that meets the same size bound.

Contenders, each given the same Agg RGBA buffer of a real GRAB graph drawn by the generator
(``curation.grab.render.draw_figure``, default ``--dpi`` 1000, the generator's default: 6000 x 5000 px for the
fixed-schema graphs):

* ``hand-written (baseline)``: :func:`handwritten_png`, the generator's encoder before libpng replaced it, byte for
  byte: rows filtered by numpy (``curation.grab.render.filtered_rows``: Up, or Sub where that changes fewer
  pixels), deflated by Python's zlib with its run-length strategy (``Z_RLE``), chunks written by hand;
* ``module``: ``curation.grab.render.encode_png``, what the generator uses now;
* ``rows + zlib-ng`` / ``rows + libdeflate`` / ``rows + zlib Z_RLE level 1``: the same filtered rows and chunks,
  deflated by zlib-ng (``imagecodecs.zlibng_encode``), libdeflate (``imagecodecs.deflate_encode``) or a single
  ``zlib.compressobj`` at level 1;
* ``Pillow``: ``Image.frombuffer(...).save(format="png", dpi=..., optimize=False)`` at ``compress_level`` 1 and 6,
  with zlib's default strategy and with ``compress_type`` = run-length (``Z_RLE``);
* ``imagecodecs``: ``imagecodecs.png_encode`` (libpng) at several ``level`` / ``strategy`` / ``filter`` values
  (filter flags OR-ed, e.g. ``SUB | UP``: libpng picks one of them per row). It writes no ``pHYs`` chunk, so its
  output is not equal as it comes (the row "no pHYs" shows it); the "+pHYs" rows insert the 21-byte chunk after
  ``IHDR`` (:func:`with_phys`, timed with the encoder).

Timing: per graph, the contenders run in turn (one warm-up each, then ``--repeat`` rounds, contenders interleaved
within a round), each graph's time is the median of its rounds; printed: the median over graphs of those times, the
median over graphs of the ratio contender / baseline (and its range over graphs), the mean bytes per graph and its
ratio to the baseline's, whether every graph's output is equal, and whether the configuration meets both bounds.

Run from the repository root: ``python -m tests.perf.bench_png_encoder`` (options ``--graphs`` (default 8: a
balanced subset of the plan, every question type family), ``--dpi``, ``--repeat`` (default 3), ``--seed``). The
default run takes 5-11 minutes (an idle or a loaded shared 2-core machine).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import imagecodecs
import numpy as np
from PIL import Image

from curation.grab import plan as plan_module
from curation.grab.render import (
    DEFAULT_DPI,
    draw_figure,
    encode_png,
    filtered_rows,
    png_chunk,
    png_file,
    release_figure,
)

RULE = 1.5
SIZE_MARGIN = 0.03
TIE = 0.05
"""Median times within 5 % of the fastest count as equal (the shared machine's noise is larger): the smaller files
win among them."""


def handwritten_png(rgba: Any, dpi: float) -> bytes:
    """The former encoder: rows by :func:`~curation.grab.render.filtered_rows`, Python's zlib with ``Z_RLE``."""
    pixels = np.ascontiguousarray(np.asarray(rgba, dtype=np.uint8))
    height, width, _ = pixels.shape
    deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, 8, zlib.Z_RLE)
    return png_file(width, height, dpi, deflate.compress(filtered_rows(pixels)) + deflate.flush())


def rows_and(deflate: Callable[[np.ndarray], bytes]) -> Callable[[Any, float], bytes]:
    """The filtered rows and hand-written chunks of the former encoder, deflated by ``deflate``."""

    def encode(rgba: Any, dpi: float) -> bytes:
        pixels = np.ascontiguousarray(np.asarray(rgba, dtype=np.uint8))
        height, width, _ = pixels.shape
        return png_file(width, height, dpi, deflate(filtered_rows(pixels)))

    return encode


def zlib_rle_level_1(rows: np.ndarray) -> bytes:
    deflate = zlib.compressobj(1, zlib.DEFLATED, 15, 8, zlib.Z_RLE)
    return deflate.compress(rows) + deflate.flush()


def with_phys(png: bytes, dpi: float) -> bytes:
    """``png`` with a ``pHYs`` chunk (pixels per metre, rounded as Pillow writes them) inserted after ``IHDR``."""
    per_metre = int(dpi / 0.0254 + 0.5)
    ihdr_end = 8 + 8 + 13 + 4  # signature, IHDR length + type, 13 data bytes, CRC
    phys = png_chunk(b"pHYs", per_metre.to_bytes(4, "big") * 2 + b"\x01")
    return png[:ihdr_end] + phys + png[ihdr_end:]


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
OWN, LIBRARY = "rows written here", "library"
CONTENDERS: dict[str, tuple[str, Callable[[Any, float], bytes]]] = {
    HANDWRITTEN: (OWN, handwritten_png),
    MODULE: (OWN, encode_png),
    "rows + zlib Z_RLE level 1": (OWN, rows_and(zlib_rle_level_1)),
    **{
        f"rows + zlib-ng level {level}": (
            OWN,
            rows_and(lambda rows, level=level: imagecodecs.zlibng_encode(rows, level)),
        )
        for level in (1, 2, 3, 6)
    },
    "rows + libdeflate level 2": (OWN, rows_and(lambda rows: imagecodecs.deflate_encode(rows, 2))),
    **{f"Pillow level {level}": (LIBRARY, pillow(level, None)) for level in (1, 6)},
    **{f"Pillow level {level} Z_RLE": (LIBRARY, pillow(level, zlib.Z_RLE)) for level in (1, 6)},
    "imagecodecs default, no pHYs": (LIBRARY, codecs(False)),
    "imagecodecs default +pHYs": (LIBRARY, codecs(True)),
    "imagecodecs level 1 RLE +pHYs": (LIBRARY, codecs(True, level=1, strategy=STRATEGY.RLE)),
    "imagecodecs Up, level 1 RLE +pHYs": (LIBRARY, codecs(True, level=1, strategy=STRATEGY.RLE, filter=FILTER.UP)),
    "imagecodecs Sub|Up, level 1 +pHYs": (LIBRARY, codecs(True, level=1, filter=FILTER.SUB | FILTER.UP)),
    "imagecodecs Sub|Up, level 1 RLE +pHYs": (
        LIBRARY,
        codecs(True, level=1, strategy=STRATEGY.RLE, filter=FILTER.SUB | FILTER.UP),
    ),
}


@dataclass
class Figures:
    """Per-graph seconds, ratios to the baseline, bytes, and whether every output was equal."""

    seconds: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    equal: bool = True

    @property
    def median_seconds(self) -> float:
        return statistics.median(self.seconds)

    @property
    def mean_bytes(self) -> float:
        return statistics.mean(self.sizes)


def decoded(png: bytes) -> tuple[str, tuple[int, int], Any, np.ndarray]:
    with Image.open(io.BytesIO(png)) as image:
        image.load()
        return image.mode, image.size, image.info.get("dpi"), np.asarray(image)


def measure(items: list[Any], dpi: int, repeat: int) -> tuple[dict[str, Figures], bool]:
    """Every contender's figures over ``items``, and whether the module's bytes equalled each contender's."""
    figures = {name: Figures() for name in CONTENDERS}
    same_bytes = {name: True for name in CONTENDERS}
    for number, item in enumerate(items, 1):
        canvas = draw_figure(item.params, dpi)
        rgba, png_dpi = np.asarray(canvas.buffer_rgba()), canvas.figure.dpi
        reference = decoded(handwritten_png(rgba, png_dpi))
        module_png = encode_png(rgba, png_dpi)
        times: dict[str, list[float]] = {name: [] for name in CONTENDERS}
        for name, (_, encode) in CONTENDERS.items():  # warm-up, and the equality check outside the clock
            png = encode(rgba, png_dpi)
            mode, size, got_dpi, pixels = decoded(png)
            same = (mode, size, got_dpi) == reference[:3] and np.array_equal(pixels, reference[3])
            figures[name].equal &= same
            figures[name].sizes.append(len(png))
            same_bytes[name] &= png == module_png
            del png, pixels
        for _ in range(repeat):
            for name, (_, encode) in CONTENDERS.items():
                start = time.perf_counter()
                encode(rgba, png_dpi)
                times[name].append(time.perf_counter() - start)
        base = statistics.median(times[HANDWRITTEN])
        for name, seconds in times.items():
            figures[name].seconds.append(statistics.median(seconds))
            figures[name].ratios.append(statistics.median(seconds) / base)
        del rgba
        release_figure(canvas)
        print(f"  graph {number}/{len(items)} ({item.type_key}): {reference[1][0]} x {reference[1][1]} px", flush=True)
    return figures, same_bytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", type=int, default=8)
    parser.add_argument("--dpi", type=int, default=DEFAULT_DPI)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    items = plan_module.select(plan_module.cached_plan(args.seed), None, args.graphs)
    print(
        f"PNG encoders on {len(items)} GRAB graphs at dpi {args.dpi}, {args.repeat} rounds each"
        f" (Pillow {Image.__version__}, imagecodecs {imagecodecs.__version__}, libpng {imagecodecs.png_version()},"
        f" zlib-ng {imagecodecs.zlibng_version()}, libdeflate {imagecodecs.deflate_version()},"
        f" zlib {zlib.ZLIB_RUNTIME_VERSION}; load average {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    figures, same_bytes = measure(items, args.dpi, args.repeat)
    baseline = figures[HANDWRITTEN]
    size_bound = baseline.mean_bytes * (1 + SIZE_MARGIN)

    def meets(name: str) -> bool:
        got = figures[name]
        return got.equal and got.mean_bytes <= size_bound and got.median_seconds <= baseline.median_seconds

    print()
    print(
        f"  {'encoder / configuration':<38} {'s/graph':>8} {'vs base':>8} {'(range)':>13} {'kB/graph':>9}"
        f" {'vs base':>8}  equal  meets both"
    )
    for name, got in figures.items():
        print(
            f"  {name:<38} {got.median_seconds:8.3f} {statistics.median(got.ratios):7.2f}x"
            f" ({min(got.ratios):4.2f}-{max(got.ratios):4.2f}x) {got.mean_bytes / 1000:9.1f}"
            f" {got.mean_bytes / baseline.mean_bytes:7.2f}x  {'yes' if got.equal else 'NO':<5}  "
            f"{'yes' if meets(name) else 'no'}"
        )
    print(
        f"\n  bounds: equal output, mean bytes <= {size_bound / 1000:.1f} kB (baseline + {SIZE_MARGIN:.0%}),"
        f" median s/graph <= {baseline.median_seconds:.3f} (baseline)"
    )
    eligible = [name for name in figures if name not in (HANDWRITTEN, MODULE) and meets(name)]
    if not eligible:
        print("  verdict: no configuration meets both bounds; the baseline stays the reference")
        return 0
    fastest = min(figures[name].median_seconds for name in eligible)
    tied = [name for name in eligible if figures[name].median_seconds <= fastest * (1 + TIE)]
    chosen = min(tied, key=lambda name: figures[name].mean_bytes)
    print(
        f"  verdict: the fastest configuration that meets both bounds (ties within {TIE:.0%}: smaller files),"
        " against the module and the baseline:"
    )
    for label, name in (("chosen", chosen), ("module", MODULE), ("baseline", HANDWRITTEN)):
        got = figures[name]
        print(
            f"    {label:<9} {name:<38} {got.median_seconds:.3f} s/graph,"
            f" {statistics.median(got.ratios):.2f}x the baseline's time, {got.mean_bytes / 1000:.1f} kB/graph"
        )
    print(
        f"    the module writes the chosen configuration's bytes: {'yes' if same_bytes[chosen] else 'NO'};"
        f" the module meets both bounds: {'yes' if meets(MODULE) else 'NO'}"
    )
    libraries = [name for name, (kind, _) in CONTENDERS.items() if kind == LIBRARY]
    sized = [name for name in libraries if figures[name].equal and figures[name].mean_bytes <= size_bound]
    if CONTENDERS[chosen][0] == OWN and sized:
        library = min(sized, key=lambda name: figures[name].median_seconds)
        advantage = figures[library].median_seconds / figures[chosen].median_seconds
        within = "meets both bounds" if meets(library) else "over the baseline's time"
        kept = advantage >= RULE or not meets(library)
        print(
            f"    rule: the fastest library-only configuration within the size bound ({library},"
            f" {figures[library].median_seconds:.3f} s/graph, {within}) takes {advantage:.2f}x the chosen one's"
            f" time; code written here stays while >= {RULE}x faster: {'kept' if kept else 'replace it'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
