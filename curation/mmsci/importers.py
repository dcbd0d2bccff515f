"""Loaders for the public MMSci copies, converted into the local layout of ``SCIFIG_MMSCI_DATA`` (spec "Data").

**VLMEvalKit** (``scifig curate mmsci-from-vlmeval``): ``MMSci_DEV_MCQ.tsv`` and ``MMSci_DEV_Captioning_image_only.tsv``
/ ``MMSci_DEV_Captioning_with_abs.tsv``, VLMEvalKit's TSV conventions: tab-separated, a header row, ``index``,
``image`` = base64 image bytes, or, when at most 64 characters, the ``index`` of the row holding them; the MCQ file
has ``question`` (without options), option columns ``A``-``D``, ``answer``, ``category``, ``subject`` and ``setting``
(``Fig2Cap`` / ``SubFig2Cap`` / ``SubCap2Fig``, VLMEvalKit's ``report_acc_MMSci``); the captioning files have
``caption``, ``abstract``, ``image_id`` (VLMEvalKit's MMSci captioning evaluation), ``category`` and ``subject``.
Captioning rows of both files are merged by ``image_id``; an empty ``caption`` is taken from a row with the same
``abstract`` (as VLMEvalKit's evaluation does) and an empty ``abstract`` from the same figure in the other file.

**The authors' archive** (``scifig curate mmsci-from-authors``, ``benchmark.zip`` of github.com/Leezekun/MMSci):
``benchmark/<split>/image_caption_matching_data.json`` (a list of per-setting lists, settings I, II, III in that
order; each item ``uid``, ``category``, ``subject``, ``question`` -- the question then one ``\\nA: option`` line per
option --, ``answer``, ``image``), ``benchmark/<split>/image_caption_generation_data.json`` (items ``uid``,
``category``, ``subject``, ``abstract``, ``content``, ``image``, ``caption``) and ``benchmark/<split>/images/``. Image
names are ``<uid>_figure_<N>.<ext>`` with ``N`` the 0-based figure index. The public test split's answers are
anonymised: import ``--splits dev`` (the default) unless yours has them. Errors in the matching file name the
setting's list as ``<file>[k]`` and the 0-based item in it.

The column sets above are those VLMEvalKit's and the authors' code read; files with more columns import the same.

Where the row identity is missing from a source (a TSV without ``uid`` / ``image_id`` naming ``<uid>_figure_<N>``),
``uid`` is ``vlmeval-<index>`` and ``figure_index`` 0; the summary counts such rows.

Setting III: the authors' files hold their within-figure variant (``which of the following options best describes
the content in sub-figure (x)?`` with 4 sub-captions of that figure). It is converted to the paper's setting III
(question: the asked sub-caption; options: the sub-figure labels of the 4 sub-captions, in the same order, so the
answer letter is unchanged) when the figure's full caption is known (from the captioning data of the same import, by
image) and every option is exactly one of its sub-captions (:func:`curation.mmsci.captions.extract_subcaptions`);
other items are dropped and counted. Items already in the paper's form (options ``(a)``, ...) are kept.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image as PILImage
from tqdm.auto import tqdm

from curation.mmsci.captions import MIN_CAPTION_WORDS, extract_subcaptions, normalise_space, word_count
from curation.mmsci.card import write_card
from curation.parquet import ParquetRows
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.mmsci import LETTERS, SETTINGS, SUBCAP2FIG_QUESTION, subfigure_option
from scifig_tasks.core.sources import MMSCI_CAPTIONING_FEATURES as CAPTIONING_FEATURES
from scifig_tasks.core.sources import MMSCI_MCQ_FEATURES as MCQ_FEATURES

VLMEVAL_SETTINGS = {"Fig2Cap": "fig2cap", "SubFig2Cap": "subfig2cap", "SubCap2Fig": "subcap2fig"}
AUTHORS_FILES = {"mcq": "image_caption_matching_data.json", "captioning": "image_caption_generation_data.json"}
_FIGURE_NAME = re.compile(r"^(?P<uid>.+)_figure_(?P<index>\d+)(?:\.[A-Za-z0-9]+)?$")
_SUBFIGURE = re.compile(r"sub-figure \(([a-z])\)")
_LABEL_OPTION = re.compile(r"^\(([a-z])\)$")


def _bytes(image: bytes | Path) -> bytes:
    return image.read_bytes() if isinstance(image, Path) else image


@dataclass
class Mcq:
    uid: str
    figure_index: int
    setting: str
    category: str
    subject: str
    image: bytes | Path  # bytes (TSV) or a verified file read when written (archive), so memory stays flat
    question: str
    options: list[str]
    answer: str
    subfigure: str
    image_key: str  # what identifies the figure's image within the import (file name or content hash)

    def row(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "figure_index": self.figure_index,
            "setting": self.setting,
            "category": self.category,
            "subject": self.subject,
            "image": {"bytes": _bytes(self.image), "path": None},
            "question": self.question,
            "options": self.options,
            "answer": self.answer,
            "subfigure": self.subfigure,
        }


@dataclass
class Caption:
    uid: str
    figure_index: int
    category: str
    subject: str
    image: bytes | Path
    caption: str
    abstract: str
    image_key: str

    def row(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "figure_index": self.figure_index,
            "category": self.category,
            "subject": self.subject,
            "image": {"bytes": _bytes(self.image), "path": None},
            "caption": self.caption,
            "abstract": self.abstract,
        }


# --- shared ---------------------------------------------------------------------------------------------------------


def _verified(data: bytes, origin: str, row: int | None, column: str) -> bytes:
    try:
        with PILImage.open(io.BytesIO(data)) as image:
            image.verify()
    except Exception as exc:  # PIL raises many types for damaged data
        raise DataError(origin, row, column, f"not a readable image ({type(exc).__name__}: {exc})") from exc
    return data


def split_options(text: str, origin: str, row: int) -> tuple[str, list[str]]:
    """The authors' question text ``question\\nA: ...\\nB: ...\\nC: ...\\nD: ...`` as (question, 4 options)."""
    positions = []
    start = 0
    for letter in LETTERS:
        found = text.find(f"\n{letter}: ", start)
        if found < 0:
            raise DataError(origin, row, "question", f"no option line '{letter}: ...' after the question")
        positions.append(found)
        start = found + 1
    question = text[: positions[0]].strip()
    ends = [*positions[1:], len(text)]
    options = [text[begin + 4 : end].strip() for begin, end in zip(positions, ends, strict=True)]
    if not question or not all(options):
        raise DataError(origin, row, "question", "empty question or option text")
    return question, options


