"""``scifig curate mmsci``: the MMSci benchmark from article records, in the local layout of ``SCIFIG_MMSCI_DATA``
(MMSci paper section 3: split per subject, three MCQ settings, captioning, fine-tuning data; seeded per article).
Manual: curation/mmsci/README.md, the layout table and "How the build is organised".
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from curation.mmsci.articles import DEFAULT_PATTERN, Article, read_articles
from curation.mmsci.captioning import CaptionItem, caption_items, captionable
from curation.mmsci.captions import MIN_CAPTION_WORDS
from curation.mmsci.card import write_card
from curation.mmsci.questions import DRAFTERS, Question, build_questions
from curation.mmsci.sft import ABSTRACT_WORDS, write_sft
from curation.mmsci.splits import EVAL_SPLITS, MIN_ARTICLES, RATIO, as_json, predefined_splits, split_articles
from curation.parquet import ParquetRows
from scifig_tasks.benchmarks.mmsci.rules import SETTINGS
from scifig_tasks.benchmarks.mmsci.source import mmsci_captioning_features, mmsci_mcq_features


def eligible(article: Article, seed: int = 0) -> bool:
    """Whether the article yields at least one benchmark item (a captioning figure or a question of any setting)."""
    return bool(captionable(article)) or any(DRAFTERS[setting](article, seed, 1) for setting in SETTINGS)


def write_rows(path: Path, features: Any, rows: Sequence[tuple[dict[str, Any], Path]], desc: str) -> int:
    """Write ``(columns, image file)`` rows to ``path``; the image's bytes are stored."""
    out = ParquetRows(path, features)
    try:
        for columns, image in tqdm(rows, desc=desc, unit="row"):
            out.add({**columns, "image": {"bytes": image.read_bytes(), "path": None}})
    except BaseException:
        out.abort()
        raise
    out.close()
    return out.rows


def _question_rows(questions: dict[str, list[Question]]) -> list[tuple[dict[str, Any], Path]]:
    return [(q.row(), q.figure.image_path) for setting in SETTINGS for q in questions[setting]]


def _caption_rows(items: list[CaptionItem]) -> list[tuple[dict[str, Any], Path]]:
    return [(item.row(), item.figure.image_path) for item in items]


def build_mmsci(
    articles_path: Path,
    out: Path,
    seed: int = 0,
    ratio: float = RATIO,
    min_articles: int = MIN_ARTICLES,
    per_article: int = 1,
    abstract_words: int = ABSTRACT_WORDS,
    sft: bool = True,
    command: str = "",
    pattern: str = DEFAULT_PATTERN,
    split_ids: Path | None = None,
) -> dict[str, Any]:
    """Build the benchmark into ``out``; returns the summary also written to ``out/curation.json``.

    ``split_ids``: a folder with the authors' ``test_split_ids.json`` / ``dev_split_ids.json`` to use instead of
    drawing the splits.
    """
    if per_article < 1:
        raise ValueError(f"--per-article must be >= 1, got {per_article}")
    articles = read_articles(articles_path, pattern)
    by_key = {article.key: article for article in articles}
    if split_ids is not None:
        splits = predefined_splits(articles, split_ids)
    else:
        splits = split_articles(articles, lambda article: eligible(article, seed), seed, ratio, min_articles)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {
        "command": command,
        "input": str(articles_path),
        "settings": {
            "seed": seed,
            "ratio": ratio,
            "min_articles": min_articles,
            "per_article": per_article,
            "abstract_words": abstract_words,
            "min_caption_words": MIN_CAPTION_WORDS,
            "split_ids": str(split_ids) if split_ids is not None else None,
        },
        "articles": {
            "total": len(articles),
            "papers": len({article.uid for article in articles}),
            "figures": sum(len(a.figures) for a in articles),
        },
        "subcaptions": _subcaption_stats(articles),
        "splits": {split: len(splits.of(split)) for split in ("test", "dev", "train")},
        "per_subject": splits.per_subject,
        "mcq": {},
        "captioning": {},
    }
    for split in EVAL_SPLITS:
        members = [by_key[key] for key in splits.of(split)]
        questions = build_questions(members, seed, split, per_article)
        items = caption_items(members, seed, per_article)
        write_rows(
            out / "mcq" / f"{split}.parquet", mmsci_mcq_features(), _question_rows(questions), f"mmsci: mcq/{split}"
        )
        write_rows(
            out / "captioning" / f"{split}.parquet",
            mmsci_captioning_features(),
            _caption_rows(items),
            f"mmsci: captioning/{split}",
        )
        summary["mcq"][split] = {
            setting: {
                "questions": len(questions[setting]),
                "answers": dict(sorted(Counter(q.answer for q in questions[setting]).items())),
                "categories": dict(sorted(Counter(q.article.category for q in questions[setting]).items())),
            }
            for setting in SETTINGS
        }
        summary["captioning"][split] = {
            "items": len(items),
            "categories": dict(sorted(Counter(item.article.category for item in items).items())),
        }
    if sft:
        sft_dir = out / "sft"
        if sft_dir.exists():
            shutil.rmtree(sft_dir)
        summary["sft"] = write_sft(sft_dir, [by_key[key] for key in splits.train], seed, abstract_words)
    (out / "splits.json").write_text(
        json.dumps(as_json(splits, articles), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / "curation.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    write_card(out, summary)
    return summary


def _subcaption_stats(articles: Sequence[Article]) -> dict[str, int]:
    reasons = Counter(figure.subcaptions.reason or "found" for article in articles for figure in article.figures)
    titled = sum(1 for article in articles for figure in article.figures if figure.title.found)
    return {
        "with_subcaptions": reasons["found"],
        "no_markers": reasons["no markers"],
        "skipped": reasons["skipped"],
        "with_titles": titled,
    }
