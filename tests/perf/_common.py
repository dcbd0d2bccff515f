"""Shared pieces of the benchmarks: GRAB-schema data built with a progress bar, the offline CLI environment, a reply
policy keyed on each question's ``[qN]`` tag, and an ``lmms-eval`` subprocess runner that samples the RSS of the
child's process tree while it runs.

Everything stays on this machine: the local server binds 127.0.0.1 and the CLI runs with the Hugging Face hub
offline (the same variables as ``tests/harness/lmms.py``'s ``lmms_env`` fixture, which cannot be called outside
pytest).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import psutil

from scifig_tasks.benchmarks.grab.rules import TASKS
from tests.harness.grab_data import Row, build
from tests.harness.openai_server import ChatRequest, Policy, Reply

MB = 1024 * 1024
WRONG_EVERY = 10  # every 10th question gets a wrong reply, so the expected accuracy is a known, non-trivial number
_TAG = re.compile(r"\[q(\d+)\]")


def parse_size(text: str) -> tuple[int, int]:
    """``"1600x1200"`` -> ``(1600, 1200)``."""
    width, _, height = text.lower().partition("x")
    try:
        size = int(width), int(height)
    except ValueError:
        raise ValueError(f"expected WIDTHxHEIGHT, got {text!r}") from None
    if min(size) < 1:
        raise ValueError(f"image size must be positive, got {text!r}")
    return size


@dataclass(frozen=True)
class Questions:
    """A GRAB-schema question set: the rows, the reply the server gives to each, the number it should score correct."""

    rows: list[Row]
    replies: list[str]

    @property
    def expected_correct(self) -> int:
        return sum(reply == row.answer for row, reply in zip(self.rows, self.replies, strict=True))


def make_questions(count: int) -> Questions:
    """``count`` questions cycling through GRAB's four tasks; every ``WRONG_EVERY``-th reply is wrong."""
    rows = [Row(TASKS[pid % len(TASKS)], str(pid % 97)) for pid in range(count)]
    replies = ["wrong" if pid % WRONG_EVERY == WRONG_EVERY - 1 else row.answer for pid, row in enumerate(rows)]
    return Questions(rows, replies)


def answer_policy(replies: Sequence[str]) -> Policy:
    """Reply ``replies[N]`` to the request whose text carries the tag ``[qN]`` (HTTP 404 when there is none)."""

    def answer(request: ChatRequest) -> Reply:
        match = _TAG.search(request.text)
        if match is None or int(match.group(1)) >= len(replies):
            return Reply(text="no [qN] tag in the request", status=404)
        return Reply(text=replies[int(match.group(1))])

    return answer


def build_dataset(rows: Sequence[Row], image_size: tuple[int, int], label: str) -> datasets.Dataset:
    """The rows as a GRAB-schema dataset, with a progress bar."""
    return build(rows, image_size, progress=f"{label}: drawing {image_size[0]}x{image_size[1]} PNGs")


def grab_cli_args(concurrency: int, timeout_s: float = 30.0) -> list[str]:
    """``lmms-eval`` arguments for a GRAB run through lmms-eval's own ``openai`` backend (one attempt per request)."""
    model_args = f"model_version=fake-vlm,max_retries=1,retry_backoff_s=0,num_concurrent={concurrency}"
    model_args += f",timeout={timeout_s:g}"
    return ["--model", "openai", "--model_args", model_args, "--tasks", "grab"]


def _executable(name: str) -> str:
    local = Path(sys.executable).parent / name
    if not local.exists():
        raise SystemExit(f"{name} is not installed next to {sys.executable}")
    return str(local)


def _tree_rss(root: psutil.Process) -> int:
    total = 0
    try:
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    for process in processes:
        # A process may exit (or be a zombie) between listing and sampling.
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            total += process.memory_info().rss
    return total


@dataclass
class CliMeasurement:
    """One CLI run: exit code, wall time, peak RSS (sampled tree sum and the kernel's ``ru_maxrss``), its output."""

    returncode: int
    wall_s: float
    peak_tree_rss: int  # bytes, max over samples of the summed RSS of the process and all its descendants
    ru_maxrss: int  # bytes, the kernel's high-water mark for the child (largest single process it waited for)
    samples: int
    log_path: Path
    output_path: Path
    stopped: str | None = None  # why the benchmark killed the run (memory limit, timeout), None if it ended itself
    results: dict[str, Any] | None = field(default=None)

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


def _kill_tree(root: psutil.Process) -> None:
    """Kill the CLI process we started and its descendants, one pid at a time."""
    try:
        children = root.children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    for process in [*children, root]:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


def run_lmms_eval(
    args: list[str],
    env: dict[str, str],
    output_path: Path,
    log_path: Path,
    *,
    poll_s: float = 0.05,
    rss_limit: int | None = None,
    timeout_s: float = 3600.0,
) -> CliMeasurement:
    """Run ``lmms-eval args --output_path output_path``; sample the process tree's RSS every ``poll_s`` seconds.

    The run is killed (and ``stopped`` says why) if the tree's RSS passes ``rss_limit`` bytes or it outlives
    ``timeout_s``. Output goes to ``log_path``; the results JSON, if any, is parsed into ``results``.
    """
    command = [_executable("lmms-eval"), *args, "--output_path", str(output_path)]
    peak = samples = 0
    stopped: str | None = None
    start = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    root = psutil.Process(process.pid)
    while True:
        # wait4 (not Popen.poll) so the kernel's rusage of this very child is kept when it is reaped.
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        rss = _tree_rss(root)
        peak, samples = max(peak, rss), samples + 1
        if stopped is None and rss_limit is not None and rss > rss_limit:
            stopped = f"killed: process-tree RSS {rss / MB:,.0f} MB passed the limit {rss_limit / MB:,.0f} MB"
            _kill_tree(root)
        elif stopped is None and time.monotonic() - start > timeout_s:
            stopped = f"killed: still running after {timeout_s:g} s"
            _kill_tree(root)
        time.sleep(poll_s)
    wall = time.monotonic() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    measured = CliMeasurement(
        returncode=process.returncode,
        wall_s=wall,
        peak_tree_rss=peak,
        ru_maxrss=usage.ru_maxrss * 1024,  # Linux reports kilobytes
        samples=samples,
        log_path=log_path,
        output_path=output_path,
        stopped=stopped,
    )
    files = sorted(output_path.rglob("*_results.json"))
    if files:
        measured.results = json.loads(files[-1].read_text())
    return measured


@dataclass(frozen=True)
class GrabFigures:
    """What the results JSON says about the ``grab`` group."""

    accuracy: float
    scored: int
    output_status: dict[str, int]


def grab_figures(results: dict[str, Any] | None) -> GrabFigures | None:
    group = (results or {}).get("groups", {}).get("grab")
    if not group:
        return None
    breakdown = group.get("breakdown,none", {})
    return GrabFigures(
        accuracy=float(group["accuracy,none"]),
        scored=int(breakdown.get("overall", {}).get("all", {}).get("n", 0)),
        output_status=dict(breakdown.get("flags", {}).get("output_status", {})),
    )
