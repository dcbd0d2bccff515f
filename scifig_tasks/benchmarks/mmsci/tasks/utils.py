"""MMSci task hooks for lmms-eval: thin adapters over the rules, answer resolution and captioning metrics.

The task options ``prompt_variant``, ``abstract_word_budget`` and ``protocol`` (the ``*_paper`` tasks: the MMSci
authors' setting, 3 captions per figure). Manual: tasks/README.md, 'Task options in lmms-eval'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import datasets
from PIL import Image

from scifig_tasks.benchmarks.mmsci import captioning_metrics as mmsci_captioning
from scifig_tasks.benchmarks.mmsci import rules as mmsci
from scifig_tasks.core.fetched_models import fetches
from scifig_tasks.core.images import for_upload, to_rgb
from scifig_tasks.core.judge.client import get_judge
from scifig_tasks.core.judged_hooks import JudgeUse, asks_judge
from scifig_tasks.core.scoring_protocol import Protocol, in_force
from scifig_tasks.core.task_options import reads_task_options

Kwargs = dict[str, Any] | None

# --- multiple choice -------------------------------------------------------------------------------------------------


def _setting_docs(setting: str, dataset: datasets.Dataset) -> datasets.Dataset:
    return dataset.filter(lambda value: value == setting, input_columns="setting")


def mmsci_fig2cap_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    return _setting_docs("fig2cap", dataset)


def mmsci_subfig2cap_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    return _setting_docs("subfig2cap", dataset)


def mmsci_subcap2fig_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    return _setting_docs("subcap2fig", dataset)


def mmsci_doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    return [to_rgb(doc["image"])]


def mmsci_mcq_doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: Kwargs = None) -> str:
    variant = (lmms_eval_specific_kwargs or {}).get("prompt_variant", "standard")
    return mmsci.mcq_prompt(doc["question"], doc["options"], variant)


def mmsci_mcq_doc_to_messages(doc: dict[str, Any], lmms_eval_specific_kwargs: Kwargs = None) -> list[dict[str, Any]]:
    content = [{"type": "image", "url": for_upload(doc["image"])}]
    content.append({"type": "text", "text": mmsci_mcq_doc_to_text(doc, lmms_eval_specific_kwargs)})
    return [{"role": "user", "content": content}]


def _mcq_judging(options: Mapping[str, Any]) -> JudgeUse:
    """Only what the rules cannot read goes to the judge; the paper's protocol cannot score without one."""
    return JudgeUse("audited", required=options.get("protocol") == "paper")


@reads_task_options
@asks_judge(_mcq_judging)
def mmsci_mcq_process_results(doc: dict[str, Any], results: list[str | None], *, protocol: Protocol) -> dict[str, Any]:
    resolution = mmsci.resolve_answer(doc, results[0], get_judge(), in_force("mmsci", protocol))
    record = mmsci.sample_record(doc, resolution)
    return {"accuracy": float(record["correct"]), "breakdown": record}


def mmsci_breakdown(records: list[dict[str, Any]]) -> dict[str, Any]:
    return mmsci.breakdown(records, get_judge())


def mmsci_breakdown_group(
    parts: list[dict[str, Any]], sizes: list[int], weight_by_size: bool = False
) -> dict[str, Any]:
    return mmsci.merge_breakdowns(parts)


# --- captioning ------------------------------------------------------------------------------------------------------


def mmsci_caption_doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: Kwargs = None) -> str:
    """The captioning prompt the task's ``prompt_variant`` names (:func:`..rules.task_caption_prompt`)."""
    return mmsci.task_caption_prompt(doc, lmms_eval_specific_kwargs or {})


def mmsci_caption_doc_to_messages(doc: dict[str, Any], lmms_eval_specific_kwargs: Kwargs = None) -> list[dict]:
    text = mmsci_caption_doc_to_text(doc, lmms_eval_specific_kwargs)
    content = [{"type": "image", "url": for_upload(doc["image"])}, {"type": "text", "text": text}]
    return [{"role": "user", "content": content}]


CAPTION_METRICS = mmsci_captioning.CAPTION_METRICS


@reads_task_options
@asks_judge("at_aggregation")
@fetches(
    mmsci_captioning.check_bertscore_model,
    without="bertscore_f1 will be n/a (the other captioning metrics are computed)",
)
def mmsci_caption_process_results(doc: dict[str, Any], results: list[Any], *, protocol: Protocol) -> dict[str, Any]:
    """One caption (``default``), or under ``paper`` the k sampled captions (``repeats`` + ``take_first_k``; lmms-eval
    hands the one request's k filtered responses over as ``results``), scored with the paper setting."""
    if protocol == "paper":
        captions = [caption for item in results for caption in (item if isinstance(item, list | tuple) else [item])]
        record = mmsci.caption_record(doc, captions[0], captions)
    else:
        record = mmsci.caption_record(doc, results[0])
    return {name: record for name in (*CAPTION_METRICS, "caption_report")}


def _value(name: str, records: list[dict[str, Any]]) -> float | None:
    return mmsci_captioning.evaluate(records, judge=get_judge())["values"][name]


def mmsci_bleu2(records: list[dict[str, Any]]) -> float | None:
    return _value("bleu2", records)


def mmsci_bleu4(records: list[dict[str, Any]]) -> float | None:
    return _value("bleu4", records)


def mmsci_cumulative_bleu_2(records: list[dict[str, Any]]) -> float | None:
    return _value("cumulative_bleu_2", records)


def mmsci_cumulative_bleu_4(records: list[dict[str, Any]]) -> float | None:
    return _value("cumulative_bleu_4", records)


def mmsci_rouge1(records: list[dict[str, Any]]) -> float | None:
    return _value("rouge1", records)


def mmsci_rouge2(records: list[dict[str, Any]]) -> float | None:
    return _value("rouge2", records)


def mmsci_rougeL(records: list[dict[str, Any]]) -> float | None:  # noqa: N802 -- the metric's name
    return _value("rougeL", records)


def mmsci_meteor(records: list[dict[str, Any]]) -> float | None:
    return _value("meteor", records)


def mmsci_bertscore_f1(records: list[dict[str, Any]]) -> float | None:
    return _value("bertscore_f1", records)


def mmsci_cider(records: list[dict[str, Any]]) -> float | None:
    return _value("cider", records)


def mmsci_factscore(records: list[dict[str, Any]]) -> float | None:
    return _value("factscore", records)


def mmsci_geval_relevance(records: list[dict[str, Any]]) -> float | None:
    return _value("geval_relevance", records)


def mmsci_caption_report(records: list[dict[str, Any]]) -> dict[str, Any]:
    return mmsci_captioning.evaluate(records, judge=get_judge())["report"]
