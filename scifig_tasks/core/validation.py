"""Validation of a benchmark split: every row checked against the benchmark's schema before any model is called.

A bad row stops the run with a :class:`DataError` naming the file, the row and the column. Manual: docs/data.md,
'What a row check refuses'.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import datasets

from scifig_tasks.core.errors import DataError
from scifig_tasks.core.image_cells import image_structure_problem, undecoded
from scifig_tasks.core.schema import Column, CrossCheck

NO_ROWS = "has no rows (an empty split: nothing to evaluate)"


def validate(
    dataset: datasets.Dataset,
    columns: tuple[Column, ...],
    origin: str,
    batch_size: int = 64,
    row_check: CrossCheck | None = None,
    split: str = "",
    key: tuple[str, ...] = (),
    folders: tuple[Path, ...] = (),
) -> None:
    """Check that there are rows, every required column and cell, then ``row_check`` on each row (of ``split``), then
    that no row repeats another in full or in its ``key`` columns; raise :class:`DataError` at the first bad one.

    Text in any column must be valid UTF-8; an image cell without bytes is read from its ``path`` only inside
    ``folders`` (none: such a cell is refused)."""
    missing = [column.name for column in columns if column.name not in dataset.column_names]
    if missing:
        raise DataError(origin, None, missing[0], f"missing column (the file has: {', '.join(dataset.column_names)})")
    if len(dataset) == 0:
        raise DataError(origin, None, None, NO_ROWS)
    raw = undecoded(dataset)  # every column: a full-row duplicate is equal in all of them
    names = [column.name for column in columns]
    seen_rows: dict[bytes, int] = {}
    seen_keys: dict[tuple[Any, ...], int] = {}
    for offset, batch in _batches(raw, batch_size, origin):
        for column in columns:
            for index, value in enumerate(batch[column.name]):
                problem = _cell_problem(column, value, folders)
                if problem is not None:
                    raise DataError(origin, offset + index, column.name, problem)
        for index in range(len(batch[names[0]])):
            row = offset + index
            if row_check is not None:
                found = row_check({name: batch[name][index] for name in names}, split)
                if found is not None:
                    raise DataError(origin, row, found[0], found[1])
            first = seen_rows.setdefault(_row_digest(batch, index, raw.column_names), row)
            if first != row:
                raise DataError(origin, row, None, f"repeats row {first} in full (every column is equal)")
            if key:
                values = tuple(batch[name][index] for name in key)
                first = seen_keys.setdefault(values, row)
                if first != row:
                    shown = values[0] if len(key) == 1 else values
                    raise DataError(origin, row, ", ".join(key), f"duplicate key {shown!r}, already at row {first}")


def _row_digest(batch: Mapping[str, list[Any]], index: int, names: list[str]) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    for name in names:
        _feed(digest, name)
        _feed(digest, batch[name][index])
    return digest.digest()


def _feed(digest: Any, value: Any) -> None:
    """Feed ``value`` to ``digest`` unambiguously (type tag, length, content); image bytes go in as they are."""
    if isinstance(value, bytes):
        digest.update(b"b%d:" % len(value))
        digest.update(value)
    elif isinstance(value, str):
        encoded = value.encode("utf-8", "surrogatepass")
        digest.update(b"s%d:" % len(encoded))
        digest.update(encoded)
    elif isinstance(value, list | tuple):
        digest.update(b"l%d:" % len(value))
        for item in value:
            _feed(digest, item)
    elif isinstance(value, dict):
        digest.update(b"d%d:" % len(value))
        for name in sorted(value):
            _feed(digest, name)
            _feed(digest, value[name])
    else:  # None, bool, int, float and other scalars
        text = f"{type(value).__name__}:{value!r}".encode()
        digest.update(b"v%d:" % len(text))
        digest.update(text)


def _batches(dataset: datasets.Dataset, batch_size: int, origin: str) -> Iterator[tuple[int, dict[str, list[Any]]]]:
    for offset in range(0, len(dataset), batch_size):
        try:
            batch = dataset[offset : offset + batch_size]
        except UnicodeDecodeError as exc:
            rows = range(offset, min(offset + batch_size, len(dataset)))
            raise _invalid_text(dataset, rows, origin, exc) from None  # the error names the cell and the byte
        yield offset, batch


def _invalid_text(dataset: datasets.Dataset, rows: range, origin: str, error: UnicodeDecodeError) -> DataError:
    """The first cell of ``rows`` whose text is not UTF-8, located by reading the rows' cells one by one."""
    for row in rows:
        for name in dataset.column_names:
            try:
                dataset.select_columns([name])[row]
            except UnicodeDecodeError as exc:
                return DataError(origin, row, name, _utf8_problem(exc))
    return DataError(origin, None, None, _utf8_problem(error))


def _utf8_problem(error: UnicodeDecodeError) -> str:
    byte = error.object[error.start] if error.start < len(error.object) else None
    shown = f"{error.reason} 0x{byte:02x}" if byte is not None else error.reason
    return f"text is not valid UTF-8 ({shown} at byte {error.start}); write the column as UTF-8 text"


def _cell_problem(column: Column, value: Any, folders: tuple[Path, ...] = ()) -> str | None:
    if value is None:
        return "value is missing (null)"
    if column.image:
        return image_structure_problem(value, folders)
    if column.image_list:
        if not isinstance(value, list) or not value:
            return "expected a non-empty list of images"
        for position, item in enumerate(value):
            problem = image_structure_problem(item, folders)
            if problem is not None:
                return f"image {position}: {problem}"
        return None
    return column.check(value) if column.check is not None else None
