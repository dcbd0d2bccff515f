"""Image cells of a benchmark split: their checks, and the image files they name read into them.

Structural check at load, strict decoding when a request is built, and a named file read only inside the data's own
folders. Manual: docs/data.md, 'Images: checked cheaply, decoded once'.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.compute as pc

from scifig_tasks.core.errors import DataError
from scifig_tasks.core.images import check_structure, decode_once, image_file, unreadable
from scifig_tasks.core.schema import Column

# datasets >= 4 has List (Sequence became a function); older releases only have the Sequence class.
_LIST_FEATURES: tuple[type, ...] = tuple(
    kind for kind in (getattr(datasets, "List", None), getattr(datasets, "Sequence", None)) if isinstance(kind, type)
)


def image_problem(value: Any, folders: tuple[Path, ...] = ()) -> str | None:
    """The whole check of an undecoded image cell (``{"bytes", "path"}``): its structure verifies and its pixels decode
    (once, strictly, not kept; :func:`scifig_tasks.core.images.decode_once`). A cell without bytes is read from its
    ``path`` only inside ``folders`` (:func:`scifig_tasks.core.images.image_file`; none: refused)."""
    return _image_problem(value, folders, decode_once)


def image_structure_problem(value: Any, folders: tuple[Path, ...] = ()) -> str | None:
    """The load-time check of an image cell: like :func:`image_problem`, but no pixel is decoded
    (:func:`scifig_tasks.core.images.check_structure`); the pixels are decoded when a request is built."""
    return _image_problem(value, folders, check_structure)


def _image_problem(value: Any, folders: tuple[Path, ...], check: Callable[[Any], None]) -> str | None:
    if not isinstance(value, dict):
        return f"expected an image, got {type(value).__name__}"
    if not value.get("bytes") and not value.get("path"):
        return "image has neither bytes nor a path"
    if not value.get("bytes"):
        try:
            value = {"bytes": _read_image_file(value["path"], folders), "path": None}
        except ValueError as exc:
            return str(exc)
    try:
        check(value)
    except Exception as exc:  # PIL raises many types for damaged data
        return unreadable(exc)
    return None


def _read_image_file(path: str, folders: tuple[Path, ...]) -> bytes:
    """The bytes of the file an image cell names, read only inside ``folders``; ``ValueError`` otherwise."""
    file = image_file(path, folders)
    try:
        return file.read_bytes()
    except OSError as exc:
        raise ValueError(f"image path {path!r}: cannot read {file} ({type(exc).__name__}: {exc})") from exc


def embed_image_files(
    dataset: datasets.Dataset, columns: tuple[Column, ...], origin: str, folders: tuple[Path, ...]
) -> datasets.Dataset:
    """``dataset`` with every image cell of ``columns`` that names a file (no bytes) given that file's bytes, read
    inside ``folders`` by the rule :func:`scifig_tasks.core.validation.validate` checked; the same dataset when no
    cell names a file."""
    pending = [
        column.name
        for column in columns
        if (column.image or column.image_list) and column_names_files(dataset.data.column(column.name))
    ]
    if not pending:
        return dataset
    raw = undecoded(dataset)

    def embed(*values: Any) -> dict[str, list[Any]]:
        *cells, indices = values
        return {
            name: [_embedded(cell, origin, row, name, folders) for cell, row in zip(column, indices, strict=True)]
            for name, column in zip(pending, cells, strict=True)
        }

    embedded = raw.map(
        embed,
        batched=True,
        with_indices=True,
        input_columns=pending,
        load_from_cache_file=False,  # the files may have changed since a cached run
        desc="reading image files",
    )
    for name in pending:
        embedded = embedded.cast_column(name, dataset.features[name])
    return embedded


def _embedded(cell: Any, origin: str, row: int, column: str, folders: tuple[Path, ...]) -> Any:
    if isinstance(cell, list):
        return [_embedded(item, origin, row, column, folders) for item in cell]
    if not isinstance(cell, dict) or cell.get("bytes") or not cell.get("path"):
        return cell
    try:
        return {"bytes": _read_image_file(cell["path"], folders), "path": cell["path"]}
    except ValueError as exc:
        raise DataError(origin, row, column, str(exc)) from exc


def column_names_files(column: pa.ChunkedArray) -> bool:
    """Whether an image column (of cells or lists of cells) has a cell without bytes that names a path."""
    for chunk in column.chunks:
        while isinstance(chunk, pa.ListArray | pa.LargeListArray | pa.FixedSizeListArray):
            chunk = chunk.flatten()
        fields = dict(zip([field.name for field in chunk.type], chunk.flatten(), strict=True))
        no_bytes = pc.fill_null(pc.equal(pc.binary_length(fields["bytes"]), 0), True)
        if pc.any(pc.and_(no_bytes, pc.is_valid(fields["path"]))).as_py():
            return True
    return False


def undecoded(dataset: datasets.Dataset) -> datasets.Dataset:
    """The same rows with image columns left as stored bytes (``{"bytes", "path"}``), decoded only on demand."""
    for name, feature in dataset.features.items():
        changed = _undecoded(feature)
        if changed is not feature:
            dataset = dataset.cast_column(name, changed)
    return dataset


def _undecoded(feature: Any) -> Any:
    if isinstance(feature, datasets.Image):
        return datasets.Image(decode=False)
    if is_image_list(feature):
        return type(feature)(datasets.Image(decode=False))
    return feature


def is_image_list(feature: Any) -> bool:
    return isinstance(feature, _LIST_FEATURES) and isinstance(feature.feature, datasets.Image)
