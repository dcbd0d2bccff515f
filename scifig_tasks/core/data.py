"""Benchmark data loading: the published Hugging Face dataset, or local data with the same features.

Local data contract (every benchmark): ``SCIFIG_<BENCH>_DATA`` may point to

* a parquet file (one split, named after the benchmark's default split),
* a directory of ``<split>.parquet`` files (one split per file), or
* a directory written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``.

Whatever the source, the rows are checked against the benchmark's schema before any model is called, and a bad row
stops the run with a :class:`DataError` naming the file, the row and the column. Images are never decoded here:
their bytes are only verified, batch by batch, so memory stays flat however large the set.

A benchmark without a published copy (``hub_path`` empty) may name a ``default_data`` builder: when the env var is
unset, it builds the benchmark's seeded synthetic set once into a cache and returns its path, loaded like local data.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
from PIL import Image as PILImage

from scifig_tasks.core.errors import DataError

# datasets >= 4 has List (Sequence became a function); older releases only have the Sequence class.
_LIST_FEATURES: tuple[type, ...] = tuple(
    kind for kind in (getattr(datasets, "List", None), getattr(datasets, "Sequence", None)) if isinstance(kind, type)
)

RowCheck = Callable[[Any], str | None]
"""Returns a problem description for a bad cell value, ``None`` when the value is fine."""

CrossCheck = Callable[[Mapping[str, Any]], tuple[str, str] | None]
"""Checks a whole row (non-image columns): ``(column, problem)`` for a bad row, ``None`` when the row is fine."""


@dataclass(frozen=True)
class Column:
    """One required column: its name, whether it holds images (a single image or a list of them), a cell check."""

    name: str
    check: RowCheck | None = None
    image: bool = False
    image_list: bool = False


@dataclass(frozen=True)
class BenchmarkSource:
    """Where a benchmark's data lives: Hub id, split names (and older aliases), the env var that overrides it,
    and the columns every row must have."""

    name: str
    hub_path: str
    splits: tuple[str, ...]
    env_var: str
    columns: tuple[Column, ...]
    split_aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    optional_columns: tuple[Column, ...] = ()
    """Columns checked only when the data has them."""
    row_check: CrossCheck | None = None
    """A check across the columns of each row, after its cells passed."""
    default_data: Callable[[], Path] | None = None
    """Builds (once, cached) and returns local data when the env var is unset and there is no Hub copy."""

    @property
    def default_split(self) -> str:
        return self.splits[0]

    def split_names(self, split: str) -> tuple[str, ...]:
        """The split's Hub name followed by the older names it may have in earlier revisions or local copies."""
        return (split, *self.split_aliases.get(split, ()))

    def local_path(self, environ: Mapping[str, str] | None = None) -> Path | None:
        value = (os.environ if environ is None else environ).get(self.env_var, "").strip()
        return Path(value).expanduser() if value else None


def load_benchmark(source: BenchmarkSource, split: str | None = None, hub_path: str | None = None) -> datasets.Dataset:
    """One validated split of ``source``: from ``$<env_var>`` when set, else from the Hub.

    ``hub_path`` overrides the published dataset id (e.g. a task YAML's ``dataset_path`` pointing at a fork).
    A split missing under its Hub name is looked up under its older names.
    """
    split = split or source.default_split
    local = source.local_path()
    if local is None and not (hub_path or source.hub_path):
        if source.default_data is None:
            raise DataError(
                source.env_var, None, None, f"{source.name} has no published copy: set {source.env_var} to your data"
            )
        local = source.default_data()
    if local is not None:
        dataset, origin = _local_split(local, source, split)
    else:
        dataset, origin = _hub_split(hub_path or source.hub_path, source, split)
    present = tuple(column for column in source.optional_columns if column.name in dataset.column_names)
    validate(dataset, source.columns + present, origin, row_check=source.row_check)
    return dataset


def _hub_split(path: str, source: BenchmarkSource, split: str) -> tuple[datasets.Dataset, str]:
    names = source.split_names(split)
    for name in names:
        try:
            return datasets.load_dataset(path, split=name), f"{path}[{name}]"
        except ValueError as exc:
            if "split" not in str(exc).lower() or name == names[-1]:
                raise
    raise AssertionError("unreachable")


