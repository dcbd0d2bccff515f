"""Multiple-choice answer resolution: deterministic first, a judge only for genuinely ambiguous outputs, never a guess.

The SciFIBench paper parses every output with an LLM (Gemini 1.0 Pro, 3 tokens, temperature 0) using
:data:`JUDGE_PROMPT`. We resolve the letter by rules whenever the output states one answer unambiguously, and call
the judge (same prompt) only for outputs the rules refuse. An output still unresolved is counted wrong and flagged.

Rules, in order (the first rule that finds a letter decides; a rule that finds two different letters refuses):

1. nothing to read: empty output or lmms-eval's request-failure marker → refused;
2. ``<think>`` blocks and end-of-sequence tokens are removed;
3. explicit answer statements: ``<answer>C</answer>``, ``\\boxed{C}``, ``Answer: C`` / ``Final answer - (C)`` in any
   case, "the answer/correct caption/option/image is C", "option B", "image D" — every statement in the output
   must name the same letter;
4. the whole output is one option label (``C``, ``(C)``, ``**C**``, ``C.``, ``C)``);
5. the output starts with one option label followed by text (``E) A plot of ...`` is E, whatever the text says);
6. the output reproduces the text of exactly one option.

Refused: outputs echoing several option labels (``A) ... B) ...``), alternatives such as "B or C", conflicting
statements, refusals and outputs naming no option.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from scifig_tasks.core.outputs import output_status

if TYPE_CHECKING:
    from scifig_tasks.core.judge import JudgeClient

JUDGE_PROMPT = (
    "Here is the output from a generative model:\n{output}\nThe output contains the answer to a multiple choice "
    "question with options A) - {last}). Return only the letter of the answer. If no answer is found, return None."
)
"""The SciFIBench paper's parsing prompt (options A) - E) for SciFIBench; the last letter follows the options)."""

JUDGE_MAX_TOKENS = 3

Method = Literal["rule", "judge", "unresolved"]


@dataclass(frozen=True)
class Resolution:
    """The resolved letter (``None`` when unresolved), how it was obtained, and why (rule name or refusal)."""

    letter: str | None
    method: Method
    reason: str


