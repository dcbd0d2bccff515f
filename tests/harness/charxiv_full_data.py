"""Small CharXiv data for tests, in the authors' local layout: their real validation files (tests/fixtures/charxiv),
all charts or some, with an 8x8 stand-in JPEG per chart; the data setting pointed at it; the authors' prompt digests."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import datasets
import pytest
from PIL import Image

from scifig_tasks.benchmarks.charxiv.source import CHARXIV_DESCRIPTIVE
from tests.harness.paths import FIXTURES

AUTHORS = FIXTURES / "charxiv"
FILES = ("descriptive", "reasoning", "image_metadata")
SAMPLE = ("0", "2", "14", "17", "61", "62")
"""A few charts: a grid subplot (0), single plots (2, 14), a subplot named in words (62), every answer type but 2
(number in general, integer 17 and decimal 61)."""


def authors_file(name: str) -> dict[str, Any]:
    """One of the authors' validation files (``descriptive``, ``reasoning``, ``image_metadata``), by figure id."""
    return json.loads((AUTHORS / f"{name}_val.json").read_text(encoding="utf-8"))


def jpeg() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "white").save(buffer, format="JPEG")
    return buffer.getvalue()


def write_layout(folder: Path, figures: tuple[str, ...] | None = None) -> Path:
    """The authors' layout in ``folder``: their three ``*_val.json`` files (only ``figures`` when given) and
    ``images/<id>.jpg``."""
    (folder / "images").mkdir(parents=True)
    image = jpeg()
    for name in FILES:
        entries = authors_file(name)
        kept = entries if figures is None else {key: entries[key] for key in figures}
        (folder / f"{name}_val.json").write_text(json.dumps(kept, indent=4, ensure_ascii=False), encoding="utf-8")
    for key in figures or authors_file("descriptive"):
        (folder / "images" / f"{key}.jpg").write_bytes(image)
    return folder


def point_data_at(monkeypatch: pytest.MonkeyPatch, folder: Path, cache: Path) -> None:
    """The sources' data setting (``SCIFIG_CHARXIV_FULL_DATA``) set to ``folder`` and the ``datasets`` cache (Arrow
    copies of parquet files) under ``cache``."""
    monkeypatch.setenv(CHARXIV_DESCRIPTIVE.env_var, str(folder))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(cache))


def authors_prompts() -> dict[str, Any]:
    """tests/fixtures/charxiv/authors_prompts.json: per query id, the digest of the question the authors' code asks
    (:func:`digest`), in their order, and a few questions in full (``examples``)."""
    return json.loads((AUTHORS / "authors_prompts.json").read_text(encoding="utf-8"))


def digest(question: str) -> str:
    """The fixture's digest of a question: the first 16 hex digits of the SHA-256 of its UTF-8 text."""
    return hashlib.sha256(question.encode("utf-8")).hexdigest()[:16]


def differing(questions: dict[str, str], digests: dict[str, str]) -> list[str]:
    """The query ids whose question is not the authors' (a digest differs, or one side lacks the id), and ``order``
    when both hold the same ids in another order."""
    ids = sorted(set(questions) | set(digests), key=lambda key: (len(key), key))
    wrong = [key for key in ids if key not in questions or digests.get(key) != digest(questions[key])]
    return wrong or ([] if list(questions) == list(digests) else ["order"])


def sample(root: Path) -> dict[str, str]:
    """Two real validation charts in the authors' layout under ``root`` (eight descriptive questions, two reasoning
    ones): the setting that points at it."""
    return {CHARXIV_DESCRIPTIVE.env_var: str(write_layout(root, SAMPLE[:2]))}
