"""SciFIBench's description (:class:`scifig_tasks.core.benchmark.Benchmark`): its data, tasks, chance rule, published
sizes, VLMEvalKit datasets and report rows.

Published sizes (the Hub dataset): 500 questions in each of its four splits. Chance: a uniform letter among the
options the prompt lists (``A) ...`` lines): 1 / 5 = 20%.

VLMEvalKit serves each split as one dataset, named as the lmms-eval task of that split
(``scifibench_cs_figure2caption``), under each prompt and protocol (plain, ``_paper``, ``_reasoning``); the
lmms-eval groups expand to them.
"""

from __future__ import annotations

from pathlib import Path

from scifig_tasks.benchmarks.scifibench.contrastive import choice_query
from scifig_tasks.benchmarks.scifibench.source import SCIFIBENCH
from scifig_tasks.core.benchmark import Benchmark, PublishedSet, Report, SummaryRow, Vlmeval, VlmevalDataset
from scifig_tasks.core.chance import option_answer
from scifig_tasks.core.settings import deprecated_protocol

SPLIT_QUESTIONS = 500
"""Questions in each SciFIBench split (CS / General × Figure→Caption / Caption→Figure)."""
SPLIT_TASKS = tuple(f"scifibench_{split.lower()}" for split in SCIFIBENCH.splits)
"""The task of each published split, in the splits' order."""
CS_TASKS = SPLIT_TASKS[:2]

_VARIANTS = {"": "", "_paper": "", "_reasoning": "_Reasoning"}
"""Dataset name suffix -> the suffix its ``SciFig_SciFIBench_<split>`` name had in earlier releases."""
_VLMEVAL = f"{__package__}.vlmeval"
"""This benchmark's VLMEvalKit dataset classes (its TSV layouts: ``tsv_layout``, read without VLMEvalKit)."""


def _dataset(split: str, suffix: str) -> VlmevalDataset:
    old = () if suffix == "_paper" else (f"SciFig_SciFIBench_{split}{_VARIANTS[suffix]}",)
    return VlmevalDataset(f"scifibench_{split.lower()}{suffix}", "scifibench", split, shown=not suffix, old_names=old)


_DATASETS = tuple(_dataset(split, suffix) for suffix in _VARIANTS for split in SCIFIBENCH.splits)


def _names(suffix: str, count: slice = slice(None)) -> tuple[str, ...]:
    return tuple(f"{task}{suffix}" for task in SPLIT_TASKS[count])


BENCHMARK = Benchmark(
    name="scifibench",
    title="SciFIBench",
    version="2.4",
    settings=(deprecated_protocol("scifibench"),),
    task_folder=Path(__file__).resolve().parent / "tasks",
    sources={"scifibench": SCIFIBENCH},
    document_id=("ID",),
    chance={"scifibench": option_answer},
    contrastive={"scifibench": choice_query},
    report=Report(
        summary=(SummaryRow("SciFIBench", (("scifibench",), ("scifibench_cs",), SPLIT_TASKS), coverage=CS_TASKS),),
        section=f"{__package__}.report",
        published=PublishedSet(
            "SciFIBench CS",
            "scifibench",
            dict.fromkeys(CS_TASKS, SPLIT_QUESTIONS),
            full=f"the full published CS splits ({SPLIT_QUESTIONS} questions each)",
            unit="split",
        ),
        not_pooled=("scifibench_alignment",),
    ),
    vlmeval=Vlmeval(
        datasets=_DATASETS,
        classes=(f"{_VLMEVAL}:SciFigSciFIBench",),
        tsv_formats={"scifibench": f"{__package__}.tsv_layout:TSV_LAYOUT"},
        groups={
            "scifibench": _names(""),
            "scifibench_cs": _names("", slice(0, 2)),
            "scifibench_general": _names("", slice(2, 4)),
            "scifibench_paper": _names("_paper"),
            "scifibench_reasoning": _names("_reasoning"),
        },
    ),
)
