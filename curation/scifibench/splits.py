"""Split tiers (SciFIBench paper §3.3, step 9), per task, from the questions ordered hardest first: gold candidate
pool (hardest, category-balanced), silver, bronze.
Manual: curation/scifibench/README.md, "Steps", **Category balance**, and "Output", **Verification**.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from curation.scifibench.questions import Question

GOLD_SIZE = 500
POOL_FACTOR = 2.0
SILVER_SIZE = 5000

T = TypeVar("T")


def fair_shares(available: Mapping[str, int], total: int) -> tuple[dict[str, int], int, list[str]]:
    """Water-filling: equal shares of ``total`` places among categories with ``available`` questions each, a full
    category's surplus shared again. Returns the shares, the places left (fewer than the categories still open) and
    those open categories (name order)."""
    quota = dict.fromkeys(available, 0)
    remaining = min(total, sum(available.values()))
    open_ = sorted(name for name, count in available.items() if count > 0)
    while remaining >= len(open_) > 0:
        share = remaining // len(open_)
        for name in open_:
            take = min(share, available[name] - quota[name])
            quota[name] += take
            remaining -= take
        open_ = [name for name in open_ if quota[name] < available[name]]
    return quota, remaining, open_


def hardest_balanced(ordered: Sequence[T], total: int, category: Callable[[T], str]) -> list[T]:
    """The category-balanced ``total`` hardest of ``ordered`` (hardest first), kept in that order. Places that cannot
    be shared equally go, one each, to the open categories whose next question is hardest."""
    quota, remaining, open_ = fair_shares(Counter(category(item) for item in ordered), total)
    seen: Counter[str] = Counter()
    for item in ordered:
        if remaining == 0:
            break
        name = category(item)
        if name in open_ and seen[name] == quota[name]:
            quota[name] += 1
            open_.remove(name)
            remaining -= 1
        seen[name] += 1
    taken: Counter[str] = Counter()
    chosen = []
    for item in ordered:
        name = category(item)
        if taken[name] < quota[name]:
            taken[name] += 1
            chosen.append(item)
    return chosen


@dataclass(frozen=True)
class Tiers:
    """The questions of one task in each tier, hardest first."""

    gold_candidates: list[Question]
    silver: list[Question]
    bronze: list[Question]

    def items(self) -> list[tuple[str, list[Question]]]:
        return [("gold_candidates", self.gold_candidates), ("silver", self.silver), ("bronze", self.bronze)]


def pool_size_for(gold_size: int, pool_factor: float) -> int:
    if gold_size < 1 or pool_factor < 1:
        raise ValueError(f"need gold_size >= 1 and pool_factor >= 1, got {gold_size} and {pool_factor}")
    return round(gold_size * pool_factor)


def split_tiers(ordered: Sequence[Question], pool_size: int, silver_size: int) -> Tiers:
    """Gold candidates (hardest, balanced), silver (next ``silver_size``), bronze (the rest) of ``ordered``."""
    pool = hardest_balanced(ordered, pool_size, lambda question: question.category)
    in_pool = {question.pair for question in pool}
    rest = [question for question in ordered if question.pair not in in_pool]
    return Tiers(pool, rest[:silver_size], rest[silver_size:])
