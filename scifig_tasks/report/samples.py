"""``samples.html``: the per-sample viewer written beside ``report.html`` by ``scifig report``.

One row per evaluated document: thumbnails of its image(s) (several images are the question's options, each labelled
with its letter A, B, C... in the order the document lists them: SciFIBench Caption→Figure), the prompt, the
expected answer and, for every model (one column each, the same document of several models in one row), the raw
output, the answer read from it, how it was read and whether it counted as correct. Every benchmark keeps its own
scoring rule (the per-sample records its scorer logged, nothing is re-scored here); the page renders them by the
records' shape, whatever the benchmark:

* SciFIBench (Roberts et al. 2024) and MMSci multiple choice (Li et al. 2025): the letter resolved from the output by
  rule, by the judge, or left unresolved (counted wrong), with the reason;
* GRAB (Roberts et al. 2024): exact match of the output against the answer, with the output status and, under the
  LLM-extraction ablation, the judge's extracted answer;
* Plot Twist (Razeghi et al. 2024): the extracted number and the standard / relaxed (5%) / range-based accuracies;
  "correct" is the standard (exact) accuracy;
* MMSci captioning: the output caption against the reference; captioning metrics are corpus-level, so the page shows
  each run's metrics once and no per-sample correctness;
* any other record: its ``correct`` field (or the sample's ``accuracy``).

Rule: this module keeps only generic rendering and names no benchmark. Every per-benchmark fact is read from the
registered descriptions (:mod:`scifig_tasks.core.registry`): which tasks are a benchmark's
(:func:`~scifig_tasks.core.registry.of_task`), the record fields naming a document (``document_id``), the documents'
image columns (the image columns of its ``sources``), how a VLMEvalKit dataset spanning a group splits into its tasks
(``report.sample_tasks``) and which corpus-level metrics to show once per run (``report.corpus_metrics``).

lmms-eval's sample logs keep ``doc_id`` but not the document, so images come from the task's documents loaded as
lmms-eval loads them (read from the task's YAML by :mod:`scifig_tasks.report.task_docs`, else by lmms-eval through
:mod:`scifig_tasks.lmms_eval.docs`; the same ``SCIFIG_<BENCH>_DATA`` or Hub source as the run; Hub data from the local
cache only, never downloaded);
VLMEvalKit records are matched to the rows of the run's ``$LMUData/<dataset>.tsv``. When documents cannot be loaded
the samples are listed without figures and the page says why.

The page is static (inline CSS, script and data; no external address), rendered from Jinja2 templates, package
data in ``scifig_tasks/report/templates`` (``samples.html`` including ``samples.css`` and ``samples.js``), with HTML
autoescaping on; the data is embedded as JSON made safe for its ``<script>`` element (:func:`script_json`). Rule: the
page stays in Python strings only if that is >= 1.5x faster than the templates at writing the same page, measured in
the same run (``python -m tests.perf.bench_sample_pages``: 600 documents x 3 models, 3 MB of HTML, byte-identical
pages): it was not (strings 1.03x as fast for the whole page, 46 ms against 48 ms; 0.98x for the render alone, 1.10x
for a first render that loads and compiles the templates). Texts longer than :data:`TEXT_CAP` characters are cut
in the page (the sample logs keep them).
Rule for many documents (``samples.js``): the page holds :data:`PAGE_ROWS` documents at a time; the filters run over
all of them and the page's rows are built when that page is first shown, so the page of 16 runs of the full GRAB
set is ready in under a second where building every row took half a minute (``python -m tests.perf.bench_report``).
The page number is kept in the address with the filters (``#task=grab_series&page=3``); a changed filter shows
page 1.
Rule for long fields (``samples.js``): every text field (prompt, expected answer, output, the answer read from it,
how it was resolved) longer than 600 characters or 8 lines shows its first 8 lines or 600 characters, whichever is
shorter, then a "show all" control revealing the rest ("show less" folds it again); every field wraps anywhere
(``overflow-wrap: anywhere``, a ``<wbr>`` every 80 characters of an unbroken run), so a 20,000-character output
without a space or line break neither widens the page nor makes its rows tall. Texts are written as DOM text
nodes only, never parsed as HTML.
Figures (:class:`Thumbnails`): each distinct image is written once into :data:`FULL_SIZE_DIR` beside the page, named
by its content's hash (PNG, JPEG, GIF and WebP bytes as stored, other formats as PNG; a file already there is kept,
so a report written again into its folder writes no figure twice). A row shows that file, scaled by the browser,
when it has at most :data:`SHOWN_AS_STORED_PX` pixels, else a thumbnail file of :data:`THUMBNAIL_PX` pixels on the
long side (JPEG, or PNG when smaller) beside it; no image is decoded for the former, so the report's folder is about
the bytes of the figures it shows and its build does not decode 2,170 figures. Every figure links to its image at
full size (GRAB asks to read values off a graph), opened by the browser offline. Without a folder (:func:`page_data`
with no ``out``) the thumbnails are data URIs. No machine path is shown: paths in the notes are the report's
relative ones.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scifig_tasks.core import registry
from scifig_tasks.core.images import check_structure, open_image, to_rgb
from scifig_tasks.report.paths import shown
from scifig_tasks.report.runs import VLMEVAL_ROW, Run

if TYPE_CHECKING:
    from jinja2 import Environment
    from markupsafe import Markup

THUMBNAIL_PX = 160
PAGE_ROWS = 50
"""Documents per page of ``samples.html`` (the data's ``page_rows``, read by ``samples.js``)."""
FULL_SIZE_DIR = "sample-figures"
"""Folder beside ``samples.html`` holding each distinct image at full size, named by its content's hash (and the
thumbnails of the images too large to show as they are)."""
SHOWN_AS_STORED_PX = 2_000_000
"""An image of at most this many pixels that a browser shows as stored is its own thumbnail (the browser scales it);
a larger one gets a thumbnail file of :data:`THUMBNAIL_PX`."""
BROWSER_FORMATS = {b"\x89PNG\r\n\x1a\n": "png", b"\xff\xd8\xff": "jpg", b"GIF87a": "gif", b"GIF89a": "gif"}
"""Leading bytes of image files a browser shows as they are (WebP: ``RIFF....WEBP``)."""
JPEG_QUALITY = 70
FEW_COLOURS = 256
"""A thumbnail with at most this many colours is also tried as PNG."""
TEXT_CAP = 20_000
"""Characters of a prompt, output or reference kept in the page (the page's "show all" unfolds up to this)."""
TSV_IMAGE_COLUMN = "image"
"""The image column of a VLMEvalKit TSV row: base64 (a JSON list of base64 for several images)."""

DocsLoader = Callable[[list[str]], dict[str, "Sequence[Mapping[str, Any]] | str"]]
"""``task names -> {task: documents in doc_id order, or the reason they could not be loaded}``."""


@dataclass
class Cell:
    """One model's answer to one document."""

    output: str
    resolved: str
    method: str
    reason: str
    correct: bool | None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "o": self.output,
            "a": self.resolved,
            "m": self.method,
            "r": self.reason,
            "c": self.correct,
            **({"d": self.detail} if self.detail else {}),
        }


