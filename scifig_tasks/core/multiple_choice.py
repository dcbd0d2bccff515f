"""Multiple-choice answer resolution: a letter is read only where the output commits to it, never guessed.

SciFIBench paper App. B ("Automatic evaluation") parses every output with an LLM; here a small grammar reads committed
letters and the judge, with the paper's prompt, sees only the outputs it refuses. Manual: docs/protocols.md, 'How a
multiple-choice answer is read'.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from typing import TYPE_CHECKING, Literal

from scifig_tasks.core.deprecation import renamed
from scifig_tasks.core.raw_outputs import END_OF_TURN_MARKERS, output_status

if TYPE_CHECKING:
    from scifig_tasks.core.judge.client import JudgeClient

JUDGE_PROMPT = (
    "Here is the output from a generative model:\n{output}\nThe output contains the answer to a multiple choice "
    "question with options A) - {last}). Return only the letter of the answer. If no answer is found, return None."
)
"""The SciFIBench paper's parsing prompt (options A) - E) for SciFIBench; the last letter follows the options)."""

JUDGE_MAX_TOKENS = 3

Method = Literal["rule", "judge", "unresolved"]


@dataclass(frozen=True)
class Resolution:
    """The resolved letter (``None`` when unresolved), how it was obtained, and why (rule name or refusal).

    ``protocol`` is the scoring protocol that produced it: ``default`` (rules first) or ``paper``.
    """

    letter: str | None
    method: Method
    reason: str
    protocol: str = "default"
    audit_prompt: str | None = None
    """The judge prompt of a rule-resolved answer kept for the judge audit (:mod:`scifig_tasks.core.audit`)."""


@dataclass(frozen=True)
class _Commitment:
    letter: str
    start: int
    end: int
    kind: str
    final: bool = False
    own_text_end: int | None = None
    """Where the option's own text that follows the label ends, if it does (its letters are no mentions)."""


# --- reading ---------------------------------------------------------------------------------------------------------

_SPECIAL_TOKENS = re.compile(
    "|".join([*map(re.escape, END_OF_TURN_MARKERS), r"<\|[a-z_]{1,40}\|>", "<eos>"]), re.IGNORECASE
)


_INVISIBLE = re.compile("[\u200b-\u200f\u2060\ufeff\u00ad]")
"""Zero-width spaces and joiners, direction marks, word joiners, byte-order marks and soft hyphens: never part of a
label (``\u200bC`` is ``C``)."""


def clean_output(output: str) -> str:
    """The output without reasoning blocks, end-of-sequence tokens and invisible characters (a linear scan, whatever
    the tags). Reasoning is everything up to the last ``</think>``; an unclosed ``<think>`` runs to the next
    ``<answer>`` tag (the answer was given outside any completed reasoning) or to the end."""
    text = _INVISIBLE.sub("", output)
    lower = text.lower()
    closing = lower.rfind("</think")
    if closing >= 0:
        bracket = lower.find(">", closing)
        text = text[bracket + 1 :] if bracket >= 0 else text[:closing]
        lower = text.lower()
    opening = lower.find("<think")
    if opening >= 0:
        answer = lower.find("<answer>", opening)
        text = text[:opening] + (text[answer:] if answer >= 0 else "")
    return _LATEX_TEXT.sub(r"\1", _SPECIAL_TOKENS.sub(" ", text)).strip()


_LATEX_TEXT = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf)\{([^{}]{0,40})\}|\\[()]")
"""Text inside LaTeX (``\\( \\text{E} \\)`` reads as ``E``): the command and the inline-math brackets go."""


def _stray_close(output: str) -> str:
    """The text before a final ``</think>`` that closes no ``<think>`` and has nothing after it (``C</think>``): some
    chat templates open the reasoning in the prompt, and a model may state its label and close it at once."""
    text = _INVISIBLE.sub("", output)
    lower = text.lower()
    closing, bracket = lower.rfind("</think"), lower.rfind(">")
    if closing < 0 or bracket < closing or "<think" in lower or _SPECIAL_TOKENS.sub("", text[bracket + 1 :]).strip():
        return ""
    return _SPECIAL_TOKENS.sub(" ", text[:closing]).strip()


_TOKEN = re.compile(r"-?\d+(?:\.\d+)?|[^\W\d_]+")


_LATEX_COMMAND = re.compile(r"\\[A-Za-z]{1,20}")


def _tokens(text: str) -> list[str]:
    """Lower-case words and signed decimal numbers (so "2" never matches "-2" and "0.45" never matches "0.4"), LaTeX
    commands left out (``$60^{\\circ}$`` reads as ``60``)."""
    return _TOKEN.findall(_LATEX_COMMAND.sub(" ", text).lower())


def strip_label(option: str) -> str:
    """An option's text without its ``A) `` label (SciFIBench options sometimes have two spaces after it)."""
    return re.sub(r"^\s*\(?[A-Z][\)\.:]\s*", "", option)


# --- the grammar ------------------------------------------------------------------------------------------------------

_OPEN = r"[*_(\[{\"'`]{0,4}"
_CLOSE = r"[*_)\]}\"'`]{0,4}"
_OPENING_CLOSE = r"[*_)\]}\"'`>]{0,4}"
"""Around a label that opens the output, angle brackets are markup too (``<B>``)."""
_NOUN = r"(?:option|choice|caption|image|figure|letter|answer)"
_NOT_A_WORD = r"(?![A-Za-z0-9]|-\w|\+)"