def subfigure_label(question: str, origin: str, row: int) -> str:
    found = _SUBFIGURE.search(question)
    if found is None:
        raise DataError(origin, row, "question", f"names no sub-figure '(x)': {question[:120]!r}")
    return found.group(1)


def figure_identity(name: str) -> tuple[str, int] | None:
    match = _FIGURE_NAME.match(Path(name).name)
    return (match.group("uid"), int(match.group("index"))) if match else None


def to_paper_setting3(item: Mcq, caption: str | None) -> Mcq | None:
    """The paper's setting III from the authors' within-figure variant, or ``None`` when it cannot be done safely."""
    if all(_LABEL_OPTION.match(option) for option in item.options):
        return item  # already the paper's form
    if caption is None:
        return None
    labels_by_text: dict[str, list[str]] = {}
    for label, text in extract_subcaptions(caption).by_label.items():
        labels_by_text.setdefault(normalise_space(text), []).append(label)
    labels = []
    for option in item.options:
        found = labels_by_text.get(normalise_space(option), [])
        if len(found) != 1:
            return None
        labels.append(found[0])
    answer_text = item.options[LETTERS.index(item.answer)]
    if len(set(labels)) != len(labels) or labels[LETTERS.index(item.answer)] != item.subfigure:
        return None
    item.question = SUBCAP2FIG_QUESTION.format(subcaption=answer_text)
    item.options = [subfigure_option(label) for label in labels]
    return item


def in_paper_form(item: Mcq, captions: dict[str, str], key: str, dropped: Counter[str]) -> Mcq | None:
    """``item`` with setting III in the paper's form (the figure's caption looked up by ``key``); ``None`` (and
    counted in ``dropped``) when that cannot be done safely. Other settings pass unchanged."""
    if item.setting != "subcap2fig":
        return item
    converted = to_paper_setting3(item, captions.get(key))
    if converted is None:
        dropped["subcap2fig not convertible"] += 1
    return converted


