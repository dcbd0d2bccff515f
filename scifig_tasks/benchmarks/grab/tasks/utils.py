"""GRAB task hooks for lmms-eval: thin adapters over :mod:`scifig_tasks.benchmarks.grab.rules` (prompt, scoring,
breakdown).

Task options (the ``default`` entry of each YAML's ``lmms_eval_specific_kwargs``, :mod:`scifig_tasks.core.task_files`):
``protocol`` (``default``: the answer as a whole; ``paper``, the ``*_paper`` tasks: the authors' truncation rule) and
``llm_extract`` (the ``*_llm_extract`` tasks: the judge extracts the answer first, then the authors' truncation, the
paper's ablation, which declares no ``protocol``), bound to the scoring hook the YAML names
(:mod:`scifig_tasks.core.task_options`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import datasets
from PIL import Image

from scifig_tasks.benchmarks.grab import multiple_choice as grab_mc
from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.benchmarks.grab.scoring import score_doc
from scifig_tasks.core.deprecation import warn_once
from scifig_tasks.core.images import for_upload, to_rgb
from scifig_tasks.core.judge.client import get_judge
from scifig_tasks.core.judged_hooks import JudgeUse, asks_judge, refuse_without_judge
from scifig_tasks.core.scoring_protocol import Protocol, in_force
from scifig_tasks.core.task_options import reads_task_options


def grab_doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    return [to_rgb(doc["decoded_image"])]


def grab_doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The authors' README prompt. The task argument ``prompt: paper`` (the appendix's wording, the same words with
    other whitespace) is deprecated: it still works in this version, with one warning line."""
    variant = (lmms_eval_specific_kwargs or {}).get("prompt", "readme")
    if variant != "readme":
        warn_once(f"GRAB's task argument `prompt: {variant}`", "the grab tasks ask with the authors' prompt")
    return grab.build_prompt(doc["question"], variant)


def grab_doc_to_messages(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> list[dict]:
    """One user message, text then image, as in the GRAB README's chat message."""
    content = [
        {"type": "text", "text": grab_doc_to_text(doc, lmms_eval_specific_kwargs)},
        {"type": "image", "url": for_upload(doc["decoded_image"])},
    ]
    return [{"role": "user", "content": content}]


def _select_task(dataset: datasets.Dataset, task: str) -> datasets.Dataset:
    return dataset.filter(lambda value: value == task, input_columns="task", desc=f"GRAB {task}")


grab_properties_docs = partial(_select_task, task="properties")
grab_functions_docs = partial(_select_task, task="function")
grab_series_docs = partial(_select_task, task="series")
grab_transforms_docs = partial(_select_task, task="transform")
grab_properties_docs_llm_extract = partial(_select_task, task="properties")
grab_functions_docs_llm_extract = partial(_select_task, task="function")
grab_series_docs_llm_extract = partial(_select_task, task="series")
grab_transforms_docs_llm_extract = partial(_select_task, task="transform")


def _judging(options: Mapping[str, Any]) -> JudgeUse | None:
    """The paper's LLM-extraction ablation sends every output to the judge; exact match never asks it."""
    return JudgeUse("per_output", required=True) if options.get("llm_extract") else None


@reads_task_options
@asks_judge(_judging)
def grab_process_results(
    doc: dict[str, Any], results: list[str | None], *, llm_extract: bool, protocol: Protocol = "default"
) -> dict[str, Any]:
    """One output scored by its task's rule. ``protocol`` chooses the rule of the exact-scored tasks (declared by
    each: ``grab_*`` the answer as a whole, ``grab_*_paper`` the authors' truncation); the ablation
    (``grab_*_llm_extract``) declares none, as it has one rule: the judge's extraction, then the authors' truncation
    (:func:`scifig_tasks.benchmarks.grab.scoring.score_doc`)."""
    judge = get_judge() if llm_extract else None
    if llm_extract:  # refused before the model runs (declared below); here when the run's tasks were not checked
        refuse_without_judge(["GRAB's LLM extraction"], available=judge is not None)
    # scifig rescore --protocol wins over the task's own
    score = score_doc(doc, results[0], judge, llm_extract=llm_extract, protocol=in_force("grab", protocol))
    return {"accuracy": float(score.correct), "breakdown": grab.sample_record(doc, score)}


def grab_breakdown(records: list[dict[str, Any]]) -> dict[str, Any]:
    return grab.breakdown(records)


def grab_breakdown_group(parts: list[dict[str, Any]], sizes: list[int], weight_by_size: bool = True) -> dict[str, Any]:
    return grab.merge_breakdowns(parts)


# ---- grab_properties_mc: the multiple-choice ablation of the properties task (options built on the fly) ----


def grab_properties_mc_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    """The properties rows with ``options`` and ``mc_answer`` from :func:`grab_mc.mc_options` (``seed = pid``)."""
    selected = _select_task(dataset, "properties")
    rows = selected.select_columns(["pid", "question", "answer"]).to_list()
    built = [grab_mc.mc_options(row["answer"], row["question"], seed=row["pid"]) for row in rows]
    selected = selected.add_column("options", [options for options, _ in built])
    return selected.add_column("mc_answer", [letter for _, letter in built])


def grab_mc_doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return grab_mc.mc_prompt(doc["question"], doc["options"])


def grab_mc_doc_to_messages(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> list[dict]:
    """The GRAB message (same image part) with the multiple-choice prompt as its text."""
    messages = grab_doc_to_messages(doc, lmms_eval_specific_kwargs)
    for part in messages[-1]["content"]:
        if part["type"] == "text":
            part["text"] = grab_mc_doc_to_text(doc)
    return messages


@asks_judge("audited")
def grab_mc_process_results(doc: dict[str, Any], results: list[str | None]) -> dict[str, Any]:
    score = grab_mc.score_mc(results[0], doc["options"], doc["mc_answer"], get_judge(), question=doc["question"])
    return {"accuracy": float(score.correct), "breakdown": grab_mc.sample_record(doc, score)}


def grab_mc_breakdown(records: list[dict[str, Any]]) -> dict[str, Any]:
    return grab_mc.breakdown(records, get_judge())
