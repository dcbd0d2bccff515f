"""The files a run leaves, the one record of their names and how they are read back.

lmms-eval's results and sample files, the VLMEvalKit datasets' scores and records files. Manual: docs/protocols.md,
'Files a run leaves'.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from scifig_tasks.core.errors import DataError

RESULTS_SUFFIX = "_results.json"
SCORES_SUFFIX = "_scifig_scores.json"
RECORDS_SUFFIX = "_scifig_records.jsonl"


def results_file_name(datetime_str: str) -> str:
    """The name lmms-eval gives a run's results file: ``<date>_results.json``, ``<date>`` being the run's datetime
    string with ``:`` replaced by ``-`` (lmms-eval's ``EvaluationTracker.date_id``)."""
    return f"{datetime_str.replace(':', '-')}{RESULTS_SUFFIX}"


def samples_file_name(date_id: str, task: str) -> str:
    """The name lmms-eval gives a task's samples file: ``<date>_samples_<task>.jsonl``, beside the results file."""
    return f"{date_id}_samples_{task}.jsonl"


def samples_file_beside(results: Path, task: str) -> Path:
    """The samples file of ``task`` beside the lmms-eval results file ``results`` (``<date>_results.json``)."""
    return results.with_name(samples_file_name(results.name[: -len(RESULTS_SUFFIX)], task))


_RUN_FILE = re.compile(
    "(?:"
    + "|".join(
        [re.escape(RESULTS_SUFFIX), r"_samples_[^/\\]+\.jsonl", re.escape(SCORES_SUFFIX), re.escape(RECORDS_SUFFIX)]
    )
    + ")$"
)


def is_run_file(origin: str) -> bool:
    """Whether ``origin`` (a path, as a :class:`DataError` names it) is a file a run wrote -- a results, samples,
    scores or records file -- rather than data: damage there is fixed by running the evaluation again or restoring
    the file, not by rebuilding the data."""
    return _RUN_FILE.search(origin) is not None


def read_text(path: Path, expected: str) -> str:
    """The text of the run file ``path``, read as UTF-8 (as lmms-eval, VLMEvalKit and scifig write them); a
    :class:`DataError` naming the file, the line (its 0-based row) and the byte offset of the first byte that does
    not decode, and what was ``expected``, when it is not UTF-8 (a disk error, a file from another tool)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start)
        problem = f"not UTF-8: byte 0x{data[exc.start]:02x} at byte offset {exc.start} does not decode; {expected}"
        raise DataError(str(path), line, None, problem) from None


def read_results(path: Path) -> dict[str, Any]:
    """An lmms-eval results file (a :class:`DataError` naming it when it is not one)."""
    text = read_text(path, "expected UTF-8 JSON, as lmms-eval writes it")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(str(path), None, None, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise DataError(str(path), None, None, "not an lmms-eval results file (no 'results' mapping)")
    return data


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object per non-empty line (a sample log or a records file); a :class:`DataError` naming the file and
    the line when one is not UTF-8 or not JSON."""
    rows = []
    text = read_text(path, "expected UTF-8 text, one JSON object per line")
    for line_number, line in enumerate(text.splitlines()):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(str(path), line_number, None, f"not valid JSON ({exc})") from None
    return rows


def replace_file(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Replace ``path`` by what ``write`` writes to a file beside it (same permissions; never a half-written file: a
    failed write, a full disk, leaves ``path`` as it was)."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
        shutil.copymode(path, temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
