"""MMSci's description (:class:`scifig_tasks.core.benchmark.Benchmark`): its data, tasks, chance rule, VLMEvalKit
datasets and report rows.

Chance: multiple choice is a uniform letter among the four options the prompt lists (``A: ...`` lines), 25%;
captioning has none (a caption is free text, with no answer space to draw from).

VLMEvalKit datasets: multiple choice ``mmsci[_dev][_<setting>][_paper]`` (all three settings, or one), captioning
``mmsci_caption[_dev]_<image_only|with_abstract>[_paper]``; the ``mmsci_captioning*`` groups expand to their two
captioning datasets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from scifig_tasks.benchmarks.mmsci import captioning_settings
from scifig_tasks.benchmarks.mmsci.rules import SETTINGS
from scifig_tasks.benchmarks.mmsci.source import MMSCI_CAPTIONING, MMSCI_MCQ
from scifig_tasks.core.benchmark import Benchmark, PublishedSet, Report, SummaryRow, Vlmeval, VlmevalDataset
from scifig_tasks.core.chance import option_answer
from scifig_tasks.core.settings import deprecated_protocol

PROTOCOL_SUFFIXES = ("", "_paper")
CAPTION_SETTINGS = ("image_only", "with_abstract")


def of_setting(name: str) -> Callable[[Mapping[str, Any]], bool]:
    """Keep the multiple-choice questions of one setting."""

    def keep(row: Mapping[str, Any]) -> bool:
        return row["setting"] == name

    keep.__qualname__ = f"setting={name}"
    return keep


def _mcq(name: str, old: str = "") -> VlmevalDataset:
    settings = [setting for setting in SETTINGS if f"_{setting}" in name]
    split = "dev" if name.startswith("mmsci_dev") else "test"
    keep = of_setting(settings[0]) if settings else None
    return VlmevalDataset(name, "mmsci_mcq", split, keep, shown=name == "mmsci", old_names=(old,) if old else ())


def _caption(split: str, setting: str, suffix: str) -> VlmevalDataset:
    name = f"mmsci_caption{split}_{setting}{suffix}"
    words = "".join(word.title() for word in setting.split("_"))
    old = () if suffix else (f"SciFig_MMSCI_Caption_{words}{'_Dev' if split else ''}",)
    shown = not split and not suffix
    return VlmevalDataset(
        name,
        "mmsci_captioning",
        "dev" if split else "test",
        shown=shown,
        detail_metric="caption_report" if shown else "breakdown",
        old_names=old,
    )


_MCQ = (
    _mcq("mmsci", "SciFig_MMSCI_MCQ"),
    _mcq("mmsci_paper"),
    _mcq("mmsci_dev", "SciFig_MMSCI_MCQ_Dev"),
    *(_mcq(f"mmsci_{setting}{suffix}") for suffix in PROTOCOL_SUFFIXES for setting in SETTINGS),
    *(_mcq(f"mmsci_dev_{setting}") for setting in SETTINGS),
)
_CAPTIONING = tuple(
    _caption(split, setting, suffix)
    for suffix in PROTOCOL_SUFFIXES
    for split in ("", "_dev")
    for setting in CAPTION_SETTINGS
)
_VLMEVAL = f"{__package__}.vlmeval"
"""This benchmark's VLMEvalKit dataset classes (its TSV layouts: ``tsv_layout``, read without VLMEvalKit)."""

BENCHMARK = Benchmark(
    name="mmsci",
    title="MMSci",
    version="2.4",
    settings=(*captioning_settings.SETTINGS, deprecated_protocol("mmsci")),
    task_folder=Path(__file__).resolve().parent / "tasks",
    sources={"mmsci_mcq": MMSCI_MCQ, "mmsci_captioning": MMSCI_CAPTIONING},
    document_id=("uid", "figure_index", "setting", "subfigure"),
    chance={
        "mmsci_mcq": option_answer,
        "mmsci_captioning": "MMSci captioning asks for free text (a caption), so there is no answer space to draw a "
        "chance answer from; evaluate captioning with a model",
    },
    report=Report(
        summary=(
            SummaryRow(
                "MMSci multiple choice",
                (("mmsci",), tuple(f"mmsci_{setting}" for setting in SETTINGS)),
                coverage=("mmsci",),
            ),
            SummaryRow("MMSci captioning, image only", (("mmsci_caption_image_only",),)),
            SummaryRow("MMSci captioning, with abstract", (("mmsci_caption_with_abstract",),)),
            SummaryRow("MMSci captioning, image only (paper setting)", (("mmsci_caption_image_only_paper",),)),
            SummaryRow("MMSci captioning, with abstract (paper setting)", (("mmsci_caption_with_abstract_paper",),)),
        ),
        section=f"{__package__}.report",
        published=PublishedSet(
            "MMSci",
            "mmsci_mcq",
            subtasks={"mmsci": tuple(f"mmsci_{setting}" for setting in SETTINGS)},
            full="the full published MMSci test set",
        ),
        sample_tasks={"mmsci": ("setting", "mmsci_{}")},
        corpus_metrics={
            "mmsci_caption": ("bleu4", "rougeL", "meteor", "bertscore_f1", "cider", "factscore", "geval_relevance")
        },
    ),
    vlmeval=Vlmeval(
        datasets=(*_MCQ, *_CAPTIONING),
        classes=(f"{_VLMEVAL}:SciFigMMSciMCQ", f"{_VLMEVAL}:SciFigMMSciCaption"),
        tsv_formats={
            "mmsci_mcq": f"{__package__}.tsv_layout:MCQ_TSV_LAYOUT",
            "mmsci_captioning": f"{__package__}.tsv_layout:CAPTION_TSV_LAYOUT",
        },
        groups={
            f"mmsci_captioning{split}{suffix}": tuple(
                f"mmsci_caption{split}_{setting}{suffix}" for setting in CAPTION_SETTINGS
            )
            for split in ("", "_dev")
            for suffix in PROTOCOL_SUFFIXES
        },
    ),
)