# Words after which a capital "A" is still a letter ("A is wrong"); before any other lower-case word it is the article.
_AFTER_LETTER_A = frozenset(
    [
        "is",
        "was",
        "would",
        "could",
        "does",
        "doesn",
        "isn",
        "can",
        "cannot",
        "might",
        "may",
        "and",
        "or",
        "has",
        "shows",
        "describes",
        "mentions",
        "refers",
        "seems",
        "fits",
        "matches",
        "also",
        "only",
        "represents",
        "depicts",
        "discusses",
        "focuses",
        "says",
        "states",
        "suggests",
        "indicates",
        "lacks",
        "contains",
        "includes",
        "talks",
        "correctly",
        "incorrectly",
        "best",
        "better",
        "appears",
        "looks",
        "captures",
        "highlights",
        "emphasizes",
        "presents",
        "because",
        "since",
        "as",
        "which",
        "with",
        "for",
        "given",
        "due",
        "based",
        "in",
        "on",
        "from",
        "by",
        "according",
    ]
)
_QUALIFIER = re.compile(
    r"(?:\bnot|\bnever|n't|\bcannot|\bmight|\bmay|\bcould|\bpartially|\bpartly|\bsomewhat)\W{0,4}(?:\w+\W{1,4}){0,2}$",
    re.IGNORECASE,
)
_CONDITIONAL = re.compile(r"\b(?:if|whether|unless|suppose|supposing|assuming|assume)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no|none|neither|nor|cannot)\b|n't", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]{0,40}\}){1,80})\}")
_VERB_KINDS = frozenset({"choice verb", "correspondence"})
_DENIAL = re.compile(r"\b(?:none|neither|nor)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?;](?=\s|$)|\n")
_CLAUSE_END = re.compile(r"[.!?;,\n]")
_OBJECT_CUT = re.compile(r"[,;!?\n]|\.(?=\s|$)|\s(?:because|since|as|which|so|but|while|whereas)\s|\s[-–—]\s")
_ARTICLE = frozenset({"a", "an", "the"})


@dataclass(frozen=True)
class _Grammar:
    letters: str
    other_mention: dict[str, re.Pattern[str]]
    """For each letter, any label but that letter; under ``""``, any label."""
    enumeration: re.Pattern[str]
    opening: re.Pattern[str]
    statements: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...]
    text_statement: re.Pattern[str]
    alternatives: re.Pattern[str]
    hedge_after: re.Pattern[str]
    lower_opening: re.Pattern[str]
    lower_statement: re.Pattern[str]
    named_label: re.Pattern[str]
    verdict_after: re.Pattern[str]
    walk_item: re.Pattern[str]


