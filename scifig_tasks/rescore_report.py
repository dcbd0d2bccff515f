"""What ``scifig rescore`` reports and refuses, whichever framework wrote the run: sample verdicts, headline metrics,
``rescore_diff.json``, the printed table, the ``--dry-run`` lines and the rule for damaged logs. It reads no run itself.

Manual: docs/reports.md, "Verdicts, the diff and damaged logs".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.core import provenance
from scifig_tasks.core.sample_logs import LogCheck

NOT_VERDICT = frozenset({"audit_prompt"})
"""Record keys left out when records are compared (the judge-audit prompt exists only when a judge is configured)."""
SCORE_FIELDS = ("correct", "verdict", "standard", "relaxed", "range")
"""The record fields holding the score a sample's rule gave, in the shapes the scorers write: ``correct`` (right or
wrong), ``verdict`` (a grade of 1, 0 or none), ``standard`` / ``relaxed`` / ``range`` (one accuracy per tolerance and
repeat). A sample's verdict is these; what else its record says (the answer read, the rule or protocol that read it,
the reason) describes how it was scored, and a change there alone is not a changed verdict."""
DIFF_FILE = "rescore_diff.json"
ALLOW_PARTIAL = "--allow-partial scores what is there (marked partial)"


class RescoreRefused(RuntimeError):
    """A run that cannot be scored again (the message names the file and what to do)."""


@dataclass
class FieldChange:
    """How one record field changed over a task's samples whose verdict is not that field: in how many samples,
    how many gained or lost it, and each distinct (old, new) pair of values (as JSON) with its count."""

    samples: int = 0
    added: int = 0
    removed: int = 0
    pairs: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, other: FieldChange) -> None:
        self.samples += other.samples
        self.added += other.added
        self.removed += other.removed
        for pair, count in other.pairs.items():
            self.pairs[pair] = self.pairs.get(pair, 0) + count

    def as_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"samples": self.samples}
        if len(self.pairs) == 1 and not (self.added or self.removed):
            ((old, new),) = self.pairs
            found |= {"old": json.loads(old), "new": json.loads(new)}
        if self.added:
            found["added"] = self.added
        if self.removed:
            found["removed"] = self.removed
        return found

    def words(self) -> str:
        """``old -> new`` when every sample changed the same way (short values only), ``added`` / ``removed`` when
        every sample gained or lost the field; else nothing."""
        if self.added == self.samples:
            return " added"
        if self.removed == self.samples:
            return " removed"
        if len(self.pairs) == 1 and not (self.added or self.removed):
            ((old, new),) = self.pairs
            values = [_short(json.loads(text)) for text in (old, new)]
            if None not in values:
                return f" {values[0]} -> {values[1]}"
        return ""


def _short(value: Any) -> str | None:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 30 and "\n" not in text else None


@dataclass
class TaskDiff:
    """One task's (or group's) headline metrics before and after, and the samples whose record changed: each entry
    says whether its verdict (:func:`verdict`) changed."""

    task: str
    samples: int
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    changed: list[dict[str, Any]] = field(default_factory=list)
    members: list[str] = field(default_factory=list)
    """A group's tasks (their changed samples are listed under each task)."""
    changed_count: int | None = None
    verdicts_count: int | None = None
    others: dict[str, FieldChange] | None = None
    """A group's counts, summed over its tasks (:meth:`count_members`)."""
    expected: int | None = None
    """Samples the run scored (``None``: not recorded); ``samples`` is how many were scored again."""
    partial: dict[str, Any] | list[str] | None = None
    """A task scored from a damaged log (``--allow-partial``): its missing and repeated ids; a group: its partial
    tasks."""

    @property
    def n_changed(self) -> int:
        """Samples whose record changed (their verdict or anything else)."""
        return len(self.changed) if self.changed_count is None else self.changed_count

    @property
    def n_verdicts(self) -> int:
        """Samples whose verdict changed."""
        if self.verdicts_count is not None:
            return self.verdicts_count
        return sum(bool(entry.get("verdict_changed", True)) for entry in self.changed)

    def other_changes(self) -> dict[str, FieldChange]:
        """Record field -> how it changed in samples where it is not the verdict (the rule, protocol, reason ...)."""
        if self.others is not None:
            return self.others
        found: dict[str, FieldChange] = {}
        for entry in self.changed:
            old, new = entry.get("old") or {}, entry.get("new") or {}
            for name in entry.get("other", ()):
                change = found.setdefault(name, FieldChange())
                change.samples += 1
                if name not in old:
                    change.added += 1
                elif name not in new:
                    change.removed += 1
                else:
                    pair = (_canonical(old[name]), _canonical(new[name]))
                    change.pairs[pair] = change.pairs.get(pair, 0) + 1
        return found

    def count_members(self, members: Sequence[TaskDiff]) -> None:
        """A group's counts: the changed records, changed verdicts and other changes of its tasks, summed."""
        self.changed_count = sum(member.n_changed for member in members)
        self.verdicts_count = sum(member.n_verdicts for member in members)
        self.others = _merged([member.other_changes() for member in members])

    def as_json(self) -> dict[str, Any]:
        counts: dict[str, Any] = {"samples": self.samples, "expected": self.expected}
        if self.partial:
            counts["partial"] = self.partial
        counts |= {
            "metrics": self.metrics,
            "changed_verdicts": self.n_verdicts,
            "changed_samples": self.n_changed,
            "other_changes": {name: change.as_json() for name, change in _ordered(self.other_changes())},
        }
        if self.members:
            return {**counts, "tasks": self.members}
        return {**counts, "changed": self.changed}


