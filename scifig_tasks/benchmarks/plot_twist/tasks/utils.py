"""Plot Twist task hooks for lmms-eval: thin adapters over :mod:`scifig_tasks.benchmarks.plot_twist.rules`.

The task options ``protocol`` (Plot Twist paper Fig. 2 or App. B.3 prompt) and ``margin_rule``, and every response of
lmms-eval's ``repeats`` scored. Manual: tasks/README.md, 'Task options and repeats in lmms-eval'.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import datasets
from lmms_eval.api.filter import Filter
from PIL import Image

from scifig_tasks.benchmarks.plot_twist import rules as plot_twist
from scifig_tasks.core.images import for_upload, to_rgb
from scifig_tasks.core.judge.client import get_judge
from scifig_tasks.core.judged_hooks import JudgeUse, asks_judge
from scifig_tasks.core.task_options import reads_task_options

Kwargs = dict[str, Any] | None


class KeepAllResponses(Filter):
    """Keep all ``repeats`` responses of each request (lmms-eval's default filter keeps only the first)."""

    def apply(self, resps: Any, docs: Any) -> Any:
        return [list(responses) for responses in resps]


# --- documents -----------------------------------------------------------------------------------------------------


def _with_variant(dataset: datasets.Dataset) -> datasets.Dataset:
    if "variant" in dataset.column_names:
        return dataset
    return dataset.add_column("variant", [plot_twist.BASE] * len(dataset))


def _select(dataset: datasets.Dataset, variant: str, chart_type: str | None = None) -> datasets.Dataset:
    dataset = _with_variant(dataset)
    columns = ["variant", "chart_type"]

    def keep(row_variant: str, row_chart: str) -> bool:
        return row_variant == variant and (chart_type is None or row_chart == chart_type)

    selected = dataset.filter(keep, input_columns=columns, desc=f"Plot Twist {variant} {chart_type or ''}".strip())
    if len(selected) == 0:
        what = f"variant {variant!r}" + (f" and chart_type {chart_type!r}" if chart_type else "")
        raise ValueError(
            f"Plot Twist data has no rows with {what}: rebuild it with `scifig curate plot-twist` (default: every "
            "variant) or point SCIFIG_PLOT_TWIST_DATA at a set that has them"
        )
    return selected


plot_twist_scatter_docs = partial(_select, variant=plot_twist.BASE, chart_type="scatter")
plot_twist_bar_docs = partial(_select, variant=plot_twist.BASE, chart_type="bar")
plot_twist_pie_docs = partial(_select, variant=plot_twist.BASE, chart_type="pie")
plot_twist_robustness_base_docs = partial(_select, variant=plot_twist.BASE)
plot_twist_title_none_docs = partial(_select, variant="title_none")
plot_twist_title_correct_docs = partial(_select, variant="title_correct")
plot_twist_title_misleading_docs = partial(_select, variant="title_misleading")
plot_twist_marker_x_docs = partial(_select, variant="marker_x")
plot_twist_marker_diamond_docs = partial(_select, variant="marker_diamond")
plot_twist_marker_circle_docs = partial(_select, variant="marker_circle")
plot_twist_marker_plus_docs = partial(_select, variant="marker_plus")
plot_twist_grid_docs = partial(_select, variant="grid")
plot_twist_vegalite_docs = partial(_select, variant="vegalite")


def plot_twist_chartqa_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    return _with_variant(dataset)


def plot_twist_robustness_all_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    """Every row, base and robustness variants (the one-task robustness runs of the ``open`` protocols)."""
    return _with_variant(dataset)


# --- prompt --------------------------------------------------------------------------------------------------------


def plot_twist_doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    return [to_rgb(doc["image"])]


def plot_twist_doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: Kwargs = None) -> str:
    return plot_twist.task_prompt(doc, lmms_eval_specific_kwargs or {})


def plot_twist_doc_to_messages(doc: dict[str, Any], lmms_eval_specific_kwargs: Kwargs = None) -> list[dict[str, Any]]:
    text = plot_twist_doc_to_text(doc, lmms_eval_specific_kwargs)
    content = [{"type": "image", "url": for_upload(doc["image"])}, {"type": "text", "text": text}]
    return [{"role": "user", "content": content}]


# --- scoring -------------------------------------------------------------------------------------------------------


def _judging(options: Mapping[str, Any]) -> JudgeUse:
    """The ``api`` protocol reformats only outputs without the answer sentence (Fig. 2 asks for it); the authors'
    open-model protocols (App. B.3: ``open``, ``open_pali``) reformat every output, so they cannot score without the
    judge and are refused before the model runs."""
    setting = plot_twist.get_protocol(options.get("protocol", plot_twist.DEFAULT_PROTOCOL))
    return JudgeUse("per_output", required=setting.reformat_all)


@reads_task_options
@asks_judge(_judging)
def plot_twist_process_results(
    doc: dict[str, Any], results: list[Any], *, margin_rule: plot_twist.MarginRule, protocol: str
) -> dict[str, Any]:
    outputs = [item for result in results for item in (result if isinstance(result, list) else [result])]
    judge = get_judge()
    scores = [plot_twist.score_output(doc, output, judge, margin_rule, protocol) for output in outputs]
    record = plot_twist.sample_record(doc, scores, protocol)
    means = {key: sum(record[key]) / len(outputs) for key in plot_twist.ACCURACIES}
    per_figure = {key: record[key] for key in ("figure_id", "variant", *plot_twist.ACCURACIES)}
    return {
        "standard_acc": means["standard"],
        "relaxed_acc": means["relaxed"],
        "range_acc": means["range"],
        "collective_standard": per_figure,
        "collective_relaxed": per_figure,
        "collective_range": per_figure,
        "breakdown": record,
    }


def plot_twist_collective_standard(records: list[dict[str, Any]]) -> float:
    return plot_twist.collective(records, "standard")


def plot_twist_collective_relaxed(records: list[dict[str, Any]]) -> float:
    return plot_twist.collective(records, "relaxed")


def plot_twist_collective_range(records: list[dict[str, Any]]) -> float:
    return plot_twist.collective(records, "range")


def plot_twist_collective_group(metrics: list[float], sizes: list[int], weight_by_size: bool = True) -> float:
    return plot_twist.merge_collective(metrics)


def plot_twist_breakdown(records: list[dict[str, Any]]) -> dict[str, Any]:
    return plot_twist.breakdown(records)


def plot_twist_robustness_breakdown(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The breakdown of a one-task robustness run, with each variant's change against ``base``."""
    table = plot_twist.breakdown(records)
    table["delta_vs_base"] = plot_twist.deltas_vs_base(table["variant"])
    return table


def plot_twist_breakdown_group(
    parts: list[dict[str, Any]], sizes: list[int], weight_by_size: bool = True
) -> dict[str, Any]:
    return plot_twist.merge_breakdowns(parts)


def plot_twist_robustness_group(
    parts: list[dict[str, Any]], sizes: list[int], weight_by_size: bool = True
) -> dict[str, Any]:
    return plot_twist.merge_breakdowns(parts, with_deltas=True)
