"""CharXiv's description (:class:`scifig_tasks.core.benchmark.Benchmark`): its data, tasks, chance rule and report rows.

Named ``charxiv_full``: lmms-eval ships tasks named ``charxiv``, ``charxiv_reasoning``, ``charxiv_val_descriptive``
and ``charxiv_val_reasoning``, which a benchmark named ``charxiv`` would own (a task belongs to the benchmark its name
starts with). ``charxiv_full`` asks every question of the validation set: each chart's four descriptive questions
and its reasoning question (tasks/README.md, 'How this differs from lmms-eval's charxiv').

Chance: a uniform draw from the closed answer space a question's instruction names (Yes/No/Not Applicable; an
"n by m" layout up to 4 by 4; a count from 1 to 10), else "Not Applicable" (a title, label or value cannot be drawn).

VLMEvalKit datasets: every task and group, by its name, served from the YAMLs' hooks.
"""

from __future__ import annotations

import random
from pathlib import Path

from scifig_tasks.benchmarks.charxiv.source import CHARXIV_DESCRIPTIVE, CHARXIV_REASONING
from scifig_tasks.core.benchmark import Benchmark, PublishedSet, Report, SummaryRow

DESCRIPTIVE_QUESTIONS = 4000
REASONING_QUESTIONS = 1000
"""The validation set: 1,000 charts, four descriptive questions and one reasoning question each."""


def chance_answer(prompt: str, rng: random.Random) -> str:
    """A uniform answer from the closed answer space the instruction names (see the module docstring)."""
    lowered = prompt.lower()
    if '"yes" if' in lowered:
        return rng.choice(("Yes", "No", "Not Applicable"))
    if '"n by m"' in lowered:
        return f"{rng.randint(1, 4)} by {rng.randint(1, 4)}"
    if "how many" in lowered or "number of" in lowered:
        return str(rng.randint(1, 10))
    return "Not Applicable"


BENCHMARK = Benchmark(
    name="charxiv_full",
    title="CharXiv",
    version="1.0",
    task_folder=Path(__file__).resolve().parent / "tasks",
    sources={"charxiv_descriptive": CHARXIV_DESCRIPTIVE, "charxiv_reasoning": CHARXIV_REASONING},
    document_id=("query_id",),
    chance={"charxiv_descriptive": chance_answer, "charxiv_reasoning": chance_answer},
    report=Report(
        summary=(
            SummaryRow("CharXiv reasoning", (("charxiv_full_reasoning",),), coverage=("charxiv_full_reasoning",)),
            SummaryRow("CharXiv descriptive", (("charxiv_full_descriptive",),), coverage=("charxiv_full_descriptive",)),
            SummaryRow("CharXiv reasoning (paper grading)", (("charxiv_full_reasoning_paper",),)),
            SummaryRow("CharXiv descriptive (paper grading)", (("charxiv_full_descriptive_paper",),)),
        ),
        section=f"{__package__}.report",
        published=PublishedSet(
            "CharXiv validation",
            "charxiv_descriptive",
            {"charxiv_full_descriptive": DESCRIPTIVE_QUESTIONS, "charxiv_full_reasoning": REASONING_QUESTIONS},
            full="the CharXiv validation set (1,000 charts: 4,000 descriptive and 1,000 reasoning questions)",
        ),
    ),
)
