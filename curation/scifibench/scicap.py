"""Convert the SciCap release (Hsu et al. 2021) into the curation input schema (:mod:`.pairs`); SciFIBench's CS set
was curated from SciCap figure–caption pairs with the arXiv categories of their papers (paper §3.3).
Manual: curation/scifibench/README.md, "Input: figure–caption pairs", **SciCap**.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from scifig_tasks.core.errors import DataError
from scifig_tasks.core.schema import list_feature

FEATURES = datasets.Features(
    {
        "figure_id": datasets.Value("string"),
        "image": datasets.Image(),
        "caption": datasets.Value("string"),
        "paper_id": datasets.Value("string"),
        "categories": list_feature(datasets.Value("string")),
        "has_subfigures": datasets.Value("bool"),
        "figure_type": datasets.Value("string"),
    }
)
CAPTION_FIELD = "1-lowercase-and-token-and-remove-figure-index"
CAPTIONS_DIR = "SciCap-Caption-All"
IMAGE_DIRS = {False: "SciCap-No-Subfig-Img", True: "SciCap-Yes-Subfig-Img"}
METADATA = "arxiv-metadata-oai-snapshot.json"
ROW_GROUP = 256
_VERSION = re.compile(r"v\d+$")


@dataclass
class Converted:
    """What a conversion wrote and skipped."""

    out: Path
    rows: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: {"not_in_file_list": 0, "no_arxiv_metadata": 0})


def _child(parent: Path, name: str) -> Path | None:
    """``parent/name`` matched case-insensitively (the release mixes ``Train`` and ``train``)."""
    exact = parent / name
    if exact.exists():
        return exact
    if parent.is_dir():
        for child in parent.iterdir():
            if child.name.lower() == name.lower():
                return child
    return None


def caption_records(root: Path, split: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(origin, record)`` for every caption record of ``split``, in file-name order."""
    captions = _child(root, CAPTIONS_DIR)
    if captions is None:
        raise DataError(str(root), None, None, f"has no {CAPTIONS_DIR}/ folder (is this the SciCap release root?)")
    folder = _child(captions, split)
    if folder is not None and folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            yield str(path), _load_json(path)
        return
    listing = _child(captions, f"{CAPTIONS_DIR}-{split}.json")
    if listing is None:
        raise DataError(str(captions), None, None, f"has neither {split}/ nor {CAPTIONS_DIR}-{split}.json")
    records = _load_json(listing)
    if not isinstance(records, list):
        raise DataError(str(listing), None, None, "expected a JSON list of figure records")
    for index, record in enumerate(records):
        yield f"{listing}[{index}]", record


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(str(path), None, None, f"cannot be read as JSON ({exc})") from exc


def _figure_key(name: str) -> str:
    return name.strip().removesuffix(".json")


def read_file_list(path: Path) -> set[str]:
    """Figure ids from a JSON list (or a dict of lists) or a text file with one id per line."""
    text = path.read_text(encoding="utf-8")
    try:
        loaded = json.loads(text)
    except ValueError:
        return {_figure_key(line) for line in text.splitlines() if line.strip()}
    values = [item for group in loaded.values() for item in group] if isinstance(loaded, dict) else loaded
    if not isinstance(values, list) or not all(isinstance(item, str) for item in values):
        raise DataError(str(path), None, None, "expected a list of figure ids")
    return {_figure_key(item) for item in values}


def paper_key(paper_id: str) -> str:
    """The arXiv id without a version suffix: ``1001.0025v2`` -> ``1001.0025``."""
    return _VERSION.sub("", paper_id.strip())


def read_categories(path: Path, papers: set[str]) -> dict[str, list[str]]:
    """``categories`` of the wanted papers from arXiv's metadata snapshot (JSON lines; streamed)."""
    found: dict[str, list[str]] = {}
    with path.open(encoding="utf-8") as lines, tqdm(desc="scifibench: arXiv metadata", unit="paper") as bar:
        for number, line in enumerate(lines):
            bar.update(1)
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise DataError(str(path), number, None, f"line is not JSON ({exc})") from exc
            key = paper_key(str(record.get("id", "")))
            if key in papers:
                categories = str(record.get("categories", "")).split()
                if not categories:
                    raise DataError(str(path), number, "categories", f"paper {key} has no categories")
                found[key] = categories
    return found


