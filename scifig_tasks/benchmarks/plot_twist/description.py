"""Plot Twist's description (:class:`scifig_tasks.core.benchmark.Benchmark`): its data, tasks, chance rule,
VLMEvalKit datasets and report rows.

The paper's charts are not published, so every run scores scifig's seeded synthetic set (paper App. A) or a file of
the user's; chance is scifig's definition. Manual: tasks/README.md, 'Chance'.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scifig_tasks.benchmarks.plot_twist import rules as plot_twist
from scifig_tasks.benchmarks.plot_twist.source import CACHE, PLOT_TWIST, PLOT_TWIST_CHARTQA
from scifig_tasks.core.benchmark import Benchmark, PublishedSet, Report, SummaryRow, Vlmeval, VlmevalDataset

# (words of the paper's Table 6 question template, lowest, highest); first match wins.
_RANGES: tuple[tuple[str, int, int], ...] = (
    ("How many bars", 1, 5),
    ("How many categories", 1, 10),
    ("among the set of categories", 1, 100),
)
_DEFAULT_RANGE = (-200, 200)


def chance_answer(prompt: str, rng: random.Random) -> str:
    """The answer sentence with a uniform integer from the range of the question's kind."""
    low, high = next(((lo, hi) for key, lo, hi in _RANGES if key in prompt), _DEFAULT_RANGE)
    return plot_twist.ANSWER_SENTENCE.replace("ANS", str(rng.randint(low, high)))


def base_charts(row: Mapping[str, Any]) -> bool:
    """The rows of the base charts (no robustness variant)."""
    return (row.get("variant") or plot_twist.BASE) == plot_twist.BASE


_OLD_NAMES = {
    "plot_twist": "SciFig_PlotTwist",
    "plot_twist_robustness": "SciFig_PlotTwist_Robustness",
    "plot_twist_open": "SciFig_PlotTwist_Open",
    "plot_twist_open_pali": "SciFig_PlotTwist_Open_PaLI",
    "plot_twist_robustness_open": "SciFig_PlotTwist_Robustness_Open",
    "plot_twist_robustness_open_pali": "SciFig_PlotTwist_Robustness_Open_PaLI",
}
"""VLMEvalKit datasets (the base charts, or every robustness variant with them; the same rows under the paper's
open-model protocols: App. B.3 prompt, every output reformatted) -> their names in earlier releases."""
_VLMEVAL = f"{__package__}.vlmeval"
"""This benchmark's VLMEvalKit dataset classes (its TSV layouts: ``tsv_layout``, read without VLMEvalKit)."""

BENCHMARK = Benchmark(
    name="plot_twist",
    title="Plot Twist",
    version="2.1",
    settings=(CACHE,),
    task_folder=Path(__file__).resolve().parent / "tasks",
    sources={"plot_twist": PLOT_TWIST, "plot_twist_chartqa": PLOT_TWIST_CHARTQA},
    document_id=("q_id", "variant"),
    chance={"plot_twist": chance_answer, "plot_twist_chartqa": chance_answer},
    report=Report(
        summary=(
            SummaryRow(
                "Plot Twist",
                (("plot_twist",), ("plot_twist_scatter", "plot_twist_bar", "plot_twist_pie")),
                coverage=("plot_twist", "plot_twist_scatter", "plot_twist_bar", "plot_twist_pie"),
            ),
            SummaryRow("Plot Twist robustness", (("plot_twist_robustness",),)),
            SummaryRow("Plot Twist ChartQA", (("plot_twist_chartqa",),)),
        ),
        section=f"{__package__}.report",
        published=PublishedSet(
            "Plot Twist",
            "plot_twist",
            full="the paper's own synthetic charts",
            unpublished="the paper's charts are not public; every run scores charts generated locally by scifig's "
            "synthetic generator",
        ),
        sample_tasks={
            "plot_twist": ("chart_type", "plot_twist_{}"),
            "plot_twist_robustness": ("variant", "plot_twist_robustness_{}"),
        },
        not_pooled=("plot_twist_robustness",),
    ),
    vlmeval=Vlmeval(
        datasets=tuple(
            VlmevalDataset(
                name,
                "plot_twist",
                "test",
                keep=None if "robustness" in name else base_charts,
                shown=name in ("plot_twist", "plot_twist_robustness"),
                old_names=(old,),
            )
            for name, old in _OLD_NAMES.items()
        ),
        classes=(f"{_VLMEVAL}:SciFigPlotTwist", f"{_VLMEVAL}:SciFigPlotTwistRobustness"),
        tsv_formats={"plot_twist": f"{__package__}.tsv_layout:TSV_LAYOUT"},
    ),
)
