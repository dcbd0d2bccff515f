"""A task's breakdown (per-type accuracies, intervals, flags: the tables the papers print) as a JSON file, for
frameworks that print every metric value in one console table.

Used by the task folders ``scifig export-upstream`` writes for the lmms-eval repository: there the ``breakdown``
metric's value is the path of this file (lmms-eval's own convention for non-scalar results: a file written with its
``generate_submission_file``), so the printed table stays readable; a group's breakdown merges its tasks' files. The
packaged tasks keep the breakdown itself in the results file (``scifig report`` reads it there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scifig_tasks.core.errors import DataError


def write_breakdown(path: str | Path, breakdown: Any) -> str:
    """Write ``breakdown`` to ``path`` as JSON; the path, as the metric's value."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(breakdown, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return str(path)


def read_breakdowns(parts: list[Any], group: str) -> list[Any]:
    """The breakdowns a group's tasks wrote (their ``breakdown`` values are the files' paths)."""
    found = []
    for part in parts:
        if not isinstance(part, str) or not Path(part).is_file():
            raise DataError(f"group {group}", None, "breakdown", f"{part!r} is no breakdown file of this run")
        found.append(json.loads(Path(part).read_text(encoding="utf-8")))
    return found


def group_path(parts: list[Any], group: str) -> str:
    """Where a group's breakdown goes: beside its first task's file."""
    return str(Path(str(parts[0])).with_name(f"{group}_breakdown.json"))
