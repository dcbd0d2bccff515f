"""What a judge call returns (:class:`JudgeResult`) and when a reply is an answer (the caller's ``accept`` check).

* A reply is an answer only when the caller can read it as the answer it asked for: every call names its ``accept``
  check (a letter where a letter is asked, a number where a number is asked; the protocol's "None" is an answer).
  A reply without text (malformed JSON, no ``choices[0].message.content``, empty content) or one ``accept`` rejects
  is asked again like a failed request; when retries run out the result is ``judge_failed`` (flagged: the run exits
  non-zero) -- ``complete`` never raises for network, HTTP, JSON or reply problems.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

logger = logging.getLogger("scifig.judge")

Accept = Callable[[str], bool]
"""A caller's check that a reply is the answer it asked for (see :func:`has_text`)."""


@dataclass(frozen=True)
class JudgeResult:
    """Outcome of one judge call; ``text`` is the judge's reply when ``status == "judged"``."""

    status: Literal["judged", "judge_failed", "judge_off"]
    text: str | None
    cached: bool = False
    error: str | None = None  # short reason, never containing the API key


@dataclass(frozen=True)
class _Failure:
    error: str
    counts: bool = True  # towards the circuit breaker: the endpoint's fault rather than one prompt's
    malformed: bool = False  # a reply came, without text: asked again


def has_text(reply: str) -> bool:
    """The weakest ``accept`` check: the reply says something (for protocols whose own reader decides the rest)."""
    return bool(reply.strip())


def _readable(text: str, accept: Accept) -> bool:
    """Whether a reply is an answer: not empty, and accepted by the caller's check."""
    if not text.strip():
        return False
    try:
        return bool(accept(text))
    except Exception:  # a check that cannot read the reply has not accepted it
        logger.debug("judge reply check raised", exc_info=True)
        return False