def _local_split(path: Path, source: BenchmarkSource, split: str) -> tuple[datasets.Dataset, str]:
    names = source.split_names(split)
    if not path.exists():
        raise DataError(str(path), None, None, "does not exist")
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
        loaded = _read_parquet(path) if path.is_file() else datasets.load_from_disk(str(path))
        return loaded, str(path)
    if (path / "dataset_dict.json").exists():
        splits = datasets.load_from_disk(str(path))
        found = next((name for name in names if name in splits), None)
        if found is None:
            raise DataError(str(path), None, None, f"has no split {split!r} (found: {', '.join(splits)})")
        return splits[found], str(path / found)
    files = {file.stem: file for file in sorted(path.glob("*.parquet"))}
    if not files:
        raise DataError(str(path), None, None, f"holds no <split>.parquet file; {_LAYOUTS}")
    found = next((name for name in names if name in files), None)
    if found is None:
        raise DataError(str(path), None, None, f"has no {split}.parquet (found: {', '.join(files)})")
    return _read_parquet(files[found]), str(files[found])


_LAYOUTS = "a directory of <split>.parquet files or a save_to_disk directory"


def _read_parquet(path: Path) -> datasets.Dataset:
    try:
        return datasets.Dataset.from_parquet(str(path))
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise DataError(str(path), None, None, f"cannot be read as parquet ({type(exc).__name__}: {exc})") from exc


def validate(
    dataset: datasets.Dataset,
    columns: tuple[Column, ...],
    origin: str,
    batch_size: int = 64,
    row_check: CrossCheck | None = None,
) -> None:
    """Check every required column and cell (then ``row_check`` on each row); raise :class:`DataError` at the first
    bad one."""
    missing = [column.name for column in columns if column.name not in dataset.column_names]
    if missing:
        raise DataError(origin, None, missing[0], f"missing column (the file has: {', '.join(dataset.column_names)})")
    raw = dataset.select_columns([column.name for column in columns])
    for column in columns:
        if column.image or column.image_list:
            raw = raw.cast_column(column.name, _undecoded(raw.features[column.name]))
    for offset, batch in _batches(raw, batch_size):
        for column in columns:
            for index, value in enumerate(batch[column.name]):
                problem = _cell_problem(column, value)
                if problem is not None:
                    raise DataError(origin, offset + index, column.name, problem)
        if row_check is not None:
            plain = [column.name for column in columns if not (column.image or column.image_list)]
            for index in range(len(batch[columns[0].name])):
                found = row_check({name: batch[name][index] for name in plain})
                if found is not None:
                    raise DataError(origin, offset + index, found[0], found[1])


def _undecoded(feature: Any) -> Any:
    if isinstance(feature, datasets.Image):
        return datasets.Image(decode=False)
    if _is_image_list(feature):
        return type(feature)(datasets.Image(decode=False))
    return feature


def _is_image_list(feature: Any) -> bool:
    return isinstance(feature, _LIST_FEATURES) and isinstance(feature.feature, datasets.Image)


def _batches(dataset: datasets.Dataset, batch_size: int) -> Iterator[tuple[int, dict[str, list[Any]]]]:
    for offset in range(0, len(dataset), batch_size):
        yield offset, dataset[offset : offset + batch_size]


def _cell_problem(column: Column, value: Any) -> str | None:
    if value is None:
        return "value is missing (null)"
    if column.image:
        return image_problem(value)
    if column.image_list:
        if not isinstance(value, list) or not value:
            return "expected a non-empty list of images"
        for position, item in enumerate(value):
            problem = image_problem(item)
            if problem is not None:
                return f"image {position}: {problem}"
        return None
    return column.check(value) if column.check is not None else None


def image_problem(value: Any) -> str | None:
    """Verify an undecoded image cell (``{"bytes", "path"}``) without decoding its pixels."""
    if not isinstance(value, dict):
        return f"expected an image, got {type(value).__name__}"
    data, path = value.get("bytes"), value.get("path")
    try:
        if data:
            with PILImage.open(io.BytesIO(data)) as image:
                image.verify()
        elif path:
            with PILImage.open(path) as image:
                image.verify()
        else:
            return "image has neither bytes nor a path"
    except Exception as exc:  # PIL raises many types for damaged data
        return f"image bytes are not a readable image ({type(exc).__name__}: {exc})"
    return None


def expect_str(allowed: tuple[str, ...] | None = None, non_empty: bool = True) -> RowCheck:
    """A check for string cells, optionally from a closed vocabulary."""

    def check(value: Any) -> str | None:
        if not isinstance(value, str):
            return f"expected a string, got {type(value).__name__} {value!r}"
        if non_empty and not value.strip():
            return "expected a non-empty string"
        if allowed is not None and value not in allowed:
            return f"unknown value {value!r} (expected one of: {', '.join(allowed)})"
        return None

    return check


def expect_int(low: int | None = None, high: int | None = None) -> RowCheck:
    """A check for integer cells within ``[low, high]``."""

    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"expected an integer, got {type(value).__name__} {value!r}"
        if (low is not None and value < low) or (high is not None and value > high):
            return f"value {value} outside [{low}, {high}]"
        return None

    return check


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
