"""A task's documents for the per-sample viewer without lmms-eval: the split its YAML names, loaded and filtered as
lmms-eval's loading of this package's tasks does, so ``docs[doc_id]`` is the document a logged sample answered.

lmms-eval routes the data of a task whose YAML ``metadata`` names a ``scifig_source`` through
:func:`scifig_tasks.lmms_eval.plugin.load_task_data`: the source's split (``test_split``) from
:func:`scifig_tasks.core.data.load_benchmark` (``dataset_path`` as the Hub id), images left as stored bytes
(:func:`scifig_tasks.core.image_cells.undecoded`), then the YAML's ``process_docs``. This module does those same steps
from the YAML itself: its ``include`` chain applied as lmms-eval applies it (the first included file wins among several,
the including file's keys replace theirs) and a ``!function module.name`` tag resolved as lmms-eval resolves it
(``module.py`` beside the YAML that holds the tag), both read by :mod:`scifig_tasks.core.task_files`. Importing
lmms-eval and indexing its thousands of task YAMLs takes longer than the rest of a report, so the viewer asks lmms-eval
only for a task this module cannot read (:func:`scifig_tasks.report.sample_documents.lmms_docs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scifig_tasks.core import registry, task_files, task_yaml


def readable(tasks: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The resolved YAML of each of ``tasks`` this module can load: a task (not a group) of a registered benchmark's
    task folder whose ``metadata.scifig_source`` names a registered source."""
    infos = task_files.scifig_tasks()
    sources = registry.sources()
    found = {}
    for task in tasks:
        info = infos.get(task)
        if info is None or info.is_group:
            continue
        config = task_yaml.resolved(info.path)
        metadata = config.get("metadata")
        if isinstance(metadata, Mapping) and metadata.get("scifig_source") in sources:
            found[task] = config
    return found


def documents(config: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The documents of one task from its resolved YAML (:func:`readable`), in ``doc_id`` order."""
    from scifig_tasks.core.data import load_benchmark
    from scifig_tasks.core.image_cells import undecoded

    source = registry.sources()[config["metadata"]["scifig_source"]]
    loaded = undecoded(
        load_benchmark(
            source, split=config.get("test_split"), hub_path=config.get("dataset_path"), reader=config.get("task")
        )
    )
    process = config.get("process_docs")
    return process.resolve()(loaded) if isinstance(process, task_yaml.FunctionTag) else loaded
