"""GRAB's description (:class:`scifig_tasks.core.benchmark.Benchmark`): its data, tasks, chance rule, published sizes,
VLMEvalKit datasets and report rows.

Published sizes are those of the authors' ``grab.json`` (2,170 questions); chance for the multiple-choice ablation is
20% (GRAB paper §4.7). Manual: tasks/README.md, 'Published sizes and chance'.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.benchmarks.grab.source import GRAB
from scifig_tasks.core.benchmark import Benchmark, PublishedSet, Report, SummaryRow, Vlmeval, VlmevalDataset
from scifig_tasks.core.chance import option_letters

TASK_QUESTIONS: dict[str, int] = {"properties": 660, "function": 710, "series": 490, "transform": 310}
"""Published questions per task, by the task names of the published data."""
QUESTIONS = sum(TASK_QUESTIONS.values())
SUBTASKS = ("grab_properties", "grab_functions", "grab_series", "grab_transforms")
"""The ``grab`` group's tasks, in the published order of :data:`TASK_QUESTIONS`."""

# (substring of the question, lowest, highest): first match wins; the default covers the remaining integer types.
_RANGES: tuple[tuple[str, float, float], ...] = (
    ("correlation coefficient", -1.0, 1.0),
    ("How many points", 5, 30),
    ("How many series", 1, 10),
    ("area bounded", -200, 200),
    ("period", 1, 10),
    ("amplitude", 1, 10),
    ("variance", 0, 50),
    ("interquartile range", 0, 20),
    ("domain length", 1, 20),
    ("range span", 1, 20),
    ("gradient", -5, 5),
)
_DEFAULT_RANGE = (-10.0, 10.0)
_COEFFICIENT = re.compile(r"<([a-e])>")


def chance_answer(prompt: str, rng: random.Random) -> str:
    """A uniform option letter when the prompt lists options, else a number in the precision the question asks."""
    letters = option_letters(prompt)
    if len(letters) >= 2:  # the multiple-choice ablation
        return rng.choice(letters)
    precision = grab.precision_of(prompt)
    low, high = next(((lo, hi) for key, lo, hi in _RANGES if key in prompt), _DEFAULT_RANGE)
    if precision == "1dp":
        return f"{rng.randint(round(low * 10), round(high * 10)) / 10:.1f}"
    if precision == "nearest10":
        return str(10 * rng.randint(round(low / 10), round(high / 10)))
    if precision == "list":
        first, second = sorted(rng.sample(range(int(low), int(high) + 1), 2))
        return f"[{first}, {second}]"
    if precision == "equation":
        template = prompt[prompt.index("y = ") :].split(".")[0]
        return _COEFFICIENT.sub(lambda _: str(rng.randint(-10, 10)), template).replace("+ -", "- ")
    return str(rng.randint(int(low), int(high)))


_VLMEVAL = f"{__package__}.vlmeval"
"""This benchmark's VLMEvalKit dataset classes (its TSV layouts: ``tsv_layout``, read without VLMEvalKit)."""

BENCHMARK = Benchmark(
    name="grab",
    title="GRAB",
    version="2.6",
    task_folder=Path(__file__).resolve().parent / "tasks",
    sources={"grab": GRAB},
    document_id=("pid",),
    chance={"grab": chance_answer},
    report=Report(
        summary=(
            SummaryRow("GRAB", (("grab",),), coverage=("grab",)),
            SummaryRow("GRAB, LLM extraction", (("grab_llm_extract",),)),
            SummaryRow("GRAB properties, multiple choice", (("grab_properties_mc",),)),
        ),
        section=f"{__package__}.report",
        published=PublishedSet(
            "GRAB",
            "grab",
            {"grab": QUESTIONS, **dict(zip(SUBTASKS, TASK_QUESTIONS.values(), strict=True))},
            {"grab": SUBTASKS},
            full=f"the full published GRAB set ({QUESTIONS:,} questions)",
        ),
        sample_tasks={"grab": ("task", dict(zip(TASK_QUESTIONS, SUBTASKS, strict=True)))},
    ),
    vlmeval=Vlmeval(
        datasets=(
            VlmevalDataset("grab", "grab", "GRAB", shown=True, old_names=("SciFig_GRAB",)),
            VlmevalDataset("grab_paper", "grab", "GRAB"),
            VlmevalDataset("grab_llm_extract", "grab", "GRAB", shown=True, old_names=("SciFig_GRAB_LLMExtract",)),
        ),
        classes=(f"{_VLMEVAL}:SciFigGRAB",),
        tsv_formats={"grab": f"{__package__}.tsv_layout:TSV_LAYOUT"},
    ),
)
