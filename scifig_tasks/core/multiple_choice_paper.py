"""The papers' own answer parsing for multiple choice, used by the ``_paper`` tasks.

SciFIBench paper App. B (every output to the LLM, reply compared by equality) and the MMSci authors'
``print_result.py``. Manual: docs/protocols.md, 'The papers' own multiple-choice parsing'.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import TYPE_CHECKING

from scifig_tasks.core.judge.replies import says_something
from scifig_tasks.core.judged_hooks import JudgeRequired
from scifig_tasks.core.multiple_choice import (
    JUDGE_MAX_TOKENS,
    Resolution,
    judge_prompt,
    judge_reply_readable,
)
from scifig_tasks.core.raw_outputs import output_status

if TYPE_CHECKING:
    from scifig_tasks.core.judge.client import JudgeClient

MMSCI_JUDGE_SYSTEM = (
    "The user will provide an analysis of a multiple-choice question with a few options. Based on the analysis, "
    "infer the correct answer."
)
MMSCI_JUDGE_USER = (
    "The question is: {question}.\nThe anaylysis is: {analysis}\nWhat is the correct answer mentioned in this "
    "analysis? Return only the final choice (A, B, C, D, ...)"
)
"""The authors' messages verbatim ("anaylysis" is their spelling)."""
MMSCI_JUDGE_TEMPERATURE = 0.7
MMSCI_JUDGE_MAX_TOKENS = 1024
MMSCI_LABELS = string.ascii_uppercase
"""The authors read any of A–Z as a label, whatever the number of options (a label beyond them scores wrong)."""


def _needs_judge(judge: JudgeClient | None, benchmark: str) -> JudgeClient:
    """``judge``; :class:`~scifig_tasks.core.judged_hooks.JudgeRequired` when there is none (the run's tasks are
    checked before the model runs; this is for a scoring call that was not)."""
    if judge is None:
        raise JudgeRequired([f"the {benchmark} paper protocol"])
    return judge


def resolve_scifibench(output: str | None, options: Sequence[str], judge: JudgeClient | None) -> Resolution:
    """SciFIBench's protocol: the judge parses every output; its reply must be the letter itself."""
    status = output_status(output)
    if status != "ok":
        return Resolution(None, "unresolved", status, protocol="paper")
    result = _needs_judge(judge, "SciFIBench").complete(
        judge_prompt(output or "", len(options)),
        max_tokens=JUDGE_MAX_TOKENS,
        accept=lambda reply: judge_reply_readable(reply, len(options)),
    )
    if result.status != "judged":
        return Resolution(None, "unresolved", "judge failed", protocol="paper")
    reply = (result.text or "").strip()
    if len(reply) == 1 and reply in MMSCI_LABELS[: len(options)]:
        return Resolution(reply, "judge", "paper parse", protocol="paper")
    return Resolution(None, "unresolved", "judge reply is not a letter", protocol="paper")


def authors_reply_label(reply: str) -> str | None:
    """MMSci's ``rule_based_answer`` on a reply, checked label by label from A to Z; ``None`` when it finds none."""
    for label in MMSCI_LABELS:
        lower = label.lower()
        forms = (
            f"*Answer*: {label}",
            f"*Answer*: {lower}",
            f"**Answer**: {label}",
            f"**Answer**: {lower}",
            f" {label} ",
            f"sub-figure {lower}",
            f"subfigure {lower}",
            f"sub-figure ({lower})",
            f"subfigure ({lower})",
            f"{label}:",
            f" {label}**",
            f"**{label}**",
            f"**{lower}**",
            f" {label}.",
            f" {lower}.",
        )
        if reply == label or any(form in reply for form in forms):
            return label
    return None


def resolve_mmsci(output: str | None, question: str, judge: JudgeClient | None) -> Resolution:
    """MMSci's protocol; ``question`` is the question with its ``\\nA: ...`` option lines, as the authors store it."""
    status = output_status(output)
    if status != "ok":
        return Resolution(None, "unresolved", status, protocol="paper")
    if output in MMSCI_LABELS:
        return Resolution(output, "rule", "bare label", protocol="paper")
    analysis = (output or "").strip()
    if "[/INST]" in analysis:
        analysis = analysis.split("[/INST]")[-1].strip()
    result = _needs_judge(judge, "MMSci").complete(
        MMSCI_JUDGE_USER.format(question=question, analysis=analysis),
        system=MMSCI_JUDGE_SYSTEM,
        temperature=MMSCI_JUDGE_TEMPERATURE,
        max_tokens=MMSCI_JUDGE_MAX_TOKENS,
        accept=says_something,  # the authors' reader decides what a real reply says
    )
    if result.status != "judged":
        return Resolution(None, "unresolved", "judge failed", protocol="paper")
    label = authors_reply_label((result.text or "").strip())
    if label is None:
        return Resolution(None, "unresolved", "judge reply names no label", protocol="paper")
    return Resolution(label, "judge", "paper parse", protocol="paper")
