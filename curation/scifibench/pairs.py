"""The input of SciFIBench curation: figure–caption pairs with their paper's arXiv categories (paper §3.3: SciCap
figure–caption pairs and the arXiv category of their paper), read from any Hugging Face dataset or parquet.
Manual: curation/scifibench/README.md, "Input: figure–caption pairs" (schema, checks).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
from tqdm.auto import tqdm

from curation.scifibench.normalise import first_occurrences, normalise_caption
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.image_cells import image_problem

REQUIRED = ("image", "caption", "paper_id", "categories")
OPTIONAL = ("figure_id", "has_subfigures")
SCAN_BATCH = 256


@dataclass
class Pairs:
    """The curated corpus: pair ``i`` is row ``rows[i]`` of ``dataset`` (images left undecoded)."""

    dataset: datasets.Dataset
    origin: str
    rows: list[int]
    figure_ids: list[str]
    paper_ids: list[str]
    captions: list[str]
    categories: list[tuple[str, ...]]
    image_hashes: list[str]
    dropped: dict[str, int] = field(default_factory=dict)
    base_dir: Path | None = None
    source: str | None = None
    """What ``read_pairs`` read (``--pairs``, with ``split``): where a cluster's workers read the images again."""
    split: str | None = None

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def primaries(self) -> list[str]:
        return [categories[0] for categories in self.categories]

    def fingerprint(self) -> str:
        """A digest of what the embeddings depend on: every kept pair's normalised caption and image bytes, in order."""
        digest = hashlib.sha256()
        for caption, image in zip(self.captions, self.image_hashes, strict=True):
            digest.update(caption.encode())
            digest.update(b"\x00")
            digest.update(image.encode())
            digest.update(b"\x01")
        return digest.hexdigest()

    def image_cells(self, pairs: list[int]) -> list[dict[str, Any]]:
        """The undecoded image cells of ``pairs`` (positions in the corpus)."""
        column = self.dataset.select_columns(["image"])
        cells = column[[self.rows[pair] for pair in pairs]]["image"]
        return [
            image_cell(cell, self.origin, self.rows[pair], self.base_dir)
            for pair, cell in zip(pairs, cells, strict=True)
        ]

    def image_bytes(self, pairs: list[int]) -> list[bytes]:
        return [cell["bytes"] for cell in self.image_cells(pairs)]


def load_rows(source: str, split: str | None = None) -> tuple[datasets.Dataset, str, Path | None]:
    """The raw rows of ``source`` with images undecoded, a description of where they came from, and the directory
    relative image paths are resolved against."""
    path = Path(source).expanduser()
    if path.is_file():
        if path.suffix != ".parquet":
            raise DataError(str(path), None, None, "expected a .parquet file, a directory or a Hub dataset id")
        return _undecoded(_parquet([path])), str(path), path.parent
    if path.is_dir():
        if (path / "dataset_dict.json").exists():
            splits = datasets.load_from_disk(str(path))
            name = split or (next(iter(splits)) if len(splits) == 1 else "train")
            if name not in splits:
                raise DataError(str(path), None, None, f"has no split {name!r} (found: {', '.join(splits)})")
            return _undecoded(splits[name]), str(path / name), path
        if (path / "state.json").exists():
            return _undecoded(datasets.load_from_disk(str(path))), str(path), path
        files = sorted(path.glob("*.parquet"))
        if not files:
            raise DataError(str(path), None, None, "holds no .parquet file and is not a save_to_disk directory")
        return _undecoded(_parquet(files)), str(path), path
    if source.count("/") == 1 and not source.startswith((".", "/", "~")) and not source.endswith(".parquet"):
        dataset = datasets.load_dataset(source, split=split or "train")
        return _undecoded(dataset), f"{source}[{split or 'train'}]", None
    raise DataError(source, None, None, "does not exist (give a parquet file, a directory or a Hub dataset id)")


def _parquet(files: list[Path]) -> datasets.Dataset:
    try:
        return datasets.Dataset.from_parquet([str(file) for file in files])
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise DataError(str(files[0]), None, None, f"cannot be read as parquet ({type(exc).__name__}: {exc})") from exc


def _undecoded(dataset: datasets.Dataset) -> datasets.Dataset:
    feature = dataset.features.get("image")
    if isinstance(feature, datasets.Image):
        dataset = dataset.cast_column("image", datasets.Image(decode=False))
    return dataset


