"""Article records, the input of ``scifig curate mmsci``: read and validated in the authors' record format (a JSON Lines
file or a directory of JSON records, such as the authors' ``rawdata`` tree; MMSci paper section 3).
Manual: curation/mmsci/README.md, "Input of ``scifig curate mmsci``".
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image as PILImage
from tqdm.auto import tqdm

from curation.mmsci.captions import SubCaptions, Title, clean_title, extract_subcaptions, full_caption
from scifig_tasks.core.errors import DataError


@dataclass(frozen=True)
class Figure:
    index: int  # 0-based position in the article's figure list
    image_path: Path
    caption_line: str
    description: str
    title: Title
    caption: str  # cleaned title + description
    subcaptions: SubCaptions

    def image_bytes(self) -> bytes:
        return self.image_path.read_bytes()


@dataclass(frozen=True)
class Article:
    uid: str
    category: str
    subject: str
    title: str
    abstract: str
    figures: tuple[Figure, ...]
    origin: str  # file the article came from, for messages
    row: int | None  # 0-based line of a JSONL file; None for one-record files

    @property
    def key(self) -> tuple[str, str]:
        """A record's identity: the same paper (uid) may be filed under several subjects."""
        return (self.uid, self.subject)


def _text(record: dict[str, Any], field: str, origin: str, row: int | None, required: bool = True) -> str:
    value = record.get(field)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise DataError(origin, row, field, f"expected a non-empty string, got {value!r}"[:300])
    return value


def _verify_image(path: Path, origin: str, row: int | None, field: str) -> None:
    if not path.is_file():
        raise DataError(origin, row, field, f"image file {path} does not exist")
    try:
        with PILImage.open(io.BytesIO(path.read_bytes())) as image:
            image.verify()
    except Exception as exc:  # PIL raises many types for damaged data
        raise DataError(origin, row, field, f"{path} is not a readable image ({type(exc).__name__}: {exc})") from exc


def parse_article(
    record: Any, base: Path, origin: str, row: int | None, fallback: tuple[str, str] | None = None
) -> Article:
    """One validated :class:`Article` from a record; image paths are resolved against ``base``."""
    if not isinstance(record, dict):
        raise DataError(origin, row, None, f"expected a JSON object, got {type(record).__name__}")
    record = dict(record)
    if "uid" not in record and "unique_id" in record:
        record["uid"] = record["unique_id"]
    if fallback is not None:
        record.setdefault("category", fallback[0])
        record.setdefault("subject", fallback[1])
    uid = _text(record, "uid", origin, row)
    category = _text(record, "category", origin, row)
    subject = _text(record, "subject", origin, row)
    title = _text(record, "title", origin, row, required=False)
    abstract = _text(record, "abstract", origin, row)
    images = record.get("images")
    if not isinstance(images, list):
        raise DataError(origin, row, "images", f"expected a list of figures, got {type(images).__name__}")
    figures = []
    for position, item in enumerate(images):
        field = f"images[{position}]"
        if not isinstance(item, dict):
            raise DataError(origin, row, field, f"expected an object, got {type(item).__name__}")
        name = item.get("image_filename", item.get("image"))
        if not isinstance(name, str) or not name.strip():
            raise DataError(origin, row, f"{field}.image_filename", f"expected a file name, got {name!r}")
        caption_line = item.get("caption") or ""
        if not isinstance(caption_line, str):
            raise DataError(origin, row, f"{field}.caption", f"expected a string, got {caption_line!r}")
        description = item.get("description") or ""
        if not isinstance(description, str):
            raise DataError(origin, row, f"{field}.description", f"expected a string, got {description!r}")
        path = (base / name).resolve()
        _verify_image(path, origin, row, f"{field}.image_filename")
        figures.append(
            Figure(
                index=position,
                image_path=path,
                caption_line=caption_line,
                description=description,
                title=clean_title(caption_line),
                caption=full_caption(caption_line, description),
                subcaptions=extract_subcaptions(description),
            )
        )
    return Article(uid, category, subject, title, abstract, tuple(figures), origin, row)


def _jsonl(path: Path) -> Iterator[Article]:
    with path.open(encoding="utf-8") as lines:
        for row, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(str(path), row, None, f"not valid JSON ({exc})") from exc
            yield parse_article(record, path.parent, str(path), row)


def _directory(root: Path, pattern: str) -> Iterator[Article]:
    for file in sorted(root.rglob(pattern)):
        try:
            record = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DataError(str(file), None, None, f"not valid JSON ({exc})") from exc
        relative = file.relative_to(root).parts
        fallback = (relative[-4], relative[-3]) if len(relative) >= 4 else None
        yield parse_article(record, file.parent, str(file), None, fallback)


DEFAULT_PATTERN = "*.json"


def read_articles(source: Path, pattern: str = DEFAULT_PATTERN) -> list[Article]:
    """All articles of a JSONL file or of the ``pattern`` files under a directory; ``(uid, subject)`` is unique."""
    if not source.exists():
        raise DataError(str(source), None, None, "does not exist")
    records = _directory(source, pattern) if source.is_dir() else _jsonl(source)
    articles = list(tqdm(records, desc="mmsci: reading articles", unit="article"))
    if not articles:
        raise DataError(str(source), None, None, "holds no article record")
    seen: dict[tuple[str, str], str] = {}
    for article in articles:
        if article.key in seen:
            raise DataError(
                article.origin,
                article.row,
                "uid",
                f"duplicate article {article.uid!r} in subject {article.subject!r} (also {seen[article.key]})",
            )
        seen[article.key] = article.origin if article.row is None else f"{article.origin}, row {article.row}"
    return articles
