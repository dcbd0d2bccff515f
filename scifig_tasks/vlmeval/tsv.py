"""VLMEvalKit TSV files of this package's benchmarks, written from the same data the lmms-eval tasks read.

Manual: docs/vlmeval.md, "Data and TSV files" and "How the TSV files are written".
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from scifig_tasks.core import checked_images, provenance, registry
from scifig_tasks.core.benchmark import VlmevalDataset
from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.image_cells import undecoded
from scifig_tasks.core.images import decoded_pixels, stored_bytes, to_rgb
from scifig_tasks.core.schema import BenchmarkSource
from scifig_tasks.core.validation_records import files_identity
from scifig_tasks.vlmeval import names, task_hooks
from scifig_tasks.vlmeval.tsv_layout import TsvFormat
from scifig_tasks.vlmeval.tsv_layout import read_tsv as read_tsv  # the reader of what write_tsv writes

if TYPE_CHECKING:
    import datasets

FORMAT_VERSION = 3
"""Bumped whenever the TSV layout changes, so cached TSVs are rewritten (2: rows end in CRLF, so a field holding a
carriage return is quoted; 3: images with an opaque alpha channel are written as stored, not re-encoded)."""

Row = Mapping[str, Any]
Keep = Callable[[Row], bool] | None
"""Which source rows a dataset keeps (``None``: all)."""


@dataclass(frozen=True)
class TsvSpec:
    """One VLMEvalKit dataset: its source split, its benchmark's TSV format and which rows it keeps."""

    name: str
    source: BenchmarkSource
    split: str
    format: TsvFormat
    keep: Keep = None


@dataclass(frozen=True)
class TaskTsv:
    """A dataset served from its task's YAML hooks (:mod:`scifig_tasks.vlmeval.task_hooks`): one row per question
    of its leaf tasks, in lmms-eval's order, with the prompt's images (``image``, ``image_path``), its text
    (``question``, for reading), the leaf ``task`` and the document's index in it (``doc``)."""

    name: str
    tasks: tuple[str, ...]

    @property
    def source(self) -> BenchmarkSource:
        """The data source of its first task (the one a data error names)."""
        return task_hooks.leaf(self.tasks[0]).source

    def sources(self) -> dict[str, tuple[BenchmarkSource, tuple[str, ...]]]:
        """Source key -> the source and the splits its tasks read, in task order."""
        found: dict[str, tuple[BenchmarkSource, tuple[str, ...]]] = {}
        for task in self.tasks:
            leaf = task_hooks.leaf(task)
            source, splits = found.get(leaf.source_key, (leaf.source, ()))
            found[leaf.source_key] = (source, splits if leaf.split in splits else (*splits, leaf.split))
        return found


def _spec(dataset: VlmevalDataset, source: BenchmarkSource, formats: Mapping[str, str]) -> TsvSpec:
    tsv_format = registry.load_reference(formats[dataset.source])
    if not isinstance(tsv_format, TsvFormat):
        raise TypeError(f"{formats[dataset.source]} (the TSV format of {dataset.name}) is not a TsvFormat")
    return TsvSpec(dataset.name, source, dataset.split, tsv_format, dataset.keep)


@functools.cache
def specs() -> dict[str, TsvSpec]:
    """VLMEvalKit dataset name (:mod:`scifig_tasks.vlmeval.names`: the lmms-eval task names) -> how its TSV is built,
    for every dataset of every registered description: its source (:func:`scifig_tasks.core.registry.sources`), split
    and rows kept, and the TSV format its description names for that source. Built on first use (a description's
    format may live in a module that imports this one). An old ``SciFig_*`` name finds its dataset's spec too
    (:func:`spec`), so files written under it stay readable."""
    sources = registry.sources()
    return {
        dataset.name: _spec(dataset, sources[dataset.source], described.vlmeval.tsv_formats)
        for described in registry.benchmarks().values()
        if described.vlmeval is not None
        for dataset in described.vlmeval.datasets
    }


