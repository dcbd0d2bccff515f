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
    scope: str = ""
    """What the run scored, without the comparison with the published set (``40 questions of locally built data
    (the data held 40)``): what :func:`coverage_note` says of each run, after saying once that it is not the published
    set."""


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
        text = f"{count}, locally generated data ({published.unpublished}){subset}"
        return Coverage(scored, False, text, text)
    origin = data_origin(run, task, published.source)
    of_published = f"the published {published.name} {published.unit}" + (f" of {size:,}" if size else "")
    if origin == "local":
        held = f"; the data held {original:,}" if original is not None else ""
        scope = f"{count} of locally built data" + (f" (the data held {original:,})" if original is not None else "")
        return Coverage(scored, False, f"{count} of locally built data, not {of_published}{held}", scope)
    if size is None or scored is None:
        if limited:
            text = f"{count}: {effective:,} of the {original:,} in the data (a --limit subset)"
            return Coverage(scored, False, text, text)
        return Coverage(scored, True, "-")  # the published size is not checked
    if scored == size and not limited:
        return Coverage(scored, True, f"the full published set ({size:,} questions)")
    of_its = f"{scored:,} of the {size:,} questions of the published {published.name} {published.unit}"
    if limited and original == size:
        return Coverage(scored, False, f"{of_its} (a --limit subset)", f"{scored:,} of its {size:,} (a --limit subset)")
    if origin == "hub":
        return Coverage(scored, False, of_its, f"{scored:,} of its {size:,} questions")
    held = (
        f"the data the run read held {original:,}"
        if original is not None
        else "the results do not record the data's size"
    )
    return Coverage(
        scored,
        False,
        f"{scored:,} questions, not {of_published} ({held}: a subset or locally generated data)",
        f"{scored:,} questions ({held}: a subset or locally generated data)",
    )


def coverage_note(benchmark: str, covered: Sequence[tuple[str, Coverage]]) -> Note | None:
    """One visible note for a table with published rows, saying once that the runs are not on the published set the
    published rows are on, then what they covered: each distinct scope once, with the runs it is true of;
    ``None`` when every run scored the full set."""
    partial = [(model, item) for model, item in covered if not item.full]
    if not partial:
        return None
    by_scope: dict[str, list[str]] = {}
    for model, item in partial:
        by_scope.setdefault(item.scope or item.text, []).append(model)
    if len(by_scope) == 1 and len(partial) == len(covered) and len(covered) > 1:
        runs = f"every run here scored {next(iter(by_scope))}"
    else:  # each distinct scope once, with the models (and parts) it is true of
        runs = "; ".join(f"{' and '.join(models)} scored {scope}" for scope, models in by_scope.items())
    return Note(
        f"Not the published data: the published rows are on {published_set(benchmark).full}; {runs}. The numbers "
        "are not directly comparable.",
        kind="coverage",
    )
