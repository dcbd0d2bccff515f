"""Parts of a report made at the same time in forked processes: the comparison and the sample viewer beside the
sections, whose figures are drawn by their own processes (:func:`scifig_tasks.report.figures.drawn_alongside`). Each
part reads the runs the report process has loaded (a forked process shares them; nothing is copied) and hands back a
small result: a section, a path.

Rule: a process forks only on Linux, with a core to spare, and while it runs one thread (a process forked while
another thread holds a lock would inherit the lock held forever); otherwise each part is made where it is asked for,
with the same result. Manual: docs/reports.md, "How the report page is put together".
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any, Generic, TypeVar

Result = TypeVar("Result")


def spare_cores() -> int:
    """The cores besides this process's own that forked processes may use; 0 where this process may not fork (see
    the module docstring)."""
    if not sys.platform.startswith("linux") or threading.active_count() > 1:
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(0, cores - 1)


def _child(work: Callable[[], Any], writer: Any) -> None:
    try:
        outcome: tuple[str, Any] = ("done", work())
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        outcome = ("failed", exc)
    try:
        writer.send(outcome)
    except Exception:  # noqa: BLE001 - an error that cannot be pickled: its text instead
        writer.send(("failed", RuntimeError("".join(traceback.format_exception(outcome[1])).strip())))


class Part(Generic[Result]):
    """One part of a report, made in a forked process (:func:`started`) or where :meth:`result` asks for it."""

    def __init__(self, work: Callable[[], Result], name: str) -> None:
        self.work, self.name = work, name
        self.process: Any = None
        self.reader: Any = None

    def result(self) -> Result:
        """The part: waited for and returned, or its error raised."""
        if self.process is None:
            return self.work()
        try:
            kind, value = self.reader.recv()
        except EOFError:
            self.process.join()
            status = self.process.exitcode
            raise RuntimeError(f"{self.name}: its process ended without a result (exit status {status})") from None
        finally:
            self.reader.close()
        self.process.join()
        if kind == "failed":
            raise value
        return value

    def stop(self) -> None:
        """Ends the part's process if it still runs (the report failed elsewhere)."""
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
            self.process.join()


def started(work: Callable[[], Result], name: str) -> Part[Result]:
    """``work`` started now in a forked process when this process may fork (:func:`spare_cores`), else made when its
    result is asked for; ``name`` says which part failed when its process ends without a result (killed)."""
    part = Part(work, name)
    if spare_cores() < 1:
        return part
    for stream in (sys.stdout, sys.stderr):  # what waits in a buffer is written once, not again by the child
        stream.flush()
    context = multiprocessing.get_context("fork")
    part.reader, writer = context.Pipe(duplex=False)
    # not a daemon: a part may start one of its own (the sample viewer's figures); stop() ends it on a failure
    part.process = context.Process(target=_child, args=(work, writer), name=name)
    part.process.start()
    writer.close()
    return part
