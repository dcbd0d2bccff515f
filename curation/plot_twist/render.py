"""Rendering jobs for the Plot Twist builder: one job = one chart, one library, one presentation.

:class:`Renderer` renders jobs in order, in worker processes when asked. Workers are ``spawn``-ed children of the
caller that die with it (:func:`curation.workers.process_pool`): each starts from a clean interpreter, so it never
inherits a Vega runtime (not fork-safe) from the caller, and it only imports this light module (matplotlib and
vl-convert load on the first job).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from types import TracebackType

from curation.plot_twist.charts import Chart
from curation.plot_twist.questions import Axes
from curation.plot_twist.render_mpl import Style
from curation.workers import process_pool

LIBRARIES = ("matplotlib", "vegalite")


@dataclass(frozen=True)
class Job:
    """One rendering: a chart, the library (``matplotlib`` or ``vegalite``) and the presentation."""

    chart: Chart
    library: str
    style: Style


def render_job(job: Job) -> tuple[bytes, Axes]:
    """PNG bytes and rendered axis limits of one job (the worker entry point)."""
    if job.library == "vegalite":
        from curation.plot_twist import render_vega

        return render_vega.render(job.chart, job.style.title)
    if job.library == "matplotlib":
        from curation.plot_twist import render_mpl

        return render_mpl.render(job.chart, job.style)
    raise ValueError(f"unknown plotting library {job.library!r} (expected one of: {', '.join(LIBRARIES)})")


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


class Renderer:
    """Renders batches of jobs in order, serially or in a pool of ``workers`` processes kept for its lifetime."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self._pool: Executor | None = None

    def __enter__(self) -> Renderer:
        if self.workers > 1:
            self._pool = process_pool(self.workers, "spawn")
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def render(self, jobs: Sequence[Job]) -> Iterator[tuple[bytes, Axes]]:
        """Renderings of ``jobs`` in their order."""
        if self._pool is None or len(jobs) <= 1:
            yield from map(render_job, jobs)
            return
        chunk = max(1, min(16, len(jobs) // (self.workers * 4)))
        yield from self._pool.map(render_job, jobs, chunksize=chunk)
