"""The three MMSci multiple-choice settings, four options A-D (MMSci paper section 3.2: Fig2Cap, SubFig2Cap and the
paper's SubCap2Fig), seeded per article.
Manual: curation/mmsci/README.md, "Rules", the **MCQ** item.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from curation.mmsci.articles import Article, Figure
from scifig_tasks.benchmarks.mmsci.rules import (
    FIG2CAP_QUESTION,
    LETTERS,
    SETTINGS,
    SUBCAP2FIG_QUESTION,
    SUBFIG2CAP_QUESTION,
    subfigure_option,
)

OPTIONS = len(LETTERS)
MIN_TITLED_FIGURES = 4
MIN_SUBCAPTIONS = {"subfig2cap": 2, "subcap2fig": 4}


@dataclass(frozen=True)
class Choice:
    """An option before letters are assigned: its text and where it comes from (figure index, sub-figure label)."""

    text: str
    figure_index: int
    label: str = ""


@dataclass(frozen=True)
class Draft:
    """A question before its answer letter is placed: the answer first, then the 3 distractors."""

    setting: str
    article: Article
    figure: Figure
    subfigure: str
    question: str
    answer: Choice
    distractors: tuple[Choice, ...]


@dataclass(frozen=True)
class Question:
    setting: str
    article: Article
    figure: Figure
    subfigure: str
    question: str
    options: tuple[str, ...]
    answer: str  # letter
    sources: tuple[Choice, ...]  # the choice behind each option, in A-D order

    def row(self) -> dict[str, object]:
        """The schema's MCQ columns except ``image``."""
        return {
            "uid": self.article.uid,
            "figure_index": self.figure.index,
            "setting": self.setting,
            "category": self.article.category,
            "subject": self.article.subject,
            "question": self.question,
            "options": list(self.options),
            "answer": self.answer,
            "subfigure": self.subfigure,
        }


def _rng(seed: int, *parts: object) -> random.Random:
    return random.Random(":".join(["mmsci", str(seed), *map(str, parts)]))


def _distinct(choices: Sequence[Choice]) -> list[Choice]:
    seen: set[str] = set()
    kept = []
    for choice in choices:
        if choice.text not in seen:
            seen.add(choice.text)
            kept.append(choice)
    return kept


def _pick(figures: list[Figure], rng: random.Random, per_article: int | None) -> list[Figure]:
    if per_article is None or per_article >= len(figures):
        return figures
    return sorted(rng.sample(figures, per_article), key=lambda figure: figure.index)


def fig2cap_drafts(article: Article, seed: int, per_article: int | None = 1) -> list[Draft]:
    """Setting I questions of ``article`` (``per_article`` figures, ``None`` = every titled figure)."""
    titles = _distinct([Choice(f.title.text, f.index) for f in article.figures if f.title.found])
    if len(titles) < MIN_TITLED_FIGURES:
        return []
    rng = _rng(seed, "fig2cap", article.uid)
    figures = {figure.index: figure for figure in article.figures}
    drafts = []
    for figure in _pick([figures[choice.figure_index] for choice in titles], rng, per_article):
        answer = Choice(figure.title.text, figure.index)
        others = [choice for choice in titles if choice.text != answer.text]
        distractors = tuple(rng.sample(others, OPTIONS - 1))
        drafts.append(Draft("fig2cap", article, figure, "", FIG2CAP_QUESTION, answer, distractors))
    return drafts


def _subcaption_choices(figure: Figure) -> list[Choice]:
    return [Choice(text, figure.index, label) for label, text in figure.subcaptions.by_label.items()]


