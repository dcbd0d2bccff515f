"""Supervised fine-tuning data from the train articles (MMSci paper section 5 and table 9: MCQ, abstract-grounded
captioning and multi-turn sub-figure conversations), in the project's chat format.
Manual: curation/mmsci/README.md, "Rules", the **Fine-tuning** item.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image as PILImage
from tqdm.auto import tqdm

from curation.mmsci.articles import Article, Figure
from curation.mmsci.captioning import caption_items
from curation.mmsci.questions import Question, build_questions
from scifig_tasks.benchmarks.mmsci.rules import ABSTRACT_WORD_BUDGET, caption_prompt, mcq_prompt

IMAGE_PLACEHOLDER = "<image>"
SUBFIGURE_TEMPLATES = (
    "Would you please describe the information in sub-figure ({label})?",
    "Could you explain what is shown in sub-figure ({label})?",
    "What does sub-figure ({label}) show?",
    "Describe sub-figure ({label}) of this figure.",
    "What is presented in sub-figure ({label})?",
    "Please summarise the content of sub-figure ({label}).",
)
ABSTRACT_WORDS = ABSTRACT_WORD_BUDGET
SOURCES = ("mmsci_mcq", "mmsci_caption", "mmsci_subfigure")


def image_name(article: Article, figure: Figure) -> str:
    return f"images/{article.uid}_figure_{figure.index}.png"


def _user(content: str) -> dict[str, str]:
    return {"role": "user", "content": content}


def _assistant(content: str) -> dict[str, str]:
    return {"role": "assistant", "content": content}


def mcq_record(question: Question) -> dict[str, Any]:
    return {
        "id": f"mmsci_mcq-{question.article.uid}-{question.figure.index}-{question.setting}",
        "source": "mmsci_mcq",
        "images": [image_name(question.article, question.figure)],
        "messages": [
            _user(f"{IMAGE_PLACEHOLDER}\n{mcq_prompt(question.question, question.options)}"),
            _assistant(question.answer),
        ],
    }


def caption_record(article: Article, figure: Figure, abstract_words: int = ABSTRACT_WORDS) -> dict[str, Any]:
    prompt = caption_prompt(article.abstract, abstract_words)
    return {
        "id": f"mmsci_caption-{article.uid}-{figure.index}",
        "source": "mmsci_caption",
        "images": [image_name(article, figure)],
        "messages": [_user(f"{IMAGE_PLACEHOLDER}\n{prompt}"), _assistant(figure.caption)],
    }


def subfigure_record(article: Article, figure: Figure, seed: int) -> dict[str, Any] | None:
    labels = list(figure.subcaptions.by_label)
    if len(labels) < 2:
        return None
    rng = random.Random(f"mmsci:{seed}:conversation:{article.uid}:{figure.index}")
    rng.shuffle(labels)
    messages = []
    for turn, label in enumerate(labels):
        ask = rng.choice(SUBFIGURE_TEMPLATES).format(label=label)
        messages.append(_user(f"{IMAGE_PLACEHOLDER}\n{ask}" if turn == 0 else ask))
        messages.append(_assistant(figure.subcaptions.by_label[label]))
    return {
        "id": f"mmsci_subfigure-{article.uid}-{figure.index}",
        "source": "mmsci_subfigure",
        "images": [image_name(article, figure)],
        "messages": messages,
    }


def unique_papers(articles: Sequence[Article]) -> list[Article]:
    """One record per paper (uid): the first in (uid, subject) order, so a paper filed under two subjects is trained
    on once."""
    kept: dict[str, Article] = {}
    for article in sorted(articles, key=lambda article: article.key):
        kept.setdefault(article.uid, article)
    return list(kept.values())


def sft_records(articles: Sequence[Article], seed: int, abstract_words: int = ABSTRACT_WORDS) -> list[dict[str, Any]]:
    """All records of the train ``articles`` (one per paper): MCQ (per setting), captioning, then conversations, each
    in uid order."""
    articles = unique_papers(articles)
    records = []
    for questions in build_questions(articles, seed, "train", per_article=None).values():
        records += [mcq_record(question) for question in questions]
    for item in caption_items(articles, seed, per_article=None):
        records.append(caption_record(item.article, item.figure, abstract_words))
    for article in articles:
        for figure in article.figures:
            record = subfigure_record(article, figure, seed)
            if record is not None:
                records.append(record)
    return records


def png_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    with PILImage.open(io.BytesIO(data)) as image:
        if image.format == "PNG":
            return data
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()


def write_sft(out: Path, articles: Sequence[Article], seed: int, abstract_words: int = ABSTRACT_WORDS) -> dict:
    """Write ``out/train.jsonl`` and the images it names; returns record counts per source."""
    records = sft_records(articles, seed, abstract_words)
    figures = {image_name(a, f): f for a in articles for f in a.figures}
    (out / "images").mkdir(parents=True, exist_ok=True)
    needed = sorted({name for record in records for name in record["images"]})
    for name in tqdm(needed, desc="mmsci: sft images", unit="image"):
        target = out / name
        if not target.exists():
            target.write_bytes(png_bytes(figures[name].image_path))
    partial = out / "train.jsonl.partial"
    with partial.open("w", encoding="utf-8") as stream:
        for record in records:
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
    partial.replace(out / "train.jsonl")
    counts = {source: 0 for source in SOURCES}
    for record in records:
        counts[record["source"]] += 1
    return {"records": len(records), "images": len(needed), "sources": counts}
