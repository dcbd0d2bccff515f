"""Benchmark data loading: the published Hugging Face dataset, or local data with the same features.

Rows are checked before any model is called, a Hub dataset is read at its pinned revision, and a benchmark without a
published copy builds its seeded set once. Manual: docs/data.md, 'How data is loaded'.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from scifig_tasks.core import provenance, validation_records
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.image_cells import column_names_files, embed_image_files, is_image_list
from scifig_tasks.core.images import remember_source
from scifig_tasks.core.resources import installed_entry_point
from scifig_tasks.core.row_questions import expand_questions
from scifig_tasks.core.schema import UNPINNED, BenchmarkSource
from scifig_tasks.core.validation import NO_ROWS, validate


def registered_default_data(name: str) -> Path:
    """Run the default-data builder ``<name>_default_data`` of the ``scifig.builders`` entry points (the curation
    package registers it in pyproject; e.g. ``plot_twist``) and return the data's path."""
    builder: Callable[[], Path] = installed_entry_point("scifig.builders", f"{name}_default_data")
    return builder()


def load_benchmark(
    source: BenchmarkSource, split: str | None = None, hub_path: str | None = None, *, reader: str | None = None
) -> datasets.Dataset:
    """One validated split of ``source``: from ``$<env_var>`` when set, else from the Hub (else its default data).

    ``hub_path`` overrides the published dataset id (e.g. a task YAML's ``dataset_path`` pointing at a fork).
    A split missing under its Hub name is looked up under its older names. The split is checked once per process
    (the tasks of one benchmark share it) and not again in later runs while its files are unchanged
    (:mod:`scifig_tasks.core.validation_records`). ``reader`` names the task or VLMEvalKit dataset the rows are for: a
    default
    data builder that takes it builds only what that reader reads (:func:`default_data`; ``None``: everything).
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
        local = default_data(source, reader)
    if local is not None and not local.exists():
        raise DataError(str(local), None, None, f"does not exist ({source.name} data); {source.remedy()}")
    hub = hub_path or source.hub_path
    read = local if local is not None else Path(hub) if Path(hub).is_dir() else None  # a Hub id may be a folder
    revision = None if read is not None else _revision(source, hub)
    if read is None:
        _say_override(source, revision)
    loaded_key = (
        id(source),
        split,
        hub,
        revision,
        json.dumps(validation_records.files_identity([read])) if read else None,
    )
    if loaded_key not in _LOADED:
        _LOADED[loaded_key] = (source, *_load_validated(source, split, hub, local, revision))
    return _LOADED[loaded_key][1]


def default_data(source: BenchmarkSource, reader: str | None = None) -> Path:
    """The path of ``source``'s default data (built on first use) for ``reader``.

    Rule: a builder whose signature has a ``reader`` parameter is given the task or VLMEvalKit dataset that reads the
    rows, so it builds only the part that reader reads (Plot Twist: the base charts, or the robustness variants
    too; :mod:`scifig_tasks.benchmarks.plot_twist.source`); any other builder, or no reader, builds everything. The data
    record (:func:`scifig_tasks.core.provenance.note_data`) is that of the files read."""
    build = source.default_data
    if build is None:
        raise ValueError(f"{source.name} has no default data")
    if reader is not None and "reader" in inspect.signature(build).parameters:
        return build(reader=reader)
    return build()


_LOADED: dict[tuple[Any, ...], tuple[BenchmarkSource, datasets.Dataset, datasets.Dataset]] = {}
"""The splits loaded in this process, by source (kept, so its id stays its own), split, Hub id, revision and local
files (sizes and times included): the documents, and the source rows they were read from (kept, so an image that
fails to decode later is still found in its source row: :func:`scifig_tasks.core.images.remember_source`)."""

_SAID: set[tuple[str, str | None]] = set()
"""The revision overrides said in this process."""


def _revision(source: BenchmarkSource, hub: str) -> str | None:
    """The revision of Hub dataset ``hub`` to load: the source's (its setting, else its pin) for its own dataset; for
    another (a task YAML's ``dataset_path`` naming a fork) the setting alone, else the newest."""
    if hub == source.hub_path:
        return source.hub_revision()
    return replace(source, revision=UNPINNED).hub_revision()


def _say_override(source: BenchmarkSource, revision: str | None) -> None:
    """One line on stderr, once per process, when ``SCIFIG_<BENCH>_REVISION`` moves a source off its pin."""
    pinned = None if source.revision == UNPINNED else source.revision
    if not source.revision_var or revision == pinned or (source.name, revision) in _SAID:
        return
    _SAID.add((source.name, revision))
    pin = "no pinned revision" if pinned is None else f"the pinned {pinned[:12]}"
    print(
        f"scifig: {source.revision_var}={revision}: {source.name} data is loaded at revision {revision}, not "
        f"{pin}; scores may differ from those made with the pinned data",
        file=sys.stderr,
    )


def _load_validated(
    source: BenchmarkSource, split: str, path: str, local: Path | None, revision: str | None
) -> tuple[datasets.Dataset, datasets.Dataset]:
    """The documents of one split (one per question: :func:`expand_questions`) and the checked rows they come from."""
    if local is not None:
        dataset, origin = _local_split(local, source, split)
        folders: tuple[Path, ...] = (local if local.is_dir() else local.parent,)
        record = {"origin": "local", "local": True, "revision": validation_records.data_digest(local)}
    elif Path(path).is_dir():
        dataset, origin = _hub_split(Path(path), path, source, split)
        folders = hub_folders(path)
        record = {"origin": "local", "local": True, "revision": validation_records.data_digest(Path(path))}
    else:
        snapshot = hub_snapshot(path, revision, source)
        dataset, origin = _hub_split(snapshot, path, source, split)
        folders = (snapshot, *hub_folders(path))
        pinned = source.revision if path == source.hub_path else UNPINNED
        record = {"origin": "hub", "hub": path, "revision": snapshot.name, "pinned": pinned}
    present = tuple(column for column in source.optional_columns if column.name in dataset.column_names)
    columns = source.columns + present
    images = [column.name for column in columns if column.image or column.image_list]
    names_files = any(column_names_files(dataset.data.column(name)) for name in images if name in dataset.column_names)
    checks = [*(f"{c.name}:{_rule(c.check)}:{c.image}:{c.image_list}" for c in columns), _rule(source.row_check)]
    key = (
        None
        if names_files
        else validation_records.record_key(source.name, split, [*checks, *source.key], dataset, local)
    )
    if key is None or not validation_records.is_recorded(key):
        validate(dataset, columns, origin, row_check=source.row_check, split=split, key=source.key, folders=folders)
        if key is not None:
            validation_records.record(key, origin, len(dataset))
    loaded = embed_image_files(dataset, columns, origin, folders)
    remember_source(origin, loaded, images)
    provenance.note_data(source.name, record, split, len(loaded))
    if source.questions is None:
        return loaded, loaded
    return expand_questions(loaded, source.questions, origin), loaded


def _rule(check: Callable[..., Any] | None) -> str:
    return "" if check is None else f"{check.__module__}.{check.__qualname__}"


def hub_folders(path: str) -> tuple[Path, ...]:
    """The folders a Hub dataset's image files may be read from: the dataset's directory when ``path`` is a local
    one, then the caches ``datasets`` downloads into (``HF_DATASETS_CACHE``, ``HF_HUB_CACHE``)."""
    from huggingface_hub import constants

    local = (Path(path),) if Path(path).is_dir() else ()
    return (*local, Path(datasets.config.HF_DATASETS_CACHE), Path(constants.HF_HUB_CACHE))


HUB_FILES_IGNORED = ("*.zip",)
"""Files of a Hub dataset's snapshot that are not downloaded: archives ``load_dataset`` does not read (GRAB's
``images.zip``, 367 MB, holds the figures its parquet files already hold)."""


def hub_snapshot(path: str, revision: str | None, source: BenchmarkSource) -> Path:
    """The Hub cache's snapshot folder of dataset ``path`` at ``revision`` (``None``: ``main``), downloaded when
    online; offline, the cached snapshot of that commit or of the commit its ``refs/`` names. A revision that cannot
    be had is a :class:`DataError` naming it and the ways out. Online, the Hub is asked once first, as for every
    model scifig fetches at run time (:func:`scifig_tasks.core.hub_cache.ask_hub`): when it does not answer, a
    snapshot the cache holds is read offline and one it does not hold is refused at once, instead of a minute of
    huggingface_hub's retries."""
    from huggingface_hub import snapshot_download

    from scifig_tasks.core import hub_cache

    wanted = revision or "main"
    other = f" (or name another revision with {source.revision_var})" if source.revision_var else ""

    def refused(reason: str) -> DataError:
        return DataError(
            f"Hugging Face Hub dataset {path} at revision {wanted}",
            None,
            None,
            f"{source.name} data could not be loaded ({reason}); download it online once{other}, or {source.remedy()}",
        )

    if hub_cache.offline_variable() is None:
        dataset = hub_cache.HubModel(path, (), f"{source.name} data", "dataset", revision)
        try:
            went_offline = hub_cache.ask_hub(dataset, cached_snapshot(path, revision) is not None)
        except hub_cache.HubSilent as silent:
            raise refused(f"not in the Hugging Face cache ({hub_cache.cache_folder()}), {silent.unreachable}") from None
        if went_offline is not None:
            print(f"scifig: {went_offline}", file=sys.stderr)
    try:
        return Path(snapshot_download(path, repo_type="dataset", revision=revision, ignore_patterns=HUB_FILES_IGNORED))
    except (OSError, ValueError) as exc:  # offline and not cached, unknown revision or dataset, unreachable Hub
        reason = (str(exc).strip().splitlines() or [""])[0]
        raise refused(f"{type(exc).__name__}: {reason}") from exc


def cached_snapshot(path: str, revision: str | None, cache: Path | None = None) -> Path | None:
    """The snapshot folder of dataset ``path`` at ``revision`` (``None``: ``main``) that the Hub cache (``cache``,
    default the process's) holds, resolved as :func:`hub_snapshot` resolves it offline; ``None`` when it holds none."""
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(
            path,
            repo_type="dataset",
            revision=revision,
            cache_dir=cache,
            local_files_only=True,
            ignore_patterns=HUB_FILES_IGNORED,
        )
    except Exception:  # noqa: BLE001 - not cached (or no such revision in the cache): nothing held
        return None
    return Path(folder)


def _hub_split(folder: Path, path: str, source: BenchmarkSource, split: str) -> tuple[datasets.Dataset, str]:
    """One split of the Hub dataset ``path`` from its snapshot (or local) ``folder``, by its name or older names."""
    names = source.split_names(split)
    for name in names:
        try:
            return datasets.load_dataset(str(folder), split=name), f"{path}[{name}]"
        except ValueError as exc:
            if "split" not in str(exc).lower() or name == names[-1]:
                raise
        except OSError as exc:  # files missing from the snapshot, unreadable files
            reason = (str(exc).strip().splitlines() or [""])[0]
            raise DataError(
                f"Hugging Face Hub dataset {path} (split {name})",
                None,
                None,
                f"{source.name} data could not be loaded ({type(exc).__name__}: {reason}); {source.remedy()}",
            ) from exc
    raise AssertionError("unreachable")


def _local_split(path: Path, source: BenchmarkSource, split: str) -> tuple[datasets.Dataset, str]:
    """One split of local data ``path`` and the origin its errors name: for a folder, the benchmark's own layout
    first (:attr:`~scifig_tasks.core.schema.BenchmarkSource.local_reader`, asked under each of the split's names),
    then a parquet file, a ``save_to_disk`` split or DatasetDict, or a folder of ``<split>.parquet`` files."""
    names = source.split_names(split)
    if source.local_reader is not None and path.is_dir():
        for name in names:
            rows = source.local_reader(path, name)
            if rows is not None:
                return rows, str(path)
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
            found_in = f"found: {', '.join(splits)}"
            raise DataError(str(path), None, None, f"has no split {split!r} ({found_in}){_runnable(source, splits)}")
        return _load_saved(path / found), str(path / found)
    files = {file.stem: file for file in sorted(path.glob("*.parquet"))}
    if not files:
        unfinished = sorted(file.name for file in path.glob("*.parquet.partial"))
        hint = f" ({', '.join(unfinished)}: an unfinished build, run it again)" if unfinished else ""
        raise DataError(str(path), None, None, f"holds no <split>.parquet file{hint}; {_LAYOUTS}")
    found = next((name for name in names if name in files), None)
    if found is None:
        found_in = f"found: {', '.join(files)}"
        raise DataError(str(path), None, None, f"has no {split}.parquet ({found_in}){_runnable(source, files)}")
    return _read_parquet(files[found]), str(files[found])


def _runnable(source: BenchmarkSource, present: Iterable[str]) -> str:
    """What a folder holding only some of ``source``'s splits can still run, from the benchmark's own description:
    the largest group (:attr:`~scifig_tasks.core.benchmark.Vlmeval.groups`, named as the lmms-eval group) whose
    every task reads a split that is present, else the tasks that do; empty when none does."""
    from scifig_tasks.core import registry

    present = set(present)
    have = {split for split in source.splits if present.intersection(source.split_names(split))}
    for described in registry.benchmarks().values():
        key = next((key for key, known in described.sources.items() if known == source), None)
        if key is None or described.vlmeval is None or not have:
            continue
        reads = {dataset.name: dataset.split for dataset in described.vlmeval.datasets if dataset.source == key}
        shown = {dataset.name for dataset in described.vlmeval.datasets if dataset.shown}
        fits = [
            (len({reads[name] for name in members}), group)
            for group, members in described.vlmeval.groups.items()
            if members and all(reads.get(name) in have for name in members)
        ]
        if fits:
            group = max(fits, key=lambda fit: fit[0])[1]  # the first declared of the widest
            return f"; this data holds only the splits of {group}: run --tasks {group} (VLMEvalKit: --data {group})"
        tasks = [name for name, split in reads.items() if split in have and name in shown]
        if tasks:
            return f"; this data holds only the splits of {', '.join(tasks)}: run --tasks {','.join(tasks)}"
    return ""


_LAYOUTS = "a directory of <split>.parquet files or a save_to_disk directory"


def _load_saved(path: Path) -> datasets.Dataset:
    """One ``save_to_disk`` split (``datasets`` cannot load one saved without rows: it has no data file)."""
    state = json.loads((path / "state.json").read_text(encoding="utf-8")) if (path / "state.json").is_file() else {}
    if state.get("_data_files") == []:
        raise DataError(str(path), None, None, NO_ROWS)
    return datasets.load_from_disk(str(path))


def _read_parquet(path: Path) -> datasets.Dataset:
    """A local parquet file as a memory-mapped dataset, read from its Arrow copy (:func:`_loaded_copy`).

    Rule: the user's file is blamed (a :class:`DataError` naming it) only when it cannot be read: its metadata or
    rows, or a copy just written from it. A copy from an earlier run that cannot be read (damaged in the cache) is
    written again from the file, and a line on stderr says so."""
    try:
        parquet = pq.ParquetFile(str(path), buffer_size=_READ_BUFFER, pre_buffer=False)
        rows = parquet.metadata.num_rows
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise _unreadable(path, exc) from exc
    if rows == 0:
        raise DataError(str(path), None, None, NO_ROWS)
    return _loaded_copy(path, parquet)


def _unreadable(path: Path, exc: BaseException) -> DataError:
    return DataError(str(path), None, None, f"cannot be read as parquet ({type(exc).__name__}: {exc})")


def _loaded_copy(path: Path, parquet: pq.ParquetFile) -> datasets.Dataset:
    """The rows of ``path`` from its Arrow copy (:func:`_arrow_copy`). A copy that exists but cannot be read
    (truncated, overwritten, other rows or columns than the file's: :func:`_open_copy`) counts as absent: it is
    written again (:func:`_write_arrow_copy`), said in one line on stderr."""
    copy = _arrow_copy(path)
    if copy.is_file():
        try:
            return _open_copy(copy, parquet)
        except Exception as exc:  # pyarrow and datasets raise several types for a damaged file
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())
            print(
                f"scifig: the Arrow copy {copy} of {path} cannot be read ({reason}): building it again", file=sys.stderr
            )
    _write_arrow_copy(path, parquet, copy)
    try:
        return _open_copy(copy, parquet)
    except Exception as exc:  # what the file holds cannot be loaded (e.g. features ``datasets`` does not know)
        raise _unreadable(path, exc) from exc


