"""The items imported from the public MMSci copies (a multiple-choice question or a figure to caption), shared by the
importers and the authors' train split; converts the authors' setting III to the paper's (MMSci paper section 3).
Manual: curation/mmsci/README.md, "Public copies" (imported items, setting III).
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image as PILImage

from curation.mmsci.captions import extract_subcaptions, normalise_space
from scifig_tasks.benchmarks.mmsci.rules import LETTERS, SUBCAP2FIG_QUESTION, subfigure_option
from scifig_tasks.core.errors import DataError

AUTHORS_FILES = {"mcq": "image_caption_matching_data.json", "captioning": "image_caption_generation_data.json"}
_FIGURE_NAME = re.compile(r"^(?P<uid>.+)_figure_(?P<index>\d+)(?:\.[A-Za-z0-9]+)?$")
_SUBFIGURE = re.compile(r"sub-figure \(([a-z])\)")
LABEL_OPTION = re.compile(r"^\(([a-z])\)$")


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


def verified_image(data: bytes, origin: str, row: int | None, column: str) -> bytes:
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


def to_paper_setting3(item: Mcq, caption: str | None) -> Mcq | None:
    """The paper's setting III from the authors' within-figure variant, or ``None`` when it cannot be done safely."""
    if all(LABEL_OPTION.match(option) for option in item.options):
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


def check_mcq(item: Mcq, origin: str, row: int) -> Mcq:
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
