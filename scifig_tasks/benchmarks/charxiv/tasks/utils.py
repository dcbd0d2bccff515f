"""CharXiv task hooks for lmms-eval: thin adapters over :mod:`scifig_tasks.benchmarks.charxiv.scoring`.

Task option (the ``default`` entry of each YAML's ``lmms_eval_specific_kwargs``): ``protocol``, ``default`` (exact
rules first, the judge with the authors' rubric for the rest) or ``paper`` (the authors' grading: the judge on every
response, descriptive ones in their batches, at aggregation), bound to the scoring hook
(:mod:`scifig_tasks.core.task_options`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from PIL import Image

from scifig_tasks.benchmarks.charxiv import scoring
from scifig_tasks.core.images import for_upload, to_rgb
from scifig_tasks.core.judge.client import get_judge
from scifig_tasks.core.judged_hooks import JudgeUse, asks_judge
from scifig_tasks.core.scoring_protocol import in_force
from scifig_tasks.core.task_options import reads_task_options

Protocol = Literal["default", "paper"]


def charxiv_doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    return [to_rgb(doc["image"])]


def charxiv_doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The question as the authors' code builds it (``source.py``: template, subplot wording, answer-type rules)."""
    return doc["question"]


def charxiv_doc_to_messages(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> list[dict]:
    """One user message, text then image, as the authors' GPT-4o request (src/generate_lib/gpt.py)."""
    content = [{"type": "text", "text": doc["question"]}, {"type": "image", "url": for_upload(doc["image"])}]
    return [{"role": "user", "content": content}]


def _judging(options: Mapping[str, Any]) -> JudgeUse:
    """The default protocol asks the judge for what the rules leave undecided; the paper's grades every response at
    aggregation and cannot score without it."""
    if options.get("protocol") == "paper":
        return JudgeUse("at_aggregation", required=True)
    return JudgeUse("per_output")


@reads_task_options
@asks_judge(_judging)
def charxiv_process_results(doc: dict[str, Any], results: list[str | None], *, protocol: Protocol) -> dict[str, Any]:
    if in_force("charxiv_full", protocol) == "paper":  # scifig rescore --protocol wins over the task's own
        record = scoring.ungraded_record(doc, results[0], protocol="paper")
    else:
        record = scoring.graded_now(doc, results[0], get_judge())
    return {"accuracy": record, "breakdown": record}


def charxiv_accuracy(records: list[dict[str, Any]]) -> float | None:
    return scoring.evaluate(records, get_judge())["accuracy"]


def charxiv_breakdown(records: list[dict[str, Any]]) -> dict[str, Any]:
    return scoring.evaluate(records, get_judge())["breakdown"]