def _record_fields(origin: str, record: Any) -> tuple[str, str, bool, str, str]:
    if not isinstance(record, dict):
        raise DataError(origin, None, None, "expected a figure record (JSON object)")
    for name in ("figure-ID", "paper-ID"):
        if not isinstance(record.get(name), str) or not record[name].strip():
            raise DataError(origin, None, name, "missing or not a string")
    normalised = record.get(CAPTION_FIELD)
    caption = normalised.get("caption") if isinstance(normalised, dict) else None
    if not isinstance(caption, str):
        caption = record.get("0-originally-extracted")
    if not isinstance(caption, str):
        raise DataError(origin, None, CAPTION_FIELD, "no caption in the record")
    flag = bool(record.get("contains-subfigure", False))
    return record["figure-ID"].strip(), record["paper-ID"].strip(), flag, caption, str(record.get("figure-type", ""))


def convert_scicap(
    root: Path,
    split: str,
    out: Path,
    arxiv_metadata: Path | None = None,
    file_list: Path | None = None,
    keep_subfigures: bool = False,
) -> Converted:
    """Write ``out`` (parquet, the curation input schema) from the SciCap release at ``root``."""
    wanted = read_file_list(file_list) if file_list else None
    records = []
    result = Converted(out)
    result.skipped["subfigures"] = 0
    for origin, record in caption_records(root, split):
        figure_id, paper_id, flag, caption, figure_type = _record_fields(origin, record)
        if wanted is not None and _figure_key(figure_id) not in wanted:
            result.skipped["not_in_file_list"] += 1
            continue
        if flag and not keep_subfigures:
            result.skipped["subfigures"] += 1
            continue
        records.append((origin, figure_id, paper_id, flag, caption, figure_type))
    metadata = arxiv_metadata or root / METADATA
    if not metadata.exists():
        raise DataError(str(metadata), None, None, "arXiv metadata snapshot not found (give --arxiv-metadata)")
    categories = read_categories(metadata, {paper_key(record[2]) for record in records})
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    schema = FEATURES.arrow_schema
    writer = pq.ParquetWriter(str(partial), schema)
    pending: list[dict[str, Any]] = []
    try:
        for origin, figure_id, paper_id, flag, caption, figure_type in tqdm(
            records, desc="scifibench: converting SciCap", unit="figure"
        ):
            paper_categories = categories.get(paper_key(paper_id))
            if paper_categories is None:
                result.skipped["no_arxiv_metadata"] += 1
                continue
            pending.append(
                {
                    "figure_id": figure_id,
                    "image": {"bytes": _image_bytes(root, split, flag, figure_id, origin), "path": figure_id},
                    "caption": caption,
                    "paper_id": paper_key(paper_id),
                    "categories": paper_categories,
                    "has_subfigures": flag,
                    "figure_type": figure_type,
                }
            )
            if len(pending) == ROW_GROUP:
                writer.write_table(pa.Table.from_pylist(pending, schema=schema))
                result.rows += len(pending)
                pending = []
        if pending:
            writer.write_table(pa.Table.from_pylist(pending, schema=schema))
            result.rows += len(pending)
    except BaseException:
        writer.close()
        partial.unlink(missing_ok=True)
        raise
    writer.close()
    os.replace(partial, out)
    return result


def _image_bytes(root: Path, split: str, flag: bool, figure_id: str, origin: str) -> bytes:
    folder = _child(root, IMAGE_DIRS[flag])
    split_folder = _child(folder, split) if folder is not None else None
    path = split_folder / figure_id if split_folder is not None else root / IMAGE_DIRS[flag] / split / figure_id
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DataError(origin, None, "figure-ID", f"image file {str(path)!r} cannot be read ({exc})") from exc
