"""Whether a run's saved outputs are all there: every document the run scored, logged once.

A log missing or repeating doc ids is partial and refused unless asked to score what is there. Manual:
docs/protocols.md, 'Complete sample logs'.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHOWN_IDS = 12
"""Doc ids (or ranges of consecutive ones) a message lists before it abbreviates."""


@dataclass(frozen=True)
class LogCheck:
    """What a task's sample log holds against the documents its run scored (:func:`check_log`)."""

    task: str
    origin: str
    """The log (file) checked."""
    expected: int | None
    """Samples the run scored (``None``: the results file does not say)."""
    logged: int
    """Distinct doc ids of the run found in the log."""
    missing: tuple[Any, ...] = ()
    duplicated: tuple[Any, ...] = ()
    """Doc ids logged more than once, every copy identical."""
    conflicting: tuple[Any, ...] = ()
    """Doc ids logged more than once with different contents."""
    foreign: tuple[Any, ...] = ()
    """Doc ids the run did not evaluate (or lines without one)."""
    copies: int = 2
    """The most times one doc id is logged (when any is logged more than once)."""
    key: str = "doc_id"
    """What the ids are called in messages (``index`` for a VLMEvalKit prediction file)."""

    @property
    def complete(self) -> bool:
        """Every document the run scored, logged once, and nothing else."""
        return self.expected is not None and not (self.missing or self.repeated or self.foreign)

    @property
    def scorable(self) -> bool:
        """Whether what is there can be scored at all (no conflicting copies, no doc id of another run)."""
        return not (self.conflicting or self.foreign)

    @property
    def repeated(self) -> tuple[Any, ...]:
        return tuple(_sorted([*self.duplicated, *self.conflicting]))

    def problems(self) -> str:
        """What is wrong, in words (``doc_id 0 logged twice; doc_id 1, 3 missing``); empty when complete."""
        parts = []
        if self.repeated:
            times = "twice" if self.copies == 2 else f"up to {self.copies} times"
            different = " with different contents" if self.conflicting else ""
            parts.append(f"{self.key} {id_list(self.repeated)} logged {times}{different}")
        if self.gaps():
            parts.append(self.gaps())
        if self.expected is None:
            parts.append("the results file records no n-samples for this task (its completeness is unknown)")
        return "; ".join(parts)

    def gaps(self) -> str:
        """The documents the log lacks and those it holds but the run did not score, in words (``doc_id 3
        missing``); empty when there are none."""
        parts = []
        if self.missing:
            parts.append(f"{self.key} {id_list(self.missing)} missing")
        if self.foreign:
            parts.append(f"{self.key} {id_list(self.foreign)} not among the run's documents")
        return "; ".join(parts)

    def as_json(self) -> dict[str, Any]:
        """The counts and doc ids, for files that record a partial score."""
        return {
            "samples": self.logged,
            "expected": self.expected,
            "missing": list(self.missing),
            "duplicated": list(self.repeated),
        }


def run_doc_ids(results: Mapping[str, Any], task: str) -> range | None:
    """The doc ids an lmms-eval results file says the run evaluated for ``task`` (``None`` without ``n-samples``)."""
    counts = (results.get("n-samples") or {}).get(task)
    effective = counts.get("effective") if isinstance(counts, Mapping) else None
    if not isinstance(effective, int) or isinstance(effective, bool):
        return None
    original = counts.get("original")
    offset = (results.get("config") or {}).get("offset") or 0
    offset = offset if isinstance(offset, int) else 0
    stop = offset + effective
    return range(offset, min(stop, original) if isinstance(original, int) else stop)


def check_log(task: str, samples: Sequence[Mapping[str, Any]], results: Mapping[str, Any], origin: str) -> LogCheck:
    """Check an lmms-eval sample log (its lines, read) against the results file's ``n-samples`` and ``offset``."""
    return check_ids(task, origin, run_doc_ids(results, task), [(sample.get("doc_id"), sample) for sample in samples])


