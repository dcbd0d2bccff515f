"""Peak memory of a GRAB evaluation through the real ``lmms-eval`` CLI: a large question set vs a small one, for two
kinds of image.

What it measures. For each image setting, two runs of ``lmms-eval --model openai --tasks grab`` (lmms-eval's own
OpenAI backend, pointed at a local server on 127.0.0.1 that replies instantly), on local GRAB-schema parquet files
(``SCIFIG_GRAB_DATA``): ``--questions`` rows (default 2,000) and ``--small`` rows (default 20, the first rows of the
large set). Images are RGB PNGs of ``--image-size`` (default 1600x1200, 5.5 MiB each once decoded, so decoding the
large set all at once would need ~11 GB), in two settings (``--images``, both by default):

* ``plain``: one line on a white canvas -- a few kB per PNG, so only decoding shows;
* ``detailed``: a plot with gridlines, a cloud of ``width x height / 120`` coloured markers (16,000 at 1600x1200) and
  four noisy curves, every image different -- about 300 kB per PNG, the size of GRAB's real PNGs (matplotlib
  figures of ~300 kB), so the stored bytes of 2,000 images (~600 MB) would show too if the run held them all.

While each CLI runs, the summed RSS of its process tree is sampled every 50 ms (a process whose command line is its
parent's -- a fork not yet replaced by ``exec``, e.g. when lmms-eval starts ``git`` -- is skipped: it shares its
parent's pages, and counting it once doubled a run's figure); the kernel's ``ru_maxrss`` for the child (its
high-water mark, which no sampling interval can miss; the largest single process) is read when it exits.

How to read the figures.

* ``peak MB`` = max(sampled tree RSS, ``ru_maxrss``), the columns beside it; a peak shorter than 50 ms is missed by
  the sampler but not by ``ru_maxrss``, and workers (if lmms-eval spawned any) are only in the sampled sum. A child
  process starts with its parent's high-water mark as its ``ru_maxrss`` (the kernel carries it over at fork/exec,
  even after the parent freed the memory), so the data are built in a separate process and this one stays small;
  a ``ru_maxrss`` not above this process's own mark is reported as saying nothing and left out of the peak.
* ``anon MB`` is the peak of the sampled *anonymous* memory of the process tree (RSS minus file-backed and shared
  pages, forks not yet exec'd skipped): the datasets library memory-maps its Arrow cache, and the pages of a mapped
  file count in RSS once read although the kernel can drop them at any time, so RSS (and ``ru_maxrss``) grows with
  the bytes the run has read -- most visibly with ``detailed`` images. The anonymous figure (the heap) leaves those
  pages out; a second ratio line gives large / small for it, so growth of the heap and of page cache can be told
  apart.
* ``ratio`` = large / small peak, per setting. Goal: ratio <= 1.5x -- images are decoded lazily, one request at a
  time, never all at once, and their stored bytes are not all held either. ``extra per question`` is
  (large - small) / (extra questions): about ``width x height x 3`` bytes (5.5 MiB at 1600x1200) means every image
  stays decoded; about the PNG size (``PNG kB``) means every stored image stays in memory; a few kB means only the
  per-question bookkeeping (prompts, results, samples) grows.
* ``requests`` is what the local server received (one per question: the client makes one attempt each) and
  ``scored`` the number of questions in the results JSON's GRAB breakdown; both should equal ``questions``.
  ``accuracy`` should equal ``expected`` (every 10th reply is deliberately wrong).
* The run is killed if the tree's RSS passes ``--rss-limit-mb`` (default: 60% of the memory available at start), and
  the report says so: that by itself means images are held in memory.

Run from the repository root: ``python -m tests.perf.bench_memory`` (options ``--questions``, ``--small``,
``--image-size``, ``--images plain,detailed``, ``--concurrency``, ``--rss-limit-mb``). Runtime on a 2-core machine:
about 9 minutes at the defaults (557 s: building the PNGs ~4 min, the two 2,000-question runs ~1.5 and ~3 min),
3 to 5 minutes with ``--questions 600`` (depending on the machine's load). The parquet files live in a temporary
directory removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np
import psutil
import pyarrow.compute
from PIL import Image, ImageDraw
from tqdm import tqdm

from scifig_tasks.benchmarks.grab.source import grab_features
from tests.harness.grab_data import Row, question_text
from tests.harness.lmms import offline_env
from tests.harness.openai_server import FakeOpenAIServer
from tests.perf._common import (
    MB,
    CliMeasurement,
    GrabFigures,
    Questions,
    answer_policy,
    build_dataset,
    grab_cli_args,
    grab_figures,
    make_questions,
    parse_size,
    run_lmms_eval,
)

GOAL_RATIO = 1.5
IMAGE_SETTINGS = ("plain", "detailed")
PIXELS_PER_MARKER = 120  # detailed images: one 3x3 marker per 120 pixels (16,000 at 1600x1200)


def detailed_png(seed: int, size: tuple[int, int]) -> bytes:
    """A detailed plot, different for every ``seed``: gridlines, a cloud of coloured 3x3 markers and four noisy
    curves; about 300 kB at 1600x1200 (zlib level 1 to keep building fast; level 6 saves about 15%)."""
    rng = np.random.default_rng(seed)
    width, height = size
    pixels = np.full((height, width, 3), 255, np.uint8)
    pixels[:: max(height // 10, 1)] = 210
    pixels[:, :: max(width // 10, 1)] = 210
    markers = max(width * height // PIXELS_PER_MARKER, 1)
    xs, ys = rng.integers(0, max(width - 2, 1), markers), rng.integers(0, max(height - 2, 1), markers)
    colours = rng.integers(0, 256, (markers, 3), dtype=np.uint8)
    for dx in range(min(3, width)):
        for dy in range(min(3, height)):
            pixels[ys + dy, xs + dx] = colours
    image = Image.fromarray(pixels)
    draw = ImageDraw.Draw(image)
    x = np.linspace(0, width - 1, 800)
    for curve in range(4):
        y = height / 2 + height / 4 * np.sin(x / (40 + 25 * curve) + seed) + rng.normal(0, height / 100, x.size)
        colour = tuple(int(c) for c in rng.integers(0, 200, 3))
        draw.line(list(zip(x.tolist(), y.tolist(), strict=True)), fill=colour, width=2)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def build_detailed(rows: Sequence[Row], image_size: tuple[int, int], label: str) -> datasets.Dataset:
    """The rows as a GRAB-schema dataset (as ``tests.harness.grab_data.build``) with detailed PNGs."""
    records = [
        {
            "pid": pid,
            "question": question_text(pid, row),
            "decoded_image": {"bytes": detailed_png(pid, image_size), "path": None},
            "image": f"images/{pid}.png",
            "answer": row.answer,
            "task": row.task,
            "category": row.category,
            "complexity": row.complexity,
        }
        for pid, row in enumerate(
            tqdm(rows, desc=f"{label}: drawing {image_size[0]}x{image_size[1]} detailed PNGs", unit="img")
        )
    ]
    return datasets.Dataset.from_list(records, features=grab_features())


def mean_png_kb(dataset: datasets.Dataset) -> float:
    """Mean stored size of the ``decoded_image`` PNGs, in kB (read from the Arrow column, nothing decoded)."""
    column = dataset.data.column("decoded_image").combine_chunks().field("bytes")
    return pyarrow.compute.mean(pyarrow.compute.binary_length(column)).as_py() / 1000


def write_sets(
    images: str, questions: int, small: int, image_size: tuple[int, int], large_data: Path, small_data: Path
) -> float:
    """Write the large set (``questions`` rows) and the small set (its first ``small`` rows, same images) as GRAB
    parquet files with ``images`` PNGs; return the mean PNG size in kB."""
    rows = make_questions(questions).rows
    if images == "plain":
        dataset = build_dataset(rows, image_size, "plain, large set")
    else:
        dataset = build_detailed(rows, image_size, "detailed, large set")
    for path in (large_data, small_data):
        path.parent.mkdir(parents=True, exist_ok=True)
    dataset.to_parquet(str(large_data))
    dataset.select(range(small)).to_parquet(str(small_data))
    return mean_png_kb(dataset)


@dataclass
class SetRun:
    label: str
    images: str
    png_kb: float  # mean stored PNG size
    questions: int
    parquet_mb: float
    expected_accuracy: float
    measured: CliMeasurement
    requests: int
    figures: GrabFigures | None
    sampled: int  # bytes, peak of the sampled RSS of the process tree (TreeSampler)
    anonymous: int  # bytes, peak of the sampled anonymous (not file-backed) memory of the process tree
    floor: int  # bytes, this benchmark's own RSS high-water mark when the CLI was started (see ``peak``)

    @property
    def inherited(self) -> bool:
        """Whether ``ru_maxrss`` is only the high-water mark the CLI inherited from this process."""
        return self.measured.ru_maxrss <= self.floor


def own_maxrss() -> int:
    """This process's RSS high-water mark, bytes (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def peak(run: SetRun) -> int:
    """The run's peak memory in bytes: max(sampled process-tree RSS, the kernel's ``ru_maxrss``) -- where
    ``ru_maxrss`` is the CLI's own: a child starts with its parent's high-water mark (the kernel carries it over at
    fork/exec), so one that does not exceed this benchmark's (``floor``) says nothing and the sampled figure stands."""
    return run.sampled if run.inherited else max(run.sampled, run.measured.ru_maxrss)


