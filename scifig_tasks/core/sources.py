"""The published datasets each benchmark reads, their local-data env vars and the columns every row must have.

GRAB (``jonathan-roberts1/GRAB``, split ``GRAB``): ``pid``, ``question``, ``decoded_image``, ``image``, ``answer``,
``task``, ``category``, ``complexity``.
SciFIBench (``jonathan-roberts1/SciFIBench``, splits ``CS_Figure2Caption``, ``CS_Caption2Figure``,
``General_Figure2Caption``, ``General_Caption2Figure``; older revisions ``Figure2Caption`` / ``Caption2Figure``):
``ID``, ``Question``, ``Options`` (labelled ``A) `` ... in order), ``Answer`` (a letter), ``Category``, ``Images``
(1 image for Figure→Caption, one per option for Caption→Figure).
Row keys (a repeated key is an error, as is any row repeated in full): GRAB ``pid``; SciFIBench ``ID`` (per split);
MMSci multiple choice ``uid``, ``figure_index``, ``setting``, ``subfigure`` (one question per figure, setting and
sub-figure). An answer letter must name one of the row's options. A GRAB or Plot Twist answer that reads as a number
must be a finite one (:func:`scifig_tasks.core.data.expect_answer`: not ``nan``, ``inf``, ``1e309``).
Plot Twist (no published copy; split ``test``): ``q_id``, ``figure_id``, ``chart_type``, ``question_type``,
``question``, ``answer``, ``x_range``, ``y_range`` (floats > 0), ``image``, optional ``variant`` (absent: ``base``).
By default the seeded synthetic set is built once into a cache (:mod:`curation.plot_twist.default`);
``SCIFIG_PLOT_TWIST_DATA`` overrides it. Its ChartQA subset has no default: ``SCIFIG_PLOT_TWIST_CHARTQA_DATA``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import datasets

from scifig_tasks.core.data import (
    BenchmarkSource,
    Column,
    expect_answer,
    expect_int,
    expect_str,
    registered_default_data,
)
from scifig_tasks.core.grab import rules as grab
from scifig_tasks.core.mmsci import rules as mmsci
from scifig_tasks.core.plot_twist import rules as plot_twist
from scifig_tasks.core.settings import Settings


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
)

LIST = getattr(datasets, "List", None) or datasets.Sequence
"""The features' list type (``datasets`` >= 4 names it ``List``)."""

SCIFIBENCH_FEATURES = datasets.Features(
    {
        "ID": datasets.Value("int64"),
        "Question": datasets.Value("string"),
        "Options": LIST(datasets.Value("string")),
        "Answer": datasets.Value("string"),
        "Category": datasets.Value("string"),
        "Images": LIST(datasets.Image()),
    }
)
"""The published SciFIBench features; locally built sets write exactly these first (the builder adds metadata
columns after them)."""


