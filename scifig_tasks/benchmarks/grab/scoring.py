"""GRAB's protocols on one output: which rule decides, chosen by the task.

``grab`` (scifig's default) scores the answer as a whole (:mod:`scifig_tasks.benchmarks.grab.whole_answer`);
``grab_paper`` as the authors' code does, the output cut to the answer's length and compared (GRAB README; paper
§4.2.3: :func:`scifig_tasks.benchmarks.grab.rules.exact_match`); ``grab_llm_extract`` is the paper's ablation (§4.5),
the judge's extraction then the authors' rule. Both rules' verdicts are kept on every exact-scored output, so a run
counts the outputs they score differently. Manual: tasks/README.md, 'The answer as a whole'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scifig_tasks.benchmarks.grab import whole_answer
from scifig_tasks.benchmarks.grab.rules import (
    GrabScore,
    exact_match,
    extraction_prompt,
    extraction_reply_readable,
    precision_of,
    score_extracted,
    truncate,
)
from scifig_tasks.core.raw_outputs import output_status
from scifig_tasks.core.scoring_protocol import Protocol

if TYPE_CHECKING:
    from scifig_tasks.core.judge.client import JudgeClient


def score_rules(output: str | None, answer: str, question: str, protocol: Protocol) -> GrabScore:
    """Both rules on one output; ``protocol`` says whose verdict counts (``default``: the whole answer, ``paper``:
    truncation). An empty or failed output is wrong under both, never read."""
    status = output_status(output)
    if status != "ok" or output is None:
        rule = "whole_answer" if protocol == "default" else "truncation"
        return GrabScore(False, status, rule=rule, whole_answer_correct=False, truncation_correct=False)
    whole = whole_answer.score(output, answer, question)
    truncation = exact_match(output, answer)
    return GrabScore(
        correct=whole.correct if protocol == "default" else truncation,
        output_status=status,
        rule="whole_answer" if protocol == "default" else "truncation",
        reading=whole.reading,
        read=whole.answer,
        reason=whole.reason,
        whole_answer_correct=whole.correct,
        truncation_correct=truncation,
        truncated=truncate(output, answer),
    )


def score_doc(
    doc: Mapping[str, Any],
    output: str | None,
    judge: JudgeClient | None = None,
    *,
    llm_extract: bool = False,
    protocol: Protocol = "default",
) -> GrabScore:
    """Score one GRAB row under ``protocol``; with ``llm_extract`` the judge extracts the answer first (the paper's
    ablation, whatever the protocol)."""
    if not llm_extract:
        return score_rules(output, doc["answer"], doc["question"], protocol)
    if output_status(output) != "ok" or judge is None:
        return score_extracted(output, doc["answer"], "judge_off", None)
    answer_format = precision_of(doc["question"])
    result = judge.complete(
        extraction_prompt(doc["question"], output or ""),
        accept=lambda reply: extraction_reply_readable(reply, answer_format),
    )
    return score_extracted(output, doc["answer"], result.status, result.text)
