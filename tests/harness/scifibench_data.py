"""Small SciFIBench-schema datasets built in tests: distinct solid-colour images (so a test can tell which image a
request carried, and in which order) and SciCap-style captions."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets
from PIL import Image

FEATURES = datasets.Features(
    {
        "ID": datasets.Value("int64"),
        "Question": datasets.Value("string"),
        "Options": datasets.List(datasets.Value("string")),
        "Answer": datasets.Value("string"),
        "Category": datasets.Value("string"),
        "Images": datasets.List(datasets.Image()),
    }
)
CAPTIONS = [
    "ber vs snr for fft size=2048 using ls , lmmse , lr-lmmse .",
    "a plot of the training loss over epochs for three optimisers .",
    "north-south flow duration curves for the upper basin .",
    "expected lookup cost as a function of load factor .",
    "architecture of the proposed encoder with skip connections .",
]


def colour(question: int, position: int) -> tuple[int, int, int]:
    """A colour unique to (question, image position), recoverable from a decoded request image."""
    return (question % 256, 40 * position + 10, 200)


def png(rgb: tuple[int, int, int], size: tuple[int, int] = (32, 24)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, rgb).save(buffer, format="PNG")
    return buffer.getvalue()


@dataclass(frozen=True)
class Question:
    kind: str  # "f2c" | "c2f"
    answer: str
    category: str = "cs.CV"


def options_for(qid: int) -> list[str]:
    # SciFIBench options keep the label, sometimes with two spaces after it
    return [f"{chr(65 + i)}){'  ' if i % 2 else ' '}{CAPTIONS[(qid + i) % 5]}" for i in range(5)]


def c2f_caption(qid: int) -> str:
    return f"q{qid} caption : {CAPTIONS[qid % 5]}"


def build(questions: Sequence[Question], first_id: int = 0) -> datasets.Dataset:
    rows = []
    for offset, question in enumerate(questions):
        qid = first_id + offset
        if question.kind == "f2c":
            text, images = "Which caption best matches the image?", [png(colour(qid, 0))]
            options = options_for(qid)
        else:
            text = f"Caption: {c2f_caption(qid)} Which image best matches the caption?"
            images = [png(colour(qid, position)) for position in range(5)]
            options = [f"{chr(65 + i)}) image{i}" for i in range(5)]
        rows.append(
            {
                "ID": qid,
                "Question": text,
                "Options": options,
                "Answer": question.answer,
                "Category": question.category,
                "Images": [{"bytes": data, "path": None} for data in images],
            }
        )
    return datasets.Dataset.from_list(rows, features=FEATURES)


def write_splits(splits: dict[str, datasets.Dataset], directory: Path) -> Path:
    """A directory of ``<split>.parquet`` files (the local-data layout with the Hub's split names)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, dataset in splits.items():
        dataset.to_parquet(str(directory / f"{name}.parquet"))
    return directory


SAMPLE_SPLITS = {
    "CS_Figure2Caption": "f2c",
    "CS_Caption2Figure": "c2f",
    "General_Figure2Caption": "f2c",
    "General_Caption2Figure": "c2f",
}
"""The published splits and the kind of question each holds."""


def sample(root: Path) -> dict[str, str]:
    """A small SciFIBench set (two questions per split, answers A and C) under ``root``: the settings that point
    at it."""
    splits = {split: build([Question(kind, "A"), Question(kind, "C")]) for split, kind in SAMPLE_SPLITS.items()}
    return {"SCIFIG_SCIFIBENCH_DATA": str(write_splits(splits, root))}
