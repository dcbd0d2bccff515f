"""CharXiv scores: accuracy over the graded questions, the authors' breakdowns, and the authors' own figure.

The groups are the CharXiv authors' (Wang et al., NeurIPS 2024; ``src/score_utils.py``): descriptive templates in
five groups (``QNUM2QTYPE``), reasoning questions by answer type (``IDX2ANSTYPE``), question source
(``IDX2SRC``). Scores are percentages with 2 decimals (their ``round(100 * x, 2)``).

:func:`summary` leaves an ungraded question (``verdict`` None: the grading failed or came back in another shape) out of
the accuracy and counts it; the authors' ``get_stats.py`` counts it 0 over all questions, which
``authors_score`` keeps, so the paper's number is one key away.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scifig_tasks.core.stats import wilson_interval

KINDS = ("descriptive", "reasoning")
DESCRIPTIVE_GROUPS = {
    **dict.fromkeys((1, 2, 3, 4, 5, 6, 7), "Information Extraction"),
    **dict.fromkeys((8, 9, 13, 14, 15), "Enumeration"),
    **dict.fromkeys((11, 16, 18), "Pattern Recognition"),
    **dict.fromkeys((10, 12, 19), "Counting"),
    17: "Compositionality",
}
"""Descriptive template (1..19) -> the authors' group."""
GROUP_ORDER = ("Information Extraction", "Enumeration", "Pattern Recognition", "Counting", "Compositionality")
ANSWER_TYPES = {1: "Text-in-Chart", 2: "Text-in-General", 3: "Number-in-Chart", 4: "Number-in-General"}
QUESTION_SOURCES = {1: "GPT-Sourced", 2: "GPT-Inspired", 3: "Completely Human"}
GRADERS = ("rule", "judge", None)


def _percent(value: float) -> float:
    return round(100 * value, 2)


def _cell(scores: list[int | None]) -> dict[str, Any]:
    """One breakdown cell: counts, accuracy over the graded (percent, 95% Wilson interval) and the authors' score
    (ungraded as 0, over all); ``accuracy`` is None when none is graded."""
    graded = [score for score in scores if score is not None]
    correct = sum(graded)
    low, high = wilson_interval(correct, len(graded))
    return {
        "questions": len(scores),
        "graded": len(graded),
        "correct": correct,
        "accuracy": _percent(correct / len(graded)) if graded else None,
        "ci95": [_percent(low), _percent(high)],
        "authors_score": _percent(correct / len(scores)) if scores else None,
    }


def _checked(record: Mapping[str, Any]) -> tuple[str, int | None, str | None]:
    kind, score, graded_by = record.get("kind"), record.get("verdict"), record.get("graded_by")
    if kind not in KINDS:
        raise ValueError(f"CharXiv record {record.get('query_id')!r}: kind {kind!r} is not one of {KINDS}")
    if score not in (0, 1, None) or isinstance(score, bool):
        raise ValueError(f"CharXiv record {record.get('query_id')!r}: verdict {score!r} is not 1, 0 or None")
    if graded_by not in GRADERS:
        raise ValueError(f"CharXiv record {record.get('query_id')!r}: graded_by {graded_by!r} is not one of {GRADERS}")
    if score == 1 and graded_by is None:
        raise ValueError(f"CharXiv record {record.get('query_id')!r}: right, but graded by nothing")
    return kind, score, graded_by


def _breakdown(keyed: Iterable[tuple[Any, int | None]], order: Sequence[Any] | None = None) -> dict[str, Any]:
    """Cells per key, in ``order`` (keys without a question left out), else in sorted order."""
    table: dict[Any, list[int | None]] = {}
    for key, score in keyed:
        table.setdefault(key, []).append(score)
    return {str(key): _cell(table[key]) for key in (sorted(table) if order is None else order) if key in table}


def _kind_summary(kind: str, records: list[Mapping[str, Any]]) -> dict[str, Any]:
    scores = [record["verdict"] for record in records]
    overall = _cell(scores)
    graded_by = Counter(record.get("graded_by") for record in records)
    flags = Counter(str(record["flag"]) for record in records if record.get("flag"))
    part: dict[str, Any] = {
        "overall": overall,
        "counts": {
            "ungraded": len(records) - overall["graded"],
            "by_rule": graded_by["rule"],
            "by_judge": graded_by["judge"],
            "wrong_without_judge": sum(1 for r in records if r["verdict"] == 0 and r.get("graded_by") is None),
            "flags": dict(sorted(flags.items())),
        },
    }
    if kind == "descriptive":
        templates = [int(record["template"]) for record in records]
        part["by_group"] = _breakdown(
            ((DESCRIPTIVE_GROUPS[t], r["verdict"]) for t, r in zip(templates, records, strict=True)), GROUP_ORDER
        )
        part["by_template"] = _breakdown((t, r["verdict"]) for t, r in zip(templates, records, strict=True))
    else:
        part["by_answer_type"] = _breakdown(
            ((ANSWER_TYPES[int(r["answer_type"])], r["verdict"]) for r in records), list(ANSWER_TYPES.values())
        )
        if all(record.get("question_source") is not None for record in records):
            part["by_source"] = _breakdown(
                ((QUESTION_SOURCES[int(r["question_source"])], r["verdict"]) for r in records),
                list(QUESTION_SOURCES.values()),
            )
    return part


def summary(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per kind present (``descriptive``, ``reasoning``; the authors never merge the two):

    * ``overall``, a cell: ``questions``, ``graded``, ``correct``, ``accuracy`` (percent, over the graded
      questions), its ``ci95`` (95% Wilson interval, percent) and ``authors_score`` (the authors' ``get_stats.py``
      "Overall Score": ungraded counted 0, over all questions);
    * ``counts``: ``ungraded`` (left out of the accuracy), ``by_rule``, ``by_judge``, ``wrong_without_judge``
      (verdict 0 with no grader: no judge was configured) and ``flags`` (the records' ``flag`` values counted);
    * ``by_group`` (descriptive: the five groups) and ``by_template`` (1..19), or ``by_answer_type`` and, when every
      record has its ``question_source``, ``by_source`` (reasoning): cells like ``overall``.

    A record: ``query_id``, ``kind``, ``template`` (descriptive) or ``answer_type`` (reasoning), ``verdict`` (1, 0 or
    None for ungraded), ``graded_by`` (``"rule"``, ``"judge"`` or None) and optionally ``flag`` and
    ``question_source``.
    """
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        kind, _, _ = _checked(record)
        by_kind.setdefault(kind, []).append(record)
    return {kind: _kind_summary(kind, by_kind[kind]) for kind in KINDS if kind in by_kind}