@dataclass
class Group:
    """One document of one task, with every model's answer to it."""

    task: str
    doc_id: int
    label: str
    category: str
    prompt: str
    expected: str
    source: tuple[str, str, int]
    """Where its document comes from: ``("lmms", task, doc_id)`` or ``("vlmeval", dataset, row)``."""
    keys: dict[str, str] = field(default_factory=dict)
    """The record's id fields (:func:`document_id`), checked against the loaded document."""
    cells: dict[int, Cell] = field(default_factory=dict)
    images: list[int] = field(default_factory=list)


# ---- reading the per-sample records ---------------------------------------------------------------------------------


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n---\n".join(_text(item) for item in value) if len(value) != 1 else _text(value[0])
    return str(value)


def _capped(text: str) -> str:
    if len(text) <= TEXT_CAP:
        return text
    return text[:TEXT_CAP] + f"\n[... {len(text) - TEXT_CAP} more characters in the sample log]"


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


def _record(sample: Mapping[str, Any]) -> dict[str, Any]:
    for name in ("breakdown", "caption_report"):
        if isinstance(sample.get(name), dict):
            return sample[name]
    return {}


def _flags(record: Mapping[str, Any]) -> list[str]:
    """Output problems and judge use worth showing beside the answer."""
    flags = []
    status = _first(record.get("output_status"))
    if status not in (None, "ok"):
        flags.append(f"output {status}")
    judge = _first(record.get("judge"))
    if judge not in (None, "not_used"):
        flags.append(f"judge {judge}")
    return flags