def _positive_number(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        return f"expected a finite number > 0, got {value!r}"
    return None


def _plot_twist_row(row: Mapping[str, Any], split: str) -> tuple[str, str] | None:
    chart, kind = row["chart_type"], row["question_type"]
    if kind not in plot_twist.QUESTION_TYPES[chart]:
        allowed = ", ".join(plot_twist.QUESTION_TYPES[chart])
        return "question_type", f"{kind!r} is not a {chart} question type (expected one of: {allowed})"
    variant = row.get("variant")
    if variant not in (None, plot_twist.BASE) and chart not in plot_twist.VARIANT_CHART_TYPES[variant]:
        return "variant", f"variant {variant!r} does not apply to {chart} charts"
    return None


_PLOT_TWIST_COLUMNS = (
    Column("q_id", expect_str()),
    Column("figure_id", expect_str()),
    Column("chart_type", expect_str(plot_twist.CHART_TYPES)),
    Column("question_type", expect_str(plot_twist.ALL_QUESTION_TYPES)),
    Column("question", expect_str()),
    Column("answer", expect_answer()),
    Column("x_range", _positive_number),
    Column("y_range", _positive_number),
    Column("image", image=True),
)


def _plot_twist_default() -> Path:
    return registered_default_data("plot_twist")  # curation.plot_twist.default.ensure_default_data


PLOT_TWIST = BenchmarkSource(
    name="Plot Twist",
    hub_path="",
    splits=("test",),
    env_var="SCIFIG_PLOT_TWIST_DATA",
    build_command="scifig curate plot-twist --out DIR",
    columns=_PLOT_TWIST_COLUMNS,
    optional_columns=(Column("variant", expect_str(plot_twist.VARIANTS)),),
    row_check=_plot_twist_row,
    default_data=_plot_twist_default,
)

PLOT_TWIST_CHARTQA = replace(
    PLOT_TWIST,
    name="Plot Twist ChartQA subset",
    env_var="SCIFIG_PLOT_TWIST_CHARTQA_DATA",
    build_command="",
    default_data=None,
)
"""Plot Twist's schema and checks, read from its own folder (no builder, no default data)."""

PLOT_TWIST_FEATURES = datasets.Features(
    {
        "q_id": datasets.Value("string"),
        "figure_id": datasets.Value("string"),
        "chart_type": datasets.Value("string"),
        "question_type": datasets.Value("string"),
        "question": datasets.Value("string"),
        "answer": datasets.Value("string"),
        "x_range": datasets.Value("float64"),
        "y_range": datasets.Value("float64"),
        "image": datasets.Image(),
        "variant": datasets.Value("string"),
    }
)
"""The Plot Twist schema; our builder writes exactly these plus ``metadata`` (the drawn data as JSON)."""


@dataclass(frozen=True)
class _SubdirSource(BenchmarkSource):
    """A source whose local data is the ``subdir`` folder of the directory its env var names."""

    subdir: str = ""

    def local_path(self, given: Settings | Mapping[str, str] | None = None) -> Path | None:
        base = super().local_path(given)
        return None if base is None else base / self.subdir


_MMSCI_UNSET = (
    "is not set, and MMSci has no Hugging Face copy: build the local layout with "
    "`scifig curate mmsci --articles ARTICLES --out DIR` "
    "(from article records) or convert a public copy with `scifig curate mmsci-from-authors` / "
    "`scifig curate mmsci-from-vlmeval` (these give the dev split: run the mmsci_dev / mmsci_captioning_dev "
    "tasks), then `export SCIFIG_MMSCI_DATA=DIR`; DIR holds mcq/<split>.parquet and captioning/<split>.parquet"
)


def _mmsci_options(value: Any) -> str | None:
    if not isinstance(value, list) or len(value) != len(mmsci.LETTERS):
        return f"expected a list of {len(mmsci.LETTERS)} option strings, got {value!r:.120}"
    for index, option in enumerate(value):
        if not isinstance(option, str) or not option.strip():
            return f"option {index} must be a non-empty string, got {option!r:.80}"
    return None


def _mmsci_mcq_row(row: Mapping[str, Any], split: str) -> tuple[str, str] | None:
    if (row["setting"] == "fig2cap") != (not row["subfigure"].strip()):
        return "subfigure", f"must be empty for fig2cap and a sub-figure label otherwise, got {row['subfigure']!r}"
    if row["setting"] == "subcap2fig" and mmsci.subfigure_option(row["subfigure"]) not in row["options"]:
        return "options", f"setting III options must be sub-figure labels including ({row['subfigure']})"
    return None


_MMSCI_FIGURE = (Column("uid", expect_str()), Column("figure_index", expect_int(low=0)))
"""The columns naming a figure: its article and its place there."""
_MMSCI_ARTICLE = (Column("category", expect_str()), Column("subject", expect_str()), Column("image", image=True))

MMSCI_MCQ = _SubdirSource(
    name="MMSci multiple choice",
    hub_path="",
    splits=("test", "dev"),
    env_var="SCIFIG_MMSCI_DATA",
    build_command="scifig curate mmsci --articles ARTICLES --out DIR",
    columns=(
        *_MMSCI_FIGURE,
        Column("setting", expect_str(mmsci.SETTINGS)),
        *_MMSCI_ARTICLE,
        Column("question", expect_str()),
        Column("options", _mmsci_options),
        Column("answer", expect_str(mmsci.LETTERS)),
        Column("subfigure", expect_str(non_empty=False)),
    ),
    row_check=_mmsci_mcq_row,
    key=("uid", "figure_index", "setting", "subfigure"),
    unset_message=_MMSCI_UNSET,
    subdir="mcq",
)

MMSCI_CAPTIONING = replace(
    MMSCI_MCQ,
    name="MMSci captioning",
    columns=(*_MMSCI_FIGURE, *_MMSCI_ARTICLE, Column("caption", expect_str()), Column("abstract", expect_str())),
    row_check=None,
    key=(),
    subdir="captioning",
)
"""MMSci (no published Hub copy; layout of ``SCIFIG_MMSCI_DATA``: ``mcq/`` and ``captioning/`` folders of
``<split>.parquet`` files, splits ``test`` and ``dev``)."""


MMSCI_MCQ_FEATURES = datasets.Features(
    {
        "uid": datasets.Value("string"),
        "figure_index": datasets.Value("int64"),
        "setting": datasets.Value("string"),
        "category": datasets.Value("string"),
        "subject": datasets.Value("string"),
        "image": datasets.Image(),
        "question": datasets.Value("string"),
        "options": LIST(datasets.Value("string")),
        "answer": datasets.Value("string"),
        "subfigure": datasets.Value("string"),
    }
)
MMSCI_CAPTIONING_FEATURES = datasets.Features(
    {
        "uid": datasets.Value("string"),
        "figure_index": datasets.Value("int64"),
        "category": datasets.Value("string"),
        "subject": datasets.Value("string"),
        "image": datasets.Image(),
        "caption": datasets.Value("string"),
        "abstract": datasets.Value("string"),
    }
)
"""The MMSci local layout's parquet features: exactly these columns, in this order, images stored as bytes."""


SOURCES: dict[str, BenchmarkSource] = {
    "grab": GRAB,
    "scifibench": SCIFIBENCH,
    "plot_twist": PLOT_TWIST,
    "plot_twist_chartqa": PLOT_TWIST_CHARTQA,
    "mmsci_mcq": MMSCI_MCQ,
    "mmsci_captioning": MMSCI_CAPTIONING,
}
