"""Benchmark data loading: the published Hugging Face dataset, or local data with the same features.

Local data contract (every benchmark): the setting ``SCIFIG_<BENCH>_DATA`` (:mod:`scifig_tasks.core.settings`) may
point to

* a parquet file (one split, named after the benchmark's default split),
* a directory of ``<split>.parquet`` files (one split per file), or
* a directory written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``.

Whatever the source, the rows are checked against the benchmark's schema before any model is called, and a bad row
stops the run with a :class:`DataError` naming the file, the row and the column: a cell out of its column's rule, a row
whose columns disagree (``row_check``, e.g. an answer letter beyond the options), a repeated key (``key``, e.g.
GRAB's ``pid``) and a row repeated in full (every column equal; any benchmark). An empty split is an error too.
Images get the structural check here (header, declared size within the decompression-bomb limit, every chunk
checksum; :func:`scifig_tasks.core.images.check_structure`), and their pixels are decoded, strictly, when a model's
request is built: a file whose structure is fine but whose compressed data is broken stops the run there, with the
same file, row and column (:mod:`scifig_tasks.core.images`). Memory stays flat however large the set (the rows are
read batch by batch; only a digest per row is kept). A split is checked once per process and, while its files are
unchanged, once across runs (:mod:`scifig_tasks.core.validated`).

Data that is not data is refused the same way: text that is not valid UTF-8 (any column), a gold answer that reads as
a non-finite number (:func:`expect_answer`), and an image cell that names a file (no bytes, a ``path``) outside the
data's own folder (:func:`scifig_tasks.core.images.image_file`). That folder is the one ``SCIFIG_<BENCH>_DATA`` names
(the parquet file's folder when it names a file); a relative path is relative to it. A Hub dataset's files are the
ones ``datasets`` downloaded: its folders are the ``datasets`` and Hub caches (and the dataset's directory when
``load_dataset`` was given a local one). Files that pass are read into their cells once the rows are valid
(:func:`embed_image_files`), so nothing downstream opens a path.

A benchmark without a published copy (``hub_path`` empty) may name a ``default_data`` builder: when the env var is
unset, it builds the benchmark's seeded synthetic set once into a cache and returns its path, loaded like local data.
Builders live with the curation code, above this package; the core finds them by name among the ``scifig.builders``
entry points (:func:`registered_default_data`), so it only validates and loads.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from scifig_tasks.core import validated
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.images import check_structure, decode_once, image_file, remember_source, unreadable
from scifig_tasks.core.resources import installed_entry_point
from scifig_tasks.core.schema import (
    BenchmarkSource,
    Column,
    CrossCheck,
)

# datasets >= 4 has List (Sequence became a function); older releases only have the Sequence class.
_LIST_FEATURES: tuple[type, ...] = tuple(
    kind for kind in (getattr(datasets, "List", None), getattr(datasets, "Sequence", None)) if isinstance(kind, type)
)


def registered_default_data(name: str) -> Path:
    """Run the default-data builder ``<name>_default_data`` of the ``scifig.builders`` entry points (the curation
    package registers it in pyproject; e.g. ``plot_twist``) and return the data's path."""
    builder: Callable[[], Path] = installed_entry_point("scifig.builders", f"{name}_default_data")
    return builder()


def load_benchmark(source: BenchmarkSource, split: str | None = None, hub_path: str | None = None) -> datasets.Dataset:
    """One validated split of ``source``: from ``$<env_var>`` when set, else from the Hub.

    ``hub_path`` overrides the published dataset id (e.g. a task YAML's ``dataset_path`` pointing at a fork).
    A split missing under its Hub name is looked up under its older names. The split is checked once per process
    (the tasks of one benchmark share it) and not again in later runs while its files are unchanged
    (:mod:`scifig_tasks.core.validated`).
    """
    split = split or source.default_split
    local = source.local_path()
    if local is None and not (hub_path or source.hub_path):
        if source.default_data is None:
            raise DataError(
                source.env_var,
                None,
                None,
                source.unset_message
                or f"{source.name} has no published copy: set {source.env_var} to your data"
                + (f" (`{source.build_command}` builds it)" if source.build_command else ""),
            )
        local = source.default_data()
    if local is not None and not local.exists():
        raise DataError(str(local), None, None, f"does not exist ({source.name} data); {source.remedy()}")
    hub = hub_path or source.hub_path
    read = local if local is not None else Path(hub) if Path(hub).is_dir() else None  # a Hub id may be a folder
    loaded_key = (id(source), split, hub, json.dumps(validated.files_identity([read])) if read else None)
    if loaded_key not in _LOADED:
        _LOADED[loaded_key] = (source, _load_validated(source, split, hub_path, local))
    return _LOADED[loaded_key][1]


