"""Build a GRAB-format dataset: plan, render in parallel, write parquet with the published features plus metadata, and a
card (GRAB paper §3; byte-identical whatever the number of workers).
Manual: docs/curation.md, "Output files".
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from curation.grab.card import write_card
from curation.grab.plan import PlanItem, cached_plan, select
from curation.grab.render import DEFAULT_DPI, render_checked_job
from curation.parquet import ParquetRows
from curation.workers import process_pool
from scifig_tasks.benchmarks.grab.multiple_choice import mc_options
from scifig_tasks.benchmarks.grab.source import grab_features
from scifig_tasks.core import checked_images
from scifig_tasks.core.errors import CommandError
from scifig_tasks.core.schema import list_feature

FEATURES = datasets.Features({**grab_features(), "metadata": datasets.Value("string")})
MC_FEATURES = datasets.Features(
    {**FEATURES, "options": list_feature(datasets.Value("string")), "mc_answer": datasets.Value("string")}
)
SPLIT = "GRAB"
MC_DIR = "properties_mc"
VOUCHER = "scifig curate grab"
"""Who vouches for the PNGs a build writes (the pass records of :mod:`scifig_tasks.core.checked_images`)."""


@dataclass(frozen=True)
class BuildResult:
    """What a build wrote."""

    out: Path
    rows: int
    mc_rows: int | None


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def _warm_worker() -> None:
    # Import matplotlib's Agg canvas once per worker, not on the first job.
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401


def render_all(items: Sequence[PlanItem], dpi: int, workers: int) -> Iterator[tuple[bytes, bool]]:
    """PNG bytes of every item and whether its alpha is opaque everywhere, in plan order (rendered in ``workers``
    processes when > 1)."""
    jobs = [(item.params, dpi) for item in items]
    if workers <= 1 or len(jobs) <= 1:
        yield from map(render_checked_job, jobs)
        return
    chunk = max(1, min(8, len(jobs) // (workers * 4)))
    pool = process_pool(workers, "fork", _warm_worker)
    try:
        yield from pool.map(render_checked_job, jobs, chunksize=chunk)
    finally:  # an error or an interrupt in the consumer stops the pending renders too
        pool.shutdown(wait=True, cancel_futures=True)


def vouch(png: bytes, opaque: bool) -> None:
    """Record that a PNG this build encoded is usable as it is in a VLMEvalKit TSV, so the TSV writer need not decode
    it (:mod:`scifig_tasks.core.checked_images`): the builder made it from an 8-bit RGBA buffer it held (it decodes to
    exactly that buffer: :func:`curation.grab.render.encode_png`) and checked on that buffer that the alpha is 255
    everywhere, the rule's RGBA case. A PNG with any transparency is not vouched for: the TSV writer decodes it and
    composites it on white. Recorded here, in the process that writes the data, where the datasets cache is known."""
    if opaque:
        checked_images.remember_passed(hashlib.sha256(png).hexdigest(), "png", by=VOUCHER)


def _row(item: PlanItem, png: bytes, seed: int) -> dict[str, Any]:
    return {
        "pid": item.pid,
        "question": item.question,
        "decoded_image": {"bytes": png, "path": None},
        "image": f"images/{item.pid}.png",
        "answer": item.answer,
        "task": item.task,
        "category": item.category,
        "complexity": item.complexity,
        "metadata": item.metadata(seed),
    }


READ_BACK = ("pid", "question", "answer", "task", "category", "complexity", "metadata")
"""The columns :func:`written_items` reads back (every one but the image)."""


def written_items(path: Path) -> list[PlanItem]:
    """The questions the GRAB parquet file ``path`` holds, read back from it (the image column left unread): what
    the summary and the card describe, never the rows a build meant to write."""
    items = []
    for row in pq.read_table(path, columns=list(READ_BACK)).to_pylist():
        meta = json.loads(row["metadata"])
        items.append(
            PlanItem(
                pid=row["pid"],
                question=row["question"],
                answer=row["answer"],
                task=row["task"],
                category=row["category"],
                complexity=row["complexity"],
                type_key=meta["type"],
                precision=meta["precision"],
                params=meta["params"],
                value=meta["value"],
            )
        )
    return items


def _read_back(path: Path, wrote: Sequence[int], out: Path) -> list[PlanItem]:
    """Rule: a build reports what its file holds. The questions of ``path`` read back (:func:`written_items`), or a
    :class:`CommandError` (status 1) when they are not the questions ``wrote`` (their pids, in order) that this
    build wrote: another command wrote to ``out`` at the same time."""
    held = written_items(path)
    if [item.pid for item in held] != list(wrote):
        raise CommandError(
            f"{path} holds {len(held)} questions, not the {len(wrote)} this build wrote: another command wrote to "
            f"{out} at the same time",
            "run the build again, one command at a time per folder",
            status=1,
        )
    return held


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a directory")
    strangers = sorted(path.name for path in out.glob("*.parquet") if path.name != f"{SPLIT}.parquet")
    if strangers:
        raise ValueError(
            f"{out} already holds {', '.join(strangers)}: SCIFIG_GRAB_DATA would read every <split>.parquet there; "
            "choose an empty or new directory"
        )


def build_grab(
    out: Path,
    *,
    seed: int = 0,
    limit: int | None = None,
    workers: int | None = None,
    tasks: Iterable[str] | None = None,
    dpi: int = DEFAULT_DPI,
    mc: bool = False,
    progress: bool = True,
) -> BuildResult:
    """Generate GRAB into ``out`` (default: the published 2,170-question composition at the default resolution)."""
    if dpi < 10:
        raise ValueError(f"dpi must be >= 10, got {dpi}")
    out = Path(out)
    _check_out(out)
    workers = default_workers() if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    tasks = None if tasks is None else list(tasks)
    items = select(cached_plan(seed), tasks, limit)
    if not items:
        raise ValueError(f"nothing to build: tasks={list(tasks or [])!r}, limit={limit!r}")
    main = ParquetRows(out / f"{SPLIT}.parquet", FEATURES)
    multiple = ParquetRows(out / MC_DIR / f"{SPLIT}.parquet", MC_FEATURES) if mc else None
    try:
        with closing(render_all(items, dpi, workers)) as renders:
            for item, (png, opaque) in tqdm(
                zip(items, renders, strict=True), total=len(items), desc="GRAB graphs", disable=not progress
            ):
                vouch(png, opaque)
                row = _row(item, png, seed)
                main.add(row)
                if multiple is not None and item.task == "properties":
                    options, letter = mc_options(item.answer, item.question, seed=item.pid)
                    multiple.add({**row, "options": options, "mc_answer": letter})
    except BaseException:
        main.abort()
        if multiple is not None:
            multiple.abort()
        raise
    main.close()
    if multiple is not None:
        multiple.close()
    held = _read_back(main.path, [item.pid for item in items], out)
    mc_rows = None
    if multiple is not None:
        properties = [item.pid for item in items if item.task == "properties"]
        mc_rows = len(_read_back(multiple.path, properties, out))
    settings = {"seed": seed, "limit": limit, "tasks": sorted(tasks) if tasks else None, "dpi": dpi, "mc": mc}
    write_card(out, held, settings, mc_rows=mc_rows)
    return BuildResult(out, len(held), mc_rows)