@lru_cache(maxsize=32)
def _grammar(n_options: int) -> _Grammar:
    letters = "".join(chr(ord("A") + index) for index in range(n_options))
    letter = rf"(?-i:(?P<letter>[{letters}])){_NOT_A_WORD}"
    label = rf"{_OPEN}(?:{_NOUN}\s{{1,3}}{_OPEN})?{letter}{_CLOSE}"
    lower_letter = rf"(?-i:(?P<letter>[{letters.lower()}])){_NOT_A_WORD}"
    lower_label = rf"{_OPEN}(?:{_NOUN}\s{{1,3}}{_OPEN})?{lower_letter}{_CLOSE}"
    copula = (
        r"[*_\"']{0,2}\s{0,3}(?:is(?:\s{1,3}(?:therefore|thus|clearly|then|indeed|definitely))?\b|would\s{1,3}be\b"
        r"|should\s{1,3}be\b|must\s{1,3}be\b|will\s{1,3}be\b|=|:|-|–|—)[*_:\t ]{0,4}"
        r"(?:(?:closest|nearest)\s{1,3}to\s{1,3})?"
    )
    nouns = "answer|choice|option|caption|match|selection|response|selected|letter"
    about = (
        r"(?:\s{1,3}(?:to|for|of)\s{1,3}(?:the|this)\s{1,3}(?:question|problem)"
        r"|\s{1,3}to\s{1,3}(?-i:[a-z]{2,20})(?:\s{1,3}(?-i:[a-z]{1,20})){0,4}?)?"
    )
    # (?=[...]) names the first letters of the words a pattern starts with: it lets the engine skip other positions
    head = rf"\b(?=[AaCcOoMmSsRrLlIiFf])(?P<final>final\s{{1,3}})?(?:{nouns}|image|figure){about}\b"
    text_head = rf"\b(?=[AaCcOoMmSsRrLl])(?:{nouns}){about}\b"
    verdict = (
        r"(?:\s{1,3}(?:is|seems|appears)\s{1,3}(?:to\s{1,3}be\s{1,3})?(?:the\s{1,3})?(?:most\s{1,3}|best\s{1,3}|only\s{1,3})?"
        r"(?:correct|right(?!\s{1,3}(?:angled?|triangle|side|hand|half|panel|corner|edge|part|column|image|figure"
        r"|subplot|plot|graph|chart|of|to)\b)|best|answer|appropriate|accurate|suitable|closest|true|match|fitting"
        r"|valid)\b"
        r"|\s{1,3}(?:is|seems|appears)\s{1,3}(?:to\s{1,3}be\s{1,3})?the\s{1,3}most\s{1,3}likely\b"
        r"|\s{1,3}(?:best|most\s{1,3}closely|most\s{1,3}accurately)\s{1,3}"
        r"(?:matches|fits|describes|represents|corresponds|captures|aligns)\b"
        r"|\s{1,3}(?:describes|matches|fits|represents|captures|depicts)(?:\s{1,3}(?:the|this|given|provided)){0,2}"
        r"(?:\s{1,3}(?:figure|image|caption|graph|chart|plot|diagram|question|description|data))?"
        r"\s{1,3}(?:the\s{1,3})?(?:best|most\s{1,3}(?:closely|accurately|precisely))\b)"
    )
    statements = (
        (
            "answer statement",
            (
                "answer",
                "choice",
                "option",
                "caption",
                "image",
                "figure",
                "match",
                "selection",
                "response",
                "selected",
                "letter",
            ),
            re.compile(rf"{head}{copula}{label}", re.IGNORECASE),
        ),
        (
            "answer heading",
            ("answer",),
            re.compile(
                rf"^[#*_\s]{{0,6}}(?:(?P<final>final)\s{{1,3}}|correct\s{{1,3}})?answer[*_:\s]{{0,4}}\n\s{{0,4}}{label}",
                re.IGNORECASE | re.MULTILINE,
            ),
        ),
        (
            "labelled option",
            ("is", "be", "are", "was", "equals"),
            re.compile(rf"\b(?=[IiBbAaWwEe])(?:is|be|are|was|equals)\s{{1,3}}[*_]{{0,2}}{label}", re.IGNORECASE),
        ),
        (
            "colon statement",
            (":",),
            re.compile(rf"\b(?=[IiBbAa])(?:is|be|are)\s{{0,2}}:[*_\s]{{0,6}}{label}", re.IGNORECASE),
        ),
        (
            "answer statement",
            ("选", "答案"),
            re.compile(
                rf"(?:选择|(?:[故应]|所以|因此)选项?|答案\s{{0,2}}(?:应该?是|是|为|:|：|】\s{{0,2}}[:：]?))\s{{0,2}}{label}"
            ),
        ),
        # the label comes first here: starting at its letter keeps the scan fast ("Option B is ..." reads as "B is ...")
        (
            "answer verdict",
            ("is", "seem", "appear", "best", "most"),
            re.compile(rf"{letter}(?<![A-Za-z0-9].){_CLOSE}{verdict}", re.IGNORECASE),
        ),
        (
            "answer verdict",
            ("correct", "true"),
            re.compile(
                rf"{letter}(?<![A-Za-z0-9].){_CLOSE}\s{{0,2}}[:\-–—]\s{{0,3}}(?:also\s{{1,3}})?(?:the\s{{1,3}})?"
                r"(?:correct|true)\b",
                re.IGNORECASE,
            ),
        ),
        (
            "passive verdict",
            ("described", "represented", "matched", "captured", "depicted"),
            re.compile(
                rf"\b(?=[IiAa])(?:is|are)\s{{1,3}}(?:best|most\s{{1,3}}(?:accurately|closely|precisely))\s{{1,3}}"
                rf"(?:described|represented|matched|captured|depicted)\s{{1,3}}by\s{{1,3}}(?:the\s{{1,3}})?{label}",
                re.IGNORECASE,
            ),
        ),
        (
            "pronoun statement",
            ("it", "this", "that"),
            re.compile(
                rf"\b(?=[IiTt])(?:it|this|that)(?:\s{{1,3}}is|['’]s|\s{{1,3}}(?:would|must|should)\s{{1,3}}be)"
                rf"\s{{1,3}}{label}(?=[^\S\n]{{0,2}}(?:[.!]|\n|$))",
                re.IGNORECASE,
            ),
        ),
        (
            "choice verb",
            ("choose", "chose", "select", "pick", "go", "opt"),
            re.compile(
                rf"\b(?=[CcSsPpGgOo])(?:choose|chose|select|pick|picked|go\s{{1,3}}with|opt\s{{1,3}}for)\s{{1,3}}{label}",
                re.IGNORECASE,
            ),
        ),
        (
            "correspondence",
            ("corresponds", "matches", "belongs"),
            re.compile(
                rf"\b(?=[CcMmBb])(?:corresponds|matches|belongs)\s{{1,3}}(?:to\s{{1,3}}|with\s{{1,3}})?(?:the\s{{1,3}})?"
                rf"(?:option|choice|caption|image)\s{{1,3}}{label}",
                re.IGNORECASE,
            ),
        ),
        ("answer tag", ("<answer>",), re.compile(rf"<answer>\s{{0,3}}{label}\s{{0,3}}</answer>", re.IGNORECASE)),
        (
            "boxed",
            ("\\boxed",),
            re.compile(
                rf"\\boxed\{{\s{{0,2}}(?:\\text(?:bf)?\{{)?\s{{0,2}}{label}"
                rf"(?:[.:]?\s{{0,2}}\}}|(?<=[).:\]])\}}?\s{{0,3}}[^{{}}=+*/<>^_\n]{{0,60}}\}}|(?<=[)\]])[^\n]{{0,60}}?\}})"
            ),
        ),
    )
    return _Grammar(
        letters=letters,
        other_mention={letter: _other_mention(letters, letter) for letter in ("", *letters)},
        enumeration=re.compile(
            rf"(?:^|(?<=[.!?]\s))[^\S\n]{{0,4}}[*_#(\[]{{0,4}}(?:(?i:option|choice|caption|image|figure)\s{{1,3}}"
            rf"[*_(\[]{{0,3}})?([{letters}])[*_]{{0,2}}[)\].:]",
            re.MULTILINE,
        ),
        opening=re.compile(
            rf"[\s#>*_(\[{{\"'`<]{{0,6}}(?:(?:answer|option|choice|caption|image|figure)\s{{0,3}}[:\-]?\s{{0,3}}"
            rf"[*_(\[<]{{0,3}})?{letter}(?P<close>{_OPENING_CLOSE})",
            re.IGNORECASE,
        ),
        statements=statements,
        text_statement=re.compile(rf"{text_head}{copula}", re.IGNORECASE),
        alternatives=re.compile(
            rf"(?<![A-Za-z0-9])[{letters}]{_CLOSE}\s{{0,3}}(?:or|/)\s{{0,3}}(?:option\s{{1,3}})?{_OPEN}[{letters}](?![A-Za-z0-9])"
        ),
        hedge_after=re.compile(
            rf"\s{{0,3}}(?:(?:/|&|\bor\b|\band\b)\s{{0,3}}{_OPEN}(?:option\s{{1,3}})?(?-i:[{letters}])(?![A-Za-z0-9])"
            rf"|,\s{{0,3}}(?:and\s{{1,3}})?[(\[]?(?:option\s{{1,3}})?(?-i:[{letters}])[)\]])",
            re.IGNORECASE,
        ),
        lower_opening=re.compile(
            rf"[\s#>*_(\[{{\"'`<]{{0,6}}(?:(?:answer|option|choice)\s{{0,3}}(?:is\s{{1,3}})?[:\-]?\s{{0,3}}[*_(\[<]{{0,3}})?"
            rf"{lower_letter}{_OPENING_CLOSE}[.:]?",
            re.IGNORECASE,
        ),
        named_label=re.compile(
            rf"(?:\b(?=[OoCcAa])(?:option|choice|answer)\s{{1,3}}['\"‘“(\[]{{0,2}}|[(\[]){letter}['\"’”)\]]{{0,2}}",
            re.IGNORECASE,
        ),
        walk_item=re.compile(
            rf"(?:^|(?<=[.!?]\s))[^\S\n]{{0,4}}[*_#(\[\-•]{{0,4}}[^\S\n]{{0,2}}"
            rf"(?:(?i:option|choice|answer)\s{{1,3}}(?=[*_(\['\"‘“]{{0,3}}[{letters}](?![A-Za-z0-9]))"
            rf"|(?=[*_(\['\"‘“]{{0,3}}[{letters}]['\"’”*_]{{0,3}}[)\].:]))[*_(\['\"‘“]{{0,3}}([{letters}])(?![A-Za-z0-9])",
            re.MULTILINE,
        ),
        verdict_after=re.compile(rf"[\s)\]'\"’”*_]{{0,4}},?{verdict}", re.IGNORECASE),
        lower_statement=re.compile(
            rf"(?:{head}{copula}|\b(?=[IiBbAaWw])(?:is|be|are|was)\s{{1,3}}[*_]{{0,2}}){lower_label}", re.IGNORECASE
        ),
    )