def _merged(parts: Sequence[Mapping[str, FieldChange]]) -> dict[str, FieldChange]:
    merged: dict[str, FieldChange] = {}
    for part in parts:
        for name, change in part.items():
            merged.setdefault(name, FieldChange()).add(change)
    return merged


def _ordered(changes: Mapping[str, FieldChange]) -> list[tuple[str, FieldChange]]:
    """Most samples first, then by name."""
    return sorted(changes.items(), key=lambda item: (-item[1].samples, item[0]))


@dataclass
class RescoredRun:
    """What one results file (or VLMEvalKit prediction file) became."""

    source: Path
    written: list[Path]
    model_dir: Path
    diffs: list[TaskDiff]
    judge_failed: dict[str, int] = field(default_factory=dict)
    environment_changes: list[str] = field(default_factory=list)
    """What differs between the environment the run recorded and this one (:func:`environment_changes`)."""
    partial: list[str] = field(default_factory=list)
    """One line per log scored although damaged (``--allow-partial``): the file and what was missing or repeated."""
    judge_usage: dict[str, Any] | None = None
    """What the judge did for this run's re-scoring (:func:`scifig_tasks.core.judge.usage_report`; under
    ``--dry-run`` the requests it would send); None when it was not asked."""
    data_changes: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Source -> (the data revision the run recorded, the one re-scored now), where they differ
    (:func:`data_changes`)."""

    def data_line(self) -> str | None:
        """The one line saying the run was made from other data than it is re-scored with (None: the same)."""
        if not self.data_changes:
            return None
        return (
            f"{self.source} was made from other data than is loaded now ({provenance.data_words(self.data_changes)}; "
            f"{provenance.UNKNOWN}: not recorded); scores may differ for that reason"
        )


def data_changes(recorded: Any, current: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Each source re-scored now whose data revision differs from the one the run recorded
    (:data:`scifig_tasks.core.provenance.UNKNOWN` where the run recorded none)."""
    before, after = provenance.data_revisions(recorded), provenance.data_revisions(current)
    return {
        name: (before.get(name, provenance.UNKNOWN), revision)
        for name, revision in after.items()
        if before.get(name, provenance.UNKNOWN) != revision
    }


def environment_changes(recorded: Any, current: Mapping[str, Any]) -> list[str]:
    """The versions that differ between a run's recorded environment block and ``current``, or one entry saying
    that the run recorded none."""
    if not isinstance(recorded, Mapping):
        return [provenance.NOT_RECORDED]
    return provenance.differences(recorded, current)


# ---- verdicts and headline metrics ---------------------------------------------------------------------------------


def record(values: Mapping[str, Any]) -> dict[str, Any]:
    """A sample's record: its ``breakdown`` record without :data:`NOT_VERDICT` keys, else its metric values."""
    found = values.get("breakdown")
    if isinstance(found, Mapping):
        return {key: value for key, value in found.items() if key not in NOT_VERDICT}
    return dict(values)


