"""The VLMEvalKit dataset class of every registered task and group that no description lists: one class, driven by
the task's own YAML hooks (:mod:`scifig_tasks.vlmeval.task_hooks`).

Manual: docs/vlmeval.md, "How a task's YAML becomes a dataset".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scifig_tasks.core import registry
from scifig_tasks.core.judge import task_scope
from scifig_tasks.vlmeval import names, task_hooks
from scifig_tasks.vlmeval.base import Message, flattened, segments_message
from scifig_tasks.vlmeval.datasets import SciFigDataset


class SciFigTask(SciFigDataset):
    """Any registered lmms-eval task or group no description lists, as a VLMEvalKit dataset of the same name."""

    NAMES = names.GENERIC

    def __init__(self, dataset: str = "", skip_noimg: bool = True) -> None:
        name = dataset or self.NAMES[0]
        owner = registry.benchmark_of(name)
        if owner is None:
            raise ValueError(f"{name}: no registered benchmark owns it")
        self.BENCHMARK = owner.name
        self._results: dict[str, dict[str, Any]] = {}
        super().__init__(dataset=name, skip_noimg=skip_noimg)

    def build_prompt(self, line: int | Mapping[str, Any]) -> Message:
        line = self._row(line)
        segments, _ = task_hooks.prompt(str(line["task"]), int(line["doc"]))
        return segments_message(segments, self.dump_image(line))

    def doc(self, line: Mapping[str, Any]) -> dict[str, Any]:
        """The document a line asks (as ``process_results`` gets it)."""
        return task_hooks.scoring_document(str(line["task"]), int(line["doc"]))

    def score(self, line: Mapping[str, Any], reply: str | None) -> dict[str, Any]:
        task, position = str(line["task"]), int(line["doc"])
        return {"task": task, "doc_id": position, **task_hooks.score(task, position, reply)}

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        by_task: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            by_task.setdefault(record["task"], []).append(record)
        results: dict[str, dict[str, Any]] = {}
        for task, scored in by_task.items():
            with task_scope(task):
                results[task] = {**task_hooks.aggregate(task, scored), "samples": len(scored)}
        name = self.dataset_name
        if name not in results:  # a group
            sizes = {task: entry["samples"] for task, entry in results.items()}
            with task_scope(name):
                results = {
                    name: {**task_hooks.aggregate_group(name, results, sizes), "samples": len(records)},
                    **results,
                }
        self._results = results
        return flattened(name, results)

    def extra_scores(self) -> dict[str, Any]:
        return {"results": self._results}