_A_AS_LETTER = rf"A(?!\s{{1,3}}[a-z])|A(?=\s{{1,3}}(?:{'|'.join(sorted(_AFTER_LETTER_A))})\b)"
_A_AS_LETTER_PATTERN = re.compile(_A_AS_LETTER)


def _is_article(text: str, position: int) -> bool:
    """Whether the capital "A" at ``position`` is the article ("A plot of ...") rather than option A."""
    return text[position] == "A" and not _A_AS_LETTER_PATTERN.match(text, position)


def _other_mention(letters: str, letter: str) -> re.Pattern[str]:
    """Any label but ``letter`` standing alone (the article "A" excluded): what blocks a misplaced answer."""
    others = [f"[{rest}]"] if (rest := letters.replace(letter, "").replace("A", "")) else []
    if "A" in letters and letter != "A":
        others.append(_A_AS_LETTER)
    if not others:
        return re.compile(r"(?!)")
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{'|'.join(others)})(?![A-Za-z0-9_])")


_OPERATOR_AFTER = re.compile(r"[^\S\n]{0,2}(?:[=+^×]|\*(?!\*)|[<>](?=[\s=\d]))")


def _letter_ends_label(text: str, end: int) -> bool:
    """A label ends at a delimiter, a line end or a space (the article case is checked by :func:`_is_article`); a
    letter before an operator is a variable (``E = I / d^2``)."""
    rest = text[end : end + 2]
    if _OPERATOR_AFTER.match(text, end):
        return False
    return not rest or rest[0] in ".,;:!)]}*\"'`<$|。，；：！）】" or rest[0].isspace()


_CONDITION_AFTER = re.compile(
    r"[^.!?;\n]{0,80}?\b(?:if|unless|provided|assuming|as\s{1,3}long\s{1,3}as)\b", re.IGNORECASE
)
_CONTRARY_AFTER = re.compile(r"[^.!?;\n]{0,80}?\b(?:but|however|although|though|except)\b", re.IGNORECASE)
_MODAL = re.compile(r"\b(?:would|could|might)\s{1,3}be\b", re.IGNORECASE)


def _conditioned(text: str, match: re.Match[str]) -> bool:
    """The statement holds under a condition stated after it ("The answer would be B if the axes were linear"), or
    is a counterfactual that the sentence then turns against ("would be B, but ...")."""
    if _CONDITION_AFTER.match(text, match.end()):
        return True
    return bool(_MODAL.search(match.group())) and _CONTRARY_AFTER.match(text, match.end()) is not None


def _asked(text: str, end: int) -> bool:
    """The statement ends in a question mark ("Is the answer A?")."""
    boundary = re.search(r"[.!?\n]", text[end : end + 120])
    return bool(boundary) and boundary.group() == "?"


def _qualified(text: str, start: int, verb: bool = False) -> bool:
    """The statement is conditional ("if the answer is A") or denied ("none of A, B ... is correct"); a verb
    ("choose", "matches") is also qualified by a negation or hedge right before it ("not choose", "partially matches").
    """
    before = text[max(0, start - 120) : start]
    clause = before[max((match.end() for match in _CLAUSE_END.finditer(before)), default=0) :]
    sentence = before[max((match.end() for match in _SENTENCE_END.finditer(before)), default=0) :]
    negated = verb and _QUALIFIER.search(before[-30:])
    return bool(negated or _CONDITIONAL.search(clause) or _DENIAL.search(sentence))


def _quoted_option(words: list[str], options: list[list[str]]) -> int | None:
    """The one option whose text ``words`` quote: in full, or a truncation of at least three words."""
    candidates = (words, words[1:]) if words and words[0] in _ARTICLE else (words,)
    found = set()
    for quoted in candidates:
        for index, option in enumerate(options):
            if not option or not quoted:
                continue
            if quoted == option or (len(option) > len(quoted) >= 3 and option[: len(quoted)] == quoted):
                found.add(index)
    return found.pop() if len(found) == 1 else None


def _own_text_end(text: str, end: int, option: list[str]) -> int | None:
    """Where a label's own option text ends when the full text follows the label ("is (D) 60°", "(B) Option D in
    the figure"): the pairing makes the label an answer, and the letters inside that text are no mentions."""
    return _text_end(*_words_after(text, end, len(option)), option)


def _other_option_text(text: str, end: int, options: list[list[str]]) -> int | None:
    """The first option whose full text follows a label at ``end`` (called once the label's own text did not)."""
    start, words = _words_after(text, end, max(map(len, options), default=0))
    return next((index for index, option in enumerate(options) if _text_end(start, words, option)), None)


def _words_after(text: str, end: int, count: int) -> tuple[int, list[re.Match[str]]]:
    """Where the text after a label starts (past its delimiters) and its first ``count`` words (offsets from there)."""
    start = _OWN_TEXT_LEAD.match(text, end).end()
    window = _LATEX_COMMAND.sub(lambda command: " " * len(command.group()), text[start : start + 400])
    return start, list(islice(_TOKEN.finditer(window), count))


def _text_end(start: int, words: list[re.Match[str]], option: list[str]) -> int | None:
    """Where ``option``'s full text ends if ``words`` (read from ``start``) begin with it."""
    if not option or [word.group().lower() for word in words[: len(option)]] != option:
        return None
    return start + words[len(option) - 1].end()


