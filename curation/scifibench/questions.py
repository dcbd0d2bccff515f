"""SciFIBench questions from neighbours (paper §3.3, steps 6 and 8: the 4 nearest filtered neighbours are the
negatives; difficulty is their mean distance), with seeded shuffling and the random-negatives ablation.
Manual: curation/scifibench/README.md, "Steps", **Question formats** and **Seeded shuffling**.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from curation.scifibench.neighbours import exact_distances
from curation.scifibench.similarity import kept_neighbours
from scifig_tasks.benchmarks.scifibench.rules import C2F_QUESTION, F2C_QUESTION, IMAGE_OPTION, option

N_NEGATIVES = 4
LETTERS = "ABCDE"
TASKS = ("Figure2Caption", "Caption2Figure")

Task = Literal["Figure2Caption", "Caption2Figure"]
Variant = Literal["nearest", "random"]


@dataclass(frozen=True)
class Question:
    """One true pair and its negatives (corpus positions, nearest first), its difficulty and category."""

    pair: int
    negatives: tuple[int, ...]
    difficulty: float
    category: str
    variant: Variant = "nearest"


def difficulty(distances: Sequence[float]) -> float:
    """The paper's difficulty: mean distance of the negatives to the true pair (lower = harder)."""
    return float(np.mean(np.asarray(distances, dtype=np.float64)))


def build_questions(
    indices: np.ndarray, distances: np.ndarray, threshold: float, categories: Sequence[str]
) -> tuple[list[Question], int]:
    """A question for every pair with 4 neighbours passing the filter, ordered hardest first (ties by pair), and the
    number of pairs left out for lack of negatives."""
    mask = kept_neighbours(indices, distances, threshold)
    questions, short = [], 0
    for pair in range(len(indices)):
        kept = np.flatnonzero(mask[pair])[:N_NEGATIVES]
        if len(kept) < N_NEGATIVES:
            short += 1
            continue
        negatives = tuple(int(n) for n in indices[pair, kept])
        questions.append(Question(pair, negatives, difficulty(distances[pair, kept]), categories[pair]))
    return hardest_first(questions), short


def hardest_first(questions: Sequence[Question]) -> list[Question]:
    return sorted(questions, key=lambda question: (question.difficulty, question.pair))


def question_rng(seed: int, purpose: str, figure_id: str) -> random.Random:
    """The generator of one question's random choices: a function of the seed, the purpose and the figure id only."""
    digest = hashlib.sha256(f"{seed}\x00{purpose}\x00{figure_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def random_variant(question: Question, vectors: np.ndarray, threshold: float, figure_id: str, seed: int) -> Question:
    """``question`` with 4 uniformly drawn negatives (no near-duplicate of the true pair) and their difficulty."""
    n = len(vectors)
    if n < N_NEGATIVES + 1:
        raise ValueError(f"random negatives need at least {N_NEGATIVES + 1} pairs, got {n}")
    rng = question_rng(seed, "random-negatives", figure_id)
    chosen: list[int] = []
    tried: set[int] = {question.pair}
    while len(chosen) < N_NEGATIVES and len(tried) < n:
        candidates = []
        while len(candidates) < 2 * N_NEGATIVES and len(tried) < n:
            candidate = rng.randrange(n)
            if candidate not in tried:
                tried.add(candidate)
                candidates.append(candidate)
        found = exact_distances(vectors, np.array([question.pair]), np.array([candidates]))[0]
        chosen += [c for c, d in zip(candidates, found, strict=True) if d >= threshold][: N_NEGATIVES - len(chosen)]
    if len(chosen) < N_NEGATIVES:
        raise ValueError(f"pair {question.pair}: fewer than {N_NEGATIVES} pairs pass the similarity filter")
    distances = exact_distances(vectors, np.array([question.pair]), np.array([chosen]))[0]
    return replace(question, negatives=tuple(chosen), difficulty=difficulty(distances), variant="random")


@dataclass(frozen=True)
class Rendered:
    """A question in the published schema's text form; ``images`` and ``option_pairs`` are corpus positions."""

    Question: str
    Options: list[str]
    Answer: str
    images: list[int]
    option_pairs: list[int]


def option_order(question: Question, task: Task, figure_id: str, seed: int) -> list[int]:
    """The 5 pairs of ``question`` in option order (seeded shuffle per task, variant and figure)."""
    order = [question.pair, *question.negatives]
    question_rng(seed, f"options:{task}:{question.variant}", figure_id).shuffle(order)
    return order


def render(question: Question, task: Task, captions: Sequence[str], figure_ids: Sequence[str], seed: int) -> Rendered:
    """The ``Question``, ``Options``, ``Answer`` and images of ``question`` for ``task``."""
    order = option_order(question, task, figure_ids[question.pair], seed)
    answer = LETTERS[order.index(question.pair)]
    if task == "Figure2Caption":
        options = [option(LETTERS[i], captions[pair]) for i, pair in enumerate(order)]
        return Rendered(F2C_QUESTION, options, answer, [question.pair], order)
    if task == "Caption2Figure":
        options = [option(LETTERS[i], IMAGE_OPTION.format(index=i)) for i in range(len(order))]
        return Rendered(C2F_QUESTION.format(caption=captions[question.pair]), options, answer, order, order)
    raise ValueError(f"unknown task {task!r} (expected one of {', '.join(TASKS)})")
