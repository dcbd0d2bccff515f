"""Wall time of a full GRAB generator build against a bare matplotlib loop, the speed-up from 1 to 2 workers, and the
peak memory of each rendering process.

What it measures, for the same ``N`` figures (default: the full 2,170-question composition) at the same ``--dpi``:

* ``per figure`` — one process draws every figure with the generator (``curation.grab.render.draw_figure``) and encodes
  the same Agg buffer twice, then releases the figure (``curation.grab.render.release_figure``): with matplotlib's
  ``savefig`` encoder (``matplotlib.image.imsave``, i.e. Pillow: all five PNG filters tried on every row, zlib's default
  level) and with the generator's ``curation.grab.render.encode_png`` (rows filtered with numpy, Up or Sub, deflated
  by zlib-ng through imagecodecs). It prints the mean seconds per figure of drawing and of each encoder, their ratio
  (``savefig / encode_png``), the mean PNG size of each, and whether every pair decodes to the same pixels (mode, size
  and array compared exactly). ``draw + encode_png`` x 2,170 / 2 is what rendering alone would take in a full build
  with 2 perfectly scaling workers.
* ``bare matplotlib loop`` — one process draws every figure with plain matplotlib calls (``Figure`` + Agg canvas,
  the same figure size, margins, limits, ticks, gridlines, line styles and data arrays as the generator)
  and saves it to a PNG in memory with ``savefig``, then releases the figure as the generator does. The arrays are
  computed before the clock starts, so this is rendering and matplotlib's PNG encoding only: the floor a generator
  using ``savefig`` pays (the generator's own encoder is faster, so at high ``--dpi`` the ratio below can fall
  under 1).
* ``build, 1 worker`` / ``build, 2 workers`` — ``curation.grab.build.build_grab`` from scratch (plan, rendering,
  parquet writing, dataset card) into a temporary directory, with the plan cache cleared first. Each build runs in
  a fresh process forked from this one, so that its rendering processes can be measured alone.
* ``peak RSS per worker`` — the largest peak resident set size of a build's rendering processes: with 2 workers the
  largest of the two worker processes (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of the process that ran the build);
  with 1 worker the build's own process, which renders in place and also plans and writes the parquet file
  (``RUSAGE_SELF``). Both include what the process shares with the one it was forked from. Goal: <= 1 GiB at
  dpi 1000 (each graph is released as soon as its PNG is encoded, so the peak does not grow with the number of
  graphs; the verdict is printed at ``--dpi 1000`` only).

How to read the figures. ``ratio`` = build with 1 worker / bare loop: the generator's overhead over rendering alone
(planning with exact arithmetic, the process pipeline, parquet writing); goal <= 1.3x. ``speed-up`` = build with 1
worker / build with 2 workers (at most 2 on a 2-core machine; planning and writing run in the parent process, so they do
not scale). ``identical`` checks that both builds wrote byte-identical parquet files. CPU seconds (the process that ran
the step plus its finished workers) and the 1-minute load average are printed beside each wall time: on a shared machine
a load above the CPU count means the wall times include waiting for other processes. ``capacity`` is the speed-up a
pure-Python CPU-bound control gets from 1 to 2 processes at the end of the run: on a virtual machine whose cores are
shared with other tenants it can be far below 2, and the workers' speed-up cannot exceed it.

Run from the repository root: ``python -m tests.perf.bench_grab_generator`` (options
``--dpi`` (default 100; the generator's default resolution is 1000, 100x the pixels), ``--limit`` (a balanced subset
instead of the full build), ``--seed``). At ``--dpi 100`` the full comparison takes ~10 minutes on 2 cores; at the
default resolution use a subset, e.g. ``--dpi 1000 --limit 40`` (~2 minutes on an idle machine).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import resource
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from curation.grab import plan as plan_module
from curation.grab.build import build_grab
from curation.grab.curves import Piece
from curation.grab.render import (
    COLOURS,
    FIXED_FIGSIZE,
    FIXED_FONT_SIZE,
    FIXED_LIMITS,
    draw_figure,
    encode_png,
    figure_settings,
    release_figure,
)
from curation.workers import process_pool

FULL_BUILD = 2170


def _arrays(params: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    out = []
    for element in params["elements"]:
        if element["type"] == "curve":
            xs, ys = Piece.from_params(element).sample()
            out.append(("curve", xs, ys))
        else:
            out.append((element["type"], element["x"], element["y"]))
    return out


def bare_loop(jobs: list[tuple[dict[str, Any], list[tuple[str, Any, Any]]]], dpi: int) -> float:
    """Seconds to draw and PNG-encode every figure with plain matplotlib calls (data prepared beforehand)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    start = time.perf_counter()
    for params, arrays in jobs:
        fixed = params["style"] == "fixed"
        figsize, fontsize = figure_settings(params) if not fixed else (FIXED_FIGSIZE, FIXED_FONT_SIZE)
        figure = Figure(figsize=figsize, dpi=dpi)
        FigureCanvasAgg(figure)
        inches = fontsize / 72
        figure.subplots_adjust(
            left=(0.25 + 4.2 * inches) / figsize[0],
            right=1 - 0.2 / figsize[0],
            bottom=(0.2 + 2.0 * inches) / figsize[1],
            top=1 - 0.2 / figsize[1],
        )
        axes = figure.add_subplot()
        axes.tick_params(labelsize=fontsize)
        style = {} if fixed else params["style"]
        for index, (kind, xs, ys) in enumerate(arrays):
            colour = COLOURS[index % 10] if fixed or len(arrays) > 1 else style["colour"]
            linestyle = "-" if fixed else style["linestyle"]
            marker = "o" if fixed else style["marker"]
            if kind == "curve":
                axes.plot(xs, ys, color=colour, linestyle=linestyle, linewidth=1.5)
            elif kind == "series":
                axes.plot(xs, ys, color=colour, linestyle=linestyle, linewidth=1.0, marker=marker, markersize=3)
            else:
                axes.scatter(xs, ys, color=colour, marker=marker, s=14)
        if fixed:
            axes.set_xticks(range(-10, 11, 2))
            axes.set_yticks(range(-10, 11, 2))
            for lines, width, alpha in ((range(-9, 10, 2), 0.5, 0.3), (range(-10, 11, 2), 0.8, 0.6)):
                axes.vlines(list(lines), -10, 10, colors="#b0b0b0", linewidth=width, alpha=alpha, zorder=0.5)
                axes.hlines(list(lines), -10, 10, colors="#b0b0b0", linewidth=width, alpha=alpha, zorder=0.5)
            axes.set_xlim(*FIXED_LIMITS)
            axes.set_ylim(*FIXED_LIMITS)
        else:
            if params.get("xlim") is not None:
                axes.set_xlim(*params["xlim"])
            axes.grid(True, linewidth=0.8, alpha=0.6)
        figure.savefig(io.BytesIO(), format="png", dpi=dpi, metadata={"Software": None})
        release_figure(figure.canvas)
    return time.perf_counter() - start


