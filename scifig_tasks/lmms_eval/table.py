"""lmms-eval's printed results tables show this package's scalar metrics; the breakdowns stay in the results JSON.

Every scifig task and group reports, beside its ``accuracy``, a ``breakdown`` metric: a nested dictionary (per-type
accuracies, confidence intervals, flags, the protocol) that ``scifig report`` and ``scifig rescore`` read from
lmms-eval's ``*_results.json`` (key ``breakdown,none``). lmms-eval prints every metric value in its console tables,
and a dictionary printed there is one row thousands of characters wide. :func:`wrap_make_table` wraps lmms-eval's
``make_table`` so that, for this package's tasks and groups only, rows whose value is not a number are left out and
one line under the table, :data:`NOTE`, says where they are; the results dictionary itself is never
changed (the JSON keeps every breakdown in full). Under the table of a run whose model requests failed, one more line,
:data:`FAILED_NOTE`, says how many, so the scores are never read without it.
"""

from __future__ import annotations

import re
from functools import cache, wraps
from numbers import Number
from typing import Any

from scifig_tasks.lmms_eval import task_folders
from scifig_tasks.lmms_eval.output_folder import failed_requests

NOTE = "scifig: nested metrics ({names}) are in the *_results.json file, not printed; `scifig report` draws them"
"""Printed under a results table from which nested scifig metrics were left out."""
FAILED_NOTE = "scifig: FAILED: {line}"
"""Printed under the results table of a run whose model requests failed
(:func:`scifig_tasks.lmms_eval.output_folder.failed_requests`): the scores above it count them as wrong answers."""

_NAME_LINE = re.compile(r"^(?:task|group):\s*([A-Za-z0-9_.-]+)\s*$", re.MULTILINE)


@cache
def scifig_names() -> frozenset[str]:
    """Every task and group name the registered benchmarks' YAML files define (``task: NAME`` / ``group: NAME``
    lines)."""
    return frozenset(
        match.group(1)
        for folder in task_folders()
        for path in folder.rglob("*.yaml")
        for match in _NAME_LINE.finditer(path.read_text())
    )


def printable(result_dict: dict[str, Any], column: str) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``result_dict`` whose ``column`` rows of scifig tasks keep only scalar metric values, and the metrics
    left out (``breakdown,none`` -> ``breakdown``); other tasks' rows, and the original dictionary, are unchanged."""
    rows = result_dict.get(column)
    if not isinstance(rows, dict):
        return result_dict, []
    names = scifig_names()
    shown = {
        name: (
            {key: value for key, value in metrics.items() if _scalar(value)}
            if name in names and isinstance(metrics, dict)
            else metrics
        )
        for name, metrics in rows.items()
    }
    left_out = {
        key.partition(",")[0]
        for name, metrics in rows.items()
        if isinstance(metrics, dict)
        for key in metrics
        if key not in shown[name]
    }
    return {**result_dict, column: shown}, sorted(left_out)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, Number))


def wrap_make_table(make_table: Any) -> Any:
    """``lmms_eval.utils.make_table`` (what the CLI and ``lmms_eval.evaluator`` print with) leaving out the nested
    metrics of scifig tasks, with :data:`NOTE` under the table; applied by :mod:`scifig_tasks.lmms_eval.patches`."""

    @wraps(make_table)
    def make_scifig_table(result_dict: dict[str, Any], column: str = "results", *args: Any, **kwargs: Any) -> Any:
        shown, left_out = printable(result_dict, column)
        table = make_table(shown, column, *args, **kwargs)
        if column != "results":
            return table
        notes = [NOTE.format(names=", ".join(left_out))] if left_out else []
        failed = failed_requests(result_dict)
        notes += [FAILED_NOTE.format(line=failed)] if failed else []
        return "\n".join([table, *notes, ""]) if notes else table

    return make_scifig_table