def row_of(name: str, line: Row) -> dict[str, Any]:
    """The benchmark row (published / core field names and types) that a TSV line of dataset ``name`` holds: the
    inverse of how :func:`rows` wrote it (images excepted). A dataset served from its task's hooks has no row layout:
    its line names its document (``task``, ``doc``)."""
    found = spec(name)
    if isinstance(found, TaskTsv):
        raise TypeError(f"{name} is served from its task's hooks: its lines name their documents (task, doc)")
    return found.format.row(line)


# ---- images --------------------------------------------------------------------------------------------------------


def image_bytes(cell: Any) -> tuple[bytes, str]:
    """The bytes written for an image cell and their file extension: the stored bytes, or the PNG of
    :func:`to_rgb` (transparency composited on white) for other pixel modes. The pixels are decoded here, strictly
    (the TSV is what VLMEvalKit builds its requests from): damaged pixel data raises the data check's file, row and
    column. Stored bytes that passed once, or that their builder vouched for, are not decoded again
    (:mod:`scifig_tasks.core.checked_images`)."""
    data, extension, _ = _image_file(cell)
    return data, extension


def _image_file(cell: Any) -> tuple[bytes, str, str]:
    """:func:`image_bytes` and the SHA-256 (hex) of the bytes written."""
    try:
        data = stored_bytes(cell)
    except OSError:
        data = None  # a file that cannot be read: decoding it below raises the data check's error
    digest = hashlib.sha256(data).hexdigest() if data is not None else ""
    known = checked_images.passed(digest) if data is not None else None
    if data is not None and known is not None:
        return data, known, digest
    image = decoded_pixels(cell)
    if data is None or not checked_images.usable_as_stored(image) or image.format not in checked_images.EXTENSIONS:
        buffer = io.BytesIO()
        to_rgb(image).save(buffer, format="PNG")
        converted = buffer.getvalue()
        return converted, "png", hashlib.sha256(converted).hexdigest()
    extension = checked_images.EXTENSIONS[image.format]
    checked_images.remember_passed(digest, extension)
    return data, extension, digest


def _image_columns(index: int, cells: list[Any]) -> dict[str, str]:
    encoded, names = [], []
    for position, cell in enumerate(cells):
        data, extension, digest = _image_file(cell)
        encoded.append(base64.b64encode(data).decode("ascii"))
        names.append(f"{index}_{position}_{digest[:16]}.{extension}")
    if len(cells) == 1:
        return {"image": encoded[0], "image_path": names[0]}
    return {"image": json.dumps(encoded), "image_path": json.dumps(names)}


# ---- building and caching ------------------------------------------------------------------------------------------


IMAGE_COLUMNS = ("index", "image", "image_path")
"""The first columns of every row: its position, its image(s) in base64 and their file names."""
TASK_COLUMNS = (*IMAGE_COLUMNS, "question", "task", "doc")
"""The columns of a dataset served from its task's hooks."""


@dataclass(frozen=True)
class Table:
    """A dataset's TSV before it is written: its columns (every column of its rows, in the order they first appear),
    how many rows and the rows, made one at a time."""

    columns: list[str]
    count: int
    rows: Iterator[dict[str, str]]


def rows(spec: TsvSpec | TaskTsv, progress: bool = False) -> Iterator[dict[str, str]]:
    """The TSV rows of ``spec`` (validated source rows; images undecoded until written), with a progress bar on stderr
    named after the dataset when ``progress``."""
    yield from table(spec, progress).rows


