"""How GRAB questions are drawn: property-first sweeps and uniform down-sampling (GRAB paper §3: 250 candidates per
property down-sampled to uniformly distributed answers; property value first for intercepts, gradients, equations).
Manual: docs/curation.md, "How questions are drawn".
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

from curation.grab.curves import Piece
from scifig_tasks.benchmarks.grab.answers import Value

Params = dict[str, Any]
Item = TypeVar("Item")

FIXED_LIMIT = 10
"""The fixed schema of the function, series and transform graphs: x and y limits [-10, 10]."""


@dataclass(frozen=True)
class Sampler:
    """How one question type draws its parameters and computes its ground truth."""

    draw: Callable[[random.Random, int, Any], Params | None]
    value: Callable[[Params], Any]
    targets: Callable[[random.Random, int], list[Any]] | None = None
    value_range: tuple[float, float] | None = None
    slots: Callable[[random.Random, int, int], list[Any]] | None = None


def sweep(values: Iterable[Any], n: int, rng: random.Random, extra: Callable[[random.Random], Any]) -> list[Any]:
    """The deterministic sweep ``values`` (cut to ``n``) followed by random draws from ``extra`` up to ``n``."""
    out = list(values)[:n]
    while len(out) < n:
        out.append(extra(rng))
    return out


def spread_select(
    candidates: Sequence[tuple[float, Item]], n: int, rng: random.Random, slots: Sequence[int] | None = None
) -> list[Item]:
    """``n`` candidates whose values cover the candidates' range uniformly.

    The value range is cut into ``n`` equal-width bins; bins are visited round-robin (in a seeded random order each
    round) and a random unused candidate is taken from each non-empty bin until ``n`` are chosen. With ``slots``
    (the slot ``0..n-1`` of each candidate; every slot must have a candidate), a candidate is eligible only while
    its slot is unused, so each slot is chosen exactly once; the result is in slot order.
    """
    if slots is not None:
        return _spread_slots(candidates, n, rng, slots)
    if len(candidates) < n:
        raise ValueError(f"need {n} candidates, have {len(candidates)}")
    bins = _value_bins([value for value, _ in candidates], n)
    chosen: list[Item] = []
    while len(chosen) < n:
        order = sorted(bins)
        rng.shuffle(order)
        for key in order:
            members = bins[key]
            if not members:
                continue
            index = members.pop(rng.randrange(len(members)))
            chosen.append(candidates[index][1])
            if len(chosen) == n:
                break
    return chosen


def _value_bins(values: Sequence[float], n: int) -> dict[int, list[int]]:
    """Indices of ``values`` in ``n`` equal-width bins over their range (the last bin closed)."""
    low, high = min(values), max(values)
    width = (high - low) / n or 1.0
    bins: dict[int, list[int]] = {}
    for index, value in enumerate(values):
        bins.setdefault(min(int((value - low) / width), n - 1), []).append(index)
    return bins


def _spread_slots(
    candidates: Sequence[tuple[float, Item]], n: int, rng: random.Random, slots: Sequence[int]
) -> list[Item]:
    if len(slots) != len(candidates) or set(slots) != set(range(n)):
        raise ValueError(f"every slot 0..{n - 1} needs a candidate, got slots {sorted(set(slots))}")
    bins = _value_bins([value for value, _ in candidates], n)
    chosen: dict[int, Item] = {}
    while len(chosen) < n:  # always ends: an unused slot's candidates are still in their bins
        order = sorted(bins)
        rng.shuffle(order)
        for key in order:
            bins[key] = [index for index in bins[key] if slots[index] not in chosen]
            if not bins[key]:
                continue
            index = bins[key].pop(rng.randrange(len(bins[key])))
            chosen[slots[index]] = candidates[index][1]
            if len(chosen) == n:
                break
    return [chosen[slot] for slot in range(n)]


def decimal(value: float, places: int = 1) -> float:
    """A data value stored with ``places`` decimals (the stored decimal is the data; statistics use it exactly)."""
    rounded = round(value, places)
    return 0.0 if rounded == 0 else rounded


# ---------------------------------------------------------------------------------------------------- elements


def curve_element(piece: Piece) -> dict[str, Any]:
    return {"type": "curve", **piece.to_params()}


def series_element(xs: Sequence[float], ys: Sequence[float]) -> dict[str, Any]:
    return {"type": "series", "x": list(xs), "y": list(ys)}


def scatter_element(xs: Sequence[float], ys: Sequence[float]) -> dict[str, Any]:
    return {"type": "scatter", "x": list(xs), "y": list(ys)}


def pieces(params: Params) -> list[Piece]:
    """The curves of a figure."""
    return [Piece.from_params(element) for element in params["elements"] if element["type"] == "curve"]


def data(params: Params) -> list[tuple[list[float], list[float]]]:
    """The data series / point sets of a figure."""
    return [(element["x"], element["y"]) for element in params["elements"] if element["type"] != "curve"]


def mean_of(values: Sequence[Value]) -> Value:
    """Mean of per-curve values: exact when every value is exact, else a double."""
    if all(isinstance(value, int | Fraction) for value in values):
        return sum((Fraction(value) for value in values), Fraction(0)) / len(values)
    return sum(float(value) for value in values) / len(values)