def cell_of(task: str, sample: Mapping[str, Any]) -> Cell:
    """A model's answer from its logged sample (lmms-eval line or VLMEvalKit record)."""
    record = _record(sample)
    output = _capped(_text(sample.get("filtered_resps", record.get("prediction"))))
    correct: bool | None = None
    if "correct" in record:
        correct = bool(record["correct"])
    elif isinstance(sample.get("accuracy"), (int, float)):
        correct = bool(sample["accuracy"])
    flags = _flags(record)
    if "resolution" in record:  # multiple choice: SciFIBench, MMSci, GRAB's multiple-choice ablation
        letter = record.get("predicted", record.get("letter"))
        return Cell(output, _text(letter), str(record["resolution"]), _text(record.get("reason")), correct)
    if "standard" in record:  # Plot Twist: one entry per repeat
        extracted = record.get("extracted") or []
        scores = ", ".join(
            f"{name} {'✓' if all(record.get(name) or [0]) else '✗'}" for name in ("standard", "relaxed", "range")
        )
        source = _first(record.get("answer_source")) or ""
        method = {"rule": "rule", "judge": "judge", "not_provided": "unresolved"}.get(source, source)
        reason = "; ".join(flags) or ("no number in the output" if method == "unresolved" else "")
        standard = record.get("standard") or []
        return Cell(output, _text(extracted), method, reason, bool(standard) and all(standard), scores)
    if "reference" in record:  # MMSci captioning: corpus-level metrics only
        reason = "empty output" if not output.strip() else ""
        return Cell(output, "", "", reason, None, "caption: scored by the corpus-level metrics above")
    if "output_status" in record:  # GRAB: exact match (judge extraction under the ablation)
        extracted = record.get("extracted")
        judge = record.get("judge")
        method = "judge extraction + exact match" if judge not in (None, "not_used") else "exact match"
        resolved = _text(extracted) if extracted is not None else output.strip()
        return Cell(output, resolved, method, "; ".join(flags), correct)
    return Cell(output, "", "", "; ".join(flags), correct)


def is_benchmark_task(task: str) -> bool:
    """Whether ``task`` belongs to a registered benchmark (:func:`scifig_tasks.core.registry.of_task`)."""
    return registry.of_task(task) is not None


def document_id(task: str) -> tuple[str, ...]:
    """The record fields naming a document of ``task`` whatever its position (its benchmark's ``document_id``): they
    line up the same document of an lmms-eval run and a VLMEvalKit run, whose positions differ; empty when no
    registered benchmark owns the task."""
    described = registry.of_task(task)
    return described.document_id if described is not None else ()


def image_columns(task: str) -> tuple[str, ...]:
    """The image columns of ``task``'s documents: every column of its benchmark's sources flagged ``image`` or
    ``image_list``, in the sources' order."""
    described = registry.of_task(task)
    if described is None:
        return ()
    found = (
        column.name
        for source in described.sources.values()
        for column in (*source.columns, *source.optional_columns)
        if column.image or column.image_list
    )
    return tuple(dict.fromkeys(found))


def viewer_task(task: str, record: Mapping[str, Any]) -> str:
    """The lmms-eval task a sample belongs to (VLMEvalKit datasets span a whole lmms-eval group): the record field
    its benchmark's ``report.sample_tasks`` names for ``task`` maps it to one of the group's tasks."""
    described = registry.of_task(task)
    split = described.report.sample_tasks.get(task) if described is not None else None
    if split is None:
        return task
    name, tasks = split
    value = record.get(name)
    if isinstance(tasks, str):
        return tasks.format(value) if value else task
    return tasks.get(value, task) if isinstance(value, str) else task


def _fields(task: str, record: Mapping[str, Any]) -> tuple[str, ...]:
    """The task's document fields when the record holds the first of them, else none."""
    fields = document_id(task)
    return fields if fields and fields[0] in record else ()


def _doc_key(task: str, record: Mapping[str, Any]) -> tuple[Any, ...] | None:
    fields = _fields(task, record)
    return tuple(str(record.get(name, "")) for name in fields) if fields else None


def _id_fields(task: str, record: Mapping[str, Any]) -> dict[str, str]:
    return {name: str(record[name]) for name in _fields(task, record) if name in record}