def table(spec: TsvSpec | TaskTsv, progress: bool = False) -> Table:
    """The TSV of ``spec``: its columns and row count (read from the rows' text, no image touched), and its rows
    (:func:`rows`)."""
    if isinstance(spec, TaskTsv):
        asked = [question for task in spec.tasks for question in task_hooks.questions(task)]
        return Table(list(TASK_COLUMNS) if asked else [], len(asked), _task_rows(spec, asked, progress))
    dataset = undecoded(load_benchmark(spec.source, spec.split, reader=spec.name))
    kept, columns = _kept(spec, dataset)
    return Table(columns, len(kept), _spec_rows(spec, dataset, kept, progress))


def _spec_rows(spec: TsvSpec, dataset: datasets.Dataset, kept: list[int], progress: bool) -> Iterator[dict[str, str]]:
    bar = tqdm(kept, desc=f"{spec.name} TSV", unit="row", disable=not progress, file=sys.stderr)
    for index, position in enumerate(bar):
        row = dataset[position]
        cells = row[spec.format.image_column]
        cells = list(cells) if isinstance(cells, list) else [cells]
        yield {"index": str(index), **_image_columns(index, cells), **spec.format.columns(row)}


def _task_rows(spec: TaskTsv, asked: list[tuple[str, int]], progress: bool) -> Iterator[dict[str, str]]:
    """The rows of a dataset served from its task's hooks: each question's prompt images, written as
    :func:`image_bytes` writes a stored image, and its text."""
    bar = tqdm(asked, desc=f"{spec.name} TSV", unit="row", disable=not progress, file=sys.stderr)
    for index, (task, position) in enumerate(bar):
        segments, images = task_hooks.prompt(task, position)
        cells = [{"bytes": task_hooks.image_file_bytes(image), "path": None} for image in images]
        text = "".join(segment for segment in segments if isinstance(segment, str))
        yield {
            "index": str(index),
            **_image_columns(index, cells),
            "question": text,
            "task": task,
            "doc": str(position),
        }


def _kept(spec: TsvSpec, dataset: datasets.Dataset) -> tuple[list[int], list[str]]:
    """The positions of the source rows ``spec`` keeps and the columns of their TSV rows, read without their images
    (so the bar knows its total and the header is written first)."""
    texts = dataset.remove_columns([spec.format.image_column])
    kept: list[int] = []
    columns: dict[str, None] = {}
    for position, row in enumerate(texts):
        if spec.keep is None or spec.keep(row):
            kept.append(position)
            columns |= dict.fromkeys((*IMAGE_COLUMNS, *spec.format.columns(row)))
    return kept, list(columns)