_OWN_TEXT_LEAD = re.compile(r"[^\S\n]{0,3}[.:,)\]'\"‘’“”*_\-–—]{0,3}[^\S\n]{0,3}[(\['\"‘“]?")
"""What may stand between a label and its option's text: ``A. Deep vein thrombosis``, ``'B', 'Decreased ...'``."""


def _object_words(text: str, start: int) -> list[str]:
    """The words of a statement's object: up to the end of its clause (at most 400 characters)."""
    window = text[start : start + 400]
    cut = _OBJECT_CUT.search(window)
    return _tokens(window[: cut.start()] if cut else window)


class _Repetitive(Exception):
    """The output repeats answer-like phrases more than :data:`MAX_STATEMENTS` times: degenerate, not an answer."""


MAX_STATEMENTS = 64
"""Answer-like phrases read at most; an output with more (a generation loop) is refused as ``repetitive output``."""


def _candidates(pattern: re.Pattern[str], text: str, budget: list[int]) -> Iterator[re.Match[str]]:
    for match in pattern.finditer(text):
        budget[0] -= 1
        if budget[0] < 0:
            raise _Repetitive
        yield match


def _commitments(
    text: str, grammar: _Grammar, options: list[list[str]], lower_case: bool
) -> tuple[list[_Commitment], int]:
    """Every commitment in ``text``, and where the last would-be commitment hedged with an alternative or a list
    ends (-1 if none did)."""
    found: list[_Commitment] = []
    hedged = -1
    budget = [MAX_STATEMENTS]
    lower = text.lower()
    for kind, keywords, pattern in grammar.statements:
        if not any(keyword in lower for keyword in keywords):
            continue  # the pattern cannot match: skip the scan
        for match in _candidates(pattern, text, budget):
            position = match.start("letter")
            if _is_article(text, position) or not _letter_ends_label(text, position + 1):
                continue
            if _asked(text, match.end()) or _qualified(text, match.start(), kind in _VERB_KINDS):
                continue
            if _conditioned(text, match):
                continue
            letter = match.group("letter")
            own_text = _own_text_end(text, match.end(), options[grammar.letters.index(letter)])
            other = None if own_text is not None else _other_option_text(text, match.end(), options)
            if other is not None:  # "'A': <the text of option E>": two answers
                found.append(_Commitment(grammar.letters[other], match.start(), match.end(), "quoted option"))
            if kind == "labelled option" and own_text is None and not _closes_sentence(text, match):
                continue
            if _hedged(text, match.end(), own_text, grammar, letter):
                hedged = max(hedged, match.end())
                continue
            final = bool(match.groupdict().get("final"))
            found.append(_Commitment(letter, match.start(), match.end(), kind, final, own_text))
    if lower_case:
        for match in _candidates(grammar.lower_statement, text, budget):
            letter = match.group("letter").upper()
            own_text = _own_text_end(text, match.end(), options[grammar.letters.index(letter)])
            if not _marked(text, match.start("letter")) or own_text is None:
                continue  # "is a blue octagon": a bare lower-case letter is a word
            if _asked(text, match.end()) or _qualified(text, match.start()):
                continue
            if _hedged(text, match.end(), own_text, grammar, letter):
                hedged = max(hedged, match.end())
                continue
            found.append(_Commitment(letter, match.start(), match.end(), "lower-case label", False, own_text))
    # every "Option B" / "(B)" is a candidate here, most of them mentions: the scan stops after MAX_STATEMENTS of
    # them rather than counting against the budget that refuses a repetitive output
    for match in islice(grammar.named_label.finditer(text), MAX_STATEMENTS):
        letter = match.group("letter")
        own_text = _own_text_end(text, match.end(), options[grammar.letters.index(letter)])
        verdict = grammar.verdict_after.match(text, own_text) if own_text is not None else None
        if verdict is None or _asked(text, verdict.end()) or _qualified(text, match.start()):
            continue
        if _hedged(text, match.end(), own_text, grammar, letter):
            hedged = max(hedged, match.end())
            continue
        found.append(_Commitment(letter, match.start(), verdict.end(), "answer verdict", False, own_text))
    for match in _candidates(grammar.text_statement, text, budget):
        if _qualified(text, match.start()) or _asked(text, match.end()):
            continue
        index = _quoted_option(_object_words(text, match.end()), options)
        if index is not None:
            found.append(_Commitment(grammar.letters[index], match.start(), match.end(), "quoted option"))
    for match in _candidates(_BOXED, text, budget):
        index = _quoted_option(_tokens(match.group(1)), options)
        if index is not None and not _qualified(text, match.start()):
            found.append(_Commitment(grammar.letters[index], match.start(), match.end(), "boxed option"))
    enumerated = _enumerated(text, grammar)
    if not enumerated:
        opening = _opening_label(text, grammar, options, lower_case)
        if opening == "hedged":
            hedged = max(hedged, 0)
        elif opening is not None:
            found.append(opening)
        index = _opening_quote(text[:2000], options)
        if index is not None:
            found.append(_Commitment(grammar.letters[index], 0, _first_sentence_end(text), "quoted option"))
    concluding = _concluding_value(text, options, grammar)
    if concluding is not None:
        index, start = concluding
        found.append(_Commitment(grammar.letters[index], start, len(text), "concluding value"))
    return found, hedged


_CONCLUSION = re.compile(
    r"[*_\s]{0,4}(?:therefore|thus|hence|so|in\s{1,3}conclusion|in\s{1,3}summary)\b", re.IGNORECASE
)
_COPULA = re.compile(
    r"\b(?:is|are|was|equals)\s{1,3}(?:(?:approximately|about|around|roughly|nearly)\s{1,3})?|\s=\s{1,3}", re.IGNORECASE
)


_BRACKETED_LETTER = re.compile(r"[(\[][A-Za-z][)\]]")


def _names_a_label(text: str, grammar: _Grammar) -> bool:
    """Whether ``text`` names an option label: a bracketed letter, or an upper-case label (the article "A" aside)."""
    return bool(_BRACKETED_LETTER.search(text)) or _mentions_other(text, grammar, "", 0, len(text))


