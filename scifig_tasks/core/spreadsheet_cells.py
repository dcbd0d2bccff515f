"""Cells a spreadsheet would read as a formula, made text, and read back exactly.

A spreadsheet opening a CSV, TSV or xlsx file reads a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return as a formula, which can fetch a URL with the sheet's contents (``HYPERLINK``, ``WEBSERVICE``) or run
a command (DDE): "CSV injection" (OWASP, https://owasp.org/www-community/attacks/CSV_Injection). OWASP's rule is to
put a single quote before such a cell, so that it is read as text. A caption, a category or a model's reply can start
so.

scifig applies that rule reversibly, to the text cells of the files it writes for people to open:

* a text cell starting with one of :data:`FORMULA_STARTS`, or with the quote itself, gets one quote in front
  (``=HYPERLINK(...)`` is written ``'=HYPERLINK(...)``, ``'x`` is written ``''x``);
* a cell that is a plain number (``-3``, ``+1.5``, ``-2e-3``) stays as it is: a spreadsheet reads it as that number,
  not a formula; so does every other cell and every value that is not text;
* reading back drops exactly one leading quote. Every escaped cell starts with a quote and every cell starting with a
  quote was escaped, so ``restore(neutralise(text)) == text`` for every text.

Whether a file's cells were escaped is said by the file itself: a row written so carries :data:`MARKER` in the
column :data:`MARKER_COLUMN`, and only such a row is restored (a file without it, VLMEvalKit's or an earlier
release's, is read as it is). Files a framework reads as input (the dataset TSVs a prompt is built from) are never
escaped: their text is the prompt.

Manual: docs/vlmeval.md, "Spreadsheet cells".
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a text cell as a formula (OWASP)."""
QUOTE = "'"
"""What goes before an escaped cell."""
MARKER_COLUMN = "scifig_cells"
"""The column whose value :data:`MARKER` says that the row's text cells were escaped."""
MARKER = "formula-safe"
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def needs_quote(text: str) -> bool:
    """Whether ``text`` is escaped: it starts with a formula character (and is not a plain number) or with the
    quote."""
    if text.startswith(QUOTE):
        return True
    return text.startswith(FORMULA_STARTS) and _NUMBER.fullmatch(text) is None


def neutralise(cell: Any) -> Any:
    """``cell`` as a spreadsheet reads it as text: a quote before a text cell that :func:`needs_quote`; anything
    else as it is."""
    return QUOTE + cell if isinstance(cell, str) and needs_quote(cell) else cell


def restore(cell: Any) -> Any:
    """The text :func:`neutralise` was given: one leading quote dropped."""
    return cell[1:] if isinstance(cell, str) and cell.startswith(QUOTE) else cell


def neutralise_row(row: Mapping[str, Any], exact: Collection[str] = ()) -> dict[str, Any]:
    """``row`` with every cell :func:`neutralise` d but those of the columns ``exact``, marked
    (:data:`MARKER_COLUMN`)."""
    return {**{key: value if key in exact else neutralise(value) for key, value in row.items()}, MARKER_COLUMN: MARKER}


def restore_row(row: Mapping[str, Any], exact: Collection[str] = ()) -> dict[str, Any]:
    """The row :func:`neutralise_row` was given (its marker dropped); a row without the marker as it is."""
    if row.get(MARKER_COLUMN) != MARKER:
        return dict(row)
    return {key: value if key in exact else restore(value) for key, value in row.items() if key != MARKER_COLUMN}
