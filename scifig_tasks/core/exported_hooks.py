"""The hooks of the task folders ``scifig export-upstream`` writes for the lmms-eval repository, made from the
packaged tasks' own hooks: one line per task in the generated ``<bench>_hooks.py``.

* :func:`documents`: a task's ``process_docs``: refused at document processing when the task cannot be scored
  without the LLM judge and none is configured (:func:`~scifig_tasks.core.judged_hooks.refuse_without_judge`:
  lmms-eval loads every task before it builds one request); a source's rows expanded into their questions
  (:func:`~scifig_tasks.core.row_questions.expand_questions`); then the task's own ``process_docs``.
* :func:`breakdown_file` / :func:`group_breakdown`: the ``breakdown`` metric (per-type accuracies, intervals, flags:
  the tables the papers print) written to a JSON file of the run's ``submissions/`` folder, lmms-eval's own
  convention for non-scalar results (its ``generate_submission_file``); the metric's value names the file from the
  output folder (``submissions/<task>_breakdown.json``), so the printed table stays readable, and a group's breakdown
  merges its tasks' files. The packaged tasks keep the breakdown itself in the results file (``scifig report`` reads
  it there).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scifig_tasks.core.errors import DataError
from scifig_tasks.core.judged_hooks import refuse_without_judge
from scifig_tasks.core.schema import Questions


def documents(
    task: str,
    *,
    judged: bool = False,
    questions: Questions | None = None,
    source: str = "",
    then: Callable[[Any], Any] | None = None,
) -> Callable[[Any], Any]:
    """Task ``task``'s ``process_docs``: the judge check when ``judged``, the expansion of ``source``'s rows by its
    ``questions`` rule, then ``then`` (the task's own hook)."""

    def process_docs(dataset: Any) -> Any:
        if judged:
            refuse_without_judge([task])
        if questions is not None:
            from scifig_tasks.core.row_questions import expand_questions

            dataset = expand_questions(dataset, questions, source)
        return then(dataset) if then is not None else dataset

    return process_docs


_WRITTEN: dict[str, Path] = {}
"""The breakdown files this process wrote, by the value their metric shows (a group's aggregation, later in the same
process, reads its tasks' files through it)."""


def write_breakdown(path: str | Path, breakdown: Any) -> str:
    """Write ``breakdown`` to ``path`` as JSON; the metric's value: the path from the run's output folder
    (``submissions/<task>_breakdown.json``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(breakdown, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    shown = f"{path.parent.name}/{path.name}"
    _WRITTEN[shown] = path
    return shown


def breakdown_file(
    task: str, aggregate: Callable[[list[Any]], Any], submission_file: Callable[[str, Any], str]
) -> Callable[..., str]:
    """Task ``task``'s ``breakdown`` aggregation: ``aggregate``'s result written where ``submission_file`` (lmms-eval's
    ``generate_submission_file``) puts ``<task>_breakdown.json`` for the run's arguments."""

    def breakdown(records: list[Any], args: Any = None) -> str:
        return write_breakdown(submission_file(f"{task}_breakdown.json", args), aggregate(records))

    return breakdown


def group_breakdown(group: str, merge: Callable[..., Any]) -> Callable[..., str]:
    """Group ``group``'s ``breakdown`` aggregation: its tasks' breakdown files merged by ``merge`` and written beside
    the first."""

    def breakdown(parts: list[Any], sizes: list[int], weight_by_size: bool = True) -> str:
        found = [_written(part, group) for part in parts]
        merged = merge([json.loads(path.read_text(encoding="utf-8")) for path in found], sizes, weight_by_size)
        return write_breakdown(found[0].with_name(f"{group}_breakdown.json"), merged)

    return breakdown


def _written(part: Any, group: str) -> Path:
    if not isinstance(part, str) or part not in _WRITTEN:
        raise DataError(f"group {group}", None, "breakdown", f"{part!r} is no breakdown file of this run")
    return _WRITTEN[part]
