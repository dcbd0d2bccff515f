"""GRAB's data: the published dataset (``jonathan-roberts1/GRAB``, split ``GRAB``), its columns and checks.

Pinned revision: :data:`REVISION`, the dataset repository's commit "Added paper title" of 2024-11-07, the newest in
its published history; its data files (``data/GRAB-*.parquet``) are those of the commit "Upload dataset" of
2024-08-20 (``e57fae8``), unchanged since. ``SCIFIG_GRAB_REVISION`` overrides it.

Columns: ``pid`` (the row key), ``question`` (with its precision sentence), ``decoded_image``, ``image``, ``answer``
(a finite number when it reads as one), ``task``, ``category``, ``complexity``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.core.schema import BenchmarkSource, Column, expect_answer, expect_int, expect_str

REVISION = "6ad38024227403d2852e9077ca0e0d662446c5c4"
"""The commit of ``jonathan-roberts1/GRAB`` that GRAB's scores are made from (2024-11-07)."""

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
    revision=REVISION,
    revision_var="SCIFIG_GRAB_REVISION",
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
