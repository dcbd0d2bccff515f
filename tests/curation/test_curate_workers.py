"""The worker processes of ``scifig curate`` die with the command, even when it is killed with SIGKILL.

Each test starts the real command line with two workers and enough work to keep them busy, waits until its workers
exist (the descendants of the command's process, found through ``/proc/<pid>/task/*/children``), kills the command
with SIGKILL and requires every descendant seen to be gone (or a zombie) within a few seconds: sooner than the 5 s
after which torch's DataLoader workers notice a dead parent by themselves. ``scifig curate mmsci`` starts no process.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import time
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image

from scifig_tasks.core.clip_baseline import TINY_MODEL, tiny_config
from tests.harness.lmms import _executable

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds descendants through /proc (Linux)"),
]

WORKERS = 2
START_S = 60.0  # until the workers exist (the command imports and plans first)
GONE_S = 3.0  # after the kill


def _stat(pid: int) -> tuple[str, str] | None:
    """State letter and start time of ``pid``, or None if there is no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) "
    return fields[0], fields[19]


def _descendants(pid: int) -> dict[int, str]:
    """Every living descendant of ``pid`` -> its start time (children of all threads, recursively)."""
    found: dict[int, str] = {}
    pending = [pid]
    while pending:
        parent = pending.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            for child in map(int, children):
                stat = _stat(child)
                if child not in found and stat is not None and stat[0] != "Z":
                    found[child] = stat[1]
                    pending.append(child)
    return found


def _alive(pid: int, started: str) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z" and stat[1] == started


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def _kill_and_watch(args: list[str], cwd: Path) -> None:
    command = subprocess.Popen(
        [_executable("scifig"), "curate", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a terminal's signals never reach it; only our SIGKILL ends it
    )
    seen: dict[int, str] = {}
    try:
        deadline = time.monotonic() + START_S
        while len(seen) < WORKERS:
            assert command.poll() is None, f"{args[0]} ended before its workers were seen: {command.stderr.read()}"
            assert time.monotonic() < deadline, f"no {WORKERS} workers of {args[0]} within {START_S} s"
            time.sleep(0.05)
            seen = _descendants(command.pid)
        time.sleep(0.5)  # let the pool finish starting (all its workers, a resource tracker)
        seen = _descendants(command.pid)
        assert command.poll() is None, "the command finished before it was killed: give it more work"
        os.kill(command.pid, signal.SIGKILL)
        command.wait(timeout=10)
        deadline = time.monotonic() + GONE_S
        while time.monotonic() < deadline and any(_alive(pid, started) for pid, started in seen.items()):
            time.sleep(0.05)
        survivors = {pid: _cmdline(pid) for pid, started in seen.items() if _alive(pid, started)}
        assert not survivors, f"alive {GONE_S} s after the command was killed: {survivors}"
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
        for pid, started in seen.items():  # leave nothing behind when the assertion fails
            if _alive(pid, started):
                os.kill(pid, signal.SIGKILL)
        if command.stderr is not None:
            command.stderr.close()


@pytest.mark.cli
def test_killed_grab_build_takes_its_workers_with_it(tmp_path: Path) -> None:
    _kill_and_watch(["grab", "--out", str(tmp_path / "grab"), "--workers", str(WORKERS)], tmp_path)


@pytest.mark.cli
def test_killed_plot_twist_build_takes_its_workers_and_their_helpers_with_it(tmp_path: Path) -> None:
    _kill_and_watch(["plot-twist", "--out", str(tmp_path / "plot-twist"), "--workers", str(WORKERS)], tmp_path)


def _pairs(path: Path, count: int) -> Path:
    """``count`` figure-caption pairs with distinct 8x8 images and captions."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(count):
        buffer = io.BytesIO()
        Image.fromarray((rng.random((8, 8, 3)) * 255).astype("uint8")).save(buffer, format="PNG")
        image = {"bytes": buffer.getvalue(), "path": None}
        word = "".join(chr(ord("a") + int(digit)) for digit in f"{i:04d}")  # digits would be normalised away
        rows.append({"image": image, "caption": f"the {word} curve", "paper_id": f"p{i}", "categories": ["cs.CV"]})
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    return path


@pytest.mark.cli
def test_killed_scifibench_curation_takes_its_dataloader_workers_with_it(tmp_path: Path) -> None:
    clip = ["--model", TINY_MODEL, "--model-config", str(tiny_config()), "--pretrained", "none", "--device", "cpu"]
    pairs = ["--pairs", str(_pairs(tmp_path / "pairs.parquet", 500)), "--out", str(tmp_path / "scifibench")]
    _kill_and_watch(["scifibench", *pairs, *clip, "--batch-size", "1", "--num-workers", str(WORKERS)], tmp_path)


WATCHED_CHILD = """
import multiprocessing, os, sys, time
from curation import workers

def child(parent):
    workers._parent_death_signal = lambda: False  # the path taken where the kernel offers no parent-death signal
    workers.die_with_parent(parent)
    time.sleep(600)

if __name__ == "__main__":
    process = multiprocessing.get_context("fork").Process(target=child, args=(os.getpid(),))
    process.start()
    print(process.pid, flush=True)
    time.sleep(600)
"""


def test_without_a_parent_death_signal_a_watcher_ends_the_worker(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [_executable("python"), "-c", WATCHED_CHILD], cwd=tmp_path, stdout=subprocess.PIPE, text=True
    )
    child, started = 0, ""
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        stat = _stat(child)
        assert stat is not None
        started = stat[1]
        time.sleep(0.5)  # the watcher is running
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + GONE_S
        while time.monotonic() < deadline and _alive(child, started):
            time.sleep(0.05)
        assert not _alive(child, started), f"the worker {child} outlived its parent by {GONE_S} s"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child and _alive(child, started):
            os.kill(child, signal.SIGKILL)
        if parent.stdout is not None:
            parent.stdout.close()
