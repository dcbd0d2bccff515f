"""A task's documents for the per-sample viewer without lmms-eval: the split its YAML names, loaded and filtered as
lmms-eval's loading of this package's tasks does, so ``docs[doc_id]`` is the document a logged sample answered.

Manual: docs/reports.md, "A task's documents without lmms-eval".
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


_UNDECODED: dict[int, tuple[Any, Any]] = {}
"""id of a split :func:`scifig_tasks.core.data.load_benchmark` returned -> (that split, the split with its images left
undecoded): the tasks reading one split (Plot Twist's chart types and variants, MMSci's settings) share one copy;
casting a column again for each of them was a tenth of a report's time."""


def documents(config: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The documents of one task from its resolved YAML (:func:`readable`), in ``doc_id`` order."""
    from scifig_tasks.core.data import load_benchmark
    from scifig_tasks.core.image_cells import undecoded

    source = registry.sources()[config["metadata"]["scifig_source"]]
    split = load_benchmark(
        source, split=config.get("test_split"), hub_path=config.get("dataset_path"), reader=config.get("task")
    )
    if id(split) not in _UNDECODED:  # the split itself is kept beside its copy, so its id names no other
        _UNDECODED[id(split)] = (split, undecoded(split))
    loaded = _UNDECODED[id(split)][1]
    process = config.get("process_docs")
    return process.resolve()(loaded) if isinstance(process, task_yaml.FunctionTag) else loaded
