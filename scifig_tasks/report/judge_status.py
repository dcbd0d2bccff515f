"""What the judge did for a task, read from one place: the per-question (or per-output, per-caption) judge statuses
its results file records. Every cell of the report that states the judge's use (the Runs table, MMSci's "not
computed" line) reads them here, so no two cells can say different things of one task.

Rule, per record shape (as the scorers write them):

* a ``breakdown`` metric's ``flags.judge``: one status per question (GRAB, SciFIBench, MMSci multiple choice) or per
  output of every repeat (Plot Twist, whose breakdown also counts ``flags.answer_source``): ``judged``,
  ``not_used``, ``judge_failed`` (counted wrong), ``judge_off`` (needed while none was configured: counted wrong);
* CharXiv's ``counts``: ``by_judge`` graded by the judge; the ``flags`` ``judge_failed`` and ``judge_absent`` left
  ungraded (out of the accuracy), ``undecided_no_judge`` counted wrong without a judge;
* a captioning ``caption_report``'s ``judged`` metrics (FActScore, G-Eval relevance): one status per caption the
  metric asked the judge about: ``scored``, ``judge_failed``, ``unparsable``, ``empty_output``, ``judge_off``; a
  caption without a score is left out of the metric's mean (the metric is n/a when none was scored).

Manual: docs/reports.md, "The summary and the judge's use".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

JUDGED_METRICS = {"factscore": "FActScore", "geval_relevance": "G-Eval relevance"}
"""The captioning metrics the judge scores (the others need no judge), as the report names them."""

PROBLEMS = {
    "judge_failed": "failed on {n:,} (counted wrong)",
    "judge_off": "needed but not configured for {n:,} (counted wrong)",
    "ungraded_failed": "failed on {n:,} (ungraded, left out of the accuracy)",
    "ungraded_off": "needed but not configured for {n:,} (ungraded, left out of the accuracy)",
}
"""What a question or output the judge did not score became, in words."""

CAPTION_PROBLEMS = {
    "judge_failed": "judge failed",
    "unparsable": "unreadable reply",
    "empty_output": "empty caption",
    "judge_off": "no judge configured",
}
"""Why a caption has no judged score (left out of the metric's mean)."""


@dataclass
class JudgeUse:
    """The judge's use over one or more tasks of one kind, added up."""

    unit: str
    """``questions``, ``outputs`` (Plot Twist: every output of every repeat) or ``captions``."""
    total: int = 0
    judged: int = 0
    problems: dict[str, int] = field(default_factory=dict)
    """Key of :data:`PROBLEMS` -> count."""
    captions: dict[str, dict[str, int]] = field(default_factory=dict)
    """Captioning: judged metric -> its recorded statuses, added up."""

    def add(self, other: JudgeUse) -> None:
        self.total += other.total
        self.judged += other.judged
        for name, count in other.problems.items():
            self.problems[name] = self.problems.get(name, 0) + count
        for metric, statuses in other.captions.items():
            mine = self.captions.setdefault(metric, {})
            for status, count in statuses.items():
                mine[status] = mine.get(status, 0) + count


def _counts(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {str(name): int(count) for name, count in value.items() if isinstance(count, int | float)}


def judge_use(table: Mapping[str, Any]) -> JudgeUse | None:
    """The judge's use as one task's detail metric (``breakdown`` or ``caption_report``) records it; ``None`` when it
    records none (a hand-made file, a benchmark whose scorer never asks the judge)."""
    flags = table.get("flags")
    if isinstance(flags, Mapping) and isinstance(flags.get("judge"), Mapping):
        statuses = _counts(flags["judge"])
        unit = "outputs" if isinstance(flags.get("answer_source"), Mapping) else "questions"
        problems = {name: statuses[name] for name in ("judge_failed", "judge_off") if statuses.get(name)}
        return JudgeUse(unit, sum(statuses.values()), statuses.get("judged", 0), problems)
    counts, overall = table.get("counts"), table.get("overall")
    if isinstance(counts, Mapping) and "by_judge" in counts and isinstance(overall, Mapping):  # CharXiv
        recorded = _counts(counts.get("flags"))
        problems = {
            "ungraded_failed": recorded.get("judge_failed", 0),
            "ungraded_off": recorded.get("judge_absent", 0),
            "judge_off": int(counts.get("wrong_without_judge") or 0),
        }
        total = int(overall.get("questions") or 0)
        return JudgeUse("questions", total, int(counts["by_judge"]), {k: v for k, v in problems.items() if v})
    judged = table.get("judged")
    if isinstance(judged, Mapping):  # captioning: the judged metrics' statuses
        captions = {
            metric: _counts(detail.get("status"))
            for metric, detail in judged.items()
            if metric in JUDGED_METRICS and isinstance(detail, Mapping)
        }
        return JudgeUse("captions", captions=captions) if captions else None
    return None


def added(tables: Iterable[Mapping[str, Any]]) -> JudgeUse | None:
    """The judge's use over several tasks' detail metrics (:func:`judge_use`), added up; ``None`` when none records
    any."""
    total: JudgeUse | None = None
    for table in tables:
        found = judge_use(table)
        if found is None:
            continue
        if total is None:
            total = JudgeUse(found.unit)
        total.add(found)
    return total


def caption_metric_words(statuses: Mapping[str, int]) -> str:
    """One judged captioning metric's statuses in words: ``9 of 9 captions scored`` and, for the rest, why they have
    no score (``2 judge failed``)."""
    scored = statuses.get("scored", 0)
    total = sum(statuses.values())
    rest = [f"{statuses[name]:,} {words}" for name, words in CAPTION_PROBLEMS.items() if statuses.get(name)]
    others = sorted(name for name in statuses if name != "scored" and name not in CAPTION_PROBLEMS)
    rest += [f"{statuses[name]:,} {name}" for name in others]
    text = f"{scored:,} of {total:,} captions scored"
    return f"{text} ({', '.join(rest)})" if rest else text


def judge_words(use: JudgeUse, model: str) -> str:
    """The judge's use in words: ``not used (40 questions)``, ``gpt-4o-mini, 12 of 40 questions`` with what became of
    the questions it did not score; captioning: ``gpt-4o-mini: FActScore 9 of 9 captions scored; G-Eval relevance 9
    of 9 captions scored`` (a metric with no caption scored is n/a)."""
    if use.unit == "captions":
        if all(set(statuses) <= {"judge_off"} for statuses in use.captions.values()):
            count = max((sum(statuses.values()) for statuses in use.captions.values()), default=0)
            return f"not configured ({' / '.join(JUDGED_METRICS.values())} n/a; {count:,} captions)"
        parts = []
        for metric, statuses in use.captions.items():
            text = caption_metric_words(statuses)
            parts.append(f"{JUDGED_METRICS[metric]} {text}" + ("" if statuses.get("scored") else ", n/a"))
        return f"{model}: {'; '.join(parts)}"
    counted = f"{use.total:,} {use.unit}"
    head = f"{model}, {use.judged:,} of {counted}" if use.judged else f"not used ({counted})"
    return "; ".join([head, *(PROBLEMS[name].format(n=count) for name, count in use.problems.items() if count)])