def subfig2cap_drafts(article: Article, seed: int, per_article: int | None = 1) -> list[Draft]:
    """Setting II questions of ``article`` (one sub-figure per chosen figure)."""
    pool = [choice for figure in article.figures for choice in _subcaption_choices(figure)]
    rng = _rng(seed, "subfig2cap", article.uid)
    candidates = [f for f in article.figures if len(f.subcaptions.by_label) >= MIN_SUBCAPTIONS["subfig2cap"]]
    drafts = []
    for figure in _pick(candidates, rng, per_article):
        answer = rng.choice(_subcaption_choices(figure))
        others = _distinct([choice for choice in pool if choice.text != answer.text])
        if len(others) < OPTIONS - 1:
            continue
        distractors = tuple(rng.sample(others, OPTIONS - 1))
        question = SUBFIG2CAP_QUESTION.format(label=answer.label)
        drafts.append(Draft("subfig2cap", article, figure, answer.label, question, answer, distractors))
    return drafts


def subcap2fig_drafts(article: Article, seed: int, per_article: int | None = 1) -> list[Draft]:
    """Setting III questions of ``article``: a sub-caption, 4 sub-figure labels of the same figure."""
    rng = _rng(seed, "subcap2fig", article.uid)
    candidates = []
    for figure in article.figures:
        choices = _subcaption_choices(figure)
        texts = [choice.text for choice in choices]
        unique = [choice for choice in choices if texts.count(choice.text) == 1]
        if len(choices) >= MIN_SUBCAPTIONS["subcap2fig"] and unique:
            candidates.append(figure)
    drafts = []
    for figure in _pick(candidates, rng, per_article):
        choices = _subcaption_choices(figure)
        texts = [choice.text for choice in choices]
        answer = rng.choice([choice for choice in choices if texts.count(choice.text) == 1])
        others = [Choice(subfigure_option(c.label), figure.index, c.label) for c in choices if c.label != answer.label]
        distractors = tuple(rng.sample(others, OPTIONS - 1))
        question = SUBCAP2FIG_QUESTION.format(subcaption=answer.text)
        shown = Choice(subfigure_option(answer.label), figure.index, answer.label)
        drafts.append(Draft("subcap2fig", article, figure, answer.label, question, shown, distractors))
    return drafts


DRAFTERS = {"fig2cap": fig2cap_drafts, "subfig2cap": subfig2cap_drafts, "subcap2fig": subcap2fig_drafts}
assert tuple(DRAFTERS) == SETTINGS


def balanced_letters(count: int, rng: random.Random) -> list[str]:
    """``count`` answer letters, each letter ``count // 4`` or one more times, in a seeded random order."""
    letters = [LETTERS[position % OPTIONS] for position in range(count)]
    rng.shuffle(letters)
    return letters


def place(drafts: Sequence[Draft], seed: int, split: str) -> list[Question]:
    """Questions with the answers at balanced, seeded letters (``drafts`` of one setting, in a fixed order)."""
    settings = {draft.setting for draft in drafts}
    if len(settings) > 1:
        raise ValueError(f"place() takes drafts of one setting, got {sorted(settings)}")
    if not drafts:
        return []
    letters = balanced_letters(len(drafts), _rng(seed, "letters", split, drafts[0].setting))
    questions = []
    for draft, letter in zip(drafts, letters, strict=True):
        others = list(draft.distractors)
        _rng(seed, "order", split, draft.setting, draft.article.uid, draft.figure.index, draft.subfigure).shuffle(
            others
        )
        sources = others[:]
        sources.insert(LETTERS.index(letter), draft.answer)
        questions.append(
            Question(
                draft.setting,
                draft.article,
                draft.figure,
                draft.subfigure,
                draft.question,
                tuple(choice.text for choice in sources),
                letter,
                tuple(sources),
            )
        )
    return questions


def build_questions(
    articles: Sequence[Article], seed: int, split: str, per_article: int | None = 1
) -> dict[str, list[Question]]:
    """Questions per setting for ``articles`` (sorted by (uid, subject) first, so the input order does not matter)."""
    ordered = sorted(articles, key=lambda article: article.key)
    return {
        setting: place([d for a in ordered for d in DRAFTERS[setting](a, seed, per_article)], seed, split)
        for setting in SETTINGS
    }