def _category(record: Mapping[str, Any]) -> str:
    for name in ("category", "question_type"):
        if record.get(name) not in (None, ""):
            return str(record[name])
    return ""


def sample_category(sample: Mapping[str, Any]) -> str:
    """A logged sample's category: its record's ``category`` or ``question_type`` (empty when it has neither)."""
    return _category(_record(sample))


def _label(task: str, record: Mapping[str, Any], doc_id: int) -> str:
    fields = _fields(task, record)
    if fields:
        named = [f"{name} {record[name]}" for name in fields if record.get(name) not in (None, "")]
        return f"doc {doc_id}: " + ", ".join(named)
    return f"doc {doc_id}"


def collect(runs: Sequence[Run]) -> tuple[list[Group], list[str]]:
    """Groups of the benchmarks' samples (one per document, every model's answer in it) and notes."""
    notes: list[str] = []
    entries: list[tuple[int, str, int, Mapping[str, Any], tuple[str, str, int]]] = []
    for model_index, run in enumerate(runs):
        for task, samples in sorted(run.samples.items()):
            if not is_benchmark_task(task):
                notes.append(f"{run.model}: {task} is not a benchmark of this package; its samples are not shown")
                continue
            for position, sample in enumerate(samples):
                record = _record(sample)
                doc_id = int(sample.get("doc_id", position))
                dataset = sample.get("vlmeval_dataset")
                row = int(sample.get(VLMEVAL_ROW, doc_id))  # the record's row of the dataset's TSV
                source = ("vlmeval", str(dataset), row) if dataset else ("lmms", task, doc_id)
                entries.append((model_index, viewer_task(task, record), doc_id, sample, source))
    # a document's identity: its record's own id fields, unless they repeat within one model's task
    keyed: dict[tuple[int, str], set[Any]] = {}
    unique = {}
    for model_index, task, _, sample, _ in entries:
        key = _doc_key(task, _record(sample))
        seen = keyed.setdefault((model_index, task), set())
        unique[task] = unique.get(task, True) and key is not None and key not in seen
        seen.add(key)
    groups: dict[tuple[str, Any], Group] = {}
    for model_index, task, doc_id, sample, source in entries:
        record = _record(sample)
        identity = _doc_key(task, record) if unique[task] else ("doc", doc_id, source[0])
        group = groups.get((task, identity))
        if group is None:
            group = groups[(task, identity)] = Group(
                task,
                doc_id,
                _label(task, record, doc_id),
                _category(record),
                _capped(_text(sample.get("input"))),
                _capped(_text(sample.get("target", record.get("reference", record.get("answer"))))),
                source,
                _id_fields(task, record),
            )
        elif source[0] == "lmms" and group.source[0] == "vlmeval":
            group.source, group.doc_id, group.label = source, doc_id, _label(task, record, doc_id)  # the richer prompt
            group.keys = _id_fields(task, record)
            group.prompt = _capped(_text(sample.get("input"))) or group.prompt
        group.cells[model_index] = cell_of(task, sample)
    ordered = sorted(groups.values(), key=lambda g: (g.task, g.doc_id))
    return ordered, notes


# ---- documents and thumbnails ---------------------------------------------------------------------------------------


def lmms_docs(tasks: list[str]) -> dict[str, Sequence[Mapping[str, Any]] | str]:
    """Each task's documents as lmms-eval loads them, or why they could not be loaded: read from the task's YAML
    without lmms-eval where :mod:`scifig_tasks.report.task_docs` can, else through lmms-eval
    (:mod:`scifig_tasks.lmms_eval.docs`, one task index for all tasks): all tasks at once, then one by one when that
    fails, so one missing dataset does not hide the others."""
    from scifig_tasks.report import task_docs

    found: dict[str, Sequence[Mapping[str, Any]] | str] = {}
    with hub_cache_only():
        try:
            readable = task_docs.readable(tasks)
        except Exception:  # noqa: BLE001 - a YAML this reader cannot follow: lmms-eval reads it below
            readable = {}
        for task, config in readable.items():
            try:
                found[task] = task_docs.documents(config)
            except Exception as exc:  # noqa: BLE001 - the page says why instead of failing the report
                found[task] = _why(exc)
        rest = [task for task in tasks if task not in found]
        if rest:
            found |= _lmms_eval_docs(rest)
    return found