def image_cell(value: Any, origin: str, row: int, base_dir: Path | None) -> dict[str, Any]:
    """An image cell as ``{"bytes", "path"}`` with the file's bytes read; raises :class:`DataError` when unreadable."""
    if isinstance(value, bytes | bytearray):
        value = {"bytes": bytes(value), "path": None}
    elif isinstance(value, str):
        value = {"bytes": None, "path": value}
    if not isinstance(value, dict) or not (value.get("bytes") or value.get("path")):
        raise DataError(origin, row, "image", f"expected an image (bytes, a path or an Image cell), got {value!r:.80}")
    if not value.get("bytes"):
        path = Path(value["path"]).expanduser()
        if not path.is_absolute() and not path.exists() and base_dir is not None:
            path = base_dir / path
        try:
            value = {"bytes": path.read_bytes(), "path": value["path"]}
        except OSError as exc:
            raise DataError(origin, row, "image", f"cannot read image file {str(path)!r}: {exc}") from exc
    return value


def _categories(value: Any, origin: str, row: int) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list | tuple) or not value or not all(isinstance(item, str) and item for item in value):
        raise DataError(origin, row, "categories", f"expected a non-empty list of category strings, got {value!r:.80}")
    return tuple(dict.fromkeys(item.strip() for item in value))


def _text(value: Any, origin: str, row: int, column: str) -> str:
    if not isinstance(value, str):
        raise DataError(origin, row, column, f"expected a string, got {type(value).__name__} {value!r:.80}")
    return value


def _scan(dataset: datasets.Dataset, origin: str, base_dir: Path | None) -> Iterator[dict[str, Any]]:
    columns = [name for name in (*REQUIRED, *OPTIONAL) if name in dataset.column_names]
    table = dataset.select_columns(columns)
    with tqdm(total=len(table), desc="scifibench: reading pairs", unit="pair") as progress:
        for offset in range(0, len(table), SCAN_BATCH):
            batch = table[offset : offset + SCAN_BATCH]
            for index in range(len(batch["caption"])):
                yield {"row": offset + index, **{name: batch[name][index] for name in columns}}
            progress.update(len(batch["caption"]))


def read_pairs(source: str, split: str | None = None, keep_subfigures: bool = False) -> Pairs:
    """Load, validate, normalise and de-duplicate the pairs of ``source``."""
    dataset, origin, base_dir = load_rows(source, split)
    missing = [name for name in REQUIRED if name not in dataset.column_names]
    if missing:
        raise DataError(origin, None, missing[0], f"missing column (the data has: {', '.join(dataset.column_names)})")
    figure_ids, paper_ids, captions, categories, hashes, rows = [], [], [], [], [], []
    dropped = {"has_subfigures": 0, "empty_caption": 0}
    seen_ids: dict[str, int] = {}
    for item in _scan(dataset, origin, base_dir):
        row = item["row"]
        for column in REQUIRED:
            if item[column] is None:
                raise DataError(origin, row, column, "value is missing (null)")
        paper_id = _text(item["paper_id"], origin, row, "paper_id").strip()
        if not paper_id:
            raise DataError(origin, row, "paper_id", "expected a non-empty string")
        figure_id = item.get("figure_id")
        figure_id = f"{paper_id}#{row}" if figure_id is None else _text(figure_id, origin, row, "figure_id").strip()
        if figure_id in seen_ids:
            raise DataError(origin, row, "figure_id", f"{figure_id!r} repeats row {seen_ids[figure_id]}")
        seen_ids[figure_id] = row
        caption = normalise_caption(_text(item["caption"], origin, row, "caption"))
        pair_categories = _categories(item["categories"], origin, row)
        flagged = item.get("has_subfigures")
        if flagged is not None and not isinstance(flagged, bool):
            raise DataError(origin, row, "has_subfigures", f"expected true/false, got {flagged!r}")
        if flagged and not keep_subfigures:
            dropped["has_subfigures"] += 1
            continue
        if not caption:
            dropped["empty_caption"] += 1
            continue
        cell = image_cell(item["image"], origin, row, base_dir)
        problem = image_problem(cell)
        if problem is not None:
            raise DataError(origin, row, "image", problem)
        figure_ids.append(figure_id)
        paper_ids.append(paper_id)
        captions.append(caption)
        categories.append(pair_categories)
        hashes.append(hashlib.sha256(cell["bytes"]).hexdigest())
        rows.append(row)
    kept, duplicates = first_occurrences(captions, hashes)
    dropped.update(duplicates)
    return Pairs(
        dataset=dataset,
        origin=origin,
        rows=[rows[i] for i in kept],
        figure_ids=[figure_ids[i] for i in kept],
        paper_ids=[paper_ids[i] for i in kept],
        captions=[captions[i] for i in kept],
        categories=[categories[i] for i in kept],
        image_hashes=[hashes[i] for i in kept],
        dropped=dropped,
        base_dir=base_dir,
        source=source,
        split=split,
    )
