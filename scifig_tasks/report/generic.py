"""The generic report section: what ``scifig report`` shows for a registered benchmark whose description names no
section module of its own (``report.section`` empty, :class:`scifig_tasks.core.benchmark.Report`).

Manual: docs/reports.md, "The generic section".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scifig_tasks.core import registry
from scifig_tasks.core.benchmark import Benchmark
from scifig_tasks.core.stats import Tally
from scifig_tasks.report.document import Note, Section, Table, percent, percent_ci
from scifig_tasks.report.runs import Run
from scifig_tasks.report.sample_records import cell_of, sample_category

Cells = dict[str, dict[str, Any]]
"""Dimension (``overall``, ``category``) -> key -> :func:`scifig_tasks.core.stats.cell`."""


def tasks_of(benchmark: Benchmark, runs: list[Run]) -> list[str]:
    """The benchmark's tasks (and groups) found in any run, sorted: those the registry gives to it."""
    found = {task for run in runs for task in (*run.entries, *run.samples)}
    return sorted(
        task for task in found if (owner := registry.benchmark_of(task)) is not None and owner.name == benchmark.name
    )


def _counted(table: Any) -> bool:
    overall = table.get("overall") if isinstance(table, Mapping) else None
    cell = overall.get("all") if isinstance(overall, Mapping) else None
    return isinstance(cell, Mapping) and isinstance(cell.get("n"), int) and "accuracy" in cell


def cells(run: Run, task: str) -> Cells | None:
    """The run's counts on ``task``: from its breakdown, else its logged samples; ``None`` when neither has any."""
    table = run.metric(task, "breakdown")
    if _counted(table):
        return {name: dict(value) for name, value in table.items() if name in ("overall", "category")}
    tally = Tally()
    for sample in run.samples.get(task, []):
        correct = cell_of(task, sample).correct
        if correct is None:
            continue
        category = sample_category(sample)
        tally.add(correct, {"category": category} if category else {})
    return tally.to_dict() if tally.counts else None


def _shown(found: Cells | None, dimension: str, key: str) -> str:
    cell = (found or {}).get(dimension, {}).get(key)
    return "-" if not isinstance(cell, Mapping) else percent_ci(cell.get("accuracy"), cell.get("ci95"))


def _task_cell(run: Run, task: str, found: Cells | None) -> str:
    if found is not None:
        return _shown(found, "overall", "all")
    accuracy = run.metric(task, "accuracy")
    return percent(accuracy) if isinstance(accuracy, int | float) and not isinstance(accuracy, bool) else "-"


def section(benchmark: Benchmark, runs: list[Run], figdir: Path) -> Section | None:
    """The benchmark's section: accuracy (95% Wilson interval) per task and per category; ``None`` when no run has
    any of its tasks. ``figdir`` is not written (no figures)."""
    del figdir
    tasks = tasks_of(benchmark, runs)
    if not tasks:
        return None
    shown = [run for run in runs if any(run.has(task) or task in run.samples for task in tasks)]
    counted = {(run.model, task): cells(run, task) for run in shown for task in tasks}
    header = [run.model for run in shown]
    per_task = [
        [task, *(_task_cell(run, task, counted[(run.model, task)]) for run in shown)]
        for task in tasks
        if any(run.has(task) or task in run.samples for run in shown)
    ]
    per_category = []
    for task in tasks:
        found = [counted[(run.model, task)] or {} for run in shown]
        categories = list(dict.fromkeys(key for cells_ in found for key in cells_.get("category", {})))
        per_category += [[task, key, *(_shown(cells_, "category", key) for cells_ in found)] for key in categories]
    title = benchmark.title
    blocks: list[Any] = [
        Table(f"{title} accuracy per task (%, 95% Wilson interval)", ["task", *header], per_task),
        Table(
            f"{title} accuracy per category (%, 95% Wilson interval)",
            ["task", "category", *header],
            per_category,
            "none (no run recorded categories)",
        ),
        Note(
            f"{title} has no report section of its own: accuracy is counted from each run's breakdown, or from its "
            "logged samples when the results hold no counts; a value without brackets is a recorded accuracy with no "
            "counts to give an interval. No published rows are shown."
        ),
    ]
    if any(task in run.samples for run in shown for task in tasks):
        blocks.append(Note(f"Every {title} sample is listed in the sample viewer (samples.html)."))
    return Section(title, blocks)