_LOADED: dict[tuple[Any, ...], tuple[BenchmarkSource, datasets.Dataset]] = {}
"""The splits loaded in this process, by source (kept, so its id stays its own), split, Hub id and local files (sizes
and times included)."""


def _load_validated(source: BenchmarkSource, split: str, hub_path: str | None, local: Path | None) -> datasets.Dataset:
    if local is not None:
        dataset, origin = _local_split(local, source, split)
        folders: tuple[Path, ...] = (local if local.is_dir() else local.parent,)
    else:
        path = hub_path or source.hub_path
        dataset, origin = _hub_split(path, source, split)
        folders = hub_folders(path)
    present = tuple(column for column in source.optional_columns if column.name in dataset.column_names)
    columns = source.columns + present
    images = [column.name for column in columns if column.image or column.image_list]
    names_files = any(_names_files(dataset.data.column(name)) for name in images if name in dataset.column_names)
    checks = [*(f"{c.name}:{_rule(c.check)}:{c.image}:{c.image_list}" for c in columns), _rule(source.row_check)]
    key = None if names_files else validated.record_key(source.name, split, [*checks, *source.key], dataset, local)
    if key is None or not validated.is_recorded(key):
        validate(dataset, columns, origin, row_check=source.row_check, split=split, key=source.key, folders=folders)
        if key is not None:
            validated.record(key, origin, len(dataset))
    loaded = embed_image_files(dataset, columns, origin, folders)
    remember_source(origin, loaded, images)
    return loaded


def _rule(check: Callable[..., Any] | None) -> str:
    return "" if check is None else f"{check.__module__}.{check.__qualname__}"


def hub_folders(path: str) -> tuple[Path, ...]:
    """The folders a Hub dataset's image files may be read from: the dataset's directory when ``path`` is a local
    one, then the caches ``datasets`` downloads into (``HF_DATASETS_CACHE``, ``HF_HUB_CACHE``)."""
    from huggingface_hub import constants

    local = (Path(path),) if Path(path).is_dir() else ()
    return (*local, Path(datasets.config.HF_DATASETS_CACHE), Path(constants.HF_HUB_CACHE))


def _hub_split(path: str, source: BenchmarkSource, split: str) -> tuple[datasets.Dataset, str]:
    names = source.split_names(split)
    for name in names:
        try:
            return datasets.load_dataset(path, split=name), f"{path}[{name}]"
        except ValueError as exc:
            if "split" not in str(exc).lower() or name == names[-1]:
                raise
        except OSError as exc:  # unreachable Hub, offline mode, unknown or gated dataset
            reason = (str(exc).strip().splitlines() or [""])[0]
            raise DataError(
                f"Hugging Face Hub dataset {path} (split {name})",
                None,
                None,
                f"{source.name} data could not be loaded ({type(exc).__name__}: {reason}); {source.remedy()}",
            ) from exc
    raise AssertionError("unreachable")


def _local_split(path: Path, source: BenchmarkSource, split: str) -> tuple[datasets.Dataset, str]:
    names = source.split_names(split)
    if path.is_file() or (path / "state.json").exists():
        if path.is_file() and path.suffix != ".parquet":
            raise DataError(str(path), None, None, f"expected a .parquet file, {_LAYOUTS}")
        if len(source.splits) > 1 and path.stem not in names:
            raise DataError(
                str(path),
                None,
                None,
                f"one split cannot serve {source.name}'s splits ({', '.join(source.splits)}): name the file after "
                f"the split (e.g. {split}.parquet) or give a directory of <split>.parquet files or a DatasetDict",
            )
        loaded = _read_parquet(path) if path.is_file() else _load_saved(path)
        return loaded, str(path)
    if (path / "dataset_dict.json").exists():
        splits = json.loads((path / "dataset_dict.json").read_text(encoding="utf-8")).get("splits", [])
        found = next((name for name in names if name in splits), None)
        if found is None:
            raise DataError(str(path), None, None, f"has no split {split!r} (found: {', '.join(splits)})")
        return _load_saved(path / found), str(path / found)
    files = {file.stem: file for file in sorted(path.glob("*.parquet"))}
    if not files:
        unfinished = sorted(file.name for file in path.glob("*.parquet.partial"))
        hint = f" ({', '.join(unfinished)}: an unfinished build, run it again)" if unfinished else ""
        raise DataError(str(path), None, None, f"holds no <split>.parquet file{hint}; {_LAYOUTS}")
    found = next((name for name in names if name in files), None)
    if found is None:
        raise DataError(str(path), None, None, f"has no {split}.parquet (found: {', '.join(files)})")
    return _read_parquet(files[found]), str(files[found])


_LAYOUTS = "a directory of <split>.parquet files or a save_to_disk directory"