def fingerprint(spec: TsvSpec | TaskTsv, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Where the rows come from: the local data (path, sizes, modification times) or the Hub id, and the format; for
    a dataset served from its task's hooks, that of each source it reads, and its benchmark's task version (a
    changed prompt moves the version)."""
    environ = os.environ if environ is None else environ
    if isinstance(spec, TaskTsv):
        owner = registry.benchmark_of(spec.name)
        origin: dict[str, Any] = {"dataset": spec.name, "format": FORMAT_VERSION, "tasks": list(spec.tasks)}
        origin["version"] = owner.version if owner is not None else None
        origin["sources"] = {
            key: {"splits": list(splits), **_where(source, environ)} for key, (source, splits) in spec.sources().items()
        }
        return origin
    return {"dataset": spec.name, "format": FORMAT_VERSION, "split": spec.split, **_where(spec.source, environ)}


def _where(source: BenchmarkSource, environ: Mapping[str, str]) -> dict[str, Any]:
    local = source.local_path(environ)
    if local is None:
        origin: dict[str, Any] = {"hub": source.hub_path or "default"}
        if source.hub_path:
            origin["revision"] = source.hub_revision(environ) or "main"
        return origin
    return {"local": str(local.resolve()), "files": files_identity([local])}


def write_tsv(name: str, directory: Path) -> tuple[Path, int]:
    """Write ``<directory>/<name>.tsv`` (and its source record), one row at a time; return the path and the number of
    rows."""
    found = spec(name)
    directory.mkdir(parents=True, exist_ok=True)
    written = table(found, progress=True)
    path = directory / f"{name}.tsv"
    partial = path.with_suffix(".tsv.partial")
    try:
        with partial.open("w", encoding="utf-8", newline="") as out:
            out.write(tsv_line(written.columns))
            for row in written.rows:
                out.write(tsv_line([row.get(column) for column in written.columns]))
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(path)
    keys = list(found.sources()) if isinstance(found, TaskTsv) else [_source_name(found)]
    loaded = provenance.loaded_data(keys)
    _record_path(path).write_text(json.dumps({**fingerprint(found), provenance.DATA: loaded}, indent=1))
    return path, written.count


_QUOTED = ("\t", '"', "\r", "\n")
"""A cell holding a tab, a quote or a line terminator character is quoted (each looked for with ``in``: a regular
expression reads a base64 image's characters one at a time, hundreds of times slower)."""


def tsv_line(cells: Sequence[Any]) -> str:
    """One TSV line, as pandas' ``to_csv(sep="\\t", index=False, lineterminator="\\r\\n")`` writes a table of
    strings (Python's csv writer, minimal quoting): a cell holding a tab, a quote, a carriage return or a line feed is
    quoted, its quotes doubled (with ``"\\r\\n"`` a bare carriage return in a question, which published text has,
    is quoted too, where pandas' reader would otherwise end the row there); a missing cell (``None``, NaN) is empty;
    a line of one empty cell is ``""``. Written here because the csv writer copies every character of a cell, the
    base64 images included, one at a time."""
    texts = ["" if cell is None or (isinstance(cell, float) and math.isnan(cell)) else str(cell) for cell in cells]
    if texts == [""]:
        return '""\r\n'
    return "\t".join(_quoted(text) if any(c in text for c in _QUOTED) else text for text in texts) + "\r\n"


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _source_name(found: TsvSpec) -> str:
    """The registry name of the spec's source (the key of the environment block's ``data``)."""
    return next((key for key, source in registry.sources().items() if source == found.source), found.source.name)


def ensure_tsv(name: str, directory: Path) -> Path:
    """The TSV of ``name`` in ``directory``, (re)written when missing or when its source changed."""
    path = directory / f"{name}.tsv"
    record = _record_path(path)
    current = fingerprint(spec(name))
    if path.exists() and record.exists():
        written = json.loads(record.read_text())
        if isinstance(written, dict) and {k: v for k, v in written.items() if k != provenance.DATA} == current:
            return path
    write_tsv(name, directory)
    return path


def data_of(path: Path) -> dict[str, Any]:
    """Which data the TSV at ``path`` was written from (source -> origin, revision, rows); empty for a TSV written
    before scifig recorded it, or without its record."""
    try:
        written = json.loads(_record_path(path).read_text())
    except (OSError, ValueError):
        return {}
    found = written.get(provenance.DATA) if isinstance(written, dict) else None
    return found if isinstance(found, dict) else {}


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + ".scifig.json")


def spec(name: str) -> TsvSpec | TaskTsv:
    """The spec of dataset ``name``, today's or a deprecated one (mapped silently: a reader of old files); a dataset
    no description lists is served from its task's hooks (:class:`TaskTsv`)."""
    known = specs()
    found = known.get(names.DEPRECATED.get(name, name))
    if found is None and name in names.GENERIC:
        return TaskTsv(name, tuple(task_hooks.leaves(name)))
    if found is None:
        raise KeyError(f"unknown scifig VLMEvalKit dataset {name!r} (known: {', '.join(names.DATASETS)})")
    return found


def lmu_data_root(environ: Mapping[str, str] | None = None) -> Path:
    """VLMEvalKit's data folder: ``$LMUData`` when it exists, else ``~/LMUData`` (VLMEvalKit's own rule)."""
    value = (os.environ if environ is None else environ).get("LMUData")
    if value and Path(value).exists():
        return Path(value)
    return Path.home() / "LMUData"
