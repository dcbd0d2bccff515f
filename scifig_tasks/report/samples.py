"""``samples.html``, the per-sample viewer ``scifig report`` writes beside ``report.html``: one row per document, the
models side by side, its figures beside it. The rows come from :mod:`scifig_tasks.report.sample_records`, the
documents from :mod:`scifig_tasks.report.sample_documents`, the figures from :mod:`scifig_tasks.report.sample_figures`;
this module joins them and renders the page from its templates (``templates/samples.*``). The page and its rules:
docs/reports.md, "The sample viewer".
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scifig_tasks.core import registry
from scifig_tasks.report import forked
from scifig_tasks.report.paths import shown
from scifig_tasks.report.progress import Progress
from scifig_tasks.report.runs import Run
from scifig_tasks.report.sample_documents import (
    DocsLoader,
    data_read,
    image_cells,
    image_columns,
    lmms_docs,
    other_documents,
    vlmeval_rows,
)
from scifig_tasks.report.sample_figures import FULL_SIZE_DIR, FigureFiles, Thumbnails
from scifig_tasks.report.sample_figures import Made as FigureMade
from scifig_tasks.report.sample_records import Group, capped, collect

if TYPE_CHECKING:
    from jinja2 import Environment
    from markupsafe import Markup

PAGE_ROWS = 50
"""Documents per page of ``samples.html`` (the data's ``page_rows``, read by ``samples.js``)."""


Key = tuple[str, str]
"""Where a group's document comes from, without its position: ``("lmms", task)`` or ``("vlmeval", dataset)``."""
Made = dict[Key, "str | list[tuple[str | None, str | None, list[FigureMade]]]"]
"""Per source: why it has no images, or per group (in order) the VLMEvalKit row's question and answer and each image
as :meth:`FigureFiles.make` made it."""


def attach_images(
    groups: list[Group],
    docs_loader: DocsLoader = lmms_docs,
    full_size: Path | None = None,
    progress: Progress | None = None,
) -> tuple[list[str], list[str], list[str]]:
    """Thumbnails for every group whose documents load: the data URIs (indexed by ``Group.images``), the full-size
    files written into ``full_size`` (paths relative to the page; empty strings without a folder) and the notes
    saying where they could not be made; each step said to ``progress``.

    The sources are made in units, each the tasks reading one data split (loaded once), by this process and, with a
    core to spare, a forked one, each taking the next unit until none is left (:func:`_made`); the images are then
    numbered in the page's order, as one process would number them (:class:`Thumbnails`)."""
    by_source: dict[Key, list[Group]] = {}
    for group in groups:
        by_source.setdefault(group.source[:2], []).append(group)
    lmms_tasks = sorted(name for kind, name in by_source if kind == "lmms")
    if progress is not None and lmms_tasks:
        progress(f"samples.html: loading the documents of {len(lmms_tasks)} tasks for their figures")
    made = _made(_units(by_source), by_source, docs_loader, full_size, progress)
    thumbnails = Thumbnails()
    missing: dict[str, list[str]] = {}
    for key, members in by_source.items():
        found = made[key]
        if isinstance(found, str):
            missing.setdefault(found, []).append(key[1])
            continue
        for group, (question, answer, images) in zip(members, found, strict=True):
            group.prompt = group.prompt or question or ""
            group.expected = group.expected or answer or ""
            group.images += [index for image in images if (index := thumbnails.keep(image)) is not None]
    notes = [f"No images for {', '.join(sorted(names))}: {reason}." for reason, names in sorted(missing.items())]
    if thumbnails.failed:
        notes.append(f"{thumbnails.failed} images could not be decoded and are not shown.")
    return thumbnails.uris, thumbnails.full, notes


def _units(by_source: Mapping[Key, list[Group]]) -> list[list[Key]]:
    """The sources in units of work, largest first (most groups): the lmms-eval tasks reading one split
    (:func:`scifig_tasks.report.sample_documents.data_read`), every task lmms-eval loads, each VLMEvalKit dataset."""
    lmms = [name for kind, name in by_source if kind == "lmms"]
    read = data_read(lmms) if lmms else {}
    units: dict[Any, list[Key]] = {}
    for kind, name in by_source:
        units.setdefault(read[name] if kind == "lmms" else (kind, name), []).append((kind, name))
    return sorted(units.values(), key=lambda unit: -sum(len(by_source[key]) for key in unit))


def _made(
    units: list[list[Key]],
    by_source: Mapping[Key, list[Group]],
    docs_loader: DocsLoader,
    full_size: Path | None,
    progress: Progress | None,
) -> Made:
    """Every unit made, by this process and, with two units or more and a core to spare, a forked one
    (:func:`scifig_tasks.report.forked.started`): each takes the next unit not yet taken."""
    taken = _Taken(shared=len(units) > 1 and forked.spare_cores() > 0)

    def share() -> Made:
        files, made = FigureFiles(full_size), {}
        while (index := taken.next()) < len(units):
            made |= _unit(units[index], by_source, docs_loader, files, progress)
        return made

    if taken.shared and docs_loader is lmms_docs and any(kind == "lmms" for unit in units for kind, _ in unit):
        import datasets  # noqa: F401 - imported once, before the fork, not by both processes
    other = forked.started(share, "samples.html's figures") if taken.shared else None
    try:
        made = share()
        return made | (other.result() if other is not None else {})
    finally:
        if other is not None:
            other.stop()


class _Taken:
    """How many units have been taken: shared with a forked process (``shared``: a counter in shared memory), else
    this process's own."""

    def __init__(self, shared: bool) -> None:
        self._shared: Any = None
        self._count = 0
        if shared:
            import multiprocessing

            with contextlib.suppress(OSError):  # no shared memory for its lock (no /dev/shm): made by one process
                self._shared = multiprocessing.get_context("fork").Value("i", 0)
        self.shared = self._shared is not None

    def next(self) -> int:
        """The index of the unit to make next (past the last: none is left)."""
        if self._shared is None:
            self._count += 1
            return self._count - 1
        with self._shared.get_lock():
            self._shared.value += 1
            return int(self._shared.value) - 1


def _unit(
    keys: list[Key],
    by_source: Mapping[Key, list[Group]],
    docs_loader: DocsLoader,
    files: FigureFiles,
    progress: Progress | None,
) -> Made:
    """The images of one unit's sources (:data:`Made`), their documents loaded here; a line to ``progress`` as it
    starts and, at most once a second, the documents done."""
    if progress is not None:
        more = f" and {len(keys) - 1} more reading the same data" if len(keys) > 1 else ""
        progress(f"samples.html: documents and figures of {keys[0][1]}{more}")
    lmms = [name for kind, name in keys if kind == "lmms"]
    loaded: Mapping[str, Sequence[Mapping[str, Any]] | str] = docs_loader(lmms) if lmms else {}
    made: Made = {}
    for kind, name in keys:
        members = by_source[(kind, name)]
        if kind == "lmms":
            docs: Any = loaded.get(name, "not loaded")
        else:
            docs = vlmeval_rows(name, {group.source[2] for group in members})
        if isinstance(docs, str):
            made[(kind, name)] = f"documents could not be loaded ({docs})"
            continue
        problem = other_documents(docs, members)
        if problem is not None:
            made[(kind, name)] = f"the documents found are not the ones evaluated: {problem}"
            continue
        made[(kind, name)] = _images(members, docs, kind, files, progress)
    return made


def _images(
    members: list[Group], docs: Any, kind: str, files: FigureFiles, progress: Progress | None
) -> list[tuple[str | None, str | None, list[FigureMade]]]:
    """Each group's images from its document (a VLMEvalKit row also gives its question and answer)."""
    columns: dict[str, tuple[str, ...]] = {}
    found = []
    documents = _documents(docs, [group.source[2] for group in members])
    for number, (group, doc) in enumerate(zip(members, documents, strict=True)):
        if progress is not None and number and number % PROGRESS_EVERY == 0:
            done = f"{number:,} of {len(members):,} documents"
            progress(f"samples.html: figures of {group.source[1]}, {done}", detail=True)
        question = answer = None
        if kind == "vlmeval":  # the TSV row: the question (not the full prompt) and the answer
            question, answer = capped(str(doc.get("question", ""))), capped(str(doc.get("answer", "")))
        if group.task not in columns:
            columns[group.task] = image_columns(group.task)
        cells = image_cells(doc, columns[group.task], tsv=kind == "vlmeval")
        found.append((question, answer, [files.make(cell) for cell in cells]))
    return found


ROWS_AT_ONCE = 32
"""Documents read from a ``datasets.Dataset`` in one call (a chunk of rows: their images are held together, so a few
dozen even where each is several MB)."""
PROGRESS_EVERY = 256
"""Documents between two counts said to the progress (which says at most one a second)."""


def _documents(docs: Any, positions: Sequence[int]) -> Iterator[Mapping[str, Any]]:
    """The documents at ``positions``, in that order: from a ``datasets.Dataset`` a chunk of rows per call (reading
    row by row was most of the viewer's time for a task of a few thousand questions), else one by one."""
    datasets = sys.modules.get("datasets")  # a Dataset exists only where datasets was imported
    if datasets is None or not isinstance(docs, datasets.Dataset):
        for position in positions:
            yield docs[position]
        return
    for start in range(0, len(positions), ROWS_AT_ONCE):
        chunk = list(dict.fromkeys(positions[start : start + ROWS_AT_ONCE]))
        batch = docs[chunk]
        rows = {
            position: {name: values[offset] for name, values in batch.items()} for offset, position in enumerate(chunk)
        }
        for position in positions[start : start + ROWS_AT_ONCE]:
            yield rows[position]


# ---- the page -------------------------------------------------------------------------------------------------------


def corpus_metrics(task: str) -> tuple[str, ...]:
    """The corpus-level metrics shown once for ``task`` (its benchmark's ``report.corpus_metrics``, by the longest
    task-name prefix that matches); empty for a task scored per sample."""
    described = registry.benchmark_of(task)
    prefixes = described.report.corpus_metrics if described is not None else {}
    matches = [prefix for prefix in prefixes if task.startswith(prefix)]
    return prefixes[max(matches, key=len)] if matches else ()


def _summaries(runs: Sequence[Run], tasks: Iterable[str]) -> list[str]:
    """Corpus-level metrics (captioning), one line per run and task."""
    lines = []
    for run in runs:
        for task in sorted(tasks):
            metrics = corpus_metrics(task)
            if not metrics or not run.has(task):
                continue
            values = [f"{name} {value:.4f}" for name in metrics if isinstance(value := run.metric(task, name), float)]
            if values:
                lines.append(f"{task} / {run.model}: " + ", ".join(values))
    return lines


def page_data(
    runs: Sequence[Run],
    docs_loader: DocsLoader = lmms_docs,
    out: Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Everything the page shows, as the JSON embedded in it (with ``out``, the page's folder, the full-size images
    are written beside it and the notes name paths relative to it)."""
    groups, notes = collect(runs)
    full_size = out / FULL_SIZE_DIR if out is not None else None
    uris, full, image_notes = attach_images(groups, docs_loader, full_size, progress)
    notes += image_notes
    if out is not None:
        notes = [shown(note, out) for note in notes]
    tasks = sorted({group.task for group in groups})
    return {
        "models": [run.model for run in runs],
        "page_rows": PAGE_ROWS,
        "notes": notes,
        "metrics": _summaries(runs, tasks),
        "images": uris,
        "full": full,
        "rows": [
            {
                "t": group.task,
                "l": group.label,
                "k": group.category,
                "p": group.prompt,
                "e": group.expected,
                "i": group.images,
                "c": {str(model): cell.to_json() for model, cell in sorted(group.cells.items())},
            }
            for group in groups
        ],
    }


TITLE = "Scientific-figure benchmarks: per-sample viewer"
TEMPLATE = "samples.html"
"""The page's template in :data:`TEMPLATES` (package data); it includes ``samples.css`` and ``samples.js`` inline."""
TEMPLATES = "templates"


def script_json(data: Any) -> Markup:
    """``data`` as JSON text safe inside a ``<script type="application/json">`` element (the browser never parses
    its text as HTML): every ``</`` is written ``<\\/`` and every ``<!--`` ``<\\u0021--`` (the same strings to
    ``JSON.parse``), so no text in the data can end the element (a model output holding ``</script>``) or keep it
    open past its end tag (``<!--<script>`` would switch the HTML parser into the state where ``</script>`` ends
    nothing, and the page's code would become part of the data)."""
    from markupsafe import Markup

    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return Markup(text.replace("</", "<\\/").replace("<!--", "<\\u0021--"))


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja2 environment of the page's templates: HTML autoescaping on (every ``{{ value }}`` is escaped unless
    a filter marks it safe, as :func:`script_json` does), the templates' final newlines kept."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader(__package__ or "scifig_tasks.report", TEMPLATES),
        autoescape=True,
        keep_trailing_newline=True,
        undefined=StrictUndefined,
    )
    env.filters["script_json"] = script_json
    return env


def render_page(data: Mapping[str, Any]) -> str:
    """The page's HTML with ``data`` (:func:`page_data`) embedded."""
    return environment().get_template(TEMPLATE).render(title=TITLE, data=data)


def write_samples_page(
    runs: Sequence[Run], out: Path, docs_loader: DocsLoader = lmms_docs, progress: Progress | None = None
) -> Path:
    """Write ``out/samples.html`` and return its path."""
    data = page_data(runs, docs_loader, out, progress)
    page = out / "samples.html"
    out.mkdir(parents=True, exist_ok=True)
    page.write_text(render_page(data), encoding="utf-8")
    return page