def _check_mcq(item: Mcq, origin: str, row: int) -> Mcq:
    if item.answer not in LETTERS:
        raise DataError(
            origin,
            row,
            "answer",
            f"expected a letter A-D, got {item.answer!r} (the public test split's answers are anonymised: import "
            "the dev split)",
        )
    if len(set(item.options)) != len(item.options):
        raise DataError(origin, row, "options", f"options are not distinct: {item.options!r:.200}")
    return item


def _write(out: Path, split: str, mcq: Sequence[Mcq] | None, captions: Sequence[Caption] | None) -> None:
    """Write the split's tables (a table whose source was not given, ``None``, is not written)."""
    for table, features, items in (("mcq", MCQ_FEATURES, mcq), ("captioning", CAPTIONING_FEATURES, captions)):
        if items is None:
            continue
        writer = ParquetRows(out / table / f"{split}.parquet", features)
        try:
            for item in tqdm(items, desc=f"mmsci: {table}/{split}", unit="row"):
                writer.add(item.row())
        except BaseException:
            writer.abort()
            raise
        writer.close()


def _summarise(mcq: Sequence[Mcq], captions: Sequence[Caption]) -> tuple[dict[str, Any], dict[str, Any]]:
    per_setting = {
        setting: {
            "questions": sum(1 for item in mcq if item.setting == setting),
            "answers": dict(sorted(Counter(item.answer for item in mcq if item.setting == setting).items())),
        }
        for setting in SETTINGS
    }
    return per_setting, {"items": len(captions)}


