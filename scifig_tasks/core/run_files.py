"""The files a run leaves, the one record of their names and how they are read back.

* lmms-eval: ``<output_path>/<model>/<date>_results.json`` (:data:`RESULTS_SUFFIX`; the metrics under ``results``)
  and, with ``--log_samples``, ``<date>_samples_<task>.jsonl`` beside it.
* VLMEvalKit, this package's datasets: ``<prediction file stem>_scifig_scores.json`` (:data:`SCORES_SUFFIX`; the
  dataset, metrics, breakdown, task version, judge and environment block) and ``..._scifig_records.jsonl``
  (:data:`RECORDS_SUFFIX`; one scored record per question, with the reply).

``scifig report``, ``scifig rescore`` and ``scifig vlmeval`` read them through :func:`read_results` and
:func:`read_jsonl`: a file that is not what its name says is a :class:`~scifig_tasks.core.errors.DataError` naming
the file (and the line of a JSON-lines file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scifig_tasks.core.errors import DataError

RESULTS_SUFFIX = "_results.json"
SCORES_SUFFIX = "_scifig_scores.json"
RECORDS_SUFFIX = "_scifig_records.jsonl"


def read_results(path: Path) -> dict[str, Any]:
    """An lmms-eval results file (a :class:`DataError` naming it when it is not one)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(str(path), None, None, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise DataError(str(path), None, None, "not an lmms-eval results file (no 'results' mapping)")
    return data


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object per non-empty line (a sample log or a records file)."""
    rows = []
    for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(str(path), line_number, None, f"not valid JSON ({exc})") from None
    return rows
