"""The plan stage of the GRAB generator: every question's text, answer, task, category, complexity and generating
parameters, drawn from a seed without rendering anything (GRAB paper §3: the published composition of 2,170).
Manual: docs/curation.md, "Composition, complexity and seeds".
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from curation.grab import functions, properties, series, transforms
from curation.grab.affine import Operation
from curation.grab.curves import to_json
from curation.grab.questions import EQUATION_MIX, QUESTION_TYPES, TASK_ORDER, QuestionType, question_text
from curation.grab.render import random_style
from curation.grab.sampling import Params, Sampler, spread_select
from scifig_tasks.benchmarks.grab.answers import format_equation, format_list, format_number, near_tie

GENERATOR_VERSION = "2.0.3"
"""Bump whenever a change alters any generated question, answer or image file for a given seed. 2.0.1: the PNG files
are written by :func:`curation.grab.render.encode_png` (other bytes than matplotlib's ``savefig``, identical
pixels). 2.0.2: that function encodes with libpng through imagecodecs (other bytes again, identical pixels).
2.0.3: rows filtered with numpy (Up or Sub per row) and deflated by zlib-ng through imagecodecs (other bytes again,
identical pixels; ~0.54x the bytes of 2.0.2)."""

PROPERTIES_POOL = 250
"""Candidates per spread-sampled properties type (the paper's 250)."""

LEVEL_POOL_FACTOR, LEVEL_POOL_MIN = 4, 16
"""Candidates per complexity level of a spread-sampled function/series/transform type: max(16, 4 x needed)."""

ATTEMPTS_FACTOR = 40
"""Draw attempts allowed per wanted candidate before the plan fails loudly."""

SAMPLERS: dict[str, Sampler] = {
    **properties.SAMPLERS,
    **functions.SAMPLERS,
    **series.SAMPLERS,
    **transforms.SAMPLERS,
}


@dataclass(frozen=True)
class PlanItem:
    """One planned question: the published columns (but the image) plus its generating parameters."""

    pid: int
    question: str
    answer: str
    task: str
    category: str
    complexity: int
    type_key: str
    precision: str
    params: Params
    value: Any

    def metadata(self, seed: int) -> str:
        """The metadata column: generator, version, seed, question type, exact value and generating parameters."""
        return json.dumps(
            {
                "generator": "scifig curation.grab",
                "version": GENERATOR_VERSION,
                "seed": seed,
                "type": self.type_key,
                "precision": self.precision,
                "value": self.value,
                "params": self.params,
            },
            sort_keys=True,
            separators=(",", ":"),
        )


def derive_seed(*parts: object) -> int:
    """A 64-bit seed from any parts (stable across runs and platforms)."""
    digest = hashlib.sha256("\x00".join(str(part) for part in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def content_key(params: Params) -> str:
    """What makes a graph unique: its figure elements."""
    return json.dumps(params["elements"], sort_keys=True)


def format_answer(value: Any, precision: str) -> str:
    """The answer string of a ground-truth value in the question's precision (formats: benchmarks.grab.answers)."""
    if precision == "list":
        return format_list(value)
    if precision == "equation":
        kind, coefficients = value
        return format_equation(kind, coefficients)
    return format_number(value, precision)  # type: ignore[arg-type]


def value_json(value: Any) -> Any:
    """The exact ground truth as JSON (a ``"p/q"`` string for non-decimal rationals)."""
    if isinstance(value, tuple):
        kind, coefficients = value
        return {"kind": kind, "coefficients": list(coefficients)}
    if isinstance(value, list):
        return list(value)
    if isinstance(value, int | Fraction | float):
        return to_json(value)
    raise TypeError(f"unexpected ground-truth value {value!r}")


def answer_of(type_key: str, precision: str, params: Params) -> tuple[Any, str]:
    """Recompute a question's ground truth and answer from its generating parameters alone (the audit path)."""
    value = SAMPLERS[type_key].value(params)
    return value, format_answer(value, precision)


class PlanError(RuntimeError):
    """A question type could not be drawn (its sampler rejected every attempt)."""


def _acceptable(value: Any, precisions: Iterable[str], value_range: tuple[float, float] | None) -> bool:
    if isinstance(value, list | tuple):
        return True
    if value_range is not None and not value_range[0] <= float(value) <= value_range[1]:
        return False
    return not any(near_tie(value, precision) for precision in precisions)  # type: ignore[arg-type]


def _fit(
    qtype: QuestionType,
    sampler: Sampler,
    rng: random.Random,
    complexity: int,
    target: Any,
    precisions: set[str],
    seen: set[str],
) -> tuple[Params, Any]:
    for _ in range(ATTEMPTS_FACTOR * 5):
        params = sampler.draw(rng, complexity, target)
        if params is None or content_key(params) in seen:
            continue
        value = sampler.value(params)
        if _acceptable(value, precisions, sampler.value_range):
            seen.add(content_key(params))
            return params, value
    raise PlanError(f"{qtype.key}: no acceptable question for target {target!r} after {ATTEMPTS_FACTOR * 5} draws")


def _spread(
    qtype: QuestionType,
    sampler: Sampler,
    rng: random.Random,
    complexity: int,
    n: int,
    pool_size: int,
    precisions: set[str],
    seen: set[str],
) -> list[tuple[Params, Any]]:
    slots = None if sampler.slots is None else sampler.slots(rng, complexity, n)
    pool: dict[str, tuple[float, tuple[Params, Any]]] = {}
    pool_slots: list[int] = []
    for _ in range(pool_size * ATTEMPTS_FACTOR):
        if len(pool) == pool_size:
            break
        slot = len(pool) % n if slots is not None else None
        params = sampler.draw(rng, complexity, None if slot is None else slots[slot])  # type: ignore[index]
        if params is None:
            continue
        key = content_key(params)
        if key in seen or key in pool:
            continue
        value = sampler.value(params)
        if _acceptable(value, precisions, sampler.value_range):
            pool[key] = (float(value), (params, value))
            pool_slots.append(slot if slot is not None else -1)
    if len(pool) < n:
        raise PlanError(f"{qtype.key}: only {len(pool)} acceptable candidates at complexity {complexity}, need {n}")
    chosen = spread_select(list(pool.values()), n, rng, None if slots is None else pool_slots)
    seen.update(content_key(params) for params, _ in chosen)
    return chosen


def _targets(qtype: QuestionType, sampler: Sampler, rng: random.Random) -> list[Any] | None:
    if qtype.key == "properties/equation":
        kinds = [kind for kind, count in EQUATION_MIX for _ in range(count)]
        rng.shuffle(kinds)
        return kinds
    return None if sampler.targets is None else sampler.targets(rng, qtype.count)


def plan_type(qtype: QuestionType, seed: int, seen: set[str]) -> list[tuple[Params, Any, str, int]]:
    """Draw every question of one type: ``(params, value, precision, complexity)`` in question order."""
    sampler = SAMPLERS[qtype.key]
    rng = random.Random(derive_seed(seed, qtype.key))
    dealt = [precision for precision, count in qtype.precisions for _ in range(count)]
    rng.shuffle(dealt)
    precisions = set(dealt)
    complexities = [0 if qtype.task == "properties" else index % 10 for index in range(qtype.count)]
    targets = _targets(qtype, sampler, rng)
    drawn: list[tuple[Params, Any] | None] = [None] * qtype.count
    if targets is not None:
        for index, target in enumerate(targets):
            drawn[index] = _fit(qtype, sampler, rng, complexities[index], target, precisions, seen)
    else:
        for level in sorted(set(complexities)):
            indices = [index for index, complexity in enumerate(complexities) if complexity == level]
            pool = (
                PROPERTIES_POOL if qtype.task == "properties" else max(LEVEL_POOL_MIN, LEVEL_POOL_FACTOR * len(indices))
            )
            chosen = _spread(qtype, sampler, rng, level, len(indices), pool, precisions, seen)
            for index, result in zip(indices, chosen, strict=True):
                drawn[index] = result
    out = []
    for index, result in enumerate(drawn):
        assert result is not None
        params, value = result
        if qtype.task == "properties":
            params = {**params, "style": random_style(random.Random(derive_seed(seed, qtype.key, index)))}
        else:
            params = {**params, "style": "fixed"}
        out.append((params, value, dealt[index], complexities[index]))
    return out


def plan_grab(seed: int = 0, types: Sequence[QuestionType] = QUESTION_TYPES) -> list[PlanItem]:
    """The full plan (default: the published 2,170-question composition), cheap: no rendering."""
    seen: set[str] = set()
    items: list[PlanItem] = []
    for qtype in types:
        for params, value, precision, complexity in plan_type(qtype, seed, seen):
            steps = [Operation.from_params(step).text() for step in params.get("operations", [])]
            question = question_text(qtype, precision, steps, params.get("equation"))
            items.append(
                PlanItem(
                    pid=len(items),
                    question=question,
                    answer=format_answer(value, precision),
                    task=qtype.task,
                    category=qtype.category,
                    complexity=complexity,
                    type_key=qtype.key,
                    precision=precision,
                    params=params,
                    value=value_json(value),
                )
            )
    return items


@lru_cache(maxsize=2)
def cached_plan(seed: int = 0) -> tuple[PlanItem, ...]:
    """:func:`plan_grab` of the full composition, computed once per process and seed (treat it as read-only)."""
    return tuple(plan_grab(seed))


def select(plan: Sequence[PlanItem], tasks: Iterable[str] | None = None, limit: int | None = None) -> list[PlanItem]:
    """The questions of ``tasks`` (default all); with ``limit``, a small subset balanced over tasks, question types
    and complexity levels: the ``i``-th pick of a task takes its ``i mod T``-th question type (the first round visits
    evenly spaced types) at complexity ``i mod 10``. The questions are those of the full plan (same pids).
    """
    wanted = list(TASK_ORDER) if tasks is None else [task for task in TASK_ORDER if task in set(tasks)]
    chosen = [item for item in plan if item.task in wanted]
    if limit is None or limit >= len(chosen):
        return chosen
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    present = [task for task in wanted if any(item.task == task for item in chosen)]
    quotas = {
        task: limit // len(present) + (1 if rank < limit % len(present) else 0) for rank, task in enumerate(present)
    }
    picked: list[PlanItem] = []
    for task in present:
        queues: dict[str, list[PlanItem]] = {}
        for item in chosen:
            if item.task == task:
                queues.setdefault(item.type_key, []).append(item)
        # The first round visits evenly spaced question types, so a small subset still spans the categories.
        first_round = min(quotas[task], len(queues))
        spaced = [list(queues)[index * len(queues) // first_round] for index in range(first_round)]
        keys = spaced + [key for key in queues if key not in spaced]
        for pick in range(quotas[task]):
            for offset in range(len(keys)):
                queue = queues[keys[(pick + offset) % len(keys)]]
                if queue:
                    level = pick % 10
                    item = next((candidate for candidate in queue if candidate.complexity == level), queue[0])
                    queue.remove(item)
                    picked.append(item)
                    break
    return sorted(picked, key=lambda item: item.pid)
