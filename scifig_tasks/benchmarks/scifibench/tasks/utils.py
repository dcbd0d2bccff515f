"""SciFIBench task hooks for lmms-eval: thin adapters over :mod:`scifig_tasks.benchmarks.scifibench.rules` and
:mod:`scifig_tasks.core.multiple_choice`.

Task options (the ``default`` entry of each YAML's ``lmms_eval_specific_kwargs``, :mod:`scifig_tasks.core.task_files`):
``protocol`` (``default`` | ``paper``, bound to the scoring hook the YAML names), ``prompt_variant`` (``standard`` |
``reasoning``), ``image_placeholder`` (written after each ``A)`` label of Caption→Figure for simple models that
interleave images at a token, e.g. ``<image>``), ``alignment`` (the alignment experiment's variant) and
``alignment_seed`` (which wrong option it marks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PIL import Image

from scifig_tasks.benchmarks.scifibench import rules as scifibench
from scifig_tasks.core.images import for_upload, to_rgb
from scifig_tasks.core.judge.client import get_judge
from scifig_tasks.core.judged_hooks import JudgeUse, asks_judge
from scifig_tasks.core.scoring_protocol import Protocol, in_force
from scifig_tasks.core.task_options import reads_task_options

Kwargs = dict[str, Any] | None


def _variant(kwargs: Kwargs) -> scifibench.PromptVariant:
    return (kwargs or {}).get("prompt_variant", "standard")


# --- Figure -> Caption ---------------------------------------------------------------------------------------------


def scifibench_f2c_doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    return [to_rgb(doc["Images"][0])]


def _f2c_text(doc: dict[str, Any], kwargs: Kwargs) -> str:
    kwargs = kwargs or {}
    alignment, seed = kwargs.get("alignment", "baseline"), int(kwargs.get("alignment_seed", 0))
    options, note = scifibench.augment(doc["ID"], doc["Options"], doc["Answer"], alignment, seed)
    return scifibench.f2c_text(options, _variant(kwargs), note)


def scifibench_f2c_doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: Kwargs = None) -> str:
    return _f2c_text(doc, lmms_eval_specific_kwargs)


def scifibench_f2c_doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: Kwargs = None
) -> list[dict[str, Any]]:
    content = [{"type": "image", "url": for_upload(doc["Images"][0])}]
    content.append({"type": "text", "text": _f2c_text(doc, lmms_eval_specific_kwargs)})
    return [{"role": "user", "content": content}]


# --- Caption -> Figure (interleaved) -------------------------------------------------------------------------------


def scifibench_c2f_doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    return [to_rgb(image) for image in doc["Images"]]


def scifibench_c2f_doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: Kwargs = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    # lmms-eval builds contexts from documents without their images: the options count the images
    segments = scifibench.c2f_segments(
        doc["Question"], len(doc["Options"]), _variant(kwargs), kwargs.get("image_placeholder", "")
    )
    return "".join(segment for segment in segments if isinstance(segment, str))


def scifibench_c2f_doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: Kwargs = None
) -> list[dict[str, Any]]:
    images = [for_upload(cell) for cell in doc["Images"]]
    segments = scifibench.c2f_segments(doc["Question"], len(images), _variant(lmms_eval_specific_kwargs))
    content = [
        {"type": "text", "text": segment} if isinstance(segment, str) else {"type": "image", "url": images[segment]}
        for segment in segments
    ]
    return [{"role": "user", "content": content}]


# --- scoring ---------------------------------------------------------------------------------------------------------


def _judging(options: Mapping[str, Any]) -> JudgeUse:
    """The paper's protocol sends every output to the judge; scifig's sends only what the rules cannot read."""
    return JudgeUse("per_output", required=True) if options.get("protocol") == "paper" else JudgeUse("audited")


@reads_task_options
@asks_judge(_judging)
def scifibench_process_results(doc: dict[str, Any], results: list[str | None], *, protocol: Protocol) -> dict[str, Any]:
    resolution = scifibench.resolve_answer(doc, results[0], get_judge(), in_force("scifibench", protocol))
    record = scifibench.sample_record(doc, resolution)
    return {"accuracy": float(record["correct"]), "breakdown": record}


def scifibench_breakdown(records: list[dict[str, Any]]) -> dict[str, Any]:
    return scifibench.breakdown(records, get_judge())


def scifibench_breakdown_group(
    parts: list[dict[str, Any]], sizes: list[int], weight_by_size: bool = True
) -> dict[str, Any]:
    return scifibench.merge_breakdowns(parts)


# --- alignment experiment ------------------------------------------------------------------------------------------


@reads_task_options
@asks_judge(_judging)  # scores as scifibench_process_results does
def scifibench_alignment_process_results(
    doc: dict[str, Any], results: list[str | None], *, protocol: Protocol, alignment: str
) -> dict[str, Any]:
    scored = scifibench_process_results(doc, results, protocol=protocol)
    return {**scored, "alignment": {"variant": alignment, "correct": scored["breakdown"]["correct"]}}


def scifibench_alignment(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One variant's accuracy (the group turns the five into accuracies and deltas)."""
    return {
        "variant": records[0]["variant"],
        "n": len(records),
        "accuracy": round(sum(record["correct"] for record in records) / len(records), 4),
    }


def scifibench_alignment_group(
    parts: list[dict[str, Any]], sizes: list[int], weight_by_size: bool = False
) -> dict[str, Any]:
    return scifibench.alignment_summary(parts)