def _finish(out: Path, summary: dict[str, Any]) -> dict[str, Any]:
    (out / "curation.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    write_card(out, summary)
    return summary


# --- the authors' archive -------------------------------------------------------------------------------------------


def load_json(path: Path) -> Any:
    if not path.is_file():
        raise DataError(str(path), None, None, "does not exist (expected the authors' benchmark/<split>/ layout)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(str(path), None, None, f"not valid JSON ({exc})") from exc


def field_text(record: Any, name: str, origin: str, row: int) -> str:
    if not isinstance(record, dict):
        raise DataError(origin, row, None, f"expected an object, got {type(record).__name__}")
    value = record.get(name)
    if not isinstance(value, str) or not value.strip():
        raise DataError(origin, row, name, f"expected a non-empty string, got {value!r:.120}")
    return value


def _authors_image(images: Path, record: Any, origin: str, row: int, verified: set[Path]) -> tuple[str, int, Path, str]:
    name = field_text(record, "image", origin, row)
    identity = figure_identity(name)
    if identity is None:
        raise DataError(origin, row, "image", f"{name!r} is not named <uid>_figure_<N>.<ext>")
    uid = field_text(record, "uid", origin, row)
    if identity[0] != uid:
        raise DataError(origin, row, "image", f"{name!r} does not belong to article {uid!r}")
    path = images / name
    if not path.is_file():
        raise DataError(origin, row, "image", f"image file {path} does not exist")
    if path not in verified:
        _verified(path.read_bytes(), origin, row, "image")
        verified.add(path)
    return uid, identity[1], path, name


def _authors_captions(folder: Path, verified: set[Path]) -> list[Caption]:
    path = folder / AUTHORS_FILES["captioning"]
    origin = str(path)
    records = load_json(path)
    if not isinstance(records, list):
        raise DataError(origin, None, None, "expected a list of captioning items")
    items = []
    for row, record in enumerate(tqdm(records, desc=f"mmsci: reading {path.parent.name}/{path.name}", unit="item")):
        uid, index, image, name = _authors_image(folder / "images", record, origin, row, verified)
        caption = normalise_space(field_text(record, "caption", origin, row))
        if word_count(caption) < MIN_CAPTION_WORDS:
            raise DataError(origin, row, "caption", f"has {word_count(caption)} words (< {MIN_CAPTION_WORDS})")
        category, subject = field_text(record, "category", origin, row), field_text(record, "subject", origin, row)
        items.append(
            Caption(uid, index, category, subject, image, caption, field_text(record, "abstract", origin, row), name)
        )
    return items


def _authors_mcq(folder: Path, captions: dict[str, str], dropped: Counter[str], verified: set[Path]) -> list[Mcq]:
    path = folder / AUTHORS_FILES["mcq"]
    origin = str(path)
    data = load_json(path)
    if not isinstance(data, list) or len(data) < len(SETTINGS) or not all(isinstance(part, list) for part in data):
        raise DataError(origin, None, None, "expected a list of per-setting lists (settings I, II, III)")
    items: list[Mcq] = []
    for number, (setting, records) in enumerate(zip(SETTINGS, data, strict=False)):
        where = f"{origin}[{number}]"  # the setting's list; rows are 0-based items of that list
        for row, record in enumerate(tqdm(records, desc=f"mmsci: reading {path.parent.name} {setting}", unit="q")):
            uid, index, image, name = _authors_image(folder / "images", record, where, row, verified)
            question, options = split_options(field_text(record, "question", where, row), where, row)
            subfigure = "" if setting == "fig2cap" else subfigure_label(question, where, row)
            item = Mcq(
                uid,
                index,
                setting,
                field_text(record, "category", where, row),
                field_text(record, "subject", where, row),
                image,
                question,
                options,
                str(record.get("answer", "")).strip(),
                subfigure,
                name,
            )
            converted = in_paper_form(_check_mcq(item, where, row), captions, name, dropped)
            if converted is not None:
                items.append(converted)
    return items


def import_authors(
    benchmark: Path, splits: Sequence[str], out: Path, command: str = "", sft: bool = False
) -> dict[str, Any]:
    """Convert ``benchmark/<split>/`` of the authors' archive for each of ``splits``; with ``sft``, also their train
    split into ``out/sft/`` (:mod:`curation.mmsci.authors_sft`)."""
    if not splits and not sft:
        raise ValueError("no split to import")
    summary: dict[str, Any] = {
        "imported_from": "the authors' benchmark archive (github.com/Leezekun/MMSci, benchmark.zip)",
        "command_name": "mmsci-from-authors",
        "command": command,
        "input": str(benchmark),
        "splits": list(splits),
        "mcq": {},
        "captioning": {},
        "dropped": {},
    }
    for split in splits:
        folder = benchmark / split
        verified: set[Path] = set()
        captions = _authors_captions(folder, verified)
        dropped: Counter[str] = Counter()
        mcq = _authors_mcq(folder, {item.image_key: item.caption for item in captions}, dropped, verified)
        _write(out, split, mcq, captions)
        summary["mcq"][split], summary["captioning"][split] = _summarise(mcq, captions)
        summary["dropped"][split] = dict(dropped)
    summary["notes"] = _dropped_note(summary["dropped"])
    if sft:
        from curation.mmsci.authors_sft import import_authors_sft

        summary["sft"] = import_authors_sft(benchmark, out / "sft")
        sources = ", ".join(f"{source} {count}" for source, count in summary["sft"]["sources"].items())
        summary["notes"] += (
            f"\n\n`sft/train.jsonl`: {summary['sft']['records']} records from the authors' train split ({sources}); "
            f"setting III items not convertible: {summary['sft']['dropped'].get('subcap2fig not convertible', 0)}."
        )
    return _finish(out, summary)


def _dropped_note(dropped: dict[str, dict[str, int]]) -> str:
    counts = {split: entries.get("subcap2fig not convertible", 0) for split, entries in dropped.items()}
    text = ", ".join(f"{split} {count}" for split, count in counts.items())
    return (
        "Setting III: the source holds the authors' within-figure variant (sub-figure -> sub-caption); items were "
        "converted to the paper's setting III (sub-caption -> sub-figure label) where the figure's caption is known "
        f"and every option is one of its sub-captions; dropped otherwise: {text}."
    )


# --- VLMEvalKit TSVs ------------------------------------------------------------------------------------------------


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
        decoded.append(_verified(data, origin, position, "image"))
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
            raise DataError(origin, position, "caption", f"has {word_count(item.caption)} words (< 50)")
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
        elif setting == "subcap2fig" and all(_LABEL_OPTION.match(option) for option in options):
            answer = row["answer"].strip()
            subfigure = _LABEL_OPTION.match(options[LETTERS.index(answer)]).group(1) if answer in LETTERS else ""
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
        converted = in_paper_form(_check_mcq(item, origin, position), captions, key, dropped)
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
    _write(out, split, questions, captions)
    per_setting, caption_counts = _summarise(questions or [], captions or [])
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
    note = _dropped_note(summary["dropped"])
    if unnamed:
        note += (
            f"\n\nRows without an article id in the source ({', '.join(f'{k} {v}' for k, v in unnamed.items())}): "
            "`uid` is `vlmeval-<index>` and `figure_index` 0."
        )
    summary["notes"] = note
    return _finish(out, summary)