def _why(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")


def _lmms_eval_docs(tasks: list[str]) -> dict[str, Sequence[Mapping[str, Any]] | str]:
    """The documents of ``tasks`` from lmms-eval's own task objects (see :func:`lmms_docs`)."""
    from scifig_tasks.lmms_eval.docs import load_tasks, task_manager

    found: dict[str, Sequence[Mapping[str, Any]] | str] = {}
    manager = task_manager()
    try:
        loaded = load_tasks(tasks, manager)
        return {task: loaded[task].eval_docs if task in loaded else "lmms-eval has no such task" for task in tasks}
    except Exception:  # noqa: BLE001 - retried task by task below, where the reason is kept
        pass
    for task in tasks:
        try:
            found[task] = load_tasks([task], manager)[task].eval_docs
        except Exception as exc:  # noqa: BLE001 - the page says why instead of failing the report
            found[task] = _why(exc)
    return found


@contextmanager
def hub_cache_only() -> Iterator[None]:
    """Inside the block Hub datasets load from the local cache only (``HF_HUB_OFFLINE``): the report shows the data
    the evaluation already fetched and never downloads, or waits on an unreachable Hub."""
    import datasets.config
    import huggingface_hub.constants

    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    environ = {name: os.environ.get(name) for name in names}
    flags = [
        (module, name, getattr(module, name))
        for module in (datasets.config, huggingface_hub.constants)
        for name in names
        if hasattr(module, name)
    ]
    os.environ.update(dict.fromkeys(names, "1"))
    for module, name, _ in flags:
        setattr(module, name, True)
    try:
        yield
    finally:
        for module, name, value in flags:
            setattr(module, name, value)
        for name, value in environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _vlmeval_rows(dataset: str, wanted: set[int]) -> dict[int, dict[str, str]] | str:
    """Rows (by position) of the VLMEvalKit TSV the run read, streamed; or why it is not available."""
    from scifig_tasks.vlmeval.tsv import lmu_data_root

    path = lmu_data_root() / f"{dataset}.tsv"
    if not path.is_file():
        return f"{path} not found (set LMUData to the folder the run used)"
    csv.field_size_limit(sys.maxsize)
    rows: dict[int, dict[str, str]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for position, row in enumerate(csv.DictReader(handle, delimiter="\t")):
            if position in wanted:
                rows[position] = row
    return rows


def _other_documents(docs: Any, members: list[Group]) -> str | None:
    """Why the loaded documents are not those the samples answered (another dataset, another data folder), or
    ``None``: every sample's position exists and its record's id fields equal the document's. Columns are read
    without the images where the documents allow it (a ``datasets.Dataset``)."""
    columns: dict[str, list[Any]] = {}
    names = set(getattr(docs, "column_names", ()))
    for group in members:
        position = group.source[2]
        present = position in docs if isinstance(docs, dict) else 0 <= position < len(docs)
        if not present:
            return (
                f"no document {position} (the data holds {len(docs)})"
                if not isinstance(docs, dict)
                else (f"no row {position} in the data file")
            )
        for name, logged in group.keys.items():
            if name in names:
                if name not in columns:
                    columns[name] = list(docs[name])
                loaded = columns[name][position]
            elif isinstance(docs, dict):
                loaded = docs[position].get(name)
            else:
                continue
            if loaded is not None and str(loaded) != logged:
                return f"document {position} has {name} {loaded}, the sample log {logged}"
    return None


def image_cells(doc: Mapping[str, Any], columns: Sequence[str], tsv: bool = False) -> list[Any]:
    """The document's image cells (stored bytes dicts; base64 text for a VLMEvalKit row, ``tsv``), in order, from the
    first of ``columns`` (the task's :func:`image_columns`) holding any."""
    for column in (TSV_IMAGE_COLUMN,) if tsv else columns:
        value = doc.get(column)
        if value is None or isinstance(value, str) and not tsv:
            continue
        if isinstance(value, str):  # VLMEvalKit TSV: base64, or a JSON list of base64
            if not value or value.startswith(("images/", "/")):
                continue
            encoded = json.loads(value) if value.startswith("[") else [value]
            return [{"bytes": base64.b64decode(item), "path": None} for item in encoded]
        return list(value) if isinstance(value, list) else [value]
    return []


def thumbnail_image(cell: Any, size: int = THUMBNAIL_PX) -> tuple[str, bytes]:
    """The image scaled to ``size`` pixels on its long side, as ``(format, bytes)``: JPEG, or PNG when that is smaller
    (flat drawings of a few colours). The full-size pixels are dropped before returning."""
    with open_image(cell) as image:
        image.draft("RGB", (size, size))  # JPEG: decode at a reduced scale
        rgb = to_rgb(image)
        try:
            rgb.thumbnail((size, size))
            jpeg, png = io.BytesIO(), io.BytesIO()
            rgb.save(jpeg, format="JPEG", quality=JPEG_QUALITY, optimize=True)
            if rgb.getcolors(FEW_COLOURS) is not None:
                rgb.save(png, format="PNG", optimize=True)
        finally:
            if rgb is not image:
                rgb.close()
    if 0 < png.tell() < jpeg.tell():
        return "png", png.getvalue()
    return "jpeg", jpeg.getvalue()


def thumbnail(cell: Any, size: int = THUMBNAIL_PX) -> str:
    """:func:`thumbnail_image` as a data URI (the page without a folder for its figures)."""
    kind, data = thumbnail_image(cell, size)
    return f"data:image/{kind};base64,{base64.b64encode(data).decode('ascii')}"


def browser_extension(data: bytes) -> str | None:
    """The file extension of image bytes a browser shows as they are, ``None`` for other formats."""
    for magic, extension in BROWSER_FORMATS.items():
        if data.startswith(magic):
            return extension
    return "webp" if data[:4] == b"RIFF" and data[8:12] == b"WEBP" else None


def _write_once(target: Path, write: Callable[[Path], None]) -> str:
    """``target``'s name, written by ``write`` (to a partial file, then renamed) unless a file of that name, named by
    its content, is there already."""
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        write(partial)
        partial.replace(target)
    return target.name


def write_full_size(cell: Any, data: bytes | None, folder: Path, digest: str | None) -> str:
    """Write the image of ``cell`` at full size into ``folder`` (its stored bytes when a browser shows them, else
    PNG) and return the file's name; an existing file of the same content is kept."""
    extension = browser_extension(data) if data is not None else None
    name = f"{(digest or hashlib.sha256(repr(cell).encode()).hexdigest())[:24]}.{extension or 'png'}"

    def write(partial: Path) -> None:
        if extension is not None and data is not None:
            partial.write_bytes(data)
            return
        with open_image(cell) as image:
            rgb = image if image.mode in ("RGB", "RGBA", "L", "LA", "P") else to_rgb(image)
            rgb.save(partial, format="PNG")
            if rgb is not image:
                rgb.close()

    return _write_once(folder / name, write)


def write_thumbnail(cell: Any, full: str, folder: Path) -> str:
    """The thumbnail file of the full-size image file ``full`` in ``folder``: kept when there, else made
    (:func:`thumbnail_image`) and written as ``<full's stem>.thumb.jpg`` (``.png``)."""
    stem = Path(full).stem
    for existing in (folder / f"{stem}.thumb.jpg", folder / f"{stem}.thumb.png"):
        if existing.is_file():
            return existing.name
    kind, data = thumbnail_image(cell)
    target = folder / f"{stem}.thumb.{'jpg' if kind == 'jpeg' else 'png'}"
    return _write_once(target, lambda path: path.write_bytes(data))


class Thumbnails:
    """Each distinct stored image once (by content): without a folder, a thumbnail data URI (``uris[i]``); with a
    folder (:data:`FULL_SIZE_DIR`), its file at full size there (``full[i]``, relative to the page) and what the page
    shows in a row (``uris[i]``): the full-size file itself when a browser shows it and it has at most
    :data:`SHOWN_AS_STORED_PX` pixels, else a thumbnail file beside it. Files are named by their content, so a page
    written again into the same folder reuses them. The page's image is checked as the data check does
    (:func:`scifig_tasks.core.images.check_structure`: header, size, chunk checksums) without decoding its pixels."""

    def __init__(self, folder: Path | None = None) -> None:
        self.uris: list[str] = []
        self.full: list[str] = []
        self.folder = folder
        self._index: dict[str, int] = {}
        self.failed = 0

    def add(self, cell: Any) -> int | None:
        data = cell.get("bytes") if isinstance(cell, Mapping) else None
        if data is None and isinstance(cell, Mapping) and cell.get("path"):
            data = Path(cell["path"]).read_bytes()
        digest = hashlib.sha256(data).hexdigest() if data is not None else None
        if digest is not None and digest in self._index:
            return self._index[digest]
        try:
            if self.folder is None:
                uri, full = thumbnail(cell), ""
            else:
                uri, full = self._files(cell, data, digest, self.folder)
        except Exception:  # noqa: BLE001 - a damaged image is counted and shown as missing
            self.failed += 1
            return None
        self.uris.append(uri)
        self.full.append(full)
        if digest is not None:
            self._index[digest] = len(self.uris) - 1
        return len(self.uris) - 1

    @staticmethod
    def _files(cell: Any, data: bytes | None, digest: str | None, folder: Path) -> tuple[str, str]:
        check_structure(cell)
        with open_image(cell) as image:
            width, height = image.size
        full = write_full_size(cell, data, folder, digest)
        as_stored = data is not None and browser_extension(data) is not None
        shown = full if as_stored and width * height <= SHOWN_AS_STORED_PX else write_thumbnail(cell, full, folder)
        return f"{folder.name}/{shown}", f"{folder.name}/{full}"


def attach_images(
    groups: list[Group], docs_loader: DocsLoader = lmms_docs, full_size: Path | None = None
) -> tuple[list[str], list[str], list[str]]:
    """Thumbnails for every group whose documents load: the data URIs (indexed by ``Group.images``), the full-size
    files written into ``full_size`` (paths relative to the page; empty strings without a folder) and the notes
    saying where they could not be made."""
    thumbnails = Thumbnails(full_size)
    notes: list[str] = []
    missing: dict[str, list[str]] = {}
    by_source: dict[tuple[str, str], list[Group]] = {}
    for group in groups:
        by_source.setdefault(group.source[:2], []).append(group)
    lmms_tasks = sorted(name for kind, name in by_source if kind == "lmms")
    loaded: dict[str, Sequence[Mapping[str, Any]] | str] = docs_loader(lmms_tasks) if lmms_tasks else {}
    for (kind, name), members in by_source.items():
        if kind == "lmms":
            docs: Any = loaded.get(name, "not loaded")
        else:
            docs = _vlmeval_rows(name, {group.source[2] for group in members})
        if isinstance(docs, str):
            missing.setdefault(f"documents could not be loaded ({docs})", []).append(name)
            continue
        problem = _other_documents(docs, members)
        if problem is not None:
            missing.setdefault(f"the documents found are not the ones evaluated: {problem}", []).append(name)
            continue
        for group in members:
            doc = docs[group.source[2]]
            if kind == "vlmeval":  # the TSV row: the question (not the full prompt) and the answer
                group.prompt = group.prompt or _capped(str(doc.get("question", "")))
                group.expected = group.expected or _capped(str(doc.get("answer", "")))
            for cell in image_cells(doc, image_columns(group.task), tsv=kind == "vlmeval"):
                index = thumbnails.add(cell)
                if index is not None:
                    group.images.append(index)
            del doc
    for reason, names in sorted(missing.items()):
        notes.append(f"No images for {', '.join(sorted(names))}: {reason}.")
    if thumbnails.failed:
        notes.append(f"{thumbnails.failed} images could not be decoded and are not shown.")
    return thumbnails.uris, thumbnails.full, notes


# ---- the page -------------------------------------------------------------------------------------------------------


def corpus_metrics(task: str) -> tuple[str, ...]:
    """The corpus-level metrics shown once for ``task`` (its benchmark's ``report.corpus_metrics``, by the longest
    task-name prefix that matches); empty for a task scored per sample."""
    described = registry.of_task(task)
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


def page_data(runs: Sequence[Run], docs_loader: DocsLoader = lmms_docs, out: Path | None = None) -> dict[str, Any]:
    """Everything the page shows, as the JSON embedded in it (with ``out``, the page's folder, the full-size images
    are written beside it and the notes name paths relative to it)."""
    groups, notes = collect(runs)
    uris, full, image_notes = attach_images(groups, docs_loader, out / FULL_SIZE_DIR if out is not None else None)
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


def write_samples_page(runs: Sequence[Run], out: Path, docs_loader: DocsLoader = lmms_docs) -> Path:
    """Write ``out/samples.html`` and return its path."""
    data = page_data(runs, docs_loader, out)
    page = out / "samples.html"
    out.mkdir(parents=True, exist_ok=True)
    page.write_text(render_page(data), encoding="utf-8")
    return page
