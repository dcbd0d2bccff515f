"""Every scifig task of a run, under each scoring protocol: the runs as the benchmark sections and the summary see
them.

Rule (:mod:`scifig_tasks.core.scoring_protocol`): a ``_paper`` task asks the same questions as its plain twin and
scores them as the paper does. A run is shown as one row per protocol it holds: its default-protocol tasks under the
model's name, and its paper-protocol tasks under their plain names (``mmsci_paper`` -> ``mmsci``) as the model
``<model> (paper protocol)``, so each section shows a ``_paper`` result with the section's own tables, beside the
paper's published rows; the default row of a model that also has a paper row is labelled ``(default protocol)``.
Which protocol scored a task is the run's record of it (:attr:`scifig_tasks.report.runs.Run.protocols`: a forced
``scifig rescore --protocol``, the task's declared protocol, else its name). A renamed task keeps the name its
results file records (:meth:`scifig_tasks.report.runs.Run.recorded`), under which what the file keys by task (the
judge's usage) is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from scifig_tasks.core import scoring_protocol
from scifig_tasks.core.scoring_protocol import PROTOCOLS, plain_twin
from scifig_tasks.report.runs import Run

LABELS = {protocol: f"{protocol} protocol" for protocol in PROTOCOLS}


def protocol_of(run: Run, task: str) -> str:
    """The protocol that scored ``task`` in ``run``."""
    return run.protocols.get(task) or scoring_protocol.protocol_of(task)


def _renamed(mapping: Mapping[str, Any], keep: set[str]) -> dict[str, Any]:
    return {plain_twin(task): value for task, value in mapping.items() if task in keep}


def _view(run: Run, protocol: str, tasks: set[str], label: bool) -> Run:
    name = run.model
    if label and LABELS[protocol] not in name:
        name = f"{name} ({LABELS[protocol]})"
    renamed = protocol == "paper"

    def pick(mapping: Mapping[str, Any]) -> dict[str, Any]:
        return _renamed(mapping, tasks) if renamed else {k: v for k, v in mapping.items() if k in tasks}

    return replace(
        run,
        model=name,
        entries=pick(run.entries),
        samples=pick(run.samples),
        task_files=pick(run.task_files),
        data_counts=pick(run.data_counts),
        group_tasks={key: tuple(plain_twin(t) for t in value) for key, value in pick(run.group_tasks).items()},
        protocols={plain_twin(task) if renamed else task: protocol for task in tasks},
        recorded_as={plain_twin(task): run.recorded(task) for task in tasks} if renamed else dict(run.recorded_as),
        notes=list(run.notes),
    )


def protocol_views(runs: list[Run]) -> list[Run]:
    """Each run split by protocol (default first), ``_paper`` tasks under their plain names; a run holding one
    protocol stays one row, labelled only when that protocol is the paper's."""
    views: list[Run] = []
    for run in runs:
        tasks = {*run.entries, *run.samples}
        split = {protocol: {task for task in tasks if protocol_of(run, task) == protocol} for protocol in PROTOCOLS}
        held = [protocol for protocol in PROTOCOLS if split[protocol]]
        if not held:
            views.append(run)
            continue
        for protocol in held:
            views.append(_view(run, protocol, split[protocol], label=len(held) > 1 or protocol == "paper"))
    return views
