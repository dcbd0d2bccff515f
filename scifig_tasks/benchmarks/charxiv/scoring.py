"""CharXiv's two protocols over one task's responses, shared by lmms-eval's hooks and VLMEvalKit's datasets.

* ``default``: :func:`graded_now` per response -- the exact rules (:mod:`.rules`) where the response commits to one
  answer, else the judge with the authors' rubric (a descriptive batch of one, a reasoning query), else, with no
  judge configured, wrong and flagged.
* ``paper``: the authors' grading (``src/evaluate.py``), at aggregation (:func:`evaluate`): every response to the
  judge, descriptive ones in the authors' batches of five per template.

A grading that fails or comes back in another shape is asked again, then the question is ungraded: flagged and left
out of the accuracy, with a count (:mod:`.scores`). An empty output or a framework's failure marker is wrong and
flagged and never sent to the judge (:mod:`scifig_tasks.core.raw_outputs`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from scifig_tasks.benchmarks.charxiv import grading, scores
from scifig_tasks.benchmarks.charxiv.rules import rule_decision
from scifig_tasks.core.raw_outputs import output_status

if TYPE_CHECKING:
    from scifig_tasks.core.judge.client import JudgeClient

Protocol = Literal["default", "paper"]
NO_JUDGE = "undecided_no_judge"
"""The flag of a response the rules leave undecided when no judge is configured (counted wrong)."""


def ungraded_record(doc: Mapping[str, Any], output: str | None, *, protocol: Protocol) -> dict[str, Any]:
    """The record of one question and its response, before grading (:func:`scores.summary`'s record fields plus
    what grading reads). An empty output or a failure marker is graded here: wrong, flagged."""
    kind = "descriptive" if "template" in doc else "reasoning"
    record: dict[str, Any] = {
        "query_id": str(doc["query_id"]),
        "kind": kind,
        "protocol": protocol,
        "answer": doc["answer"],
        "response": (output or "").strip(),
        "verdict": None,
        "graded_by": None,
        "extracted": None,
        "flag": None,
    }
    if kind == "descriptive":
        record["template"] = int(doc["template"])
    else:
        record.update(
            answer_type=int(doc["answer_type"]),
            question_source=int(doc["question_source"]),
            raw_question=doc["raw_question"],
        )
    status = output_status(output)
    if status != "ok":
        record.update(verdict=0, graded_by="rule", flag=f"{status}_output")
    return record


def _with_grade(record: dict[str, Any], grade: grading.Grade | grading.Ungraded) -> dict[str, Any]:
    if isinstance(grade, grading.Ungraded):
        return {**record, "verdict": None, "graded_by": None, "flag": "judge_failed", "error": grade.error}
    return {**record, "verdict": grade.score, "graded_by": "judge", "extracted": grade.extracted}


def _grade(records: Sequence[dict[str, Any]], judge: JudgeClient, *, paper: bool) -> dict[str, Any]:
    """Per query id, the judge's grade of each record: descriptive in batches (five under the paper protocol, one
    under the default), reasoning one per query, all asked together."""
    descriptive = [record for record in records if record["kind"] == "descriptive"]
    reasoning = [record for record in records if record["kind"] == "reasoning"]
    per_query = grading.PER_QUERY if paper else 1
    return dict(grading.grade(judge, descriptive, reasoning, per_query=per_query, paper=paper))


def graded_now(doc: Mapping[str, Any], output: str | None, judge: JudgeClient | None) -> dict[str, Any]:
    """The default protocol's record of one response: rules, then the judge, then wrong and flagged."""
    record = ungraded_record(doc, output, protocol="default")
    if record["verdict"] is not None:
        return record
    decided = rule_decision(record["response"], record["answer"])
    if decided is not None:  # the record names the case that decided (the sample viewer shows it)
        return {**record, "verdict": int(decided[0]), "graded_by": "rule", "rule": decided[1]}
    if judge is None:
        return {**record, "verdict": 0, "flag": NO_JUDGE}
    return _with_grade(record, _grade([record], judge, paper=False)[record["query_id"]])


_evaluated: dict[str, dict[str, Any]] = {}


def evaluate(records: Sequence[Mapping[str, Any]], judge: JudgeClient | None) -> dict[str, Any]:
    """``accuracy`` (a fraction over the graded questions, None when none is) and ``breakdown``
    (:func:`scores.summary` of the task's kind) of one task's records; the paper protocol's records are graded
    here, in the authors' batches, once per set of records (each metric of the task asks)."""
    key = hashlib.sha256(json.dumps(records, sort_keys=True, default=str).encode()).hexdigest()
    if key not in _evaluated:
        pending = [dict(record) for record in records if record["verdict"] is None and record["protocol"] == "paper"]
        graded = _grade(pending, judge, paper=True) if pending and judge is not None else {}
        final = [
            _with_grade(dict(record), graded[record["query_id"]]) if record["query_id"] in graded else dict(record)
            for record in records
        ]
        if pending and judge is None:
            final = [
                {**record, "flag": "judge_absent"} if record["verdict"] is None and record["flag"] is None else record
                for record in final
            ]
        summary = scores.summary(final)
        part = next(iter(summary.values()), None)
        overall = part["overall"] if part is not None else {"graded": 0}
        accuracy = overall["correct"] / overall["graded"] if overall["graded"] else None
        _evaluated.clear()  # keep only the latest evaluation
        _evaluated[key] = {"accuracy": accuracy, "breakdown": part or {}, "records": final}
    return _evaluated[key]
