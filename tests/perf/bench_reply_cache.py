"""What ``scifig eval``'s reply cache costs the model phase: a first run with the cache and a rerun answered from it,
each against the same phase with no cache (``--no-cache``), measured in the same process, interleaved.

What it measures. The model phase of ``scifig eval --model openai --tasks grab`` on GRAB data drawn by the generator
(``--limit`` questions at ``--dpi``, default the generator's own 1000 dpi; or ``--data DIR``), against the local
instant server (``tests/harness/openai_server.py`` on 127.0.0.1, no latency). The phase is what lmms-eval's
evaluator runs once the requests are built (``evaluate`` in ``lmms_eval/evaluator.py``): ``lm.generate_until(requests)``
without a cache, ``cache.execute(lm, "generate_until", requests)`` with one, the cache being the one ``scifig eval``
installs (:mod:`scifig_tasks.lmms_eval.response_cache`, opened as lmms-eval opens it). The model, the tasks and
their requests are built once with lmms-eval's own API (``TaskManager``, ``get_task_dict``, ``build_all_requests``,
the ``openai`` model), so lmms-eval's start-up (~20 s) is outside every figure.

Each round runs three configurations: ``no cache``; ``cache, first run`` (an empty cache folder); ``cache, rerun``
(the same folder again: every reply is in the cache, the server receives nothing). Rounds alternate the order
(no cache first, then last). Printed: each configuration's median seconds (min-max) and the ratios to ``no cache``
of the same round (median, min-max), with the goals (on wall time): first run <= 1.1x, rerun <= 0.2x; the same for
the CPU seconds of the process (client and server threads), which move less with other load on a shared machine.
Sanity checks: the server received one request per question in ``no cache`` and ``first run`` and none in
``rerun``; the three configurations return the same replies.

Run from the repository root: ``python -m tests.perf.bench_reply_cache`` (options ``--limit`` (40), ``--dpi``
(1000), ``--data`` (a GRAB build: folder or parquet), ``--rounds`` (3), ``--concurrency`` (the ``openai`` model's
``num_concurrent``; default lmms-eval's own)). Drawing 40 questions at 1000 dpi takes about 20 s on 2 cores, a
round about a minute.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.harness.lmms import offline_env
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply

GOAL_FIRST = 1.1
GOAL_RERUN = 0.2
CONFIGS = ("no cache", "cache, first run", "cache, rerun")


def _build(limit: int, dpi: int, folder: Path) -> Path:
    from curation.grab.build import build_grab

    build_grab(folder, limit=limit, dpi=dpi)
    return folder


def _answer(request: ChatRequest) -> Reply:
    return Reply(text=str(len(request.text) % 97))  # instant, and a reply that depends on the question


def _model_phase(concurrency: int | None) -> tuple[Any, list[Any], dict[str, Any], str]:
    """The ``openai`` model, every ``generate_until`` request of the ``grab`` group (its ``repeats`` copies, as the
    evaluator lists them), the task dictionary and the model arguments."""
    from lmms_eval.models import get_model
    from lmms_eval.tasks import TaskManager, get_task_dict

    from scifig_tasks.lmms_eval import TASKS_DIR
    from scifig_tasks.lmms_eval.plugin import install

    install()
    model_args = "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"
    if concurrency is not None:
        model_args += f",num_concurrent={concurrency}"
    lm = get_model("openai").create_from_arg_string(model_args, {"batch_size": 1})
    manager = TaskManager("WARNING", include_path=str(TASKS_DIR), model_name="openai")
    task_dict = get_task_dict(["grab"], manager, "simple" if lm.is_simple else "chat")
    requests: list[Any] = []

    def leaves(tasks: dict[str, Any]) -> None:
        for name, task in tasks.items():
            if isinstance(task, dict):
                leaves(task)
                continue
            if isinstance(task, tuple):
                task = task[1]
            lm.task_dict[name] = task.dataset
            task.build_all_requests(limit=None, rank=0, world_size=1)
            for instance in task.instances:
                requests.extend([instance] * instance.repeats)

    leaves(task_dict)
    return lm, requests, task_dict, model_args


def _texts(replies: list[Any]) -> list[str]:
    return [str(getattr(reply, "text", reply)) for reply in replies]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, help="a GRAB build (folder or parquet); default: draw --limit questions")
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--dpi", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=None, help="the openai model's num_concurrent")
    options = parser.parse_args(argv)
    if options.rounds < 1:
        parser.error("need --rounds >= 1")

    root = Path(tempfile.mkdtemp(prefix="bench-reply-cache-"))
    try:
        data = options.data or _build(options.limit, options.dpi, root / "data")
        with FakeOpenAIServer(_answer) as server:
            env = offline_env(root)
            env.update({"SCIFIG_GRAB_DATA": str(data), "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "bench"})
            os.environ.clear()
            os.environ.update(env)
            started = time.monotonic()
            lm, requests, task_dict, model_args = _model_phase(options.concurrency)
            print(f"{len(requests)} requests built in {time.monotonic() - started:.1f} s (data: {data})")
            return _measure(options.rounds, server, lm, requests, task_dict, model_args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _measure(
    rounds: int, server: FakeOpenAIServer, lm: Any, requests: list[Any], tasks: dict[str, Any], args: str, root: Path
) -> int:
    from scifig_tasks.lmms_eval.response_cache import ScifigResponseCache, installed

    def cached(folder: Path) -> Callable[[], list[Any]]:
        def run() -> list[Any]:
            with installed():
                cache = ScifigResponseCache.create(str(folder), model="openai", model_args=args, task_dict=tasks)
            try:
                return cache.execute(lm, "generate_until", requests)
            finally:
                cache.finalize(success=True)

        return run

    times: dict[str, list[float]] = {config: [] for config in CONFIGS}
    cpu: dict[str, list[float]] = {config: [] for config in CONFIGS}
    sent: dict[str, list[int]] = {config: [] for config in CONFIGS}
    replies: dict[str, list[str]] = {}
    for number in range(rounds):
        folder = root / f"cache-{number}"
        runs = {"no cache": lambda: lm.generate_until(requests), "cache, first run": cached(folder)}
        runs["cache, rerun"] = cached(folder)
        order = list(CONFIGS) if number % 2 == 0 else [*CONFIGS[1:], CONFIGS[0]]
        for config in order:
            server.reset()
            started, started_cpu = time.perf_counter(), time.process_time()
            result = runs[config]()
            times[config].append(time.perf_counter() - started)
            cpu[config].append(time.process_time() - started_cpu)
            sent[config].append(server.count)
            replies.setdefault(config, _texts(result))
            print(
                f"  round {number + 1}: {config:17s} {times[config][-1]:7.2f} s wall, {cpu[config][-1]:7.2f} s CPU, "
                f"{server.count} requests sent"
            )
    print(f"\nmodel phase, {len(requests)} requests, {rounds} rounds (median, min-max)")
    for kind, figures in (("wall", times), ("CPU", cpu)):
        print(f"  {kind} seconds")
        for config in CONFIGS:
            values = figures[config]
            print(f"    {config:17s} {statistics.median(values):7.2f} s ({min(values):.2f}-{max(values):.2f})")
    failures = []
    for kind, figures in (("wall", times), ("CPU", cpu)):
        print(f"  {kind} ratios to no cache, same round")
        for config, goal in (("cache, first run", GOAL_FIRST), ("cache, rerun", GOAL_RERUN)):
            ratios = [value / base for value, base in zip(figures[config], figures["no cache"], strict=True)]
            median = statistics.median(ratios)
            verdict = "ok" if median <= goal else "OVER THE GOAL"
            print(f"    {config:17s} x{median:.3f} ({min(ratios):.3f}-{max(ratios):.3f}), goal <= {goal}: {verdict}")
            if median > goal and kind == "wall":
                failures.append(config)
    expected = len(requests)
    if any(count != expected for config in CONFIGS[:2] for count in sent[config]) or any(sent["cache, rerun"]):
        failures.append(f"requests sent {sent} (expected {expected}, {expected}, 0)")
    if not replies["no cache"] == replies["cache, first run"] == replies["cache, rerun"]:
        failures.append("the configurations returned different replies")
    if failures:
        print(f"not met: {'; '.join(failures)}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
