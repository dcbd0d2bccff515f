"""A benchmark's rows as VLMEvalKit TSV columns and back: one :class:`TsvFormat` per benchmark, declared in its
package's VLMEvalKit part, writes a row (:func:`scifig_tasks.vlmeval.tsv.rows`) and reads a TSV line back into the row
the rules take (:func:`scifig_tasks.vlmeval.tsv.row_of`). Every cell is text; docs/vlmeval.md has the file layout."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

Row = Mapping[str, Any]


def read_tsv(path: str | Path) -> pd.DataFrame:
    """A dataset TSV with every cell as the exact text written (no number parsing, no NaN): an answer ``2.50`` stays
    ``2.50``. The one reader of the TSVs :func:`scifig_tasks.vlmeval.tsv.write_tsv` writes, for scifig's VLMEvalKit
    classes and the exported ones alike."""
    import pandas as pd  # here, not at the top: the benchmarks' TSV layouts import this module, pandas is not needed

    return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)


def _same(value: Any) -> Any:
    return value


def _json_list(value: Any) -> str:
    return json.dumps(list(value), ensure_ascii=False)


def _float_text(value: Any) -> str:
    return repr(float(value))


@dataclass(frozen=True)
class Codec:
    """How a field's value is written as TSV text and read back from it (exactly: ``read(write(value)) == value``)."""

    write: Callable[[Any], str]
    read: Callable[[str], Any]


TEXT = Codec(_same, _same)
INT = Codec(str, int)
FLOAT = Codec(_float_text, float)  # repr: the shortest text that reads back as the same float
JSON_LIST = Codec(_json_list, json.loads)


@dataclass(frozen=True)
class Field:
    """A TSV column holding one row field: ``column`` in the TSV, ``key`` in the row when the row (published / core
    names) calls it otherwise. ``default`` is written when the row lacks the field or holds nothing (Plot Twist's
    optional ``variant``)."""

    column: str
    codec: Codec = TEXT
    key: str = ""
    default: str | None = None

    @property
    def row_key(self) -> str:
        return self.key or self.column

    def write(self, row: Row) -> str:
        value = row[self.row_key] if self.default is None else (row.get(self.row_key) or self.default)
        return self.codec.write(value)


@dataclass(frozen=True)
class OptionLetters:
    """The options of ``key`` one per column ``A``, ``B``, ... (VLMEvalKit's multiple-choice layout), each as
    ``text(option)``. Written for VLMEvalKit's listings only: the row reads its options back from the JSON column."""

    key: str
    text: Callable[[str], str] = _same

    def write(self, row: Row) -> dict[str, str]:
        return {chr(ord("A") + index): self.text(option) for index, option in enumerate(row[self.key])}


@dataclass(frozen=True)
class TsvFormat:
    """One benchmark's rows as TSV columns, in column order, and back: :meth:`columns` writes a source row,
    :meth:`row` reads a TSV line into the row the core functions take (every :class:`Field`, typed)."""

    image_column: str
    fields: tuple[Field | OptionLetters, ...]

    def columns(self, row: Row) -> dict[str, str]:
        columns: dict[str, str] = {}
        for field in self.fields:
            if isinstance(field, OptionLetters):
                columns |= field.write(row)
            else:
                columns[field.column] = field.write(row)
        return columns

    def row(self, line: Row) -> dict[str, Any]:
        fields = [field for field in self.fields if isinstance(field, Field)]
        return {field.row_key: field.codec.read(line[field.column]) for field in fields}
