"""Every scifig task of a run, under each scoring protocol: the runs as the benchmark sections and the summary see
them (``_paper`` results as ``<model> (paper protocol)``).

Manual: docs/reports.md, "Scoring protocols in the report".
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
