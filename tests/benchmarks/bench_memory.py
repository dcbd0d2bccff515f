"""Peak memory of a GRAB evaluation through the real ``lmms-eval`` CLI: a large question set vs a small one.

What it measures. Two runs of ``lmms-eval --model openai --tasks grab`` (lmms-eval's own OpenAI backend, pointed at
a local server on 127.0.0.1 that replies instantly), on local GRAB-schema parquet files (``SCIFIG_GRAB_DATA``) with
the same image size: ``--questions`` rows (default 2,000) and ``--small`` rows (default 20, the first rows of the
large set). Images are RGB PNGs of ``--image-size`` (default 1600x1200) with a line drawn on them: a few kB on disk,
but 5.5 MiB each once decoded, so decoding the large set all at once would need ~11 GB. While each CLI runs, the
summed RSS of its process tree is sampled every 50 ms; the kernel's ``ru_maxrss`` for the child is shown as a
cross-check (it is the largest single process, so it matches the sampled sum when lmms-eval spawns no workers).

How to read the figures.

* ``peak RSS MB`` per set, and ``ratio`` = large / small. Goal: ratio <= 1.5x -- images are decoded lazily, one
  request at a time, never all at once. ``extra per question`` is (large - small) / (extra questions): about
  ``width x height x 3`` bytes (5.5 MiB at 1600x1200) means every image stays decoded; a few kB means only the
  per-question bookkeeping (prompts, results, samples) grows.
* ``requests`` is what the local server received (one per question: the client makes one attempt each) and
  ``scored`` the number of questions in the results JSON's GRAB breakdown; both should equal ``questions``.
  ``accuracy`` should equal ``expected`` (every 10th reply is deliberately wrong).
* The run is killed if the tree's RSS passes ``--rss-limit-mb`` (default: 60% of the memory available at start), and
  the report says so: that by itself means images are held in memory.

Run from the repository root: ``python -m tests.benchmarks.bench_memory`` (options ``--questions``,
``--small``, ``--image-size``, ``--rss-limit-mb``). Building 2,000 large PNGs takes a few minutes; the parquet files
live in a temporary directory removed at the end.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.benchmarks._common import (
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
from tests.harness.lmms import offline_env
from tests.harness.openai_server import FakeOpenAIServer

GOAL_RATIO = 1.5


@dataclass
class SetRun:
    label: str
    questions: int
    parquet_mb: float
    expected_accuracy: float
    measured: CliMeasurement
    requests: int
    figures: GrabFigures | None


def _run_set(label: str, questions: Questions, data: Path, workdir: Path, concurrency: int, rss_limit: int) -> SetRun:
    server = FakeOpenAIServer(answer_policy(questions.replies), model="fake-vlm").start()
    try:
        env = offline_env(workdir / label)
        env.update({"SCIFIG_GRAB_DATA": str(data), "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"})
        print(f"{label}: running lmms-eval on {len(questions.rows):,} questions ...", flush=True)
        measured = run_lmms_eval(
            grab_cli_args(concurrency),
            env,
            workdir / label / "out",
            workdir / f"{label}.log",
            rss_limit=rss_limit,
        )
        requests = server.count
    finally:
        server.stop()
    print(f"{label}: done in {measured.wall_s:.1f} s (exit code {measured.returncode})", flush=True)
    return SetRun(
        label=label,
        questions=len(questions.rows),
        parquet_mb=data.stat().st_size / MB,
        expected_accuracy=questions.expected_correct / len(questions.rows),
        measured=measured,
        requests=requests,
        figures=grab_figures(measured.results),
    )


def _report(runs: list[SetRun], image_size: tuple[int, int], concurrency: int) -> None:
    width, height = image_size
    print()
    print(
        f"bench_memory: lmms-eval --model openai --tasks grab (num_concurrent={concurrency}), local server replying "
        f"instantly, {width}x{height} RGB PNGs ({width * height * 3 / MB:.1f} MiB each decoded)"
    )
    header = (
        f"{'set':<6} {'questions':>9} {'parquet MB':>10} {'peak RSS MB':>11} {'ru_maxrss MB':>12} {'wall s':>7} "
        f"{'requests':>8} {'scored':>6} {'accuracy':>8} {'expected':>8}"
    )
    print(header)
    print("-" * len(header))
    for run in runs:
        m, f = run.measured, run.figures
        accuracy = f"{f.accuracy:.4f}" if f else "n/a"
        scored = str(f.scored) if f else "n/a"
        print(
            f"{run.label:<6} {run.questions:>9,} {run.parquet_mb:>10.1f} {m.peak_tree_rss / MB:>11,.0f} "
            f"{m.ru_maxrss / MB:>12,.0f} {m.wall_s:>7.1f} {run.requests:>8,} {scored:>6} {accuracy:>8} "
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
        if problems:
            print(f"!! {run.label}: " + "; ".join(problems) + f"\n   log tail ({m.log_path}):\n{m.log_tail(3000)}")
    if len(runs) == 2:
        small, large = runs
        ratio = large.measured.peak_tree_rss / max(small.measured.peak_tree_rss, 1)
        grown = large.measured.peak_tree_rss - small.measured.peak_tree_rss
        extra = grown / max(large.questions - small.questions, 1)
        verdict = "meets the goal" if ratio <= GOAL_RATIO and not large.measured.stopped else "MISSES the goal"
        print(
            f"ratio large/small peak RSS: {ratio:.2f}x (goal <= {GOAL_RATIO}x) -> {verdict}; "
            f"extra per question: {extra / 1024:,.1f} KiB (one decoded image: {width * height * 3 / 1024:,.0f} KiB)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--questions", type=int, default=2000, help="size of the large set (default 2000)")
    parser.add_argument("--small", type=int, default=20, help="size of the small set (default 20)")
    parser.add_argument("--image-size", type=parse_size, default=(1600, 1200), help="WIDTHxHEIGHT (default 1600x1200)")
    parser.add_argument("--concurrency", type=int, default=32, help="the openai backend's num_concurrent (default 32)")
    parser.add_argument(
        "--rss-limit-mb", type=float, default=None, help="kill a run whose RSS passes this (default 60%% of available)"
    )
    options = parser.parse_args(argv)
    if not 0 < options.small < options.questions:
        parser.error("need 0 < --small < --questions")
    available = psutil.virtual_memory().available
    rss_limit = int(options.rss_limit_mb * MB) if options.rss_limit_mb else int(available * 0.6)
    print(f"memory available: {available / MB:,.0f} MB; a run is killed above {rss_limit / MB:,.0f} MB RSS")

    questions = make_questions(options.questions)
    small_questions = Questions(questions.rows[: options.small], questions.replies[: options.small])
    with tempfile.TemporaryDirectory(prefix="scifig-bench-memory-") as tmp:
        workdir = Path(tmp)
        started = time.monotonic()
        dataset = build_dataset(questions.rows, options.image_size, "large set")
        large_data, small_data = workdir / "large" / "GRAB.parquet", workdir / "small" / "GRAB.parquet"
        for path in (large_data, small_data):
            path.parent.mkdir(parents=True)
        dataset.to_parquet(str(large_data))
        dataset.select(range(options.small)).to_parquet(str(small_data))  # same images, first rows
        del dataset
        print(f"data built in {time.monotonic() - started:.0f} s", flush=True)
        runs = [
            _run_set("small", small_questions, small_data, workdir, options.concurrency, rss_limit),
            _run_set("large", questions, large_data, workdir, options.concurrency, rss_limit),
        ]
        _report(runs, options.image_size, options.concurrency)
    return 0


if __name__ == "__main__":
    sys.exit(main())
