"""The published datasets each benchmark reads, their local-data env vars and the columns every row must have.

GRAB (``jonathan-roberts1/GRAB``, split ``GRAB``): ``pid``, ``question``, ``decoded_image``, ``image``, ``answer``,
``task``, ``category``, ``complexity`` (grab spec, "Published data").
SciFIBench (``jonathan-roberts1/SciFIBench``, splits ``CS_Figure2Caption``, ``CS_Caption2Figure``,
``General_Figure2Caption``, ``General_Caption2Figure``; older revisions ``Figure2Caption`` / ``Caption2Figure``):
``ID``, ``Question``, ``Options`` (labelled ``A) `` ... in order), ``Answer`` (a letter), ``Category``, ``Images``.
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


def _labelled_options(value: Any) -> str | None:
    if not isinstance(value, list) or len(value) < 2 or not all(isinstance(option, str) for option in value):
        return f"expected a list of at least two option strings, got {value!r:.120}"
    for index, option in enumerate(value):
        label = chr(ord("A") + index)
        if not option.lstrip().startswith((f"{label})", f"({label})")):
            return f"option {index} should start with '{label})': {option!r:.80}"
    return None


def _letter(value: Any) -> str | None:
    if not isinstance(value, str) or len(value) != 1 or not "A" <= value <= "Z":
        return f"expected one upper-case letter, got {value!r}"
    return None


SCIFIBENCH = BenchmarkSource(
    name="SciFIBench",
    hub_path="jonathan-roberts1/SciFIBench",
    splits=("CS_Figure2Caption", "CS_Caption2Figure", "General_Figure2Caption", "General_Caption2Figure"),
    env_var="SCIFIG_SCIFIBENCH_DATA",
    columns=(
        Column("ID", expect_int(low=0)),
        Column("Question", expect_str()),
        Column("Options", _labelled_options),
        Column("Answer", _letter),
        Column("Category", expect_str()),
        Column("Images", image_list=True),
    ),
    split_aliases={"CS_Figure2Caption": ("Figure2Caption",), "CS_Caption2Figure": ("Caption2Figure",)},
)

SOURCES: dict[str, BenchmarkSource] = {"grab": GRAB, "scifibench": SCIFIBENCH}
