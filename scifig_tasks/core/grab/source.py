"""GRAB's data: the published dataset (``jonathan-roberts1/GRAB``, split ``GRAB``), its columns and checks.

Columns: ``pid`` (the row key), ``question`` (with its precision sentence), ``decoded_image``, ``image``, ``answer``
(a finite number when it reads as one), ``task``, ``category``, ``complexity``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scifig_tasks.core.grab import rules as grab
from scifig_tasks.core.schema import BenchmarkSource, Column, expect_answer, expect_int, expect_str

if TYPE_CHECKING:
    import datasets


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
    build_command="scifig curate grab --out DIR",
    columns=(
        Column("pid", expect_int(low=0)),
        Column("question", _grab_question),
        Column("decoded_image", image=True),
        Column("image", expect_str()),
        Column("answer", expect_answer()),
        Column("task", expect_str(grab.TASKS)),
        Column("category", expect_str(grab.CATEGORIES)),
        Column("complexity", expect_int(0, grab.MAX_COMPLEXITY)),
    ),
    key=("pid",),
)


def grab_features() -> datasets.Features:
    import datasets

    return datasets.Features(
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
