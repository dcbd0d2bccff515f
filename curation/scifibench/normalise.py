"""Caption normalisation and duplicate removal (SciFIBench paper §3.3, step 1).

SciFIBench's captions are SciCap-normalised: the figure label ("Figure 3:", "Fig. 2a.") removed, lower-case, and
tokenised so that punctuation stands apart (``"... duration ."``). :func:`normalise_caption` applies that rule to
captions of any corpus; on a caption SciCap already normalised it changes nothing (it is idempotent on its own output).

Duplicates (:func:`first_occurrences`): a pair whose normalised caption, or whose image bytes, already occurred earlier
in the corpus is dropped — the first occurrence stays, so every caption and every figure appears once and a question's
negatives can never repeat its own caption or figure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_FIGURE_LABEL = re.compile(
    r"^\s*(?:supplementary\s+|extended\s+data\s+)?(?:fig(?:ure)?s?)\.?\s*"  # Figure, Fig., FIG, Figs
    r"(?:[a-z]?\d+(?:\.\d+)*[a-z]?|[ivxl]+)\b"  # 3, S1, 2a, 4.1, iv (a whole word)
    r"(?:\s*[-\u2013]\s*[a-z]?\d+[a-z]?\b)?"  # ranges: 3-4
    r"(?:\s*\(\s*[a-z]\s*\))?"  # (a)
    r"\s*(?:[:.|\-\u2013\u2014]\s*)?",  # : . | - – —
    re.IGNORECASE,
)
# Punctuation written as its own token: brackets always; , ; : ! ? only before whitespace or the end (keeps 1,000 and
# 1:2 intact); a full stop only before whitespace or the end and after a non-space (keeps 0.5, e.g. inside words).
_ALWAYS_APART = re.compile(r"([()\[\]{}])")
_CLAUSE_END = re.compile(r"(?<=\S)([,;:!?])(?=\s|$)")
_FULL_STOP = re.compile(r"(?<=[^\s.])(\.)(?=\s|$)")
_SPACES = re.compile(r"\s+")


def normalise_caption(caption: str) -> str:
    """The SciCap form of ``caption``: figure label removed, lower-case, punctuation tokenised, single spaces."""
    text = _FIGURE_LABEL.sub("", caption, count=1).lower()
    text = _ALWAYS_APART.sub(r" \1 ", text)
    text = _CLAUSE_END.sub(r" \1", text)
    text = _FULL_STOP.sub(r" \1", text)
    return _SPACES.sub(" ", text).strip()


def first_occurrences(captions: Sequence[str], image_hashes: Sequence[str]) -> tuple[list[int], dict[str, int]]:
    """Indices of the pairs kept (first occurrence of each caption and each image, input order) and drop counts."""
    seen_captions: set[str] = set()
    seen_images: set[str] = set()
    kept: list[int] = []
    dropped = {"duplicate_caption": 0, "duplicate_image": 0}
    for index, (caption, image) in enumerate(zip(captions, image_hashes, strict=True)):
        if caption in seen_captions:
            dropped["duplicate_caption"] += 1
            continue
        if image in seen_images:
            dropped["duplicate_image"] += 1
            continue
        seen_captions.add(caption)
        seen_images.add(image)
        kept.append(index)
    return kept, dropped