class TreeSampler(threading.Thread):
    """Samples, every ``poll_s``, the memory of this process's children and their descendants -- the CLI run -- and
    keeps the peaks of two sums: RSS, and anonymous memory (RSS minus file-backed and shared pages: the heap).
    A process whose command line is its parent's is skipped: a fork not yet replaced by ``exec`` shares its parent's
    pages, and counting it would double the figure (``tests.perf._common``'s sampler, used here only for the
    memory limit, counts it)."""

    def __init__(self, poll_s: float = 0.05) -> None:
        super().__init__(name="memory-sampler", daemon=True)
        self.poll_s = poll_s
        self.rss = self.anonymous = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        me = psutil.Process()
        while not self._stop_event.wait(self.poll_s):
            rss = anonymous = 0
            with contextlib.suppress(psutil.NoSuchProcess):
                for process in me.children(recursive=True):
                    with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                        parent = process.parent()
                        if parent is not None and process.cmdline() == parent.cmdline():
                            continue
                        memory = process.memory_info()
                        rss += memory.rss
                        anonymous += memory.rss - memory.shared
            self.rss, self.anonymous = max(self.rss, rss), max(self.anonymous, anonymous)

    def stop(self) -> tuple[int, int]:
        """Stop sampling; the peaks (RSS, anonymous) in bytes."""
        self._stop_event.set()
        self.join()
        return self.rss, self.anonymous