@dataclass
class Split:
    """Wall seconds, CPU seconds and bytes summed over the figures of :func:`per_figure_split`."""

    figures: int = 0
    draw: float = 0.0
    savefig: float = 0.0
    encode_png: float = 0.0
    draw_cpu: float = 0.0
    savefig_cpu: float = 0.0
    encode_png_cpu: float = 0.0
    savefig_bytes: int = 0
    encode_png_bytes: int = 0
    identical_pixels: bool = True


def savefig_encode(canvas: Any) -> bytes:
    """The drawn canvas encoded as ``Figure.savefig(format="png")`` does after drawing (matplotlib -> Pillow)."""
    import matplotlib.image

    buffer = io.BytesIO()
    matplotlib.image.imsave(
        buffer, canvas.buffer_rgba(), format="png", dpi=canvas.figure.dpi, metadata={"Software": None}
    )
    return buffer.getvalue()


def _same_pixels(first: bytes, second: bytes) -> bool:
    with Image.open(io.BytesIO(first)) as one, Image.open(io.BytesIO(second)) as two:
        same_header = (one.mode, one.size) == (two.mode, two.size)
        return same_header and np.array_equal(np.asarray(one), np.asarray(two))


def per_figure_split(items: list[plan_module.PlanItem], dpi: int) -> Split:
    """Draw every figure, encode it with both encoders, compare the decoded pixels (outside the clock)."""
    split = Split()
    for item in items:
        start, start_cpu = time.perf_counter(), time.process_time()
        canvas = draw_figure(item.params, dpi)
        drawn, drawn_cpu = time.perf_counter(), time.process_time()
        old = savefig_encode(canvas)
        encoded_old, encoded_old_cpu = time.perf_counter(), time.process_time()
        new = encode_png(canvas.buffer_rgba(), canvas.figure.dpi)
        encoded_new, encoded_new_cpu = time.perf_counter(), time.process_time()
        release_figure(canvas)
        del canvas
        split.figures += 1
        split.draw += drawn - start
        split.savefig += encoded_old - drawn
        split.encode_png += encoded_new - encoded_old
        split.draw_cpu += drawn_cpu - start_cpu
        split.savefig_cpu += encoded_old_cpu - drawn_cpu
        split.encode_png_cpu += encoded_new_cpu - encoded_old_cpu
        split.savefig_bytes += len(old)
        split.encode_png_bytes += len(new)
        split.identical_pixels = split.identical_pixels and _same_pixels(old, new)
    return split