def check_ids(
    task: str, origin: str, expected: Iterable[Any] | None, logged: Sequence[tuple[Any, Any]], key: str = "doc_id"
) -> LogCheck:
    """The rule on ``(id, content)`` pairs: each of ``expected`` once, nothing else (``None``: ids unknown)."""
    wanted = None if expected is None else list(expected)
    counts = Counter(name for name, _ in logged)
    contents: dict[Any, set[str]] = {}
    for name, content in logged:
        contents.setdefault(name, set()).add(json.dumps(content, sort_keys=True, default=str))
    repeated = [name for name, count in counts.items() if count > 1]
    known = set(counts) if wanted is None else set(wanted)
    return LogCheck(
        task=task,
        origin=origin,
        expected=None if wanted is None else len(wanted),
        logged=len(known & set(counts)),
        missing=tuple(_sorted(name for name in wanted or () if name not in counts)),
        duplicated=tuple(_sorted(name for name in repeated if len(contents[name]) == 1)),
        conflicting=tuple(_sorted(name for name in repeated if len(contents[name]) > 1)),
        foreign=tuple(_sorted(name for name in counts if name not in known)),
        copies=max(counts.values(), default=1),
        key=key,
    )


def distinct(logged: Iterable[tuple[Any, Any]]) -> list[Any]:
    """The contents in their order with each id's repeated copies dropped (for a :attr:`LogCheck.scorable` log)."""
    seen: set[Any] = set()
    kept = []
    for name, content in logged:
        if name not in seen:
            seen.add(name)
            kept.append(content)
    return kept


def id_list(ids: Iterable[Any], shown: int = SHOWN_IDS) -> str:
    """Ids for a message: sorted, three or more consecutive integers as a range (``0-9``), abbreviated after
    ``shown`` entries with the total count (``0-39, 41, 43, ... (70 in all)``)."""
    values = _sorted(ids)
    pieces: list[str] = []
    start = 0
    while start < len(values):
        end = start
        while (
            isinstance(values[start], int)
            and end + 1 < len(values)
            and isinstance(values[end + 1], int)
            and values[end + 1] == values[end] + 1
        ):
            end += 1
        if end - start >= 2:
            pieces.append(f"{values[start]}-{values[end]}")
        else:
            end = start
            pieces.append(str(values[start]))
        start = end + 1
    if len(pieces) <= shown:
        return ", ".join(pieces)
    return ", ".join(pieces[:shown]) + f", ... ({len(values)} in all)"


def report_note(task: str, samples: Sequence[Mapping[str, Any]], results: Mapping[str, Any], path: Path) -> str | None:
    """The sentence a report adds for a task whose sample log is not the run's whole set (``None`` when it is, or
    when the results file does not say what the run scored): what the log holds and, when ``scifig rescore
    --allow-partial`` computed the task's metrics from it, that the metrics cover those samples only."""
    if run_doc_ids(results, task) is None:
        return None
    log = path.name[: -len("_results.json")] + f"_samples_{task}.jsonl"
    check = check_log(task, samples, results, log)
    rescored = results.get("scifig_rescore")
    partial_metrics = isinstance(rescored, Mapping) and task in (rescored.get("partial") or {})
    if check.complete and not partial_metrics:
        return None
    if check.complete:  # a repeated line was dropped when the metrics were computed
        return f"{task}: partial: the metrics were re-scored from a damaged sample log (scifig rescore --allow-partial)"
    note = f"{task}: partial: the sample log {log} holds {check.logged} of the {check.expected} samples"
    note += f" the results count ({check.problems()})"
    if partial_metrics:
        note += "; the metrics were re-scored from the logged samples only (scifig rescore --allow-partial)"
    return note


def scores_note(task: str, partial: Mapping[str, Any], path: Path) -> str:
    """The sentence a report adds for a VLMEvalKit scores file that ``scifig rescore --allow-partial`` computed from
    a damaged prediction file (its ``partial`` record, :meth:`LogCheck.as_json`)."""
    problems = [
        f"{label} {id_list(partial.get(name) or [])}"
        for name, label in (("missing", "missing index"), ("duplicated", "repeated index"))
        if partial.get(name)
    ]
    return (
        f"{task}: partial: {path.name} was re-scored from {partial.get('samples')} of the {partial.get('expected')} "
        f"questions ({'; '.join(problems) or 'damaged prediction file'}; scifig rescore --allow-partial)"
    )


def _sorted(values: Iterable[Any]) -> list[Any]:
    """Integers in order, then anything else by its text (a line without a doc id has ``None``)."""
    return sorted(values, key=lambda value: (0, value, "") if isinstance(value, int) else (1, 0, str(value)))