def _open_copy(copy: Path, parquet: pq.ParquetFile) -> datasets.Dataset:
    """The Arrow copy memory-mapped, with the cheap checks that it is whole: it reads as an Arrow stream, holds the
    file's number of rows and its columns, and its buffers are as long as its arrays need (``validate``)."""
    loaded = datasets.Dataset.from_file(str(copy))
    table = loaded.data.table
    if table.num_rows != parquet.metadata.num_rows or table.schema.names != parquet.schema_arrow.names:
        raise ValueError(
            f"{table.num_rows} rows of {table.schema.names}, the file has {parquet.metadata.num_rows} rows of "
            f"{parquet.schema_arrow.names}"
        )
    table.validate()
    return loaded


_READ_BUFFER = 2**20
"""Bytes read from a parquet file at a time, per column: a buffered stream, not whole column chunks."""

_BATCH_BYTES = 8 * 2**20
"""About how many bytes of rows (uncompressed) an Arrow copy is written in at a time."""

_ARROW_COPY_FORMAT = "1"
"""The layout of the Arrow copies: changing it makes every parquet file be copied again."""


def _arrow_copy(path: Path) -> Path:
    """Where the Arrow copy of the local parquet file ``path`` is kept: ``<datasets cache>/scifig_parquet/``, named by
    the file's path, size, modification time and content digest
    (:func:`scifig_tasks.core.validation_records.files_identity`), so each version of the file has its own copy -- also
    a
    rewrite of the same size whose modification time was set back."""
    identity = json.dumps(
        {"files": validation_records.files_identity([path]), "format": _ARROW_COPY_FORMAT}, sort_keys=True
    )
    folder = Path(datasets.config.HF_DATASETS_CACHE) / "scifig_parquet"
    return folder / f"{hashlib.blake2b(identity.encode(), digest_size=20).hexdigest()}.arrow"


