"""``scifig_chance`` for VLMEvalKit: the chance baseline of :mod:`scifig_tasks.core.chance` as a VLMEvalKit model,
so ``scifig vlmeval --model scifig_chance`` runs offline, with no API and no weights.

Manual: docs/vlmeval.md, "How the chance model finds the question".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vlmeval.vlm.base import BaseModel

from scifig_tasks.core import chance, registry, task_files, task_yaml

MODEL_NAME = "scifig_chance"
"""The name ``scifig vlmeval --model`` takes (the lmms-eval model's)."""


@dataclass(frozen=True)
class Questions:
    """One dataset's questions as lmms-eval numbers them: first image file name -> (task, split, document index),
    and each task's data source (its chance rule)."""

    sources: Mapping[str, str]
    place: Mapping[str, tuple[str, str, int]]


def _task_facts(task: str) -> tuple[str, str]:
    """The ``scifig_source`` and ``test_split`` of an lmms-eval task, read from its YAML (``include`` resolved)."""
    info = task_files.scifig_tasks()[task]
    config = task_yaml.resolved(info.path)
    return str((config.get("metadata") or {}).get("scifig_source")), str(config.get("test_split"))


def _first_image(cell: Any) -> str:
    return os.path.basename(cell if isinstance(cell, str) else cell[0])


def questions(dataset: str, data: Any) -> Questions:
    """Where each row of ``data`` (the dataset's TSV as VLMEvalKit loaded it) stands among lmms-eval's documents;
    raises ``ValueError`` (one line) for a dataset whose rows cannot be placed or that has no chance answer."""
    from scifig_tasks.vlmeval import names
    from scifig_tasks.vlmeval.tsv import row_of

    tasks = task_files.scifig_tasks()
    info = tasks.get(dataset)
    if info is None:
        raise ValueError(f"scifig_chance answers scifig's datasets only: {dataset!r} is not one")
    lines = list(data.to_dict("records"))
    place: dict[str, tuple[str, str, int]] = {}
    if dataset in names.GENERIC:  # its lines name their documents
        facts: dict[str, tuple[str, str]] = {}
        for line in lines:
            task = str(line["task"])
            facts.setdefault(task, _task_facts(task))
            place[_first_image(line["image_path"])] = (task, facts[task][1], int(line["doc"]))
        return _checked(dataset, {task: source for task, (source, _) in facts.items()}, place, len(lines))
    if not info.is_group:
        source, split = _task_facts(dataset)
        for line in lines:
            place[_first_image(line["image_path"])] = (dataset, split, int(line["index"]))
    else:
        field, naming = registry.benchmarks()[info.benchmark].report.sample_tasks.get(dataset, (None, None))
        if field is None:
            raise ValueError(
                f"scifig_chance cannot tell which of {dataset!r}'s lmms-eval tasks ({', '.join(info.members)}) a "
                f"question belongs to: run it with lmms-eval (scifig eval --model scifig_chance --tasks {dataset})"
            )
        counts: dict[str, int] = {}
        facts = {member: _task_facts(member) for member in info.members}
        for line in lines:
            value = row_of(dataset, line)[field]
            task = naming.format(value) if isinstance(naming, str) else naming[value]
            place[_first_image(line["image_path"])] = (task, facts[task][1], counts.get(task, 0))
            counts[task] = counts.get(task, 0) + 1
        (source,) = {source for source, _ in facts.values()}
    return _checked(dataset, {task: source for task, _, _ in place.values()}, place, len(lines))


def _checked(
    dataset: str, sources: Mapping[str, str], place: Mapping[str, tuple[str, str, int]], lines: int
) -> Questions:
    """The questions, once every line has an image name of its own (several questions may share one image: the
    names carry the line's index) and every task's source has a chance answer."""
    if len(place) != lines:
        raise ValueError(f"scifig_chance cannot tell {dataset!r}'s questions apart: lines share an image file name")
    for source in dict.fromkeys(sources.values()):
        try:
            chance.answer_space(source)
        except ValueError as exc:
            raise ValueError(f"scifig_chance cannot answer dataset {dataset!r}: {exc}") from None
    return Questions(sources, place)


class SciFigChance(BaseModel):
    """VLMEvalKit's model API (``generate_inner(message, dataset)``) over :func:`scifig_tasks.core.chance.guess`."""

    INTERLEAVE = True
    is_api = False

    def __init__(self, seed: int | str = 0, **kwargs: Any) -> None:
        if kwargs:
            raise ValueError(f"scifig_chance: unknown options {sorted(kwargs)} (supported: seed)")
        super().__init__()
        self.seed = int(seed)
        self._questions: dict[str, Questions] = {}

    def _of(self, dataset: str | None) -> Questions:
        if dataset not in self._questions:
            loaded = getattr(self.dump_image_func, "__self__", None)  # the dataset VLMEvalKit is running
            if dataset is None or getattr(loaded, "dataset_name", None) != dataset:
                raise ValueError(f"scifig_chance answers within a scifig dataset run by VLMEvalKit, not {dataset!r}")
            self._questions[dataset] = questions(dataset, loaded.data)
        return self._questions[dataset]

    def generate_inner(self, message: list[dict[str, str]], dataset: str | None = None) -> str:
        found = self._of(dataset)
        images = [item["value"] for item in message if item["type"] == "image"]
        where = found.place.get(os.path.basename(images[0])) if images else None
        if where is None:
            raise ValueError(f"scifig_chance: a {dataset} question whose image is not one of the dataset's rows")
        prompt = "".join(item["value"] for item in message if item["type"] == "text")
        return chance.guess(prompt, found.sources[where[0]], self.seed, salt=chance.salt(*where))
