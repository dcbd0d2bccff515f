"""Caption cleaning and sub-caption extraction (MMSci paper section 3 and appendix: the title is the text after
``Figure N:``; sub-captions are delimited by panel markers ``(a)``, ``(b)``, ...).
Manual (every marker rule and edge case): curation/mmsci/README.md, "Rules", **Title** and **Sub-captions**.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_CAPTION_WORDS = 50
"""Captioning references have at least this many words (MMSci paper: captions of at least 50 words)."""

_TITLE_PREFIX = re.compile(r"^\s*(?:figure|fig\.?)\s*(\d+)\s*:\s*", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_MARKER = re.compile(r"\((?P<body>[a-z](?:\s*(?:[-\u2013\u2014]|,|and|&)\s*[a-z])*(?:\s*,?\s*(?:and|&)\s*[a-z])?)\)")
_LETTERS = re.compile(r"[a-z]")
_RANGE = re.compile(r"^([a-z])\s*[-\u2013\u2014]\s*([a-z])$")
_SENTENCE_END = ".!?;:"


def normalise_space(text: str) -> str:
    """Runs of white space (including new lines) become one space; the ends are stripped."""
    return _SPACES.sub(" ", text).strip()


@dataclass(frozen=True)
class Title:
    """The cleaned figure title and whether the caption line carried a ``Figure N:`` prefix."""

    text: str
    number: int | None  # N of ``Figure N:``; None without the prefix

    @property
    def found(self) -> bool:
        """A title in the paper's sense: text after ``Figure N:`` (setting I needs it)."""
        return self.number is not None and bool(self.text)


def clean_title(caption_line: str) -> Title:
    """The figure title: the text after ``Figure N:`` / ``Fig. N:`` (case-insensitive), white space normalised.

    Without the prefix the whole (normalised) line is returned with ``number=None``: it is still the start of the
    reference caption, but not a title that setting I may use (the authors skip such figures too).
    """
    line = normalise_space(caption_line)
    match = _TITLE_PREFIX.match(line)
    if match is None:
        return Title(line, None)
    return Title(line[match.end() :].strip(), int(match.group(1)))


def full_caption(caption_line: str, description: str) -> str:
    """The reference caption: cleaned title + ``" "`` + description (normalised; either part may be empty)."""
    return " ".join(part for part in (clean_title(caption_line).text, normalise_space(description)) if part)


def word_count(text: str) -> int:
    return len(text.split())


@dataclass(frozen=True)
class SubCaptions:
    """Sub-captions by label, in label order; ``reason`` says why there are none when extraction gave up."""

    by_label: dict[str, str]
    reason: str = ""  # "", "no markers", "skipped"


def _labels(body: str) -> list[str]:
    """Letters covered by a marker body: ``a`` -> [a]; ``a-c`` -> [a, b, c]; ``a,b`` / ``a and b`` -> [a, b]."""
    compact = body.strip()
    ranged = _RANGE.match(compact)
    if ranged:
        first, last = ranged.groups()
        if last <= first:
            return []
        return [chr(code) for code in range(ord(first), ord(last) + 1)]
    letters = _LETTERS.findall(re.sub(r"\band\b", ",", compact))
    if letters != sorted(set(letters)):
        return []
    return letters


def _at_marker_position(text: str, start: int) -> bool:
    if start == 0:
        return True
    before = text[:start]
    stripped = before.rstrip()
    return len(stripped) < len(before) and bool(stripped) and stripped[-1] in _SENTENCE_END


def extract_subcaptions(description: str) -> SubCaptions:
    """Sub-captions of a figure description by the rules of curation/mmsci/README.md, "Rules"."""
    text = normalise_space(description)
    accepted: list[tuple[int, int, list[str]]] = []  # (start, end, labels)
    expected = "a"
    for match in _MARKER.finditer(text):
        if not _at_marker_position(text, match.start()):
            continue
        labels = _labels(match.group("body"))
        if not labels:
            continue
        if labels[-1] < expected:  # back-reference to panels already described
            continue
        if labels[0] != expected:
            return SubCaptions({}, "skipped")
        accepted.append((match.start(), match.end(), labels))
        expected = chr(ord(labels[-1]) + 1)
    if not accepted:
        return SubCaptions({}, "no markers")
    found: dict[str, str] = {}
    for position, (_, end, labels) in enumerate(accepted):
        stop = accepted[position + 1][0] if position + 1 < len(accepted) else len(text)
        section = text[end:stop].strip()
        if len(labels) == 1 and section:
            found[labels[0]] = section
    return SubCaptions(found, "" if found else "no markers")