def _print_split(split: Split) -> None:
    count = split.figures
    load = f"(load average {os.getloadavg()[0]:.1f})"
    print(f"  {'draw':<36}: {split.draw / count:8.3f} s/figure  (CPU {split.draw_cpu / count:.3f} s)  {load}")
    for label, seconds, cpu, size in (
        ("encode, savefig (Pillow)", split.savefig, split.savefig_cpu, split.savefig_bytes),
        ("encode, encode_png", split.encode_png, split.encode_png_cpu, split.encode_png_bytes),
    ):
        print(
            f"  {label:<36}: {seconds / count:8.3f} s/figure  (CPU {cpu / count:.3f} s)"
            f"  {size / count / 1000:9.1f} kB/figure"
        )
    print(
        f"  {'encode ratio savefig / encode_png':<36}: {split.savefig / split.encode_png:8.2f}x"
        f"  (CPU {split.savefig_cpu / split.encode_png_cpu:.2f}x)"
    )
    print(f"  {'identical pixels, both encoders':<36}: {split.identical_pixels}")
    for label, encode, encode_cpu in (
        ("savefig", split.savefig, split.savefig_cpu),
        ("encode_png", split.encode_png, split.encode_png_cpu),
    ):
        projected = (split.draw + encode) / count * FULL_BUILD / 2
        projected_cpu = (split.draw_cpu + encode_cpu) / count * FULL_BUILD / 2
        label = f"draw + {label}, {FULL_BUILD:,} / 2 workers"
        print(f"  {label:<36}: {projected / 60:8.1f} min  (from CPU {projected_cpu / 60:.1f} min; rendering alone)")
    print(flush=True)


def _burn(n: int) -> int:
    total = 0
    for value in range(n):
        total += value * value
    return total


def parallel_capacity(n: int = 15_000_000) -> float:
    """Speed-up of a pure-Python CPU-bound control from 1 to 2 processes: what this machine offers right now."""
    start = time.perf_counter()
    _burn(n)
    _burn(n)
    serial = time.perf_counter() - start
    with ProcessPoolExecutor(max_workers=2) as pool:
        pool.submit(_burn, 1).result()  # start both workers before timing
        start = time.perf_counter()
        list(pool.map(_burn, [n, n]))
        return serial / (time.perf_counter() - start)


def cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children (the rendering workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass(frozen=True)
class Build:
    """What :func:`timed_build` measured."""

    wall: float
    cpu: float
    sha256: str
    worker_peak: int
    """Largest peak RSS of a rendering process, bytes."""


def _build_here(out: Path, workers: int, dpi: int, limit: int | None, seed: int) -> Build:
    plan_module.cached_plan.cache_clear()
    start, cpu = time.perf_counter(), cpu_seconds()
    build_grab(out, seed=seed, limit=limit, workers=workers, dpi=dpi, progress=False)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    # This process is fresh (no earlier children), so RUSAGE_CHILDREN holds only the build's workers, all joined.
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    peak = children if children else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # no workers: rendered here
    return Build(seconds, cpu, hashlib.sha256((out / "GRAB.parquet").read_bytes()).hexdigest(), peak * 1024)


def timed_build(out: Path, workers: int, dpi: int, limit: int | None, seed: int) -> Build:
    """Wall and CPU seconds, parquet sha256 and the rendering processes' peak RSS of a build from scratch (plan
    cache cleared), run in a fresh process forked from this one."""
    with process_pool(1, "fork") as pool:
        return pool.submit(_build_here, out, workers, dpi, limit, seed).result()


def _line(label: str, wall: float, cpu: float) -> str:
    return f"  {label:<21}: {wall:8.1f} s wall  {cpu:8.1f} s CPU  (load average {os.getloadavg()[0]:.1f})"


MEMORY_GOAL = 1 << 30
"""Peak RSS per rendering process at dpi 1000, bytes."""
MEMORY_GOAL_DPI = 1000


def _peak_line(label: str, build: Build, dpi: int) -> str:
    verdict = f": {'met' if build.worker_peak <= MEMORY_GOAL else 'MISSED'}" if dpi == MEMORY_GOAL_DPI else ""
    return (
        f"  {label:<34}: {build.worker_peak / 2**20:6.0f} MiB  (goal <= {MEMORY_GOAL / 2**30:.0f} GiB at dpi"
        f" {MEMORY_GOAL_DPI}{verdict})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dpi", type=int, default=100)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    items = plan_module.select(plan_module.cached_plan(args.seed), None, args.limit)
    jobs = [(item.params, _arrays(item.params)) for item in items]
    print(f"GRAB generator benchmark: {len(items)} figures at dpi {args.dpi}, {os.cpu_count()} CPUs", flush=True)
    _print_split(per_figure_split(items, args.dpi))
    cpu = cpu_seconds()
    bare = bare_loop(jobs, args.dpi)
    print(_line("bare matplotlib loop", bare, cpu_seconds() - cpu), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-grab-") as tmp:
        one = timed_build(Path(tmp) / "w1", 1, args.dpi, args.limit, args.seed)
        print(_line("build, 1 worker", one.wall, one.cpu), flush=True)
        two = timed_build(Path(tmp) / "w2", 2, args.dpi, args.limit, args.seed)
        print(_line("build, 2 workers", two.wall, two.cpu), flush=True)
    ratio = one.wall / bare
    print(f"  ratio (build 1 worker / bare loop): {ratio:.2f}x  (goal <= 1.3x: {'met' if ratio <= 1.3 else 'MISSED'})")
    print(f"  speed-up 1 -> 2 workers           : {one.wall / two.wall:.2f}x")
    print(f"  machine's 1 -> 2 process capacity : {parallel_capacity():.2f}x  (pure-Python control, measured now)")
    print(f"  identical parquet (1 vs 2 workers): {one.sha256 == two.sha256}")
    print(_peak_line("peak RSS per worker, 1 worker", one, args.dpi))
    print(_peak_line("peak RSS per worker, 2 workers", two, args.dpi))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