def _load_saved(path: Path) -> datasets.Dataset:
    """One ``save_to_disk`` split (``datasets`` cannot load one saved without rows: it has no data file)."""
    state = json.loads((path / "state.json").read_text(encoding="utf-8")) if (path / "state.json").is_file() else {}
    if state.get("_data_files") == []:
        raise DataError(str(path), None, None, _NO_ROWS)
    return datasets.load_from_disk(str(path))


def _read_parquet(path: Path) -> datasets.Dataset:
    """A local parquet file as a memory-mapped dataset, read from its Arrow copy (:func:`_arrow_copy`)."""
    try:
        parquet = pq.ParquetFile(str(path), buffer_size=_READ_BUFFER, pre_buffer=False)
        rows = parquet.metadata.num_rows
        loaded = None if rows == 0 else datasets.Dataset.from_file(str(_arrow_copy(path, parquet)))
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise DataError(str(path), None, None, f"cannot be read as parquet ({type(exc).__name__}: {exc})") from exc
    if loaded is None:
        raise DataError(str(path), None, None, _NO_ROWS)
    return loaded


_NO_ROWS = "has no rows (an empty split: nothing to evaluate)"

_READ_BUFFER = 2**20
"""Bytes read from a parquet file at a time, per column: a buffered stream, not whole column chunks."""

_BATCH_BYTES = 8 * 2**20
"""About how many bytes of rows (uncompressed) an Arrow copy is written in at a time."""

_ARROW_COPY_FORMAT = "1"
"""The layout of the Arrow copies: changing it makes every parquet file be copied again."""


def _arrow_copy(path: Path, parquet: pq.ParquetFile) -> Path:
    """The Arrow copy of a local parquet file -- what ``Dataset.from_parquet`` builds, in the same format -- written
    once while the file is unchanged (its path, size and modification time name the copy) into
    ``<datasets cache>/scifig_parquet/``, a few rows at a time, so that memory stays flat however large the file.

    Rule: ``from_parquet`` scans whole row groups and keeps what it read until the scan ends (pyarrow evicts
    pre-buffered reads only when the reader closes, apache/arrow#39808; its reader threads keep freed memory), so
    converting a file of large images held about twice the file's size at its peak (GRAB, 2,000 figures of 330 kB:
    +1.2 GB). Here the file is read through a :data:`_READ_BUFFER` buffered stream, :func:`_batch_rows` rows at a
    time, on the calling thread. The copy appears whole or not at all (written aside, then renamed), also when
    several runs copy the same file at once."""
    identity = json.dumps({"files": validated.files_identity([path]), "format": _ARROW_COPY_FORMAT}, sort_keys=True)
    folder = Path(datasets.config.HF_DATASETS_CACHE) / "scifig_parquet"
    copy = folder / f"{hashlib.blake2b(identity.encode(), digest_size=20).hexdigest()}.arrow"
    if copy.is_file():
        return copy
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f"{copy.name}.{os.getpid()}.{threading.get_ident()}.partial"
    try:
        with pa.OSFile(str(partial), "wb") as sink, pa.ipc.new_stream(sink, parquet.schema_arrow) as writer:
            for batch in parquet.iter_batches(batch_size=_batch_rows(parquet.metadata), use_threads=False):
                writer.write_batch(batch)
        os.replace(partial, copy)
    finally:
        partial.unlink(missing_ok=True)
    return copy


def _batch_rows(metadata: pq.FileMetaData) -> int:
    """Rows per batch of an Arrow copy: about :data:`_BATCH_BYTES` of the widest row group's rows (1 to 1,000)."""
    groups = [metadata.row_group(index) for index in range(metadata.num_row_groups)]
    widest = max((group.total_byte_size / group.num_rows for group in groups if group.num_rows), default=1.0)
    return max(1, min(1000, int(_BATCH_BYTES // max(widest, 1.0))))


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
        raise DataError(origin, None, None, _NO_ROWS)
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


def _undecoded(feature: Any) -> Any:
    if isinstance(feature, datasets.Image):
        return datasets.Image(decode=False)
    if _is_image_list(feature):
        return type(feature)(datasets.Image(decode=False))
    return feature


def _is_image_list(feature: Any) -> bool:
    return isinstance(feature, _LIST_FEATURES) and isinstance(feature.feature, datasets.Image)


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
    inside ``folders`` by the rule :func:`validate` checked; the same dataset when no cell names a file."""
    pending = [
        column.name
        for column in columns
        if (column.image or column.image_list) and _names_files(dataset.data.column(column.name))
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


def _names_files(column: pa.ChunkedArray) -> bool:
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


def without_media(dataset: datasets.Dataset) -> datasets.Dataset:
    """The same rows without image/audio columns (what scoring code needs; nothing to decode)."""
    media = [
        name
        for name, feature in dataset.features.items()
        if isinstance(feature, datasets.Image | datasets.Audio) or _is_image_list(feature)
    ]
    return dataset.remove_columns(media) if media else dataset