def _concluding_value(text: str, options: list[list[str]], grammar: _Grammar) -> tuple[int, int] | None:
    """The option whose full text is what the output's last sentence says something *is* ("Therefore, the surface
    temperature is 350.93 K.", "The length of AC is 6."): only in a sentence that concludes (``Therefore``, ``Thus``,
    ``So`` ...) or that is the whole output, unnegated, unconditional and naming no label ("... is a plot, but the
    answer is (b)" states a label, not a value). Returns the option and where the sentence starts."""
    body = text.rstrip()
    ends = [match.end() for match in _SENTENCE_END.finditer(body, max(0, len(body) - 600)) if match.end() < len(body)]
    start = ends[-1] if ends else (0 if len(body) <= 600 else None)
    if start is None:
        return None
    sentence = body[start:]
    if not (start == 0 and not _SENTENCE_END.search(body[:-1]) or _CONCLUSION.match(sentence)):
        return None
    if _NEGATION.search(sentence) or _CONDITIONAL.search(sentence) or _names_a_label(sentence, grammar):
        return None
    stated = {_quoted_option(_object_words(sentence, copula.end()), options) for copula in _COPULA.finditer(sentence)}
    stated.discard(None)
    return (stated.pop(), start) if len(stated) == 1 else None


def _closes_sentence(text: str, match: re.Match[str]) -> bool:
    """A bracketed or bold label that ends its sentence ("The arrow points to structure (E).")."""
    position = match.start("letter")
    marked = text[position - 1 : position] in ("(", "[", "*")
    return marked and bool(re.match(rf"{_CLOSE}[^\S\n]{{0,2}}(?:[.!]|\n|$)", text[position + 1 : position + 8]))


def _marked(text: str, position: int) -> bool:
    """The lower-case letter at ``position`` is marked as a label: ``(b)``, ``b)``, ``b.``, ``b:``, ``**b**``."""
    return text[position - 1 : position] in ("(", "[", "*", "<") or text[position + 1 : position + 2] in (
        ")",
        "]",
        ".",
        ":",
        "*",
        ">",
    )


def _hedged(text: str, end: int, own_text: int | None, grammar: _Grammar, letter: str) -> bool:
    """The label (ending at ``end``, its option's own text at ``own_text``) is followed by an alternative ("B or C",
    "B/C"), or is a list item followed by more: the next line starts with another option's label ("Answer: B) ...\n
    C) ...", "The options are:\nA. ...\nB. ..."; after a bare ``Answer: B`` such lines walk through the other
    options). A list is no answer, whatever its labels look like (``A. text``, ``(A) text``, ``A) text``, ``A: text``).
    """
    if grammar.hedge_after.match(text, end) or (own_text and grammar.hedge_after.match(text, own_text)):
        return True
    if not (text[:end].rstrip("*_ ").endswith((")", "]")) or _opens_line_item(text, end, letter)):
        return False
    line_end = text.find("\n", own_text or end, (own_text or end) + 400)
    if line_end < 0:
        return False
    item = grammar.enumeration.match(text, len(text) - len(text[line_end:].lstrip("\r\n")))
    return item is not None and item.group(1) != letter


_LINE_ITEM = re.compile(r"[^\S\n]{0,4}[*_#]{0,4}(?P<letter>[A-Z])[*_]{0,2}[.:][^\S\n]{1,3}\S")
"""A line that opens with a label, a period or colon and text: an item of a list (``A. 4.5 m``, ``B: the plot``)."""


def _opens_line_item(text: str, end: int, letter: str) -> bool:
    """The label ``letter`` (its match ending at ``end``) opens a line as a list item: ``A. text``, ``**B**: text``."""
    start = text.rfind("\n", max(0, end - 12), end) + 1
    if start == 0 and end > 12:
        return False  # no line start near the label: it is inside a line
    item = _LINE_ITEM.match(text, start, end + 8)
    return item is not None and item.group("letter") == letter and item.end("letter") <= end


def _opening_label(
    text: str, grammar: _Grammar, options: list[list[str]], lower_case: bool
) -> _Commitment | Literal["hedged"] | None:
    """The label the output opens with, delimited (``C``, ``C)``, ``C.``, ``C`` + new line, ``C C``, ``**C**``); with
    ``lower_case``, a lower-case label that stands alone on the first line (``answer: b``) or is followed by its
    option's own text (``(d) rough``)."""
    opening = grammar.opening.match(text)
    if opening and not _is_article(text, opening.start("letter")):
        letter = opening.group("letter")
        rest = text[opening.end() : opening.end() + 8]
        own_text = _own_text_end(text, opening.end(), options[grammar.letters.index(letter)])
        delimited = bool(opening.group("close").strip("_")) or not rest.strip() or rest[0] in ".:\n"
        repeated = re.match(rf"[^\S\n]{{1,3}}[*_(\[]{{0,3}}{letter}[*_)\]]{{0,3}}\.?[^\S\n]*(?:\n|$)", rest)
        if delimited or repeated or re.match(r"[^\S\n]{0,3}(?:\n|[-–—]\s)", rest):
            if _hedged(text, opening.end(), own_text, grammar, letter):
                return "hedged"
            return _Commitment(letter, opening.start("letter"), opening.end(), "opening label", False, own_text)
    opening = grammar.lower_opening.match(text) if lower_case else None
    if opening:
        letter = opening.group("letter").upper()
        own_text = _own_text_end(text, opening.end(), options[grammar.letters.index(letter)])
        alone = re.match(r"[^\S\n]*(?:\n|$)", text[opening.end() :])
        if alone or (own_text is not None and _marked(text, opening.start("letter"))):
            if _hedged(text, opening.end(), own_text, grammar, letter):
                return "hedged"
            return _Commitment(letter, opening.start("letter"), opening.end(), "lower-case label", False, own_text)
    return None


def _enumerated(text: str, grammar: _Grammar) -> bool:
    """Two lines start with different option labels: the output lists options (in its first 20,000 characters)."""
    return len(set(grammar.enumeration.findall(text[:20000]))) >= 2


