"""Supervised fine-tuning examples: the SFT chat jsonl format (the MMSci layout) and converters from this package's
curated SciFIBench and GRAB outputs, with the prompts the evaluation tasks send, streamed in record batches.
Manual: finetune/README.md, "Data".
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from PIL import Image

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.benchmarks.scifibench import rules as scifibench
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.images import to_rgb

IMAGE_PLACEHOLDER = "<image>"
ROLES = ("user", "assistant")
FORMATS = ("sft", "scifibench", "grab")
"""Data formats a fine-tuning config can name: SFT jsonl, SciFIBench curated parquet, GRAB generator output."""

ImageRef = Path | bytes
_BATCH_ROWS = 64


@dataclass(frozen=True)
class SftExample:
    """One conversation; ``images`` are files or stored image bytes, in placeholder order."""

    id: str
    source: str
    images: tuple[ImageRef, ...]
    messages: tuple[Mapping[str, str], ...]


def open_rgb(ref: ImageRef) -> Image.Image:
    """RGB pixels of an image reference (transparency composited on white, as the evaluation tasks do)."""
    return to_rgb({"bytes": ref, "path": None} if isinstance(ref, bytes) else {"bytes": None, "path": str(ref)})


def image_size(ref: ImageRef) -> tuple[int, int]:
    """(width, height) from the image header, without decoding the pixels."""
    with Image.open(io.BytesIO(ref) if isinstance(ref, bytes) else ref) as image:
        return image.size


def check_messages(messages: Any, n_images: int, origin: str, row: int) -> tuple[dict[str, str], ...]:
    """Validate a conversation against the SFT rules; returns it as a tuple of ``{"role", "content"}`` dicts."""
    if not isinstance(messages, list) or not messages:
        raise DataError(origin, row, "messages", "must be a non-empty list of {role, content} objects")
    checked: list[dict[str, str]] = []
    for index, message in enumerate(messages):
        key = f"messages[{index}]"
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            raise DataError(origin, row, key, 'must be an object with exactly the keys "role" and "content"')
        role, content = message["role"], message["content"]
        if role not in ROLES:
            raise DataError(origin, row, f"{key}.role", f"must be one of {', '.join(ROLES)}, got {role!r}")
        if not isinstance(content, str) or not content.strip():
            raise DataError(origin, row, f"{key}.content", "must be a non-empty string")
        checked.append({"role": role, "content": content})
    if checked[0]["role"] != "user":
        raise DataError(origin, row, "messages[0].role", "the conversation must start with a user turn")
    if not any(message["role"] == "assistant" for message in checked):
        raise DataError(origin, row, "messages", "no assistant turn: nothing to learn from")
    found = checked[0]["content"].count(IMAGE_PLACEHOLDER)
    if found != n_images:
        raise DataError(
            origin,
            row,
            "messages[0].content",
            f"has {found} {IMAGE_PLACEHOLDER} placeholder(s) for {n_images} image(s)",
        )
    for index, message in enumerate(checked[1:], start=1):
        if IMAGE_PLACEHOLDER in message["content"]:
            raise DataError(origin, row, f"messages[{index}].content", "placeholders belong in the first user turn")
    return tuple(checked)


def read_sft_jsonl(path: Path, limit: int | None = None) -> Iterator[SftExample]:
    """Examples of an SFT jsonl file (validated line by line; image files must exist)."""
    path = Path(path)
    origin = str(path)
    if not path.is_file():
        raise DataError(origin, None, None, _not_expected("sft", path))
    seen: set[str] = set()
    produced = 0
    with path.open(encoding="utf-8") as handle:
        for row, line in enumerate(handle):
            if limit is not None and produced >= limit:
                return
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(origin, row, None, f"invalid JSON: {exc}") from None
            if not isinstance(record, dict):
                raise DataError(origin, row, None, "each line must be a JSON object")
            for key in ("id", "source", "images", "messages"):
                if key not in record:
                    raise DataError(origin, row, key, "missing")
            for key in ("id", "source"):
                if not isinstance(record[key], str) or not record[key].strip():
                    raise DataError(origin, row, key, "must be a non-empty string")
            if record["id"] in seen:
                raise DataError(origin, row, "id", f"duplicate id {record['id']!r}")
            seen.add(record["id"])
            images = record["images"]
            if not isinstance(images, list) or not all(isinstance(item, str) and item for item in images):
                raise DataError(origin, row, "images", "must be a list of relative file paths")
            files = []
            for index, relative in enumerate(images):
                file = path.parent / relative
                if Path(relative).is_absolute() or not file.is_file():
                    raise DataError(origin, row, f"images[{index}]", f"no image file {relative!r} next to the jsonl")
                files.append(file)
            messages = check_messages(record["messages"], len(files), origin, row)
            produced += 1
            yield SftExample(record["id"], record["source"], tuple(files), messages)


def _not_expected(data_format: str, path: Path, subject: str = "it") -> str:
    """``<subject> holds <what path holds>; expected <what the format reads>`` (:mod:`scifig_finetune.inputs`)."""
    from scifig_finetune.inputs import EXPECTED, held

    return f"{subject} holds {held(path)}; expected {EXPECTED[data_format]}"


PATTERNS = {"scifibench": "*_*2*.parquet", "grab": "GRAB.parquet"}
"""The files a parquet format reads in a directory."""


def input_files(data_format: str, path: Path) -> list[Path]:
    """The files ``examples_from(data_format, path)`` reads; a :class:`DataError` saying what ``path`` holds instead
    when it has none of them."""
    path = Path(path)
    if data_format == "sft":
        if not path.is_file():
            raise DataError(str(path), None, None, _not_expected("sft", path))
        return [path]
    if path.is_file():
        return [path]
    files = sorted(path.glob(PATTERNS[data_format])) if path.is_dir() else []
    if not files:
        raise DataError(str(path), None, None, f"no {PATTERNS[data_format]} file: {_not_expected(data_format, path)}")
    return files


def _rows(file: Path, columns: Sequence[str], data_format: str) -> Iterator[tuple[int, dict[str, Any]]]:
    parquet = pq.ParquetFile(file)
    missing = [column for column in columns if column not in parquet.schema_arrow.names]
    if missing:
        what = _not_expected(data_format, file.parent, str(file.parent))
        raise DataError(str(file), None, missing[0], f"column missing: {what}")
    row = 0
    for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=list(columns)):
        for record in batch.to_pylist():
            yield row, record
            row += 1


def _image_bytes(cell: Any, origin: str, row: int, column: str) -> bytes:
    if isinstance(cell, Mapping) and cell.get("bytes"):
        return bytes(cell["bytes"])
    raise DataError(origin, row, column, "no stored image bytes")


def scifibench_examples(
    path: Path,
    tiers: Sequence[str] = ("silver", "bronze"),
    negatives: Sequence[str] = ("nearest",),
    limit: int | None = None,
) -> Iterator[SftExample]:
    """SFT examples from SciFIBench curated parquet (a file, or a directory of ``*_Figure2Caption.parquet`` /
    ``*_Caption2Figure.parquet``), with the evaluation's standard prompt and the letter as the answer."""
    columns = ("ID", "Question", "Options", "Answer", "Images", "tier", "negatives")
    produced = 0
    for file in input_files("scifibench", Path(path)):
        origin = str(file)
        caption_to_figure = file.stem.endswith("Caption2Figure")
        if not caption_to_figure and not file.stem.endswith("Figure2Caption"):
            raise DataError(origin, None, None, "file name must end with Figure2Caption or Caption2Figure")
        for row, record in _rows(file, columns, "scifibench"):
            if limit is not None and produced >= limit:
                return
            if record["tier"] not in tiers or record["negatives"] not in negatives:
                continue
            images = tuple(
                _image_bytes(cell, origin, row, f"Images[{index}]") for index, cell in enumerate(record["Images"] or [])
            )
            options = list(record["Options"] or [])
            try:
                letters = scifibench.option_letters(options)
                if caption_to_figure:
                    segments = scifibench.c2f_segments(record["Question"], len(images))
                    prompt = "".join(part if isinstance(part, str) else IMAGE_PLACEHOLDER for part in segments)
                else:
                    prompt = IMAGE_PLACEHOLDER + scifibench.f2c_text(options)
            except ValueError as exc:
                raise DataError(origin, row, "Question" if caption_to_figure else "Options", str(exc)) from None
            expected = len(options) if caption_to_figure else 1
            if len(images) != expected:
                raise DataError(origin, row, "Images", f"has {len(images)} image(s), expected {expected}")
            if record["Answer"] not in letters:
                raise DataError(origin, row, "Answer", f"{record['Answer']!r} is not one of {''.join(letters)}")
            task = "c2f" if caption_to_figure else "f2c"
            messages = check_messages(
                [{"role": "user", "content": prompt}, {"role": "assistant", "content": record["Answer"]}],
                len(images),
                origin,
                row,
            )
            produced += 1
            yield SftExample(f"scifibench-{file.stem}-{record['ID']}", f"scifibench_{task}", images, messages)


