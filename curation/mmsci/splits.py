"""Article splits (MMSci paper section 3: test and dev are 1% of each subject's articles, at least 5; the rest is
train), disjoint by paper across subjects.
Manual: curation/mmsci/README.md, "Rules", the **Splits** item.
"""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from curation.mmsci.articles import Article
from scifig_tasks.core.errors import DataError

RATIO = 0.01
MIN_ARTICLES = 5
EVAL_SPLITS = ("test", "dev")
SPLITS = ("test", "dev", "train")

Key = tuple[str, str]  # (uid, subject)


@dataclass(frozen=True)
class Splits:
    """Record keys per split and, per subject, how many records each split asked for and got."""

    test: tuple[Key, ...]
    dev: tuple[Key, ...]
    train: tuple[Key, ...]
    per_subject: dict[str, dict[str, int]] = field(default_factory=dict)

    def of(self, split: str) -> tuple[Key, ...]:
        return {"test": self.test, "dev": self.dev, "train": self.train}[split]


def split_size(articles: int, ratio: float = RATIO, min_articles: int = MIN_ARTICLES) -> int:
    """Articles per evaluation split for a subject with ``articles`` articles."""
    return max(min_articles, math.floor(ratio * articles))


def _by_subject(articles: Sequence[Article]) -> dict[str, list[Article]]:
    grouped: dict[str, list[Article]] = defaultdict(list)
    for article in articles:
        grouped[article.subject].append(article)
    return {subject: sorted(grouped[subject], key=lambda a: a.uid) for subject in sorted(grouped)}


def _finish(articles: Sequence[Article], chosen: dict[str, list[Key]], requested: Mapping[str, int]) -> Splits:
    held = {key[0] for split in EVAL_SPLITS for key in chosen[split]}
    train = sorted(article.key for article in articles if article.uid not in held)
    per_subject = {}
    for subject, members in _by_subject(articles).items():
        counts = {split: sum(1 for key in chosen[split] if key[1] == subject) for split in EVAL_SPLITS}
        per_subject[subject] = {
            "articles": len(members),
            "requested": requested.get(subject, 0),
            **counts,
            "train": sum(1 for article in members if article.uid not in held),
        }
    return Splits(tuple(sorted(chosen["test"])), tuple(sorted(chosen["dev"])), tuple(train), per_subject)


def split_articles(
    articles: Sequence[Article],
    eligible: Callable[[Article], bool],
    seed: int,
    ratio: float = RATIO,
    min_articles: int = MIN_ARTICLES,
) -> Splits:
    if not 0 < ratio < 0.5 or min_articles < 0:
        raise ValueError(f"need 0 < ratio < 0.5 and min_articles >= 0, got {ratio} and {min_articles}")
    grouped = _by_subject(articles)
    sizes = {subject: split_size(len(members), ratio, min_articles) for subject, members in grouped.items()}
    pools = {}
    for subject, members in grouped.items():
        pool = [article.uid for article in members if eligible(article)]
        random.Random(f"mmsci:{seed}:split:{subject}").shuffle(pool)
        pools[subject] = pool
    chosen: dict[str, list[Key]] = {"test": [], "dev": []}
    for subject, pool in pools.items():
        chosen["test"] += [(uid, subject) for uid in pool[: sizes[subject]]]
    in_test = {uid for uid, _ in chosen["test"]}
    for subject, pool in pools.items():
        rest = [uid for uid in pool[sizes[subject] :] if uid not in in_test]
        chosen["dev"] += [(uid, subject) for uid in rest[: sizes[subject]]]
    return _finish(articles, chosen, sizes)


def read_split_ids(path: Path) -> set[Key]:
    """``{category: {subject: [uid, ...]}}`` (the authors' ``*_split_ids.json``) as ``(uid, subject)`` keys."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(str(path), None, None, f"cannot be read as JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise DataError(str(path), None, None, "expected {category: {subject: [uid, ...]}}")
    keys = set()
    for category, subjects in data.items():
        if not isinstance(subjects, dict):
            raise DataError(str(path), None, category, "expected {subject: [uid, ...]}")
        for subject, uids in subjects.items():
            if not isinstance(uids, list) or not all(isinstance(uid, str) for uid in uids):
                raise DataError(str(path), None, f"{category}/{subject}", "expected a list of uids")
            keys |= {(uid, subject) for uid in uids}
    return keys


def predefined_splits(articles: Sequence[Article], folder: Path) -> Splits:
    """Splits from ``folder/test_split_ids.json`` and ``folder/dev_split_ids.json`` (the authors' files)."""
    listed = {split: read_split_ids(folder / f"{split}_split_ids.json") for split in EVAL_SPLITS}
    present = {article.key for article in articles}
    in_test = {uid for uid, _ in listed["test"] & present}
    chosen = {
        "test": sorted(listed["test"] & present),
        "dev": sorted(key for key in listed["dev"] & present if key[0] not in in_test),
    }
    return _finish(articles, chosen, {})


def as_json(splits: Splits, articles: Sequence[Article]) -> dict[str, dict[str, dict[str, list[str]]]]:
    """``{split: {category: {subject: [uid, ...]}}}``, the authors' split-id layout per split."""
    category = {article.key: article.category for article in articles}
    nested: dict[str, dict[str, dict[str, list[str]]]] = {}
    for split in SPLITS:
        tree: dict[str, dict[str, list[str]]] = {}
        for uid, subject in splits.of(split):
            tree.setdefault(category[(uid, subject)], {}).setdefault(subject, []).append(uid)
        nested[split] = tree
    return nested