def _run_set(
    label: str,
    images: str,
    png_kb: float,
    questions: Questions,
    data: Path,
    workdir: Path,
    concurrency: int,
    rss_limit: int,
) -> SetRun:
    name = f"{images}-{label}"
    server = FakeOpenAIServer(answer_policy(questions.replies), model="fake-vlm").start()
    try:
        env = offline_env(workdir / name)
        env.update({"SCIFIG_GRAB_DATA": str(data), "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"})
        print(f"{name}: running lmms-eval on {len(questions.rows):,} questions ...", flush=True)
        floor = own_maxrss()
        sampler = TreeSampler()
        sampler.start()
        try:
            measured = run_lmms_eval(
                grab_cli_args(concurrency),
                env,
                workdir / name / "out",
                workdir / f"{name}.log",
                rss_limit=rss_limit,
            )
        finally:
            sampled, anonymous = sampler.stop()
        requests = server.count
    finally:
        server.stop()
    print(f"{name}: done in {measured.wall_s:.1f} s (exit code {measured.returncode})", flush=True)
    return SetRun(
        label=label,
        images=images,
        png_kb=png_kb,
        questions=len(questions.rows),
        parquet_mb=data.stat().st_size / MB,
        expected_accuracy=questions.expected_correct / len(questions.rows),
        measured=measured,
        requests=requests,
        figures=grab_figures(measured.results),
        sampled=sampled,
        anonymous=anonymous,
        floor=floor,
    )


