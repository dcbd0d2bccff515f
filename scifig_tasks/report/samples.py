"""``samples.html``, the per-sample viewer ``scifig report`` writes beside ``report.html``: one row per document, the
models side by side, its figures beside it. The rows come from :mod:`scifig_tasks.report.sample_records`, the
documents from :mod:`scifig_tasks.report.sample_documents`, the figures from :mod:`scifig_tasks.report.sample_figures`;
this module joins them and renders the page from its templates (``templates/samples.*``). The page and its rules:
docs/reports.md, "The sample viewer".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scifig_tasks.core import registry
from scifig_tasks.report.paths import shown
from scifig_tasks.report.progress import Progress
from scifig_tasks.report.runs import Run
from scifig_tasks.report.sample_documents import (
    DocsLoader,
    image_cells,
    image_columns,
    lmms_docs,
    other_documents,
    vlmeval_rows,
)
from scifig_tasks.report.sample_figures import FULL_SIZE_DIR, Thumbnails
from scifig_tasks.report.sample_records import Group, capped, collect

if TYPE_CHECKING:
    from jinja2 import Environment
    from markupsafe import Markup

PAGE_ROWS = 50
"""Documents per page of ``samples.html`` (the data's ``page_rows``, read by ``samples.js``)."""


def attach_images(
    groups: list[Group],
    docs_loader: DocsLoader = lmms_docs,
    full_size: Path | None = None,
    progress: Progress | None = None,
) -> tuple[list[str], list[str], list[str]]:
    """Thumbnails for every group whose documents load: the data URIs (indexed by ``Group.images``), the full-size
    files written into ``full_size`` (paths relative to the page; empty strings without a folder) and the notes
    saying where they could not be made; each step said to ``progress``."""
    notes: list[str] = []
    missing: dict[str, list[str]] = {}
    by_source: dict[tuple[str, str], list[Group]] = {}
    for group in groups:
        by_source.setdefault(group.source[:2], []).append(group)
    lmms_tasks = sorted(name for kind, name in by_source if kind == "lmms")
    if progress is not None and lmms_tasks:
        progress(f"samples.html: loading the documents of {len(lmms_tasks)} tasks for their figures")
    loaded: dict[str, Sequence[Mapping[str, Any]] | str] = docs_loader(lmms_tasks) if lmms_tasks else {}
    thumbnails = Thumbnails(full_size)
    for number, ((kind, name), members) in enumerate(by_source.items(), start=1):
        if progress is not None:
            counted = f"{len(thumbnails.uris):,} figures so far"
            progress(f"samples.html: figures of {name} ({number} of {len(by_source)} tasks, {counted})", detail=True)
        if kind == "lmms":
            docs: Any = loaded.get(name, "not loaded")
        else:
            docs = vlmeval_rows(name, {group.source[2] for group in members})
        problem = (
            f"documents could not be loaded ({docs})" if isinstance(docs, str) else _other_documents(docs, members)
        )
        if problem is not None:
            missing.setdefault(problem, []).append(name)
            continue
        _attach(members, docs, kind, thumbnails)
    for reason, names in sorted(missing.items()):
        notes.append(f"No images for {', '.join(sorted(names))}: {reason}.")
    if thumbnails.failed:
        notes.append(f"{thumbnails.failed} images could not be decoded and are not shown.")
    return thumbnails.uris, thumbnails.full, notes


def _other_documents(docs: Any, members: list[Group]) -> str | None:
    problem = other_documents(docs, members)
    return None if problem is None else f"the documents found are not the ones evaluated: {problem}"


def _attach(members: list[Group], docs: Any, kind: str, thumbnails: Thumbnails) -> None:
    """Each group's images from its document (a VLMEvalKit row also gives its question and answer)."""
    columns: dict[str, tuple[str, ...]] = {}
    for group, doc in zip(members, _documents(docs, [group.source[2] for group in members]), strict=True):
        if kind == "vlmeval":  # the TSV row: the question (not the full prompt) and the answer
            group.prompt = group.prompt or capped(str(doc.get("question", "")))
            group.expected = group.expected or capped(str(doc.get("answer", "")))
        if group.task not in columns:
            columns[group.task] = image_columns(group.task)
        for cell in image_cells(doc, columns[group.task], tsv=kind == "vlmeval"):
            index = thumbnails.add(cell)
            if index is not None:
                group.images.append(index)


ROWS_AT_ONCE = 256
"""Documents read from a ``datasets.Dataset`` in one call (a chunk of rows: their images are held together)."""


def _documents(docs: Any, positions: Sequence[int]) -> Iterator[Mapping[str, Any]]:
    """The documents at ``positions``, in that order: from a ``datasets.Dataset`` a chunk of rows per call (reading
    row by row was most of the viewer's time for a task of a few thousand questions), else one by one."""
    if isinstance(docs, Mapping) or not hasattr(docs, "column_names"):
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