def _write_arrow_copy(path: Path, parquet: pq.ParquetFile, copy: Path) -> None:
    """Write ``copy``, the Arrow copy of a local parquet file -- what ``Dataset.from_parquet`` builds, in the same
    format -- a few rows at a time, so that memory stays flat however large the file.

    Rule: ``from_parquet`` scans whole row groups and keeps what it read until the scan ends (pyarrow evicts
    pre-buffered reads only when the reader closes, apache/arrow#39808; its reader threads keep freed memory), so
    converting a file of large images held about twice the file's size at its peak (GRAB, 2,000 figures of 330 kB:
    +1.2 GB). Here the file is read through a :data:`_READ_BUFFER` buffered stream, :func:`_batch_rows` rows at a
    time, on the calling thread. The copy appears whole or not at all (written aside, then renamed over any older
    one), also when several runs copy the same file at once. Rows that cannot be read blame the file
    (:func:`_batches`); a copy that cannot be written raises the ``OSError``."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    partial = copy.parent / f"{copy.name}.{os.getpid()}.{threading.get_ident()}.partial"
    try:
        with pa.OSFile(str(partial), "wb") as sink, pa.ipc.new_stream(sink, parquet.schema_arrow) as writer:
            for batch in _batches(path, parquet):
                writer.write_batch(batch)
        os.replace(partial, copy)
    finally:
        partial.unlink(missing_ok=True)


def _batches(path: Path, parquet: pq.ParquetFile) -> Iterator[pa.RecordBatch]:
    """The rows of ``parquet`` in batches of :func:`_batch_rows`; a batch that cannot be read blames the file."""
    batches = parquet.iter_batches(batch_size=_batch_rows(parquet.metadata), use_threads=False)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise _unreadable(path, exc) from exc
        yield batch


def _batch_rows(metadata: pq.FileMetaData) -> int:
    """Rows per batch of an Arrow copy: about :data:`_BATCH_BYTES` of the widest row group's rows (1 to 1,000)."""
    groups = [metadata.row_group(index) for index in range(metadata.num_row_groups)]
    widest = max((group.total_byte_size / group.num_rows for group in groups if group.num_rows), default=1.0)
    return max(1, min(1000, int(_BATCH_BYTES // max(widest, 1.0))))


def without_media(dataset: datasets.Dataset) -> datasets.Dataset:
    """The same rows without image/audio columns (what scoring code needs; nothing to decode)."""
    media = [
        name
        for name, feature in dataset.features.items()
        if isinstance(feature, datasets.Image | datasets.Audio) or is_image_list(feature)
    ]
    return dataset.remove_columns(media) if media else dataset
