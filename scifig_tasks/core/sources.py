"""The published datasets each benchmark reads, their local-data env vars and the columns every row must have.

GRAB (``jonathan-roberts1/GRAB``, split ``GRAB``): ``pid``, ``question``, ``decoded_image``, ``image``, ``answer``,
``task``, ``category``, ``complexity`` (grab spec, "Published data").
"""

from __future__ import annotations

from typing import Any

import datasets

from scifig_tasks.core import grab
from scifig_tasks.core.data import BenchmarkSource, Column, expect_int, expect_str


def _grab_question(value: Any) -> str | None:
    problem = expect_str()(value)
    if problem is not None:
        return problem
    try:
        grab.precision_of(value)
    except ValueError as exc:
        return str(exc)
    return None


GRAB = BenchmarkSource(
    name="GRAB",
    hub_path="jonathan-roberts1/GRAB",
    splits=("GRAB",),
    env_var="SCIFIG_GRAB_DATA",
    columns=(
        Column("pid", expect_int(low=0)),
        Column("question", _grab_question),
        Column("decoded_image", image=True),
        Column("image", expect_str()),
        Column("answer", expect_str()),
        Column("task", expect_str(grab.TASKS)),
        Column("category", expect_str(grab.CATEGORIES)),
        Column("complexity", expect_int(0, grab.MAX_COMPLEXITY)),
    ),
)

GRAB_FEATURES = datasets.Features(
    {
        "pid": datasets.Value("int64"),
        "question": datasets.Value("string"),
        "decoded_image": datasets.Image(),
        "image": datasets.Value("string"),
        "answer": datasets.Value("string"),
        "task": datasets.Value("string"),
        "category": datasets.Value("string"),
        "complexity": datasets.Value("int64"),
    }
)
"""The published GRAB features; locally built sets write exactly these (builders may add a metadata column)."""

SOURCES: dict[str, BenchmarkSource] = {"grab": GRAB}
