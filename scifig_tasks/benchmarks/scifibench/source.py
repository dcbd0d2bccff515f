"""SciFIBench's data: the published dataset (``jonathan-roberts1/SciFIBench``), its columns and checks.

SciFIBench paper §3.3: the Hub dataset's four ``CS_*`` / ``General_*`` splits; the revision is not pinned (no full
commit hash is known). Manual: tasks/README.md, 'Data: splits, columns and revision'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scifig_tasks.core.schema import UNPINNED, BenchmarkSource, Column, expect_int, expect_str, list_feature

if TYPE_CHECKING:
    import datasets


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


def _scifibench_row(row: Mapping[str, Any], split: str) -> tuple[str, str] | None:
    options, images = row["Options"], row["Images"]
    last = chr(ord("A") + len(options) - 1)
    if ord(row["Answer"]) > ord(last):
        return "Answer", f"{row['Answer']!r} is not one of the row's {len(options)} options (A to {last})"
    if split.endswith("Caption2Figure") and len(images) != len(options):
        counts = f"{len(images)} images for {len(options)} options"
        return "Images", f"{counts} (a Caption→Figure question has one image per option)"
    if split.endswith("Figure2Caption") and len(images) != 1:
        return "Images", f"a Figure→Caption question has one image, got {len(images)}"
    return None


SCIFIBENCH = BenchmarkSource(
    name="SciFIBench",
    hub_path="jonathan-roberts1/SciFIBench",
    splits=("CS_Figure2Caption", "CS_Caption2Figure", "General_Figure2Caption", "General_Caption2Figure"),
    env_var="SCIFIG_SCIFIBENCH_DATA",
    build_command="scifig curate scifibench --pairs PAIRS --out DIR",
    columns=(
        Column("ID", expect_int(low=0)),
        Column("Question", expect_str()),
        Column("Options", _labelled_options),
        Column("Answer", _letter),
        Column("Category", expect_str()),
        Column("Images", image_list=True),
    ),
    row_check=_scifibench_row,
    key=("ID",),
    split_aliases={"CS_Figure2Caption": ("Figure2Caption",), "CS_Caption2Figure": ("Caption2Figure",)},
    revision=UNPINNED,
    revision_var="SCIFIG_SCIFIBENCH_REVISION",
)


def scifibench_features() -> datasets.Features:
    import datasets

    return datasets.Features(
        {
            "ID": datasets.Value("int64"),
            "Question": datasets.Value("string"),
            "Options": list_feature(datasets.Value("string")),
            "Answer": datasets.Value("string"),
            "Category": datasets.Value("string"),
            "Images": list_feature(datasets.Image()),
        }
    )


"""The published SciFIBench features; locally built sets write exactly these first (the builder adds metadata
columns after them)."""