def _mentions_other(text: str, grammar: _Grammar, letter: str, start: int, end: int) -> bool:
    """Whether a label other than ``letter`` is mentioned in ``text[start:end]`` (the article "A" is no mention)."""
    return grammar.other_mention[letter].search(text, start, end) is not None


def _first_sentence_end(text: str) -> int:
    boundary = _SENTENCE_END.search(text)
    return boundary.start() if boundary else len(text)


def _opening_quote(text: str, options: list[list[str]]) -> int | None:
    """The option the output opens with: its first clause is one option's text ("Yes, the smaller picture ..."), its
    first sentence quotes one (truncated to three words or more), or contains the full text of exactly one option of
    three words or more, unnegated ("Point B is closer to the camera." for "B is closer")."""
    clause = _CLAUSE_END.search(text)
    first_clause = _tokens(text[: clause.start()] if clause else text)
    exact = [index for index, option in enumerate(options) if option and option == first_clause]
    if len(exact) == 1:
        return exact[0]
    sentence = text[: _first_sentence_end(text)]
    words = _tokens(sentence)
    quoted = _quoted_option(words, options)
    if quoted is not None or _NEGATION.search(sentence):
        return quoted
    contained = [index for index, option in enumerate(options) if len(option) >= 3 and _contains(words, option)]
    return contained[0] if len(contained) == 1 else None


def _contains(haystack: list[str], needle: list[str]) -> bool:
    width = len(needle)
    return any(haystack[start : start + width] == needle for start in range(len(haystack) - width + 1))


_LOWER_CASE_LABEL = re.compile(r"(?<![A-Za-z0-9])[(\[]?([a-z])[)\]]|^[^\S\n]*([a-z])[.:][^\S\n]", re.MULTILINE)
"""A lower-case label in a question or an output: ``(c)``, ``[c]``, ``c)``, or ``c.`` / ``c:`` opening a line."""


def lower_case_labels_free(question: str, options: Sequence[str]) -> bool:
    """Whether nothing in the question or its options uses lower-case labels (``(c)``, ``c)``, ``c.`` opening a
    line): only then can a lower-case label in the output name an option (in MMSci setting III and in captions that
    name panels, ``(c)`` is a sub-figure)."""
    return not any(_LOWER_CASE_LABEL.search(text) for text in (question, *options))


def resolve_by_rules(output: str | None, options: Sequence[str], *, question: str | None = None) -> Resolution:
    """Apply the grammar; ``method`` is ``"rule"`` when the output commits to one letter, else ``"unresolved"``.

    ``question``: the question text the model saw. Lower-case labels are read only when it is given and neither it
    nor the options use lower-case labels (:func:`lower_case_labels_free`).
    """
    status = output_status(output)
    if status != "ok":
        return Resolution(None, "unresolved", status)
    text = clean_output(output or "")
    grammar = _grammar(len(options))
    option_words = [_tokens(strip_label(option)) for option in options]
    lower_case = question is not None and lower_case_labels_free(question, options)
    if not text:
        return _stray_close_label(output or "", grammar, option_words, lower_case)
    try:
        commitments, hedged = _commitments(text, grammar, option_words, lower_case)
    except _Repetitive:
        return Resolution(None, "unresolved", "repetitive output")
    if any(commitment.start >= hedged for commitment in commitments):
        hedged = -1  # a commitment after the last hedge ("B or C? ... The answer is C.") decides
    if hedged >= 0 or (not commitments and grammar.alternatives.search(text)):
        return Resolution(None, "unresolved", "alternatives")
    if not commitments:
        return Resolution(
            None, "unresolved", "several options echoed" if _enumerated(text, grammar) else "no answer stated"
        )

    ordered = sorted(commitments, key=lambda commitment: (commitment.start, commitment.end))
    last = max(ordered, key=lambda commitment: commitment.end)
    letters = {commitment.letter for commitment in ordered}
    if len(letters) > 1:
        later = [other for other in ordered if other.letter != last.letter and other.end > last.start]
        if not last.final or later:
            return Resolution(None, "unresolved", f"conflicting answers {sorted(letters)}")
        ordered = [last]
    first, letter = ordered[0], last.letter
    text = _without_echoes(_without_own_texts(text, ordered), grammar, option_words, last.end)
    if lower_case:  # lower-case labels name options here, so "(b)" is a mention of B
        text = _LOWER_CASE_LABEL.sub(lambda label: label.group().upper(), text)
    if not _mentions_other(text, grammar, letter, last.start, len(text)):
        mentioned = _mentions_other(text, grammar, letter, 0, last.start)
        return Resolution(letter, "rule", f"{last.kind} (closing)" if mentioned else last.kind)
    sentence_end = _SENTENCE_END.search(text, first.end)
    end = sentence_end.start() if sentence_end else len(text)
    in_first_sentence = not _SENTENCE_END.search(text, 0, first.start)
    if in_first_sentence and not _mentions_other(text, grammar, letter, 0, end):
        return Resolution(letter, "rule", f"{first.kind} (opening)")
    walk = _walk_through_others(text, grammar, letter, last.end)
    if walk is not None and not _mentions_other(text, grammar, letter, 0, walk):
        return Resolution(letter, "rule", f"{last.kind} (before a walk through the other options)")
    return Resolution(None, "unresolved", "answer amid other options")


def _walk_through_others(text: str, grammar: _Grammar, letter: str, after: int) -> int | None:
    """Where a walk through the other options begins after ``after``: items that open a line or sentence with
    another option's label (``Option 'A' is incorrect.``, ``'B': Oral terbinafine ...``, ``C) ...``), naming two
    other options at least (one where there are two options)."""
    items = [item for item in grammar.walk_item.finditer(text, after) if item.group(1) != letter]
    if len({item.group(1) for item in items}) < min(2, len(grammar.letters) - 1):
        return None
    if any(_APPROVED.match(text, item.end()) for item in items):
        return None  # "Option C: also correct": the walk approves another option
    return items[0].start()


_APPROVED = re.compile(
    r"['\"’”*_)\]]{0,3}[.:\-–—]?\s{0,3}(?:(?:is|would\s{1,3}be|could\s{1,3}be|seems)\s{1,3})?(?:also\s{1,3})?"
    r"(?:the\s{1,3})?(?:correct|right|true|best|answer|plausible|possible)\b",
    re.IGNORECASE,
)


