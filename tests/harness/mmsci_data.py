"""Small MMSci datasets in the local layout of ``SCIFIG_MMSCI_DATA`` (``mcq/<split>.parquet``,
``captioning/<split>.parquet``), built in tests.

Every row's image is one solid colour whose red channel is the row number, so a test's model policy can tell which
row a request carries (:func:`row_of_request`); multiple-choice options carry the row number in their text.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets
from PIL import Image

from scifig_tasks.benchmarks.mmsci import rules as mmsci
from scifig_tasks.benchmarks.mmsci.source import mmsci_captioning_features, mmsci_mcq_features

MCQ_FEATURES = mmsci_mcq_features()
CAPTION_FEATURES = mmsci_captioning_features()


def png(row: int, green: int = 0) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (24, 16), (row % 256, green, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


def row_of_request(body: dict) -> int:
    """The row number encoded in the (first) image of a chat request."""
    for message in body["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "image_url":
                data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                return Image.open(io.BytesIO(data)).convert("RGB").getpixel((0, 0))[0]
    raise AssertionError("request without an image")


@dataclass(frozen=True)
class Mcq:
    setting: str
    answer: str
    category: str = "Physical sciences"
    subject: str = "Materials science"


def option_texts(row: int, setting: str) -> list[str]:
    """Four options whose text names the row (setting III: sub-figure labels of one figure)."""
    if setting == "subcap2fig":
        return [mmsci.subfigure_option(label) for label in "abcd"]
    return [f"Row {row} caption {letter.lower()}: spectra of sample {index}." for index, letter in enumerate("ABCD")]


def mcq_row(row: int, question: Mcq) -> dict:
    options = option_texts(row, question.setting)
    label = "abcd"[mmsci.LETTERS.index(question.answer)] if question.setting != "fig2cap" else ""
    if question.setting == "fig2cap":
        text = mmsci.FIG2CAP_QUESTION
    elif question.setting == "subfig2cap":
        text = mmsci.SUBFIG2CAP_QUESTION.format(label=label)
    else:
        text = mmsci.SUBCAP2FIG_QUESTION.format(subcaption=f"Row {row} sub-caption of panel {label}.")
    return {
        "uid": f"ncomms{1000 + row}",
        "figure_index": row % 3,
        "setting": question.setting,
        "category": question.category,
        "subject": question.subject,
        "image": {"bytes": png(row), "path": None},
        "question": text,
        "options": options,
        "answer": question.answer,
        "subfigure": label,
    }


@dataclass(frozen=True)
class Caption:
    caption: str
    abstract: str = "We report a new material. It is stable."
    category: str = "Physical sciences"
    subject: str = "Materials science"


def caption_row(row: int, item: Caption) -> dict:
    return {
        "uid": f"ncomms{2000 + row}",
        "figure_index": row % 4,
        "category": item.category,
        "subject": item.subject,
        "image": {"bytes": png(row, green=50), "path": None},
        "caption": item.caption,
        "abstract": item.abstract,
    }


def write(
    directory: Path, questions: Sequence[Mcq] = (), captions: Sequence[Caption] = (), split: str = "test"
) -> Path:
    """Write the layout under ``directory`` (returned, the value of ``SCIFIG_MMSCI_DATA``)."""
    if questions:
        (directory / "mcq").mkdir(parents=True, exist_ok=True)
        rows = [mcq_row(row, question) for row, question in enumerate(questions)]
        datasets.Dataset.from_list(rows, features=MCQ_FEATURES).to_parquet(str(directory / "mcq" / f"{split}.parquet"))
    if captions:
        (directory / "captioning").mkdir(parents=True, exist_ok=True)
        rows = [caption_row(row, item) for row, item in enumerate(captions)]
        target = directory / "captioning" / f"{split}.parquet"
        datasets.Dataset.from_list(rows, features=CAPTION_FEATURES).to_parquet(str(target))
    return directory


TINY_VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "a",
    "of",
    "in",
    "on",
    "figure",
    "shows",
    "sample",
    "spectra",
    "cells",
    "scale",
    "bar",
    "and",
    "is",
    "with",
    "plot",
    "device",
    "current",
    "electrodes",
    "pressure",
    "micron",
    "one",
    "two",
    "schematic",
    "measured",
    "under",
]


def tiny_bert(directory: Path) -> Path:
    """A randomly initialised 2-layer BERT and its WordPiece tokenizer saved to ``directory`` (BERTScore tests)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    vocab = {token: index for index, token in enumerate(TINY_VOCAB)}
    tokenizer = BertTokenizer(vocab=vocab, model_max_length=64)
    assert tokenizer.tokenize("the figure shows cells") == ["the", "figure", "shows", "cells"]
    tokenizer.save_pretrained(str(directory))
    config = BertConfig(
        vocab_size=len(TINY_VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
        initializer_range=0.5,  # distinct directions for distinct tokens
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(str(directory))
    return directory


def sample(root: Path) -> dict[str, str]:
    """A small MMSci layout (two questions per setting, one caption) under ``root``: the settings that point at it."""
    questions = [Mcq(setting, answer) for setting in mmsci.SETTINGS for answer in "AD"]
    return {"SCIFIG_MMSCI_DATA": str(write(root, questions, [Caption("The figure shows spectra of the sample.")]))}
