"""Throughput of an API-backed GRAB evaluation through the real ``lmms-eval`` CLI against a fixed-latency server.

What it measures. One run of ``lmms-eval --model openai --model_args ...,num_concurrent=C --tasks grab`` on a local
GRAB-schema parquet of ``--questions`` rows (``SCIFIG_GRAB_DATA``), against a local server on 127.0.0.1 that
answers every request after exactly ``--latency`` seconds. The server stamps each request when it arrives and when
its reply has been written, so the *API phase* is timed from the first arrival to the last reply -- framework
start-up, data loading and scoring are outside it. The whole CLI wall time (including ~20 s of lmms-eval start-up)
is printed for context only.

How to read the figures.

* ``ideal s`` = questions x latency / concurrency: the API phase if ``C`` requests were always in flight.
  ``efficiency`` = ideal / measured; goal >= 80%. Even a perfect client cannot reach 100% when ``C`` does not
  divide the question count (the last wave is partly empty): ``best waves s`` = ceil(questions / C) x latency is
  that bound.
* ``max in flight`` is the server's peak of concurrently handled requests (should reach ``C``); ``mean in flight``
  is the time-average over the API phase (sum of request durations / API phase), i.e. efficiency x C when the
  server adds nothing but the latency.
* ``dispatch gap ms`` is the median time between consecutive request arrivals. With ``C`` slots kept full the
  client must start a request every latency / C seconds (``needed``); a larger gap means the client cannot prepare
  requests fast enough (e.g. it encodes the images one at a time on a single thread), and the API phase becomes
  questions x gap instead of questions x latency / C.
* ``requests`` / ``scored`` / ``accuracy`` are sanity checks: one request and one score per question, accuracy equal
  to ``expected`` (every 10th reply is deliberately wrong).

Run from the repository root: ``python -m tests.perf.bench_api_throughput`` (options
``--questions`` (400), ``--latency`` (0.5 s), ``--concurrency`` (32), ``--image-size`` (1600x1200, the size used by
``bench_memory``; ``64x48`` takes image encoding out of the picture)).
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.harness.lmms import offline_env
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, fixed_latency
from tests.perf._common import (
    MB,
    answer_policy,
    build_dataset,
    grab_cli_args,
    grab_figures,
    make_questions,
    parse_size,
    run_lmms_eval,
)

GOAL_EFFICIENCY = 0.8


def _phase(requests: list[ChatRequest]) -> tuple[float, float, float]:
    """(API-phase seconds, summed request durations, median gap between consecutive arrivals) from server stamps."""
    spans = [
        (r.received_at, r.finished_at) for r in requests if r.received_at is not None and r.finished_at is not None
    ]
    if not spans:
        return math.nan, math.nan, math.nan
    received = sorted(start for start, _ in spans)
    busy = sum(end - start for start, end in spans)
    gaps = [later - earlier for earlier, later in itertools.pairwise(received)]
    return max(end for _, end in spans) - received[0], busy, statistics.median(gaps) if gaps else math.nan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--questions", type=int, default=400, help="number of questions (default 400)")
    parser.add_argument("--latency", type=float, default=0.5, help="server latency per request, seconds (default 0.5)")
    parser.add_argument("--concurrency", type=int, default=32, help="the openai backend's num_concurrent (default 32)")
    parser.add_argument("--image-size", type=parse_size, default=(1600, 1200), help="WIDTHxHEIGHT (default 1600x1200)")
    options = parser.parse_args(argv)
    if options.questions < 1 or options.concurrency < 1 or options.latency < 0:
        parser.error("need --questions >= 1, --concurrency >= 1, --latency >= 0")
    questions = make_questions(options.questions)
    width, height = options.image_size

    with tempfile.TemporaryDirectory(prefix="scifig-bench-throughput-") as tmp:
        workdir = Path(tmp)
        data = workdir / "grab" / "GRAB.parquet"
        data.parent.mkdir(parents=True)
        build_dataset(questions.rows, options.image_size, "question set").to_parquet(str(data))
        policy = fixed_latency(answer_policy(questions.replies), options.latency)
        server = FakeOpenAIServer(policy, model="fake-vlm", max_delay_s=max(30.0, 2 * options.latency)).start()
        try:
            env = offline_env(workdir)
            env.update({"SCIFIG_GRAB_DATA": str(data), "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"})
            print(f"running lmms-eval on {options.questions:,} questions ...", flush=True)
            client_timeout = max(30.0, 4 * options.latency)
            started = time.monotonic()
            measured = run_lmms_eval(
                grab_cli_args(options.concurrency, client_timeout), env, workdir / "out", workdir / "lmms-eval.log"
            )
            whole = time.monotonic() - started
            requests, max_in_flight = server.requests, server.max_in_flight
        finally:
            server.stop()
        figures = grab_figures(measured.results)
        api, busy, gap = _phase(requests)
        ideal = options.questions * options.latency / options.concurrency
        waves = math.ceil(options.questions / options.concurrency) * options.latency
        efficiency = ideal / api if api > 0 else math.nan
        needed_gap = options.latency / options.concurrency

        print()
        print(
            f"bench_api_throughput: lmms-eval --model openai --tasks grab against a fixed-latency local server, "
            f"{width}x{height} RGB PNGs ({data.stat().st_size / MB:.1f} MB parquet)"
        )
        rows = [
            ("questions", f"{options.questions:,}"),
            ("latency s", f"{options.latency:g}"),
            ("concurrency", f"{options.concurrency}"),
            ("ideal s", f"{ideal:.2f}  (questions x latency / concurrency)"),
            ("best waves s", f"{waves:.2f}  (ceil(questions / concurrency) x latency)"),
            ("API phase s", f"{api:.2f}  (first request received -> last reply sent)"),
            (
                "efficiency",
                f"{efficiency:.1%}  (ideal / API phase; goal >= {GOAL_EFFICIENCY:.0%}) -> "
                + ("meets the goal" if efficiency >= GOAL_EFFICIENCY else "MISSES the goal"),
            ),
            ("max in flight", f"{max_in_flight}"),
            ("mean in flight", f"{busy / api:.1f}" if api > 0 else "n/a"),
            ("dispatch gap ms", f"{gap * 1000:.1f}  (median between arrivals; needed <= {needed_gap * 1000:.1f})"),
            ("whole run s", f"{whole:.1f}  (lmms-eval CLI wall time, start-up and scoring included)"),
            ("requests", f"{len(requests):,}"),
            ("scored", f"{figures.scored:,}" if figures else "n/a"),
            (
                "accuracy",
                f"{figures.accuracy:.4f}  (expected {questions.expected_correct / options.questions:.4f})"
                if figures
                else "n/a",
            ),
        ]
        for name, value in rows:
            print(f"{name:<16} {value}")
        problems = []
        if measured.returncode != 0:
            problems.append(f"exit code {measured.returncode}")
        if figures is None:
            problems.append("no GRAB results in the results JSON")
        elif figures.scored != options.questions or set(figures.output_status) - {"ok"}:
            problems.append(f"scored {figures.scored}, output status {figures.output_status}")
        if len(requests) != options.questions:
            problems.append(f"server received {len(requests)} requests for {options.questions} questions")
        if problems:
            print("!! " + "; ".join(problems) + f"\n   log tail:\n{measured.log_tail(3000)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