_ECHO_END = re.compile(r"[^\S\n]{0,3}[.;,]?[^\S\n]*(?:\n|$)")


def _without_echoes(text: str, grammar: _Grammar, options: list[list[str]], after: int) -> str:
    """``text`` with the options echoed after the answer (ending at ``after``) blanked: lines that hold only an
    option's label and its own full text (``E) Cannot tell from the figure``) repeat the question, they weigh no
    option. An item with anything more (``E) Cannot tell: also plausible``, ``Option C: wrong``) stays a mention."""
    kept, position = [], 0
    for item in islice(grammar.enumeration.finditer(text, after), MAX_STATEMENTS):
        end = _own_text_end(text, item.end(), options[grammar.letters.index(item.group(1))])
        if end is not None and _ECHO_END.match(text, end):
            kept += [text[position : item.start()], " " * (end - item.start())]
            position = end
    return "".join([*kept, text[position:]])


def _without_own_texts(text: str, commitments: list[_Commitment]) -> str:
    """``text`` with the option texts that follow committed labels blanked: "(B) Option D in the figure" is B."""
    for commitment in commitments:
        if commitment.own_text_end is not None:
            width = commitment.own_text_end - commitment.end
            text = text[: commitment.end] + " " * width + text[commitment.own_text_end :]
    return text


def _stray_close_label(output: str, grammar: _Grammar, options: list[list[str]], lower_case: bool) -> Resolution:
    """An output whose only text is a label before a stray ``</think>`` (``C</think>``) states that label; any other
    output with nothing outside its reasoning is ``reasoning only``."""
    first_line = _stray_close(output).split("\n", 1)[0]
    opening = _opening_label(first_line, grammar, options, lower_case) if first_line else None
    if isinstance(opening, _Commitment) and not first_line[opening.own_text_end or opening.end :].strip(" .*_)]"):
        return Resolution(opening.letter, "rule", "opening label before </think>")
    return Resolution(None, "unresolved", "reasoning only")


# --- the judge --------------------------------------------------------------------------------------------------------

_NO_ANSWER = re.compile(r"\bnone\b|\bn/a\b|\bno answer\b|\bunknown\b|\bcannot\b", re.IGNORECASE)


def judge_prompt(output: str, n_options: int) -> str:
    return JUDGE_PROMPT.format(output=output, last=chr(ord("A") + n_options - 1))


def parse_judge_reply(reply: str | None, n_options: int) -> str | None:
    """The judge's letter: its reply read by the same grammar; ``None`` for "None", "N/A" or any reply naming none."""
    if reply is None or _NO_ANSWER.search(reply):
        return None
    return resolve_by_rules(reply, [""] * n_options).letter


_PROTOCOL_NONE = re.compile(r"[\W_]*none[\W_]*", re.IGNORECASE)
_LETTER_ALONE = re.compile(r"\s*[\"'`*_(\[]{0,4}(?-i:(?P<letter>[A-Z]))[\"'`*_)\]]{0,4}\.?\s*")
"""A letter alone, in the wrapping the parsing grammar reads as markup: quotes, brackets, ``**``, a final period."""


def judge_reply_readable(reply: str, n_options: int) -> bool:
    """Whether a judge reply answers the parsing prompt ("Return only the letter of the answer. If no answer is
    found, return None."): one of the options' letters alone (``B``, `` C)``, ``(B)``, ``**B**``, ``B.``), or the
    prompt's "None". Anything else is not an answer -- "N/A", a sentence (``Answer: B``, ``The answer is B``), an
    error text (``E: upstream overloaded``, ``Error 503``), a refusal (``I'm sorry, I can't help`` is no letter I), an
    HTML page, an empty reply: asked again, never cached."""
    if _PROTOCOL_NONE.fullmatch(reply):
        return True
    alone = _LETTER_ALONE.fullmatch(reply)
    return alone is not None and ord(alone.group("letter")) - ord("A") < n_options


JudgeUse = Literal["not_used", "judged", "judge_failed"]

_JUDGE_REPLIED = ("judge found none", "judge reply names no label", "judge reply is not a letter")


def judge_use(method: str, reason: str) -> JudgeUse:
    """How the judge took part in one resolution, from its ``method`` and ``reason`` (a :class:`Resolution`'s, or a
    sample record's ``resolution`` and ``reason``), for the ``flags.judge`` count of every multiple-choice benchmark:
    ``judged`` (it replied, naming a letter or none), ``judge_failed`` (no reply after retries, or its circuit
    breaker open: the answer counts wrong), ``not_used`` (the rules decided, nothing to read, or judging off)."""
    if method == "judge" or reason.endswith(_JUDGE_REPLIED):
        return "judged"
    if reason.endswith("judge failed"):
        return "judge_failed"
    return "not_used"


def resolve_choice(
    output: str | None, options: Sequence[str], judge: JudgeClient | None = None, *, question: str | None = None
) -> Resolution:
    """Rules first; the judge (paper prompt) only for outputs the rules refuse; unresolved otherwise.

    Outputs with nothing to read (empty, request failed, reasoning only) never go to the judge. ``question``: as
    for :func:`resolve_by_rules` (it decides whether lower-case labels can name options).
    """
    ruled = resolve_by_rules(output, options, question=question)
    if ruled.method == "rule" or ruled.reason in ("empty", "request_failed", "reasoning only") or judge is None:
        return ruled
    result = judge.complete(
        judge_prompt(clean_output(output or ""), len(options)),
        max_tokens=JUDGE_MAX_TOKENS,
        accept=lambda reply: judge_reply_readable(reply, len(options)),
    )
    if result.status != "judged":
        return Resolution(None, "unresolved", f"{ruled.reason}; judge failed")
    letter = parse_judge_reply(result.text, len(options))
    if letter is None:
        return Resolution(None, "unresolved", f"{ruled.reason}; judge found none")
    return Resolution(letter, "judge", ruled.reason)


__getattr__ = renamed(__name__, {"resolve": "resolve_choice"})