_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_UNCLOSED_THINK = re.compile(r"^.*</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_SPECIAL_TOKENS = re.compile(r"</s>|<\|[a-z_]+\|>|<eos>|<end_of_turn>", re.IGNORECASE)


def _letter_pattern(letters: str) -> str:
    # An upper-case option letter standing alone (case-sensitive even inside IGNORECASE patterns, so the article
    # "a" is never read as A), optionally wrapped in (), [], ** or quotes.
    return rf"[\(\[\*\"']*\s*(?-i:([{letters}]))(?![A-Za-z0-9])[\)\]\*\"']*"


def _statement_patterns(letters: str) -> list[re.Pattern[str]]:
    letter = _letter_pattern(letters)
    return [
        re.compile(rf"<answer>\s*{letter}\s*</answer>", re.IGNORECASE),
        re.compile(rf"\\boxed\{{\s*(?:\\text\{{)?\s*{letter}\s*\}}?\s*\}}"),
        re.compile(rf"\b(?:final\s+)?answer[\"']?\s*(?:is\s*)?[:\-]\s*\**\s*{letter}", re.IGNORECASE),
        re.compile(
            rf"\b(?:answer|choice|option|caption|image|figure|one)\s+(?:that\s+[\w\s]+?\s+)?(?:is|would\s+be|must\s+be)"
            rf"\s*(?:option\s+|image\s+|caption\s+)?:?\s*\**\s*{letter}",
            re.IGNORECASE,
        ),
        re.compile(rf"\b(?:option|image|caption|choice)\s+{letter}", re.IGNORECASE),
        # "answer: d" — a lower-case letter only when nothing but punctuation follows it
        re.compile(rf"\banswer\s*:\s*[\(\*]*([{letters.lower()}])[\)\*]*\s*(?:$|[.\n])", re.IGNORECASE),
    ]


def _option_label_at_line_start(letters: str) -> re.Pattern[str]:
    return re.compile(rf"^\s*[\(\*]*([{letters}])[\)\.:]\**\s", re.MULTILINE)


_TOKEN = re.compile(r"-?\d+(?:\.\d+)?|[^\W\d_]+")


def _tokens(text: str) -> list[str]:
    """Lower-case words and signed decimal numbers (so "2" never matches "-2" and "0.45" never matches "0.4")."""
    return _TOKEN.findall(text.lower())


def _contains(haystack: list[str], needle: list[str]) -> bool:
    width = len(needle)
    return any(haystack[start : start + width] == needle for start in range(len(haystack) - width + 1))


def strip_label(option: str) -> str:
    """An option's text without its ``A) `` label (SciFIBench options sometimes have two spaces after it)."""
    return re.sub(r"^\s*\(?[A-Z][\)\.:]\s*", "", option)


def clean_output(output: str) -> str:
    """Remove reasoning blocks and end-of-sequence tokens; keep everything else."""
    text = _THINK.sub(" ", output)
    if re.search(r"</think(?:ing)?>", text, re.IGNORECASE):
        text = _UNCLOSED_THINK.sub(" ", text)
    return _SPECIAL_TOKENS.sub(" ", text).strip()


def resolve_by_rules(output: str | None, options: Sequence[str]) -> Resolution:
    """Apply the deterministic rules; ``method`` is ``"rule"`` when resolved, else ``"unresolved"`` with a reason."""
    letters = "".join(chr(ord("A") + index) for index in range(len(options)))
    status = output_status(output)
    if status != "ok":
        return Resolution(None, "unresolved", status)
    text = clean_output(output or "")
    if not text:
        return Resolution(None, "unresolved", "empty")

    labelled = set(_option_label_at_line_start(letters).findall(text))
    if len(labelled) >= 2:
        return Resolution(None, "unresolved", "several options echoed")

    stated = {
        _article_aware(match.group(1).upper(), text[match.end() :], options, letters)
        for pattern in _statement_patterns(letters)
        for match in pattern.finditer(text)
    }
    if len(stated) == 1:
        return Resolution(stated.pop(), "rule", "answer statement")
    if len(stated) > 1:
        return Resolution(None, "unresolved", f"conflicting answers {sorted(stated)}")

    if re.search(rf"(?<![A-Za-z])[{letters}](?![A-Za-z])\)?\s*(?:or|/)\s*\(?[{letters}](?![A-Za-z])", text):
        return Resolution(None, "unresolved", "alternatives")

    whole = re.fullmatch(rf"[\(\[\*\s]*([{letters}])[\)\]\*\.:\s]*", text)
    if whole:
        return Resolution(whole.group(1), "rule", "letter only")

    leading = re.match(rf"\s*[\(\*]*([{letters}])(?:[\)\.:]\**|\*\*)\s+\S", text)
    if leading:
        return Resolution(leading.group(1), "rule", "leading option label")

    quoted = _tokens(text)
    matches = [
        letter
        for letter, option in zip(letters, options, strict=True)
        if (body := _tokens(strip_label(option))) and _contains(quoted, body)
    ]
    if len(matches) == 1:
        return Resolution(matches[0], "rule", "option text")
    if len(matches) > 1:
        return Resolution(None, "unresolved", "several option texts")
    return Resolution(None, "unresolved", "no option named")


def _article_aware(letter: str, after: str, options: Sequence[str], letters: str) -> str:
    """Read "A comparison of runtime ..." as the option whose text it quotes, not as option A.

    A stated "A" followed by words is ambiguous between the letter and the article; when the words start an option's
    text, that option is the answer (which is A itself when A's text is quoted). Otherwise the letter stands.
    """
    if letter != "A" or not re.match(r"\s+[a-z]", after):
        return letter
    continuation = _tokens(after)
    for candidate, option in zip(letters, options, strict=True):
        words = _tokens(strip_label(option))[:3]
        if words and continuation[: len(words)] == words:
            return candidate
    return letter


def judge_prompt(output: str, n_options: int) -> str:
    return JUDGE_PROMPT.format(output=output, last=chr(ord("A") + n_options - 1))


def parse_judge_reply(reply: str | None, n_options: int) -> str | None:
    """The judge's letter, or ``None`` for "None", an empty reply or anything that is not one valid letter."""
    if reply is None:
        return None
    letters = "".join(chr(ord("A") + index) for index in range(n_options))
    found = set(re.findall(rf"(?<![A-Za-z])([{letters}])(?![A-Za-z])", reply.replace("None", "")))
    return found.pop() if len(found) == 1 else None


def resolve(output: str | None, options: Sequence[str], judge: JudgeClient | None = None) -> Resolution:
    """Rules first; the judge (paper prompt) only for outputs the rules refuse; unresolved otherwise.

    Outputs with nothing to read (empty, request failed) never go to the judge.
    """
    ruled = resolve_by_rules(output, options)
    if ruled.method == "rule" or ruled.reason in ("empty", "request_failed") or judge is None:
        return ruled
    result = judge.complete(judge_prompt(clean_output(output or ""), len(options)), max_tokens=JUDGE_MAX_TOKENS)
    if result.status != "judged":
        return Resolution(None, "unresolved", f"{ruled.reason}; judge failed")
    letter = parse_judge_reply(result.text, len(options))
    if letter is None:
        return Resolution(None, "unresolved", f"{ruled.reason}; judge found none")
    return Resolution(letter, "judge", ruled.reason)
