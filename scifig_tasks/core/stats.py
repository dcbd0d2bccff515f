"""Accuracy aggregation shared by every benchmark: counts, micro accuracy and 95% Wilson score intervals.

GRAB reports accuracy overall (micro over questions), per task, per category, per complexity level with 95% Wilson
intervals (paper Fig. 6) and per precision; the same count-based tallies merge exactly across subtasks, so a group's
breakdown is recomputed from counts, never averaged from rates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

Z_95 = 1.959963984540054


def wilson_interval(correct: int, total: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; ``(0.0, 1.0)`` when there are no trials."""
    if total == 0:
        return (0.0, 1.0)
    p = correct / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def cell(correct: int, total: int) -> dict[str, Any]:
    """One table cell: counts, accuracy (fraction) and its 95% Wilson interval (4 decimals)."""
    low, high = wilson_interval(correct, total)
    accuracy = round(correct / total, 4) if total else None
    return {"n": total, "correct": correct, "accuracy": accuracy, "ci95": [round(low, 4), round(high, 4)]}


class Tally:
    """Counts correct/total per (dimension, key) plus flag counters; merges exactly."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, list[int]]] = {}
        self.flags: dict[str, dict[str, int]] = {}

    def add(self, correct: bool, keys: Mapping[str, Any], flags: Mapping[str, str] | None = None) -> None:
        for dimension, key in {"overall": "all", **keys}.items():
            slot = self.counts.setdefault(dimension, {}).setdefault(str(key), [0, 0])
            slot[0] += int(correct)
            slot[1] += 1
        for name, value in (flags or {}).items():
            bucket = self.flags.setdefault(name, {})
            bucket[value] = bucket.get(value, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready breakdown: ``{dimension: {key: cell}}`` plus ``flags``; cells keep counts, so it merges again."""
        table: dict[str, Any] = {
            dimension: {key: cell(*slot) for key, slot in sorted(keys.items(), key=_natural)}
            for dimension, keys in self.counts.items()
        }
        table["flags"] = self.flags
        return table

    @classmethod
    def from_dicts(cls, parts: Iterable[Mapping[str, Any]]) -> Tally:
        tally = cls()
        for part in parts:
            for dimension, keys in part.items():
                if dimension == "flags":
                    continue
                for key, value in keys.items():
                    slot = tally.counts.setdefault(dimension, {}).setdefault(key, [0, 0])
                    slot[0] += value["correct"]
                    slot[1] += value["n"]
            for name, values in part["flags"].items():
                bucket = tally.flags.setdefault(name, {})
                for value, count in values.items():
                    bucket[value] = bucket.get(value, 0) + count
        return tally


def _natural(item: tuple[str, Any]) -> tuple[int, Any]:
    key = item[0]
    return (0, int(key)) if key.lstrip("-").isdigit() else (1, key)
