"""Paired comparison of two runs on the same questions: which run is better, by how much, and whether it is chance.

Pairing on the same questions and task version, a seeded paired bootstrap for the 95% interval, the exact McNemar test
for significance. Manual: docs/protocols.md, 'Comparing two runs'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

RESAMPLES = 10_000
SEED = 20240501
ALPHA = 0.05
LEVEL = 0.95


@dataclass(frozen=True)
class Paired:
    """Two runs' answers to the same ``n`` questions: accuracies, difference ``B - A`` with its bootstrap interval,
    the discordant counts and the exact McNemar p-value (accuracies and differences are fractions)."""

    n: int
    both: int
    only_a: int
    only_b: int
    neither: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    ci: tuple[float, float]
    p_value: float

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "ci": list(self.ci), "significant": self.significant}


def pair(
    a: Mapping[Any, bool],
    b: Mapping[Any, bool],
    version_a: str | None = None,
    version_b: str | None = None,
    names: tuple[str, str] = ("A", "B"),
) -> tuple[list[bool], list[bool]] | str:
    """Both runs' answers in the same question order, or why the two cannot be compared (one line naming the runs
    ``names``). A version ``None`` is unknown and not held against the other."""
    first, second = names
    if version_a is not None and version_b is not None and version_a != version_b:
        return f"different task versions ({first} {version_a}, {second} {version_b})"
    if not a or not b:
        empty = [name for name, run in zip(names, (a, b), strict=True) if not run]
        return "no per-question records in " + " and ".join(empty)
    if set(a) != set(b):
        shared = len(set(a) & set(b))
        if len(a) != len(b):
            return f"different questions ({len(a)} in {first}, {len(b)} in {second}, {shared} in common)"
        return f"different questions ({len(a)} each, but {len(a) - shared} of {first}'s are not {second}'s)"
    keys = list(a)
    return [bool(a[key]) for key in keys], [bool(b[key]) for key in keys]


def mcnemar_p(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (1.0 when there are none)."""
    from statsmodels.stats.contingency_tables import mcnemar

    if only_a + only_b == 0:
        return 1.0
    return float(mcnemar([[0, only_a], [only_b, 0]], exact=True).pvalue)


def bootstrap_interval(
    a: Sequence[bool], b: Sequence[bool], resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> tuple[float, float]:
    """Percentile interval of ``accuracy(B) - accuracy(A)`` over ``resamples`` paired bootstrap resamples of the
    questions (seeded: the same answers give the same interval)."""
    n = len(a)
    if n == 0 or len(b) != n:
        raise ValueError(f"paired answers needed (got {len(a)} and {len(b)})")
    differences = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    values, counts = np.unique(differences, return_counts=True)
    draws = np.random.default_rng(seed).multinomial(n, counts / n, size=resamples)
    means = draws @ values / n
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def compare(a: Sequence[bool], b: Sequence[bool], resamples: int = RESAMPLES, seed: int = SEED) -> Paired:
    """The paired comparison of two runs' answers to the same questions (``a[i]``, ``b[i]``: question ``i``)."""
    n = len(a)
    both = sum(1 for x, y in zip(a, b, strict=True) if x and y)
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    accuracy_a, accuracy_b = (both + only_a) / n, (both + only_b) / n
    return Paired(
        n=n,
        both=both,
        only_a=only_a,
        only_b=only_b,
        neither=n - both - only_a - only_b,
        accuracy_a=accuracy_a,
        accuracy_b=accuracy_b,
        difference=(only_b - only_a) / n,
        ci=bootstrap_interval(a, b, resamples, seed),
        p_value=mcnemar_p(only_a, only_b),
    )


def points(fraction: float) -> float:
    """A fraction in percentage points (``0.0`` for ``-0.0``, which would print as ``-0.0``)."""
    return 100 * fraction + 0.0


def p_text(p: float) -> str:
    """``p = 0.006`` (three decimals; four where three would round a significant p up to :data:`ALPHA`, 0.0496
    is ``p = 0.0496``), ``p < 0.001`` below that."""
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.4f}" if p < ALPHA <= round(p, 3) else f"p = {p:.3f}"


def verdict(result: Paired, task: str, a: str = "A", b: str = "B") -> str:
    """The plain-words line: ``B is better than A on grab by 4.1 points (95% CI 1.2 to 7.0; McNemar p = 0.006,
    212 questions)`` or ``no significant difference between A and B on grab (...)``."""
    low, high = (points(value) for value in result.ci)
    stats = f"McNemar {p_text(result.p_value)}, {result.n} questions"
    if not result.significant:
        shown = f"{b} - {a} = {points(result.difference):+.1f} points, 95% CI {low:.1f} to {high:.1f}"
        return f"no significant difference between {a} and {b} on {task} ({shown}; {stats})"
    if result.difference > 0:
        winner, loser, by, interval = b, a, points(result.difference), (low, high)
    else:
        winner, loser, by, interval = a, b, points(-result.difference), (points(-result.ci[1]), points(-result.ci[0]))
    return (
        f"{winner} is better than {loser} on {task} by {by:.1f} points "
        f"(95% CI {interval[0]:.1f} to {interval[1]:.1f}; {stats})"
    )