def verdict(values: Mapping[str, Any]) -> dict[str, Any]:
    """A sample's verdict, the score its rule gave: the :data:`SCORE_FIELDS` its record holds; else its numeric
    metric values (the per-sample numbers the task averages); else its whole record (one that holds no score of its
    own, e.g. a caption the corpus-level metrics score: any change of it changes what is scored)."""
    found = record(values)
    score = {key: found[key] for key in SCORE_FIELDS if key in found}
    if score:
        return score
    numbers = {key: value for key, value in values.items() if key != "breakdown" and isinstance(value, int | float)}
    return numbers or found


def changed_sample(doc_id: Any, old: Mapping[str, Any], new: Mapping[str, Any], output: Any) -> dict[str, Any] | None:
    """The diff entry of one sample, or ``None`` when its record did not change: the fields that changed, whether its
    verdict (:func:`verdict`) changed, and the other fields that changed (``other``: not its verdict)."""
    before, after = record(old), record(new)
    if _canonical(before) == _canonical(after):
        return None
    keys = sorted({*before, *after}, key=lambda key: (key not in ("predicted", "resolution", "reason", "correct"), key))
    fields = [key for key in keys if _canonical(before.get(key, _ABSENT)) != _canonical(after.get(key, _ABSENT))]
    old_verdict, new_verdict = verdict(old), verdict(new)
    return {
        "doc_id": doc_id,
        "fields": fields,
        "verdict_changed": _canonical(old_verdict) != _canonical(new_verdict),
        "other": [key for key in fields if key not in old_verdict and key not in new_verdict],
        "old": before,
        "new": after,
        "output": output,
    }


_ABSENT = object()
"""A field a record does not hold (compared unlike any value, ``None`` included)."""


def _canonical(value: Any) -> str:
    """Values compared as JSON (a re-scored float equals the logged one exactly after the JSON round trip)."""
    return json.dumps(value, sort_keys=True, default=str)


