"""The documents behind the sample viewer's rows, for their figures: an lmms-eval task's documents read from its YAML
(:mod:`scifig_tasks.report.task_docs`) or loaded by lmms-eval, Hub data from the local cache only; a VLMEvalKit
record's row of the run's ``$LMUData/<dataset>.tsv``; each checked to be the documents the samples answered.
"""

from __future__ import annotations

import base64
import csv
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from scifig_tasks.core import registry

if TYPE_CHECKING:
    from scifig_tasks.report.sample_records import Group

TSV_IMAGE_COLUMN = "image"
"""The image column of a VLMEvalKit TSV row: base64 (a JSON list of base64 for several images)."""

DocsLoader = Callable[[list[str]], dict[str, "Sequence[Mapping[str, Any]] | str"]]
"""``task names -> {task: documents in doc_id order, or the reason they could not be loaded}``."""


def image_columns(task: str) -> tuple[str, ...]:
    """The image columns of ``task``'s documents: every column of its benchmark's sources flagged ``image`` or
    ``image_list``, in the sources' order."""
    described = registry.benchmark_of(task)
    if described is None:
        return ()
    found = (
        column.name
        for source in described.sources.values()
        for column in (*source.columns, *source.optional_columns)
        if column.image or column.image_list
    )
    return tuple(dict.fromkeys(found))


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


def data_read(tasks: list[str]) -> dict[str, tuple[Any, ...]]:
    """Each task's data as :func:`lmms_docs` loads it: the source, split and Hub id its YAML names (tasks reading
    the same split load it once together), or one key for every task lmms-eval loads."""
    from scifig_tasks.report import task_docs

    try:
        readable = task_docs.readable(tasks)
    except Exception:  # noqa: BLE001 - a YAML this reader cannot follow: lmms-eval reads it
        readable = {}
    found: dict[str, tuple[Any, ...]] = {}
    for task in tasks:
        config = readable.get(task)
        if config is None:
            found[task] = ("lmms-eval",)
        else:
            found[task] = (config["metadata"]["scifig_source"], config.get("test_split"), config.get("dataset_path"))
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
    the evaluation already fetched and never downloads, or waits on an unreachable Hub. The datasets library's
    progress bars are off inside it (``scifig report`` says its own progress)."""
    import datasets
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
    bars = not datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if bars:
            datasets.enable_progress_bars()
        for module, name, value in flags:
            setattr(module, name, value)
        for name, value in environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def vlmeval_rows(dataset: str, wanted: set[int]) -> dict[int, dict[str, str]] | str:
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


def other_documents(docs: Any, members: list[Group]) -> str | None:
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
                if name not in columns:  # the column at once (a Dataset's column read row by row: a row a call)
                    columns[name] = list(docs[name][:])
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
