"""``scifig curate mmsci-from-authors``: the authors' archive (``benchmark.zip`` of github.com/Leezekun/MMSci)
converted into the local layout of ``SCIFIG_MMSCI_DATA``, setting III put in the paper's form (MMSci paper section 3).
Manual: curation/mmsci/README.md, "Public copies".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from curation.mmsci.authors_sft import import_authors_sft
from curation.mmsci.captions import MIN_CAPTION_WORDS, normalise_space, word_count
from curation.mmsci.items import (
    AUTHORS_FILES,
    Caption,
    Mcq,
    check_mcq,
    field_text,
    figure_identity,
    in_paper_form,
    load_json,
    split_options,
    subfigure_label,
    verified_image,
)
from curation.mmsci.layout import dropped_note, finish, summarise, write_split
from scifig_tasks.benchmarks.mmsci.rules import SETTINGS
from scifig_tasks.core.errors import DataError


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
        verified_image(path.read_bytes(), origin, row, "image")
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
            converted = in_paper_form(check_mcq(item, where, row), captions, name, dropped)
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
        write_split(out, split, mcq, captions)
        summary["mcq"][split], summary["captioning"][split] = summarise(mcq, captions)
        summary["dropped"][split] = dict(dropped)
    summary["notes"] = dropped_note(summary["dropped"])
    if sft:
        summary["sft"] = import_authors_sft(benchmark, out / "sft")
        sources = ", ".join(f"{source} {count}" for source, count in summary["sft"]["sources"].items())
        summary["notes"] += (
            f"\n\n`sft/train.jsonl`: {summary['sft']['records']} records from the authors' train split ({sources}); "
            f"setting III items not convertible: {summary['sft']['dropped'].get('subcap2fig not convertible', 0)}."
        )
    return finish(out, summary)
