"""Plot Twist's data (no published copy; split ``test``), its columns and checks.

Plot Twist paper App. A: the seeded synthetic set is built once into a cache, in two parts (base charts, and base
charts with the robustness variants). Manual: tasks/README.md, 'Data: columns and the cached synthetic set'.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scifig_tasks.benchmarks.plot_twist import rules as plot_twist
from scifig_tasks.core.resources import installed_entry_point
from scifig_tasks.core.schema import BenchmarkSource, Column, expect_answer, expect_str
from scifig_tasks.core.settings import Setting, path

if TYPE_CHECKING:
    import datasets


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


_BASE_READERS = re.compile(r"plot_twist(_open(_pali)?)?(_(scatter|bar|pie))?")
"""The tasks (and VLMEvalKit datasets) that read only the base charts: ``plot_twist``, ``plot_twist_open``,
``plot_twist_open_pali`` and their ``_scatter`` / ``_bar`` / ``_pie`` tasks."""

_VARIANTS_READ: list[bool] = []
"""Whether this process has read the default set with its robustness variants (one entry once it has)."""


def reads_variants(reader: str | None) -> bool:
    """Whether the task or VLMEvalKit dataset ``reader`` reads the robustness variants: every reader but those of the
    base charts (:data:`_BASE_READERS`); ``None`` (a caller that names no task) reads everything."""
    return reader is None or _BASE_READERS.fullmatch(reader) is None


def _plot_twist_default(reader: str | None = None) -> Path:
    """The default set's part that ``reader`` reads (base charts, or with the variants: tasks/README.md), built once."""
    build: Callable[..., Path] = installed_entry_point("scifig.builders", "plot_twist_default_data")
    if reads_variants(reader) or _VARIANTS_READ:
        _VARIANTS_READ[:] = [True]
        return build()  # curation.plot_twist.default.ensure_default_data
    return build(base_only=True)


CACHE: Setting[Path] = Setting(
    "SCIFIG_PLOT_TWIST_CACHE",
    path,
    Path("~/.cache/scifig/plot_twist").expanduser(),
    "folder of the built Plot Twist set",
    "a path",
    "data",
    shown_default="~/.cache/scifig/plot_twist",
)
"""Where the default Plot Twist set is built once and read from (no published copy)."""

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


def plot_twist_features() -> datasets.Features:
    import datasets

    return datasets.Features(
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
