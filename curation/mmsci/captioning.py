"""Figure captioning items (MMSci paper section 3.1): one figure per evaluation article whose
reference caption (cleaned title + description) has at least :data:`~curation.mmsci.captions.MIN_CAPTION_WORDS`
words, drawn with ``Random(seed, "captioning", uid)``, as the authors draw one qualifying figure per article.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from curation.mmsci.articles import Article, Figure
from curation.mmsci.captions import MIN_CAPTION_WORDS, word_count


@dataclass(frozen=True)
class CaptionItem:
    article: Article
    figure: Figure

    def row(self) -> dict[str, object]:
        """The schema's captioning columns except ``image``."""
        return {
            "uid": self.article.uid,
            "figure_index": self.figure.index,
            "category": self.article.category,
            "subject": self.article.subject,
            "caption": self.figure.caption,
            "abstract": self.article.abstract,
        }


def captionable(article: Article, min_words: int = MIN_CAPTION_WORDS) -> list[Figure]:
    return [figure for figure in article.figures if word_count(figure.caption) >= min_words]


def caption_items(
    articles: Sequence[Article], seed: int, per_article: int | None = 1, min_words: int = MIN_CAPTION_WORDS
) -> list[CaptionItem]:
    """Captioning items of ``articles`` in (uid, subject) order (``per_article=None``: every qualifying figure)."""
    items = []
    for article in sorted(articles, key=lambda article: article.key):
        figures = captionable(article, min_words)
        if per_article is not None and per_article < len(figures):
            rng = random.Random(f"mmsci:{seed}:captioning:{article.uid}")
            figures = sorted(rng.sample(figures, per_article), key=lambda figure: figure.index)
        items += [CaptionItem(article, figure) for figure in figures]
    return items
