"""VLMEvalKit prediction files (``<model>_<dataset>.tsv``, ``.xlsx`` or ``.json``) read as the exact text written,
and made safe to open in a spreadsheet. No VLMEvalKit import.

* :func:`read_table` reads every cell as text: a TSV with no number parsing, an xlsx formula cell as its formula
  text (VLMEvalKit's xlsx writer stores a text starting with ``=`` as a formula, whose value pandas would read as 0),
  a file :func:`make_formula_safe` rewrote restored (:mod:`scifig_tasks.core.spreadsheet_cells`). A pickle is refused
  (:mod:`scifig_tasks.core.pickle_files`): loading one runs any code it holds.
* :func:`make_formula_safe` rewrites a TSV or xlsx whose cells a spreadsheet would read as formulas: the cells of
  every column but :data:`EXACT_COLUMNS` get OWASP's quote; an xlsx is written with text cells only (never a formula).

Manual: docs/vlmeval.md, "Spreadsheet cells" and "Pickles".
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scifig_tasks.core.pickle_files import NOT_LOADED, PREDICTIONS_TODO
from scifig_tasks.core.run_files import replace_file
from scifig_tasks.core.spreadsheet_cells import MARKER_COLUMN, needs_quote, neutralise_row, restore_row

if TYPE_CHECKING:
    import pandas as pd

EXACT_COLUMNS = ("index", "prediction")
"""Columns never escaped: VLMEvalKit reads them back from its prediction file on a later run into the same work dir
(the replies it keeps, by index), so they must hold the exact text."""
SPREADSHEET_SUFFIXES = ("tsv", "xlsx")
"""The prediction file types a spreadsheet opens (a JSON file is not read as cells)."""
XLSX_OPTIONS = {"strings_to_formulas": False, "strings_to_urls": False, "strings_to_numbers": False}
"""xlsxwriter writes every text as a text cell (its defaults turn ``=...`` into a formula and URLs into links)."""


def only_pickle(path: Path) -> str:
    """The refusal of a prediction file that is a pickle with no readable twin, in one line."""
    return f"{path}: a pickle, the only copy of these predictions; {NOT_LOADED}: {PREDICTIONS_TODO}"


def _suffix(path: Path) -> str:
    return path.suffix.lstrip(".").lower()


def _cell_text(value: Any) -> str:
    """An xlsx cell's value as the text it holds: a formula as its formula text (``{=...}`` for an array formula, as
    xlsxwriter was given it), an integral float as the integer, no value as the empty text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    text = getattr(value, "text", None)  # openpyxl's ArrayFormula
    return "{" + text + "}" if isinstance(text, str) else str(value)


def _read_xlsx(path: Path) -> pd.DataFrame:
    """The first sheet of an xlsx, every cell as text (:func:`_cell_text`), formulas never evaluated."""
    import pandas as pd
    from openpyxl import load_workbook

    book = load_workbook(path, read_only=True, data_only=False)
    try:
        rows = [[_cell_text(value) for value in row] for row in book.worksheets[0].iter_rows(values_only=True)]
    finally:
        book.close()
    return pd.DataFrame(rows[1:], columns=rows[0]) if rows else pd.DataFrame()


def _read_as_written(path: Path) -> pd.DataFrame:
    """The table of a prediction file as its cells are written (no restoring); a pickle refused."""
    import pandas as pd

    suffix = _suffix(path)
    if suffix == "tsv":
        return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if suffix == "xlsx":
        return _read_xlsx(path)
    if suffix == "json":
        return pd.DataFrame(json.loads(path.read_text(encoding="utf-8")))
    if suffix == "pkl":
        raise ValueError(only_pickle(path))
    raise ValueError(f"{path}: not a VLMEvalKit prediction file (tsv, xlsx or json): give one of those")


def read_table(path: Path) -> pd.DataFrame:
    """A prediction file's table, each cell the exact text VLMEvalKit was given (rows :func:`make_formula_safe`
    marked restored)."""
    import pandas as pd

    table = _read_as_written(path)
    if MARKER_COLUMN not in table.columns:
        return table
    rows = [restore_row(row, EXACT_COLUMNS) for row in table.to_dict("records")]
    return pd.DataFrame(rows, columns=[column for column in table.columns if column != MARKER_COLUMN], dtype=object)


def _risky(table: pd.DataFrame, columns: list[str]) -> bool:
    return any(isinstance(cell, str) and needs_quote(cell) for column in columns for cell in table[column])


def make_formula_safe(path: Path) -> bool:
    """Rewrite the TSV or xlsx prediction file ``path`` when a spreadsheet would read one of its cells as a formula:
    every column but :data:`EXACT_COLUMNS` escaped (:func:`scifig_tasks.core.spreadsheet_cells.neutralise_row`, which
    marks the rows), an xlsx with text cells only; return whether it was rewritten. A file already marked, a JSON
    file and a file with no such cell are left as they are."""
    if _suffix(path) not in SPREADSHEET_SUFFIXES:
        return False
    table = _read_as_written(path)
    escaped = [column for column in table.columns if column not in EXACT_COLUMNS]
    exact = [column for column in table.columns if column in EXACT_COLUMNS]
    if MARKER_COLUMN in table.columns:
        return False
    if not _risky(table, escaped) and not (_suffix(path) == "xlsx" and _risky(table, exact)):
        return False
    import pandas as pd

    rows = [neutralise_row(row, EXACT_COLUMNS) for row in table.to_dict("records")]
    safe = pd.DataFrame(rows, columns=[*table.columns, MARKER_COLUMN], dtype=object)
    if _suffix(path) == "tsv":  # as VLMEvalKit writes its TSV: every cell quoted
        replace_file(path, lambda handle: safe.to_csv(handle, sep="\t", index=False, quoting=csv.QUOTE_ALL))
    else:
        engine = {"options": XLSX_OPTIONS}
        replace_file(path, lambda handle: safe.to_excel(handle, index=False, engine="xlsxwriter", engine_kwargs=engine))
    return True