def grab_examples(path: Path, limit: int | None = None) -> Iterator[SftExample]:
    """SFT examples from GRAB generator output (``GRAB.parquet`` or its directory): the graph, the README prompt, the
    exact answer string."""
    produced = 0
    for file in input_files("grab", Path(path)):
        origin = str(file)
        for row, record in _rows(file, ("pid", "question", "decoded_image", "answer"), "grab"):
            if limit is not None and produced >= limit:
                return
            image = _image_bytes(record["decoded_image"], origin, row, "decoded_image")
            if not isinstance(record["answer"], str) or not record["answer"].strip():
                raise DataError(origin, row, "answer", "must be a non-empty string")
            prompt = IMAGE_PLACEHOLDER + grab.build_prompt(record["question"])
            messages = check_messages(
                [{"role": "user", "content": prompt}, {"role": "assistant", "content": record["answer"]}],
                1,
                origin,
                row,
            )
            produced += 1
            yield SftExample(f"grab-{record['pid']}", "grab", (image,), messages)


def examples_from(data_format: str, path: Path, limit: int | None = None) -> Iterator[SftExample]:
    """Examples of one data source of a fine-tuning config (``format`` one of :data:`FORMATS`)."""
    if data_format == "sft":
        return read_sft_jsonl(path, limit)
    if data_format == "scifibench":
        return scifibench_examples(path, limit=limit)
    if data_format == "grab":
        return grab_examples(path, limit=limit)
    raise ValueError(f"unknown data format {data_format!r} (expected one of {', '.join(FORMATS)})")


