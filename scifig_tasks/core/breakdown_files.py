"""A task's breakdown (per-type accuracies, intervals, flags: the tables the papers print) as a JSON file, for
frameworks that print every metric value in one console table.

Used by the task folders ``scifig export-upstream`` writes for the lmms-eval repository: there the ``breakdown``
metric's value names this file from the run's output folder (``submissions/<task>_breakdown.json``: lmms-eval's own
convention for non-scalar results, a file written with its ``generate_submission_file``), so the printed table stays
readable; a group's breakdown merges its tasks' files. The packaged tasks keep the breakdown itself in the results
file (``scifig report`` reads it there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scifig_tasks.core.errors import DataError

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


def read_breakdowns(parts: list[Any], group: str) -> list[Any]:
    """The breakdowns a group's tasks wrote (their ``breakdown`` values name the files)."""
    return [json.loads(_written(part, group).read_text(encoding="utf-8")) for part in parts]


def _written(part: Any, group: str) -> Path:
    if not isinstance(part, str) or part not in _WRITTEN:
        raise DataError(f"group {group}", None, "breakdown", f"{part!r} is no breakdown file of this run")
    return _WRITTEN[part]


def group_path(parts: list[Any], group: str) -> Path:
    """Where a group's breakdown goes: beside its first task's file."""
    return _written(parts[0], group).with_name(f"{group}_breakdown.json")
