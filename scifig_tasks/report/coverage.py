"""What a run's numbers cover, against the published set the papers' rows were computed on: the note the report
shows when a run did not score the full published set.

Manual: docs/reports.md, "What a run's numbers cover".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scifig_tasks.core import registry
from scifig_tasks.core.benchmark import PublishedSet
from scifig_tasks.report.document import Note
from scifig_tasks.report.runs import Run


def published_set(benchmark: str) -> PublishedSet:
    """The published set of the benchmark called ``benchmark`` (its description's ``report.published``); ``KeyError``
    when it has none."""
    published = registry.benchmark(benchmark).report.published
    if published is None:
        raise KeyError(f"benchmark {benchmark!r} describes no published set (report.published)")
    return published


@dataclass(frozen=True)
class Coverage:
    """What one run scored of one task, in words."""

    scored: int | None
    full: bool
    """True when nothing recorded says the run differs from the full published set."""
    text: str
    """``40 questions: not the published set of 2,170 (...)``; ``full published set (2,170 questions)``."""


def _n(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _data_counts(run: Run, published: PublishedSet, task: str) -> tuple[int | None, int | None]:
    """``(original, effective)`` summed over the task's ``n-samples`` entries (``None`` when not recorded)."""
    tasks = published.subtasks.get(task) or run.group_tasks.get(task) or (task,)
    entries = [run.data_counts[t] for t in tasks if t in run.data_counts]
    if not entries or len(entries) != len(tasks):
        return None, None
    original = [_n(e.get("original")) for e in entries]
    effective = [_n(e.get("effective")) for e in entries]
    return (
        None if None in original else sum(o for o in original if o is not None),
        None if None in effective else sum(e for e in effective if e is not None),
    )


def data_origin(run: Run, task: str, source: str) -> str | None:
    """``local`` or ``hub`` when the results file's environment block records where the data came from."""
    path = run.task_files.get(task)
    block = run.environments.get(path) if path is not None else None
    record = (block or {}).get("data") if isinstance(block, dict) else None
    entry = record.get(source) if isinstance(record, dict) else None
    if isinstance(entry, dict):
        return "local" if entry.get("local") else "hub" if entry.get("hub") else None
    return entry if entry in ("local", "hub") else None


def coverage(run: Run, benchmark: str, task: str, scored: int | None) -> Coverage:
    """What ``run`` covered of ``task`` (``scored``: the questions its breakdown counts), against the published set."""
    published = published_set(benchmark)
    size = published.questions.get(task)
    count = "-" if scored is None else f"{scored:,} questions"
    original, effective = _data_counts(run, published, task)
    limited = original is not None and effective is not None and effective < original
    if published.unpublished:
        subset = f"; {effective:,} of the {original:,} in the data (a --limit subset)" if limited else ""
        return Coverage(scored, False, f"{count}, locally generated data ({published.unpublished}){subset}")
    origin = data_origin(run, task, published.source)
    of_published = f"the published {published.name} {published.unit}" + (f" of {size:,}" if size else "")
    if origin == "local":
        held = f"; the data held {original:,}" if original is not None else ""
        return Coverage(scored, False, f"{count} of locally built data, not {of_published}{held}")
    if size is None or scored is None:
        if limited:
            return Coverage(scored, False, f"{count}: {effective:,} of the {original:,} in the data (a --limit subset)")
        return Coverage(scored, True, "-")  # the published size is not checked
    if scored == size and not limited:
        return Coverage(scored, True, f"the full published set ({size:,} questions)")
    if limited and original == size:
        return Coverage(
            scored,
            False,
            f"{scored:,} of the {size:,} questions of the published {published.name} {published.unit} "
            "(a --limit subset)",
        )
    if origin == "hub":
        return Coverage(
            scored, False, f"{scored:,} of the {size:,} questions of the published {published.name} {published.unit}"
        )
    held = (
        f"the data the run read held {original:,}"
        if original is not None
        else "the results do not record the data's size"
    )
    return Coverage(
        scored,
        False,
        f"{scored:,} questions, not {of_published} ({held}: a subset or locally generated data)",
    )


def coverage_note(benchmark: str, covered: Sequence[tuple[str, Coverage]]) -> Note | None:
    """One visible note for a table with published rows: what the runs covered that is not the full published set,
    each distinct statement once with the runs it is true of, and that the published rows are on the full set;
    ``None`` when every run scored the full set."""
    partial = [(model, item) for model, item in covered if not item.full]
    if not partial:
        return None
    by_text: dict[str, list[str]] = {}
    for model, item in partial:
        by_text.setdefault(item.text, []).append(model)
    if len(by_text) == 1 and len(partial) == 1:
        runs = f"{partial[0][0]}: {partial[0][1].text}"
    else:  # each distinct statement once, with the models (and parts) it is true of
        every = len(by_text) == 1 and len(partial) == len(covered)
        runs = ". ".join(
            f"{text} ({'every model' if every else '; '.join(models)})" for text, models in by_text.items()
        )
    return Note(
        f"Not the published data. {runs}. The published rows are on {published_set(benchmark).full}: "
        "the numbers are not directly comparable.",
        kind="coverage",
    )