def headline(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The numeric metrics of a results entry (``accuracy,none`` ...), without standard errors and sizes; from a
    ``breakdown``, its overall accuracy when the entry has no ``accuracy`` metric, and the overall accuracy of each
    table it holds over a subset of the questions (MMSci's ``paper_denominator``: resolved answers only)."""
    found: dict[str, float] = {}
    for key, value in metrics.items():
        if "_stderr" in key or key in ("alias", "samples", " ") or isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            found[key] = value
    breakdown = metrics.get("breakdown,none")
    if isinstance(breakdown, Mapping):
        cells = {"breakdown.overall.accuracy": _overall(breakdown)} if "accuracy,none" not in found else {}
        cells |= {f"breakdown.{key}.accuracy": _overall(table) for key, table in breakdown.items() if key != "overall"}
        found.update({key: value for key, value in cells.items() if value is not None})
    return found


def _overall(table: Any) -> float | None:
    overall = table.get("overall") if isinstance(table, Mapping) else None
    cell = overall.get("all") if isinstance(overall, Mapping) else None
    value = cell.get("accuracy") if isinstance(cell, Mapping) else None
    return value if isinstance(value, int | float) else None


def metric_pairs(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    before, after = headline(old), headline(new)
    return {key: {"old": before.get(key), "new": after.get(key)} for key in sorted({*before, *after})}


# ---- damaged logs --------------------------------------------------------------------------------------------------


def refusal(check: LogCheck, counted_by: str) -> str:
    """Why a damaged log is refused, in one line: the file, the task, the missing or repeated ids, what to do.
    ``counted_by`` says where the expected samples come from (``<date>_results.json counts``)."""
    where = f"{check.origin}: task {check.task}: {check.problems()}"
    if check.conflicting:
        return f"{where}: keep the right line of each (or run the model again)"
    if check.foreign:
        return f"{where}: the log is not this run's ({check.expected} samples {counted_by}); use the run's own log"
    if check.expected is None:
        return f"{where}; {ALLOW_PARTIAL}"
    return (
        f"{where}: the log holds {check.logged} of the {check.expected} samples {counted_by}; restore the log from "
        f"the run, or {ALLOW_PARTIAL}"
    )


def partial_line(check: LogCheck) -> str:
    """The warning for a damaged log scored anyway (``--allow-partial``)."""
    of = "" if check.expected is None else f" of the {check.expected}"
    return (
        f"{check.origin}: task {check.task}: {check.problems()}; scored the {check.logged}{of} samples that are there "
        "(--allow-partial)"
    )


def accept(checks: Sequence[LogCheck], counted_by: str, allow_partial: bool) -> list[str]:
    """Refuse every damaged log (one line each) unless ``allow_partial`` and it can be scored; return the warnings of
    the damaged logs scored anyway."""
    refused = [refusal(c, counted_by) for c in checks if not c.complete and not (allow_partial and c.scorable)]
    if refused:
        raise RescoreRefused("\n".join(refused))
    return [partial_line(check) for check in checks if not check.complete]


def partial_ids(check: LogCheck) -> dict[str, Any] | None:
    return None if check.complete else {"missing": list(check.missing), "duplicated": list(check.repeated)}


# ---- the diff and the printed table ------------------------------------------------------------------------------


def write_diffs(runs: list[RescoredRun]) -> list[Path]:
    """``<model dir>/rescore_diff.json`` per model folder: every task's metrics before/after and changed samples."""
    by_dir: dict[Path, dict[str, Any]] = {}
    for run in runs:
        entry = by_dir.setdefault(run.model_dir, {"sources": [], "tasks": {}})
        entry["sources"].append(str(run.source))
        for diff in run.diffs:
            entry["tasks"][diff.task] = diff.as_json()
    written = []
    for model_dir, entry in by_dir.items():
        path = model_dir / DIFF_FILE
        path.write_text(json.dumps(entry, indent=1, ensure_ascii=False, default=str))
        written.append(path)
    return written


def _number(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}"


def _n(diff: TaskDiff) -> str:
    """The samples scored: ``n``, or ``n of N, partial`` for a damaged log (``?`` when the run did not record N)."""
    if not diff.partial:
        return str(diff.samples)
    return f"{diff.samples} of {'?' if diff.expected is None else diff.expected}, partial"


def summary(runs: list[RescoredRun]) -> str:
    """The printed table: per task and headline metric, old and new value, the samples scored (n, and "partial"
    for a damaged log) and the number of samples whose verdict (:func:`verdict`) changed."""
    rows = ["| task | metric | old | new | n | changed verdicts |", "|---|---|---:|---:|---:|---:|"]
    for run in runs:
        for diff in run.diffs:
            counts = f"{_n(diff)} | {diff.n_verdicts} of {diff.samples}"
            for metric, pair in diff.metrics.items():
                rows.append(f"| {diff.task} | {metric} | {_number(pair['old'])} | {_number(pair['new'])} | {counts} |")
                counts = " | "
            if not diff.metrics:
                rows.append(f"| {diff.task} | - | - | - | {counts} |")
    return "\n".join(rows)


def other_changes_line(runs: Sequence[RescoredRun]) -> str | None:
    """The one line saying what changed in the samples' records besides their verdicts, over every task scored
    (groups not counted twice): each field with the samples it changed in, and how when every sample changed it the
    same way (``rule whole_answer -> truncation``, ``protocol default -> paper``, ``judge added``); None when
    nothing else changed."""
    tasks = [diff for run in runs for diff in run.diffs if not diff.members]
    changes = _merged([diff.other_changes() for diff in tasks])
    if not changes:
        return None
    samples = sum(diff.samples for diff in tasks)
    changed = sum(1 for diff in tasks for entry in diff.changed if entry.get("other"))
    parts = [f"{name}{change.words()} ({change.samples})" for name, change in _ordered(changes)]
    return f"records changed besides their verdicts in {changed} of {samples} samples: {'; '.join(parts)}"


def dry_run_lines(runs: Sequence[RescoredRun]) -> list[str]:
    """What ``--dry-run`` prints: per run and task, the judge requests re-scoring would send and the judge calls the
    cache answers, then the total. A reply that leads to further requests (MMSci's FActScore: one rating per atomic
    fact) counts its follow-ups only when it is cached: the count is then a lower bound, and the line says so."""
    lines, send, cached = [], 0, 0
    followups = False
    for run in runs:
        usage = run.judge_usage or {}
        for task, row in (usage.get("tasks") or {}).items():
            would, hits = int(row.get("would_send", 0)), int(row.get("cache_hits", 0))
            send, cached = send + would, cached + hits
            followups = followups or ("caption" in task and would > 0)
            lines.append(f"{run.source}: {task}: {would:,} judge requests to send, {hits:,} answered by the cache")
    if not lines:
        lines.append("no judge request: re-scoring these runs asks the judge nothing (or no judge is configured)")
    bound = " at least" if followups else ""
    lines.append(
        f"scifig rescore --dry-run: re-scoring would send{bound} {send:,} judge requests (retries aside); the judge "
        f"cache answers {cached:,}; nothing was sent or written"
    )
    return lines
