"""CharXiv, default protocol: the exact rules that grade a response before (and instead of) the LLM judge.

The CharXiv authors (Wang et al., NeurIPS 2024) grade every response with GPT-4o and their rubrics
(``authors_text.json``). :func:`rule_verdict` decides only where every one of those rubrics gives the same score, and
leaves the rest to the judge: the response must commit to one answer (the whole response, once its surrounding
whitespace, quotes, markdown bold and one trailing period are taken off, is the answer), and the case must be one no
rubric scores otherwise. Each case, and why it is safe:

* the response equals the ground truth (runs of whitespace aside): right. Every rubric gives 1 to the ground truth
  itself ("the same term", "the same value", "the same trend", "the same in rows and columns"). Case counts, except
  in the words Yes, No and Not Applicable (the ``bool`` rubric's own example gives "No" for "no" a 1): ``Φ`` and
  ``φ``, ``ms`` and ``Ms`` may be different symbols or units, so a difference in case goes to the judge.
* both are bare numbers (``-0.5``, ``1.00``, ``1.5e3``; a Unicode minus read as ``-``; no thousands separators, units
  or ``%``, which go to the judge): right when their values are equal, wrong when they differ. The numeric rubrics
  ask for "the exact same value" and allow "different notations" (``1500`` and ``1.5e3``); the text rubrics
  ask for the same term, and two different numbers are never one.
* a bare number against "Not Applicable", either way round: wrong. Every rubric: "When ground truth answer is 'Not
  Applicable', the response must express 'Not Applicable'", and a number is no term or value of "Not Applicable".
* Yes against No, either way round, or either against "Not Applicable": wrong (the ``bool`` rubric: "the same").
* an empty response: wrong. The authors' grading prefix itself: "If there is no provided model response, please
  leave the extracted answer empty and give a score of 0."

Everything else (a sentence, a label that differs, LaTeX, a number with a unit) is left to the judge: ``None``.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

NOT_APPLICABLE = "not applicable"
_YES_NO = ("yes", "no")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_QUOTES = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}
_BOLD = ("**", "__")


def committed(text: str) -> str:
    """The answer a response commits to: ``text`` with its surrounding whitespace, markdown bold and a pair of
    quotes holding no other such quote taken off (as often as they wrap it), and one trailing period (inside or
    outside them); case and inner whitespace as given."""
    period = False
    previous = None
    text = text.strip()
    while text != previous:
        previous = text
        for mark in _BOLD:
            if len(text) > 2 * len(mark) and text.startswith(mark) and text.endswith(mark):
                text = text[len(mark) : -len(mark)].strip()
        close = _QUOTES.get(text[:1])
        if close and len(text) >= 2 and text.endswith(close) and text[0] not in text[1:-1] and close not in text[1:-1]:
            text = text[1:-1].strip()
        if not period and text.endswith(".") and not text.endswith(".."):
            text, period = text[:-1].rstrip(), True
    return text


def _spaced(text: str) -> str:
    """Runs of whitespace as one space."""
    return " ".join(text.split())


def _number(text: str) -> Decimal | None:
    """The value of a bare number (Unicode minus allowed), else None."""
    text = text.replace("\u2212", "-")
    if not _NUMBER.fullmatch(text):
        return None
    try:
        return Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only what Decimal reads
        return None


RULE_CASES = {
    "empty": "an empty response",
    "same": "the response is the ground truth",
    "numbers": "bare numbers compared by value",
    "number_vs_not_applicable": "a number against Not Applicable",
    "categorical": "Yes / No / Not Applicable compared",
}
"""Each case :func:`rule_decision` decides, as a record names it (the module docstring says why each is safe)."""


def rule_decision(response: str, answer: str) -> tuple[bool, str] | None:
    """Whether ``response`` is right for the ground truth ``answer`` and the case that decided it (a value of
    :data:`RULE_CASES`), where a rule decides exactly; ``None`` when only the judge can say."""
    said, truth = committed(response), committed(answer)
    if not said:
        return False, RULE_CASES["empty"]
    if _spaced(said) == _spaced(truth):
        return True, RULE_CASES["same"]
    said_number, true_number = _number(said), _number(truth)
    if said_number is not None and true_number is not None:
        return said_number == true_number, RULE_CASES["numbers"]
    said_word, true_word = _spaced(said).casefold(), _spaced(truth).casefold()
    if (said_number is not None and true_word == NOT_APPLICABLE) or (
        true_number is not None and said_word == NOT_APPLICABLE
    ):
        return False, RULE_CASES["number_vs_not_applicable"]
    categorical = (*_YES_NO, NOT_APPLICABLE)
    if said_word in categorical and true_word in categorical:
        if said_word == true_word:
            return True, RULE_CASES["categorical"]  # "Yes" for "yes"
        if said_word in _YES_NO or true_word in _YES_NO:
            return False, RULE_CASES["categorical"]
    return None


def rule_verdict(response: str, answer: str) -> bool | None:
    """Whether ``response`` is right for the ground truth ``answer`` where a rule decides exactly (see the module
    docstring for each case); ``None`` when only the judge can say."""
    decided = rule_decision(response, answer)
    return None if decided is None else decided[0]
