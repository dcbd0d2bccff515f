"""``scifig curate mmsci-from-vlmeval``: VLMEvalKit's public MMSci TSVs converted into the local layout of
``SCIFIG_MMSCI_DATA``, setting III put in the paper's form (MMSci paper section 3).
Manual: curation/mmsci/README.md, "Public copies".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from curation.mmsci.captions import MIN_CAPTION_WORDS, normalise_space, word_count
from curation.mmsci.items import (
    LABEL_OPTION,
    Caption,
    Mcq,
    check_mcq,
    figure_identity,
    in_paper_form,
    subfigure_label,
    verified_image,
)
from curation.mmsci.layout import dropped_note, finish, summarise, write_split
from scifig_tasks.benchmarks.mmsci.rules import LETTERS, SETTINGS
from scifig_tasks.core.errors import DataError

VLMEVAL_SETTINGS = {"Fig2Cap": "fig2cap", "SubFig2Cap": "subfig2cap", "SubCap2Fig": "subcap2fig"}


def _read_tsv(path: Path, required: Sequence[str]) -> list[dict[str, str]]:
    import pandas as pd

    if not path.is_file():
        raise DataError(str(path), None, None, "does not exist")
    try:
        frame = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    except Exception as exc:  # pandas raises several types for a malformed file
        raise DataError(str(path), None, None, f"cannot be read as TSV ({type(exc).__name__}: {exc})") from exc
    missing = [name for name in required if name not in frame.columns]
    if missing:
        raise DataError(str(path), None, missing[0], f"missing column (the file has: {', '.join(frame.columns)})")
    return frame.to_dict(orient="records")


def _tsv_images(rows: list[dict[str, str]], origin: str) -> list[bytes]:
    """Decoded image bytes per row, resolving VLMEvalKit's short references to another row's ``index``."""
    by_index = {row["index"]: position for position, row in enumerate(rows)}
    decoded: list[bytes] = []
    for position, row in enumerate(tqdm(rows, desc=f"mmsci: images of {Path(origin).name}", unit="row")):
        value = row["image"].strip()
        if 0 < len(value) <= 64:
            target = by_index.get(value)
            if target is None or len(rows[target]["image"].strip()) <= 64:
                raise DataError(origin, position, "image", f"refers to index {value!r}, which holds no image")
            value = rows[target]["image"].strip()
        if value.startswith("["):
            raise DataError(origin, position, "image", "holds several images; an MMSci item has one figure")
        try:
            data = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise DataError(origin, position, "image", f"not base64 ({exc})") from exc
        decoded.append(verified_image(data, origin, position, "image"))
    return decoded


def _tsv_identity(row: dict[str, str]) -> tuple[str, int] | None:
    for column in ("image_id", "image_path", "image_name"):
        identity = figure_identity(row.get(column, "").strip()) if row.get(column, "").strip() else None
        if identity is not None:
            return identity
    if row.get("uid", "").strip() and row.get("figure_index", "").strip().isdigit():
        return row["uid"].strip(), int(row["figure_index"])
    return None


def _required(row: dict[str, str], name: str, origin: str, position: int) -> str:
    value = row.get(name, "").strip()
    if not value:
        raise DataError(origin, position, name, "expected a non-empty value")
    return value


def _strip_embedded_options(question: str, options: list[str]) -> str:
    """VLMEvalKit questions carry no options; drop ``\\nA: ...`` lines should a source have kept them."""
    first = question.find("\nA: ")
    if first < 0:
        first = question.find("\nA. ")
    if first >= 0 and options[0] and options[0] in question[first:]:
        return question[:first].strip()
    return question.strip()


def _vlmeval_captions(paths: Sequence[Path], unnamed: Counter[str]) -> list[Caption]:
    merged: dict[str, Caption] = {}
    sources: dict[str, tuple[str, int]] = {}
    for path in paths:
        origin = str(path)
        rows = _read_tsv(path, ("index", "image", "caption", "category", "subject"))
        images = _tsv_images(rows, origin)
        caption_by_abstract = {
            row.get("abstract", "").strip(): row["caption"].strip()
            for row in rows
            if row.get("abstract", "").strip() and row["caption"].strip()
        }
        for position, (row, image) in enumerate(zip(rows, images, strict=True)):
            key = row.get("image_id", "").strip() or hashlib.sha1(image).hexdigest()
            abstract = row.get("abstract", "").strip()
            caption = normalise_space(row["caption"].strip() or caption_by_abstract.get(abstract, ""))
            identity = _tsv_identity(row)
            if identity is None:
                unnamed["captioning"] += 1
                identity = (f"vlmeval-{row['index']}", 0)
            item = Caption(
                identity[0],
                identity[1],
                _required(row, "category", origin, position),
                _required(row, "subject", origin, position),
                image,
                caption,
                abstract,
                hashlib.sha1(image).hexdigest(),
            )
            if key in merged:
                kept = merged[key]
                kept.caption = kept.caption or item.caption
                kept.abstract = kept.abstract or item.abstract
            else:
                merged[key] = item
                sources[key] = (origin, position)
    for key, item in merged.items():
        origin, position = sources[key]
        if not item.caption:
            raise DataError(origin, position, "caption", "empty, and no row with the same abstract has one")
        if word_count(item.caption) < MIN_CAPTION_WORDS:
            raise DataError(
                origin, position, "caption", f"has {word_count(item.caption)} words (< {MIN_CAPTION_WORDS})"
            )
        if not item.abstract:
            raise DataError(
                origin, position, "abstract", "empty: also give MMSci_DEV_Captioning_with_abs.tsv (merged by image_id)"
            )
    return list(merged.values())


def _vlmeval_mcq(path: Path, captions: dict[str, str], dropped: Counter[str], unnamed: Counter[str]) -> list[Mcq]:
    origin = str(path)
    rows = _read_tsv(path, ("index", "image", "question", *LETTERS, "answer", "category", "subject", "setting"))
    images = _tsv_images(rows, origin)
    items = []
    for position, (row, image) in enumerate(zip(rows, images, strict=True)):
        raw_setting = _required(row, "setting", origin, position)
        setting = VLMEVAL_SETTINGS.get(raw_setting, raw_setting if raw_setting in SETTINGS else None)
        if setting is None:
            raise DataError(
                origin, position, "setting", f"unknown setting {raw_setting!r} (expected one of: Fig2Cap, ...)"
            )
        options = [_required(row, letter, origin, position) for letter in LETTERS]
        question = _strip_embedded_options(_required(row, "question", origin, position), options)
        if setting == "fig2cap":
            subfigure = ""
        elif setting == "subcap2fig" and all(LABEL_OPTION.match(option) for option in options):
            answer = row["answer"].strip()
            subfigure = LABEL_OPTION.match(options[LETTERS.index(answer)]).group(1) if answer in LETTERS else ""
        else:
            subfigure = subfigure_label(question, origin, position)
        identity = _tsv_identity(row)
        if identity is None:
            unnamed["mcq"] += 1
            identity = (f"vlmeval-{row['index']}", 0)
        key = hashlib.sha1(image).hexdigest()
        item = Mcq(*identity, setting, _required(row, "category", origin, position),
                   _required(row, "subject", origin, position), image, question, options, row["answer"].strip(),
                   subfigure, key)  # fmt: skip
        converted = in_paper_form(check_mcq(item, origin, position), captions, key, dropped)
        if converted is not None:
            items.append(converted)
    return items


def import_vlmeval(
    mcq: Path | None, captioning: Sequence[Path], out: Path, split: str = "dev", command: str = ""
) -> dict[str, Any]:
    """Convert VLMEvalKit's MMSci TSVs into ``out/mcq/<split>.parquet`` and ``out/captioning/<split>.parquet``."""
    unnamed: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    captions = _vlmeval_captions(captioning, unnamed) if captioning else None
    lookup = {c.image_key: c.caption for c in captions or []}
    questions = _vlmeval_mcq(mcq, lookup, dropped, unnamed) if mcq else None
    write_split(out, split, questions, captions)
    per_setting, caption_counts = summarise(questions or [], captions or [])
    summary = {
        "imported_from": "VLMEvalKit's MMSci TSVs",
        "command_name": "mmsci-from-vlmeval",
        "command": command,
        "input": {"mcq": str(mcq) if mcq else None, "captioning": [str(path) for path in captioning]},
        "splits": [split],
        "tables": [table for table, given in (("mcq", mcq), ("captioning", captioning)) if given],
        "mcq": {split: per_setting},
        "captioning": {split: caption_counts},
        "dropped": {split: dict(dropped)},
        "unnamed_rows": dict(unnamed),
    }
    note = dropped_note(summary["dropped"])
    if unnamed:
        note += (
            f"\n\nRows without an article id in the source ({', '.join(f'{k} {v}' for k, v in unnamed.items())}): "
            "`uid` is `vlmeval-<index>` and `figure_index` 0."
        )
    summary["notes"] = note
    return finish(out, summary)
