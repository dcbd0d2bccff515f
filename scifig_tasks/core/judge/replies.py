"""What a judge call returns (:class:`JudgeResult`) and when a reply is an answer (the caller's ``accept`` check).

A reply the check rejects, or one without text, is asked again like a failed request; when the retries run out the
call is ``judge_failed``. See docs/judge.md.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

logger = logging.getLogger("scifig.judge")

Accept = Callable[[str], bool]
"""A caller's check that a reply is the answer it asked for (see :func:`has_text`)."""


FailureKind = Literal["endpoint", "timeout", "redirect", "malformed", "form", "request", "breaker"]
"""Why a call brought no answer: the endpoint failed (no connection, a 5xx, a status about the endpoint such as 401),
no complete reply came within the deadline (``timeout``), the endpoint answered with a redirect, its reply was not a
chat completion (``malformed``), every reply came but the caller's check refused it for its form (``form``), the
endpoint refused this one request (``request``: a 400, 413, 422), or the circuit breaker was open (``breaker``)."""


@dataclass(frozen=True)
class JudgeResult:
    """Outcome of one judge call; ``text`` is the judge's reply when ``status == "judged"``, ``failure`` why there is
    none when ``judge_failed``, ``answered_by`` the model the reply names when it is not the configured one."""

    status: Literal["judged", "judge_failed", "judge_off"]
    text: str | None
    cached: bool = False
    error: str | None = None  # short reason, never containing the API key
    failure: FailureKind | None = None
    answered_by: str | None = None


@dataclass(frozen=True)
class Answer:
    """A reply the caller's check accepts; ``model`` is the model it names when that is not the configured one."""

    text: str
    model: str | None = None


@dataclass(frozen=True)
class Failure:
    """Why one request (with its retries) brought no answer; ``error`` never holds the API key (:func:`scrub`).
    ``detail`` is the example a closing line shows (the refused reply, where a redirect pointed)."""

    error: str
    counts: bool = True  # towards the circuit breaker: the endpoint's fault rather than one prompt's
    malformed: bool = False  # a reply came that is not an answer: asked again
    kind: FailureKind = "endpoint"
    detail: str = ""


def scrub(error: str, api_key: str | None) -> str:
    """``error`` fit for a message: the API key replaced by ``***``, whitespace collapsed, at most 300 characters."""
    if api_key:
        error = error.replace(api_key, "***")
    return " ".join(error.split())[:300]


def has_text(reply: str) -> bool:
    """The weakest ``accept`` check: the reply says something (for protocols whose own reader decides the rest)."""
    return bool(reply.strip())


_NOT_AN_ANSWER = re.compile(
    # the markup of an error page
    r"<(?:!doctype|/?(?:html|head|body|title|h[1-6]|p|div|center|hr|pre|span|br)\b[^<>]{0,200}>)"
    # an error, or a status code, opening the reply
    r"|^[\s\"'*_]{0,3}(?:error|exception|traceback|http/?[\d.]{0,3}\s{1,3}[45]\d\d|[45]\d\d)\b"
    # what gateways and rate limiters say
    r"|\b(?:upstream\s{1,3}(?:overloaded|connect\s{1,3}error|request\s{1,3}timeout)|service\s{1,3}(?:temporarily\s{1,3})?"
    r"unavailable|bad\s{1,3}gateway|gateway\s{1,3}time-?out|internal\s{1,3}server\s{1,3}error|rate\s{1,3}limit\s{1,3}"
    r"exceeded|too\s{1,3}many\s{1,3}requests)\b"
    # a refusal
    r"|^[\s\"'*_]{0,3}(?:i['\u2019]?m\s{1,3}sorry|i\s{1,3}am\s{1,3}sorry|sorry)\b[^\n]{0,60}?"
    r"(?:can['\u2019]?t|cannot|can\s{1,3}not|unable|won['\u2019]?t)\b"
    r"|^[\s\"'*_]{0,3}i\s{1,3}(?:can['\u2019]?t|cannot|can\s{1,3}not|won['\u2019]?t|am\s{1,3}unable\s{1,3}to"
    r"|['\u2019]m\s{1,3}unable\s{1,3}to)\s{1,3}(?:help|assist|comply)\b",
    re.IGNORECASE,
)


def plainly_not_an_answer(reply: str) -> bool:
    """Whether a judge reply is plainly no answer to any prompt, whatever its reader would take from it: the markup of
    an HTML page, an error or an HTTP status code opening the reply (``Error 503: upstream overloaded``, ``500``),
    what a gateway or rate limiter says (``bad gateway``, ``too many requests``), a refusal (``I'm sorry, I can't
    help with that``). Readers of a fixed shape (a letter, a number) refuse such a reply by its shape."""
    return _NOT_AN_ANSWER.search(reply) is not None


def says_something(reply: str) -> bool:
    """The ``accept`` check of readers of free text, the papers' own (MMSci's answer reading, its judged metrics):
    their reader decides what any real reply says, but a reply that is plainly no answer (:func:`plainly_not_an_answer`)
    is asked again and never cached -- their readers would take a label or a digit from it (``ERROR: B`` holds
    ``R:``, G-Eval read ``Error 503: upstream overloaded`` as 3)."""
    return has_text(reply) and not plainly_not_an_answer(reply)


_MINUS_SIGNS = {"\u2212": "-", "\ufe63": "-", "\uff0d": "-"}
"""The minus sign, the small and the full-width hyphen-minus: each is the ASCII ``-`` of a number."""


def ascii_numerals(text: str) -> str:
    """``text`` with its numbers written in ASCII: every decimal digit of any script (Unicode category ``Nd``:
    ``٢``, ``۲``, ``１``, ``𝟑``) as the ASCII digit of its value, and the minus sign U+2212 (and the small and
    full-width hyphen-minus) as ``-``. Everything else is kept: superscripts (``²``), fractions (``½``), Roman
    numerals, dashes (``–``) and decimal or thousands separators of other scripts are not decimal digits, so a reader
    of ASCII numbers refuses them. A reader of judge replies that reads numbers calls it once, on the reply, before
    its check and its score read it, so that the two read the same text."""
    if text.isascii():
        return text
    out = []
    for char in text:
        value = unicodedata.decimal(char, None) if not char.isascii() else None
        out.append(str(value) if value is not None else _MINUS_SIGNS.get(char, char))
    return "".join(out)


def readable(text: str, accept: Accept) -> bool:
    """Whether a reply is an answer: not empty, and accepted by the caller's check."""
    if not text.strip():
        return False
    try:
        return bool(accept(text))
    except Exception:  # a check that cannot read the reply has not accepted it
        logger.debug("judge reply check raised", exc_info=True)
        return False