def _report(runs: list[SetRun], image_size: tuple[int, int], concurrency: int) -> None:
    width, height = image_size
    decoded = width * height * 3
    print()
    print(
        f"bench_memory: lmms-eval --model openai --tasks grab (num_concurrent={concurrency}), local server replying "
        f"instantly, {width}x{height} RGB PNGs ({decoded / MB:.1f} MiB each decoded)"
    )
    header = (
        f"{'images':<8} {'set':<5} {'questions':>9} {'PNG kB':>7} {'parquet MB':>10} {'peak MB':>8} "
        f"{'sampled MB':>10} {'ru_maxrss MB':>12} {'anon MB':>7} {'wall s':>7} {'requests':>8} {'scored':>6} "
        f"{'accuracy':>8} {'expected':>8}"
    )
    print(header)
    print("-" * len(header))
    for run in runs:
        m, f = run.measured, run.figures
        accuracy = f"{f.accuracy:.4f}" if f else "n/a"
        scored = str(f.scored) if f else "n/a"
        print(
            f"{run.images:<8} {run.label:<5} {run.questions:>9,} {run.png_kb:>7,.1f} {run.parquet_mb:>10.1f} "
            f"{peak(run) / MB:>8,.0f} {run.sampled / MB:>10,.0f} {m.ru_maxrss / MB:>12,.0f} "
            f"{run.anonymous / MB:>7,.0f} {m.wall_s:>7.1f} {run.requests:>8,} {scored:>6} {accuracy:>8} "
            f"{run.expected_accuracy:>8.4f}"
        )
    for run in runs:
        m, f = run.measured, run.figures
        problems = []
        if m.stopped:
            problems.append(m.stopped)
        if m.returncode != 0:
            problems.append(f"exit code {m.returncode}")
        if f is None:
            problems.append("no GRAB results in the results JSON")
        else:
            if f.scored != run.questions:
                problems.append(f"scored {f.scored} of {run.questions} questions")
            if set(f.output_status) - {"ok"}:
                problems.append(f"output status {f.output_status}")
        if run.requests != run.questions:
            problems.append(f"server received {run.requests} requests for {run.questions} questions")
        name = f"{run.images}-{run.label}"
        if run.inherited:
            print(
                f"note: {name}: ru_maxrss {m.ru_maxrss / MB:,.0f} MB is no more than this benchmark's own high-water "
                f"mark ({run.floor / MB:,.0f} MB, inherited at start), so it says nothing: the peak is the sampled one"
            )
        if problems:
            print(f"!! {name}: " + "; ".join(problems) + f"\n   log tail ({m.log_path}):\n{m.log_tail(3000)}")
    for images in dict.fromkeys(run.images for run in runs):
        pair = {run.label: run for run in runs if run.images == images}
        if set(pair) != {"small", "large"}:
            continue
        small, large = pair["small"], pair["large"]
        ratio = peak(large) / max(peak(small), 1)
        extra = (peak(large) - peak(small)) / max(large.questions - small.questions, 1)
        verdict = "meets the goal" if ratio <= GOAL_RATIO and not large.measured.stopped else "MISSES the goal"
        print(
            f"{images}: ratio large/small peak: {ratio:.2f}x (goal <= {GOAL_RATIO}x) -> {verdict}; extra per "
            f"question: {extra / 1024:,.1f} KiB (one decoded image: {decoded / 1024:,.0f} KiB, one PNG: "
            f"{large.png_kb * 1000 / 1024:,.0f} KiB)"
        )
        anonymous = large.anonymous / max(small.anonymous, 1)
        extra_anonymous = (large.anonymous - small.anonymous) / max(large.questions - small.questions, 1)
        print(
            f"{images}: ratio large/small anonymous memory (mapped data files left out): {anonymous:.2f}x; extra per "
            f"question: {extra_anonymous / 1024:,.1f} KiB"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--questions", type=int, default=2000, help="size of the large set (default 2000)")
    parser.add_argument("--small", type=int, default=20, help="size of the small set (default 20)")
    parser.add_argument("--image-size", type=parse_size, default=(1600, 1200), help="WIDTHxHEIGHT (default 1600x1200)")
    parser.add_argument(
        "--images", default=",".join(IMAGE_SETTINGS), help="image settings, comma-separated (default plain,detailed)"
    )
    parser.add_argument("--concurrency", type=int, default=32, help="the openai backend's num_concurrent (default 32)")
    parser.add_argument(
        "--rss-limit-mb", type=float, default=None, help="kill a run whose RSS passes this (default 60%% of available)"
    )
    options = parser.parse_args(argv)
    if not 0 < options.small < options.questions:
        parser.error("need 0 < --small < --questions")
    settings = [name.strip() for name in options.images.split(",") if name.strip()]
    if not settings or set(settings) - set(IMAGE_SETTINGS):
        parser.error(f"--images takes {', '.join(IMAGE_SETTINGS)} (comma-separated), got {options.images!r}")
    available = psutil.virtual_memory().available
    rss_limit = int(options.rss_limit_mb * MB) if options.rss_limit_mb else int(available * 0.6)
    print(f"memory available: {available / MB:,.0f} MB; a run is killed above {rss_limit / MB:,.0f} MB RSS")

    questions = make_questions(options.questions)
    small_questions = Questions(questions.rows[: options.small], questions.replies[: options.small])
    runs: list[SetRun] = []
    whole = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="scifig-bench-memory-") as tmp:
        for images in settings:
            workdir = Path(tmp) / images
            large_data, small_data = workdir / "large" / "GRAB.parquet", workdir / "small" / "GRAB.parquet"
            started = time.monotonic()
            # Built in a child process: a process started from this one inherits this one's RSS high-water mark as
            # its ru_maxrss (the kernel carries it over at fork/exec), so this process must never hold the images.
            pool = multiprocessing.get_context("spawn").Pool(1)
            try:
                png_kb = pool.apply(
                    write_sets, (images, options.questions, options.small, options.image_size, large_data, small_data)
                )
            finally:
                pool.close()
                pool.join()
            print(f"{images}: data built in {time.monotonic() - started:.0f} s", flush=True)
            runs.append(
                _run_set("small", images, png_kb, small_questions, small_data, workdir, options.concurrency, rss_limit)
            )
            runs.append(
                _run_set("large", images, png_kb, questions, large_data, workdir, options.concurrency, rss_limit)
            )
        _report(runs, options.image_size, options.concurrency)
    print(f"whole benchmark: {time.monotonic() - whole:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
