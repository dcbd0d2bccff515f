"""Fine-tuning data from the authors' released train split (``benchmark/train/`` of their archive), in the project's
chat format, as the authors built their visual instruction-tuning data (MCQ, captioning, sub-figure conversations).
Manual: curation/mmsci/README.md, "Public copies" (``--sft``).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from curation.mmsci.captions import MIN_CAPTION_WORDS, normalise_space, word_count
from curation.mmsci.items import (
    AUTHORS_FILES,
    Mcq,
    field_text,
    figure_identity,
    in_paper_form,
    load_json,
    split_options,
    subfigure_label,
)
from curation.mmsci.sft import ABSTRACT_WORDS, IMAGE_PLACEHOLDER, SOURCES, png_bytes
from scifig_tasks.benchmarks.mmsci.rules import LETTERS, SETTINGS, caption_prompt, mcq_prompt
from scifig_tasks.core.errors import DataError

CHAT_FILE = "image_caption_chat_data.json"
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant"}


def _image(folder: Path, name: str, origin: str, row: int, needed: dict[str, Path]) -> str:
    path = folder / "images" / name
    if not path.is_file():
        raise DataError(origin, row, "image", f"image file {path} does not exist")
    target = f"images/{Path(name).stem}.png"
    needed[target] = path
    return target


def _captions(folder: Path, needed: dict[str, Path], abstract_words: int) -> tuple[list[dict], dict[str, str]]:
    path = folder / AUTHORS_FILES["captioning"]
    origin = str(path)
    data = load_json(path)
    if not isinstance(data, list):
        raise DataError(origin, None, None, "expected a list of articles")
    records, by_image = [], {}
    for row, article in enumerate(tqdm(data, desc="mmsci: train captions", unit="article")):
        abstract = field_text(article, "abstract", origin, row)
        figures = article.get("images")
        if not isinstance(figures, list):
            raise DataError(origin, row, "images", "expected the train layout: a list of {image, caption}")
        for position, figure in enumerate(figures):
            name = field_text(figure, "image", origin, row)
            caption = normalise_space(field_text(figure, "caption", origin, row))
            by_image[name] = caption
            if word_count(caption) < MIN_CAPTION_WORDS:
                continue
            image = _image(folder, name, origin, row, needed)
            prompt = caption_prompt(abstract, abstract_words)
            records.append(
                {
                    "id": f"mmsci_caption-{article.get('uid', row)}-{position}",
                    "source": "mmsci_caption",
                    "images": [image],
                    "messages": [
                        {"role": "user", "content": f"{IMAGE_PLACEHOLDER}\n{prompt}"},
                        {"role": "assistant", "content": caption},
                    ],
                }
            )
    return records, by_image


def _mcq(folder: Path, captions: dict[str, str], needed: dict[str, Path], dropped: Counter[str]) -> list[dict]:
    path = folder / AUTHORS_FILES["mcq"]
    data = load_json(path)
    if not isinstance(data, list) or len(data) < len(SETTINGS):
        raise DataError(str(path), None, None, "expected a list of per-setting lists (settings I, II, III)")
    records = []
    for number, (setting, items) in enumerate(zip(SETTINGS, data, strict=False)):
        where = f"{path}[{number}]"
        for row, item in enumerate(tqdm(items, desc=f"mmsci: train {setting}", unit="q")):
            name = field_text(item, "image", where, row)
            question, options = split_options(field_text(item, "question", where, row), where, row)
            answer = str(item.get("answer", "")).strip()
            if answer not in LETTERS:
                raise DataError(where, row, "answer", f"expected a letter A-D, got {answer!r}")
            subfigure = "" if setting == "fig2cap" else subfigure_label(question, where, row)
            identity = figure_identity(name) or (str(item.get("uid", "")), 0)
            mcq = Mcq(identity[0], identity[1], setting, "", "", b"", question, options, answer, subfigure, name)
            converted = in_paper_form(mcq, captions, name, dropped)
            if converted is None:
                continue
            mcq = converted
            image = _image(folder, name, where, row, needed)
            records.append(
                {
                    "id": f"mmsci_mcq-{setting}-{row}",
                    "source": "mmsci_mcq",
                    "images": [image],
                    "messages": [
                        {"role": "user", "content": f"{IMAGE_PLACEHOLDER}\n{mcq_prompt(mcq.question, mcq.options)}"},
                        {"role": "assistant", "content": mcq.answer},
                    ],
                }
            )
    return records


def _chats(folder: Path, needed: dict[str, Path]) -> list[dict]:
    path = folder / CHAT_FILE
    origin = str(path)
    data = load_json(path)
    if not isinstance(data, list):
        raise DataError(origin, None, None, "expected a list of conversations")
    records = []
    for row, item in enumerate(tqdm(data, desc="mmsci: train conversations", unit="chat")):
        turns = item.get("conversations") if isinstance(item, dict) else None
        if not isinstance(turns, list) or not turns:
            raise DataError(origin, row, "conversations", "expected a non-empty list of turns")
        messages = []
        for turn in turns:
            role = ROLES.get(turn.get("from")) if isinstance(turn, dict) else None
            if role is None or not isinstance(turn.get("value"), str):
                raise DataError(origin, row, "conversations", f"bad turn {turn!r:.120}")
            messages.append({"role": role, "content": turn["value"].replace(IMAGE_PLACEHOLDER, "").strip()})
        if messages[0]["role"] != "user":
            raise DataError(origin, row, "conversations", "the first turn must be the human's")
        messages[0]["content"] = f"{IMAGE_PLACEHOLDER}\n{messages[0]['content']}"
        image = _image(folder, field_text(item, "image", origin, row), origin, row, needed)
        records.append(
            {"id": f"mmsci_subfigure-{row}", "source": "mmsci_subfigure", "images": [image], "messages": messages}
        )
    return records


def import_authors_sft(benchmark: Path, out: Path, abstract_words: int = ABSTRACT_WORDS) -> dict[str, Any]:
    """Write ``out/train.jsonl`` and ``out/images/`` from ``benchmark/train``; returns the counts."""
    folder = benchmark / "train"
    needed: dict[str, Path] = {}
    dropped: Counter[str] = Counter()
    caption_records, captions = _captions(folder, needed, abstract_words)
    records = _mcq(folder, captions, needed, dropped) + caption_records
    if (folder / CHAT_FILE).exists():
        records += _chats(folder, needed)
    (out / "images").mkdir(parents=True, exist_ok=True)
    for target, source in tqdm(sorted(needed.items()), desc="mmsci: sft images", unit="image"):
        try:
            data = png_bytes(source)
        except Exception as exc:  # PIL raises many types for damaged data
            raise DataError(str(source), None, None, f"not a readable image ({type(exc).__name__}: {exc})") from exc
        (out / target).write_bytes(data)
    partial = out / "train.jsonl.partial"
    with partial.open("w", encoding="utf-8") as stream:
        for record in records:
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
    partial.replace(out / "train.jsonl")
    counts = dict.fromkeys(SOURCES, 0)
    for record in records:
        counts[record["source"]] += 1
    return {"records": len(records), "images": len(needed), "sources": counts, "dropped": dict(dropped)}