def _extension(data: bytes) -> str:
    with Image.open(io.BytesIO(data)) as image:
        return {"JPEG": ".jpg", "PNG": ".png", "WEBP": ".webp", "GIF": ".gif"}.get(image.format or "", ".png")


def write_sft_jsonl(examples: Iterable[SftExample], out_dir: Path) -> int:
    """Write ``examples`` as ``out_dir/train.jsonl`` + ``out_dir/images/`` (streaming; the jsonl is written under a
    temporary name and renamed when complete). Image bytes are stored as they are; returns the number of examples."""
    out_dir = Path(out_dir)
    images_dir = out_dir / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    final, partial = out_dir / "train.jsonl", out_dir / "train.jsonl.partial"
    count = 0
    stems: set[str] = set()
    try:
        with partial.open("w", encoding="utf-8") as handle:
            for example in examples:
                stem = "".join(char if char.isalnum() or char in "-_." else "_" for char in example.id)
                if stem in stems:
                    raise ValueError(f"example id {example.id!r} gives the same image file names as an earlier one")
                stems.add(stem)
                relative = []
                for index, ref in enumerate(example.images):
                    data = ref if isinstance(ref, bytes) else Path(ref).read_bytes()
                    name = f"{stem}-{index}{_extension(data)}"
                    (images_dir / name).write_bytes(data)
                    relative.append(f"images/{name}")
                record = {
                    "id": example.id,
                    "source": example.source,
                    "images": relative,
                    "messages": [dict(message) for message in example.messages],
                }
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, final)
    return count
