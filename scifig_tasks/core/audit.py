"""Judge audit: how often the LLM judge agrees with the rules on the answers the rules resolved.

Rule: when a judge is configured, a seeded share of a task's rule-resolved multiple-choice answers
(``SCIFIG_JUDGE_AUDIT``, default 0.05 of the task's questions, at least :data:`MIN_PER_TASK`, all of them when there are
fewer; ``0`` switches it off; seed ``SCIFIG_JUDGE_AUDIT_SEED``, default 0) is also sent to the judge with the parsing
prompt it would have had (:func:`scifig_tasks.core.multiple_choice.judge_prompt`). The breakdown's ``judge_audit``
gives the
agreement (judge's letter equal to the rules' letter) with a Wilson 95% interval, lists every disagreement, and
records the judge: its model, endpoint host (never the key), prompt version and cache hits. Scores never change: the
audit only reports.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scifig_tasks.core import settings
from scifig_tasks.core.multiple_choice import (
    JUDGE_MAX_TOKENS,
    JUDGE_PROMPT,
    Resolution,
    clean_output,
    judge_prompt,
    judge_reply_readable,
    parse_judge_reply,
)
from scifig_tasks.core.settings import Settings
from scifig_tasks.core.stats import cell

if TYPE_CHECKING:
    from scifig_tasks.core.judge.client import JudgeClient

AUDIT_KEY = "judge_audit"
SHARE_VARIABLE = settings.JUDGE_AUDIT.name
SEED_VARIABLE = settings.JUDGE_AUDIT_SEED.name
DEFAULT_SHARE = settings.JUDGE_AUDIT.default
MIN_PER_TASK = 20
PROMPT_VERSION = hashlib.sha256(JUDGE_PROMPT.encode()).hexdigest()[:12]
"""Names the parsing prompt's text: it changes whenever the prompt does."""


def audit_share(given: Settings | Mapping[str, str] | None = None) -> float:
    """The configured share (``SCIFIG_JUDGE_AUDIT`` of ``given`` settings, an environment mapping, or the process's
    settings); an unreadable value stops the run naming the variable."""
    return settings.chosen(given).get(settings.JUDGE_AUDIT)


def audit_seed(given: Settings | Mapping[str, str] | None = None) -> int:
    """The seed of the audit's sample (``SCIFIG_JUDGE_AUDIT_SEED``)."""
    return settings.chosen(given).get(settings.JUDGE_AUDIT_SEED)


def prepare(resolution: Resolution, output: str | None, n_options: int, judge: JudgeClient | None) -> Resolution:
    """Keep the judge prompt of a rule-resolved answer on its resolution when an audit will run (stored in the
    per-sample record, so the task's aggregation can send a seeded share of them to the judge)."""
    if judge is None or resolution.method != "rule" or audit_share() == 0:
        return resolution
    return replace(resolution, audit_prompt=judge_prompt(clean_output(output or ""), n_options))


def judge_description(judge: JudgeClient) -> dict[str, Any]:
    """The judge as results record it: model, endpoint host (never the key), prompt version, cache hits so far."""
    return {
        "model": judge.config.model,
        "host": urlsplit(judge.config.base_url).hostname,
        "prompt_version": PROMPT_VERSION,
        "cache_hits": judge.stats["cache_hits"],
    }


def run_audit(
    records: Sequence[Mapping[str, Any]],
    judge: JudgeClient | None,
    identify: Callable[[Mapping[str, Any]], str],
    letter_field: str = "predicted",
) -> dict[str, Any] | None:
    """The task's ``judge_audit`` section (``None`` without a judge); ``identify`` names a record in the list of
    disagreements, ``letter_field`` is the record's field holding the rules' letter."""
    if judge is None:
        return None
    share = audit_share()
    candidates = sorted((record for record in records if record.get("audit_prompt")), key=identify)
    wanted = min(len(candidates), max(math.ceil(share * len(records)), MIN_PER_TASK)) if share > 0 else 0
    seed = audit_seed()
    chosen = random.Random(seed).sample(candidates, wanted)
    results = judge.complete_many(
        [record["audit_prompt"] for record in chosen],
        max_tokens=JUDGE_MAX_TOKENS,
        accept=lambda reply: judge_reply_readable(reply, 26),
    )
    agree, failed, disagreements = 0, 0, []
    for record, result in zip(chosen, results, strict=True):
        if result.status != "judged":
            failed += 1
            continue
        letter = parse_judge_reply(result.text, 26)  # any letter: one the rules did not read is a disagreement
        if letter == record[letter_field]:
            agree += 1
        else:
            disagreements.append({"id": identify(record), "rules": record[letter_field], "judge": letter})
    return _section(share, seed, agree, len(chosen) - failed, failed, disagreements, judge_description(judge))


def _section(
    share: float,
    seed: int,
    agree: int,
    compared: int,
    failed: int,
    disagreements: list[dict[str, Any]],
    judge: dict[str, Any],
) -> dict[str, Any]:
    return {
        "share": share,
        "seed": seed,
        "agreement": cell(agree, compared),
        "judge_failed": failed,
        "disagreements": sorted(disagreements, key=lambda item: str(item["id"])),
        "judge": judge,
    }


def merge_audits(parts: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """A group's audit: counts summed exactly, disagreements listed together, the last task's judge description."""
    sections = [part for part in parts if part]
    if not sections:
        return None
    agree = sum(section["agreement"]["correct"] for section in sections)
    compared = sum(section["agreement"]["n"] for section in sections)
    return _section(
        sections[0]["share"],
        sections[0]["seed"],
        agree,
        compared,
        sum(section["judge_failed"] for section in sections),
        [item for section in sections for item in section["disagreements"]],
        sections[-1]["judge"],
    )


def attach(table: dict[str, Any], section: dict[str, Any] | None) -> dict[str, Any]:
    """The breakdown with its ``judge_audit`` section (when an audit or a judge description exists)."""
    if section is not None:
        table[AUDIT_KEY] = section
    return table


def without_audit(parts: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[Any]]:
    """Breakdowns without their audit sections (for exact count merging), and the sections."""
    stripped, sections = [], []
    for part in parts:
        stripped.append({key: value for key, value in part.items() if key != AUDIT_KEY})
        sections.append(part.get(AUDIT_KEY))
    return stripped, sections
