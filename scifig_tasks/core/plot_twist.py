"""Plot Twist / Chart101 protocol (Razeghi et al. 2024, "Plot Twist: Multimodal Models Don't Comprehend Simple Chart
Details"): schema vocabulary, prompt, answer extraction, the three per-question accuracies and their aggregation.

One implementation of every rule that changes a score (spec "Prompting and extraction", "Metrics"):

* Prompt: ``Answer the question based on the Figure. {question}``; the title-robustness variants use ``Answer the
  question only based on the figure. {question}``. Both end with our request for the paper's answer sentence
  ``The answer is ANS. I hope the answer is correct.`` (the paper asked API models for that sentence; the exact
  wording of the request is ours, see :data:`ANSWER_REQUEST`).
* Extraction: the text between the first ``The answer is `` and the first ``. I hope the answer is correct``;
  ``%``, ``approximately`` and ``$`` removed; stripped; number words converted with word2number. An output without
  the sentence is reformatted into it by the configured judge (our few-shot prompt, :data:`REFORMAT_PROMPT`); with
  no judge, or when the judge fails, the answer counts as not provided.
* Standard (exact): numeric answer == gold; a non-numeric answer is compared with the gold case-insensitively.
  Relaxed: within [0.95 g, 1.05 g] (bounds sorted, inclusive). Range-based: within g ± margin, margin = 5% of
  ``x_range`` for bar-count and scatter x questions, 5% of ``y_range`` for the other bar and scatter y questions,
  5 (absolute) for pie; without a margin (the ChartQA subset) the relaxed bounds.
* Collective: a figure counts only when all its questions are right (per metric).
* Repeated sampling (lmms-eval ``repeats``): every metric is computed per repeat, then averaged; the breakdown
  reports the mean and the standard deviation across repeats.

Outputs that are empty or lmms-eval's request-failure marker are scored wrong and flagged, never sent to a judge.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from scifig_tasks.core.outputs import OutputStatus, output_status

if TYPE_CHECKING:
    from scifig_tasks.core.judge import JudgeClient

# ---- schema vocabulary ---------------------------------------------------------------------------------------------

CHART_TYPES: tuple[str, ...] = ("scatter", "bar", "pie")
QUESTION_TYPES: dict[str, tuple[str, ...]] = {
    "scatter": (
        "x_max_point",
        "x_min_point",
        "y_max_point",
        "y_min_point",
        "x_max_axis",
        "x_min_axis",
        "y_max_axis",
        "y_min_axis",
    ),
    "bar": ("max_bar", "min_bar", "count_bars", "y_max_axis", "y_min_axis"),
    "pie": ("max_category", "min_category", "count_categories"),
}
ALL_QUESTION_TYPES: tuple[str, ...] = tuple(dict.fromkeys(q for types in QUESTION_TYPES.values() for q in types))

BASE = "base"
VARIANT_CHART_TYPES: dict[str, tuple[str, ...]] = {
    "title_none": CHART_TYPES,
    "title_correct": CHART_TYPES,
    "title_misleading": CHART_TYPES,
    "marker_x": ("scatter",),
    "marker_diamond": ("scatter",),
    "marker_circle": ("scatter",),
    "marker_plus": ("scatter",),
    "grid": ("scatter", "bar"),
    "vegalite": CHART_TYPES,
}
"""Robustness variants (spec "Robustness variants") and the chart types each one applies to."""
ROBUSTNESS_VARIANTS: tuple[str, ...] = tuple(VARIANT_CHART_TYPES)
VARIANTS: tuple[str, ...] = (BASE, *ROBUSTNESS_VARIANTS)
TITLE_VARIANTS: frozenset[str] = frozenset(("title_none", "title_correct", "title_misleading"))

# ---- prompt --------------------------------------------------------------------------------------------------------

PROMPT = "Answer the question based on the Figure. {question}"
TITLE_PROMPT = "Answer the question only based on the figure. {question}"
ANSWER_START = "The answer is "
ANSWER_END = ". I hope the answer is correct"
ANSWER_SENTENCE = "The answer is ANS. I hope the answer is correct."
ANSWER_REQUEST = f"End your reply with this sentence, with ANS replaced by your answer: {ANSWER_SENTENCE}"
"""Our wording of the paper's request for the answer sentence (the spec does not quote it)."""


def build_prompt(question: str, variant: str = BASE) -> str:
    """The model prompt: the paper's instruction (title variants: "only based on the figure"), then the request
    for the answer sentence on its own line."""
    template = TITLE_PROMPT if variant in TITLE_VARIANTS else PROMPT
    return f"{template.format(question=question)}\n{ANSWER_REQUEST}"


REFORMAT_PROMPT = """\
A model answered a question about a chart. Rewrite the model's final answer as exactly one sentence of the form \
"The answer is ANS. I hope the answer is correct." where ANS is the final answer the model gave, unchanged. \
If the model gave no answer, write "The answer is None. I hope the answer is correct." Reply with that sentence only.

Question: How many bars are in the figure?
Model output: There are four bars in the chart.
Sentence: The answer is four. I hope the answer is correct.

Question: What is the maximum value among the set of bars plotted in the figure?
Model output: Looking at the chart, the tallest bar reaches about 150, just above the 140 gridline.
Sentence: The answer is 150. I hope the answer is correct.

Question: What is the approximate minimum value for the range on the y-axis?
Model output: The y-axis starts at roughly -20.5 and goes up to 180.
Sentence: The answer is -20.5. I hope the answer is correct.

Question: What is the maximum value among the categories presented in the figure?
Model output: I cannot determine the values from this image.
Sentence: The answer is None. I hope the answer is correct.

Question: {question}
Model output: {output}
Sentence:"""
"""Our few-shot reformatting prompt (the paper used an LLM with a few-shot prompt it does not quote)."""

REFORMAT_MAX_TOKENS = 64
NO_ANSWER = "None"


def reformat_prompt(question: str, output: str) -> str:
    """The judge prompt that turns a free-form output into the answer sentence."""
    return REFORMAT_PROMPT.replace("{question}", question).replace("{output}", output)


# ---- extraction ----------------------------------------------------------------------------------------------------


def has_answer_sentence(text: str) -> bool:
    """Whether the authors' extraction finds an answer: both ``The answer is `` and the closing phrase occur."""
    return ANSWER_START in text and ANSWER_END in text


def extract_answer(text: str) -> str | None:
    """The text between the first ``The answer is `` and the first ``. I hope the answer is correct``, with ``%``,
    ``approximately`` and ``$`` removed and surrounding whitespace stripped; ``None`` when either phrase is missing.

    Like the authors' slicing, a closing phrase that comes before the opening one yields an empty answer.
    """
    if not has_answer_sentence(text):
        return None
    start = text.find(ANSWER_START) + len(ANSWER_START)
    answer = text[start : text.find(ANSWER_END)]
    for removed in ("%", "approximately", "$"):
        answer = answer.replace(removed, "")
    return answer.strip()


def to_number(answer: str) -> float | None:
    """The numeric value of an extracted answer: word2number first (``"twenty five"`` -> 25, ``"12"`` -> 12), then
    ``float()``; ``None`` when neither reads it.

    word2number's own quirks are kept (``"minus five"`` -> 5, ``"five apples"`` -> 5), as in the authors' pipeline;
    where word2number crashes on malformed number words (e.g. ``IndexError``) we treat the text as not a number word.
    """
    from word2number import w2n

    try:
        value = w2n.word_to_num(answer)
    except Exception:  # word2number raises ValueError, and IndexError on some malformed phrases
        value = None
    if value is not None:
        return float(value)
    try:
        return float(answer)
    except ValueError:
        return None


# ---- per-question accuracies ---------------------------------------------------------------------------------------

MarginRule = Literal["synthetic", "chartqa"]


def range_margin(
    chart_type: str, question_type: str, x_range: float, y_range: float, rule: MarginRule = "synthetic"
) -> float | None:
    """The range-based margin: bar: 5% of ``x_range`` for the count question, else 5% of ``y_range``; pie: 5;
    scatter: 5% of ``x_range`` for x questions, 5% of ``y_range`` for y questions; ChartQA: none.

    Scatter questions are classified by their ``x_`` / ``y_`` prefix (the spec's "x questions"), not by substring:
    ``y_max_point`` contains ``x_`` inside ``max_``.
    """
    if rule == "chartqa":
        return None
    if chart_type == "bar":
        return 0.05 * x_range if "count" in question_type else 0.05 * y_range
    if chart_type == "pie":
        return 5
    if chart_type == "scatter":
        if question_type.startswith("x_"):
            return 0.05 * x_range
        if question_type.startswith("y_"):
            return 0.05 * y_range
    return None


@dataclass(frozen=True)
class Correctness:
    """The three per-question accuracies of one answer."""

    standard: bool
    relaxed: bool
    range: bool


WRONG = Correctness(False, False, False)


def score_answer(answer: str | None, gold: str, margin: float | None) -> Correctness:
    """Score an extracted answer (``None``: not provided) against the gold string.

    Numeric answer: exact ``==``, relaxed ``[0.95 g, 1.05 g]`` and ``[g - margin, g + margin]`` (each pair sorted,
    bounds inclusive; no margin -> the relaxed bounds). Non-numeric answer: case-insensitive equality with the gold
    counts for all three. A numeric answer to a gold that is not a number is wrong (as in the authors' pipeline).
    """
    if answer is None:
        return WRONG
    value = to_number(answer)
    if value is None:
        same = answer.lower() == gold.lower()
        return Correctness(same, same, same)
    try:
        target = float(gold)
    except ValueError:
        return WRONG
    low, high = sorted((target * 0.95, target * 1.05))
    if margin is None:
        low_m, high_m = low, high
    else:
        low_m, high_m = sorted((target - margin, target + margin))
    return Correctness(value == target, low <= value <= high, low_m <= value <= high_m)


AnswerSource = Literal["rule", "judge", "not_provided"]
JudgeUse = Literal["not_used", "judged", "judge_failed", "judge_off"]


@dataclass(frozen=True)
class OutputScore:
    """Outcome for one model output: accuracies, the extracted answer and how it was obtained."""

    correctness: Correctness
    extracted: str | None
    answer_source: AnswerSource
    output_status: OutputStatus
    judge: JudgeUse = "not_used"


def score_output(
    doc: Mapping[str, Any], output: str | None, judge: JudgeClient | None, rule: MarginRule = "synthetic"
) -> OutputScore:
    """Extract and score one output for ``doc``; outputs without the answer sentence go to the judge (if any)."""
    status = output_status(output)
    if status != "ok" or output is None:
        return OutputScore(WRONG, None, "not_provided", status)
    margin = range_margin(doc["chart_type"], doc["question_type"], doc["x_range"], doc["y_range"], rule)
    if has_answer_sentence(output):
        extracted = extract_answer(output)
        return OutputScore(score_answer(extracted, doc["answer"], margin), extracted, "rule", status)
    if judge is None:
        return OutputScore(WRONG, None, "not_provided", status, "judge_off")
    result = judge.complete(reformat_prompt(doc["question"], output), max_tokens=REFORMAT_MAX_TOKENS)
    if result.status != "judged" or result.text is None:
        return OutputScore(WRONG, None, "not_provided", status, result.status)
    extracted = extract_answer(result.text)
    if extracted is None or extracted == NO_ANSWER:
        return OutputScore(WRONG, None, "not_provided", status, "judged")
    return OutputScore(score_answer(extracted, doc["answer"], margin), extracted, "judge", status, "judged")


def sample_record(doc: Mapping[str, Any], scores: Sequence[OutputScore]) -> dict[str, Any]:
    """Per-question record (one entry per repeat in each list), logged and aggregated by :func:`aggregate`."""
    return {
        "q_id": doc["q_id"],
        "figure_id": doc["figure_id"],
        "chart_type": doc["chart_type"],
        "question_type": doc["question_type"],
        "variant": doc.get("variant") or BASE,
        "standard": [int(s.correctness.standard) for s in scores],
        "relaxed": [int(s.correctness.relaxed) for s in scores],
        "range": [int(s.correctness.range) for s in scores],
        "extracted": [s.extracted for s in scores],
        "answer_source": [s.answer_source for s in scores],
        "output_status": [s.output_status for s in scores],
        "judge": [s.judge for s in scores],
    }


# ---- aggregation ---------------------------------------------------------------------------------------------------

ACCURACIES: tuple[str, ...] = ("standard", "relaxed", "range")
METRICS: dict[str, str] = {
    "standard_acc": "standard",
    "relaxed_acc": "relaxed",
    "range_acc": "range",
    "collective_standard": "standard",
    "collective_relaxed": "relaxed",
    "collective_range": "range",
}
"""lmms-eval metric name -> per-question accuracy it is built from (no name contains another)."""
_FLAGS = ("output_status", "answer_source", "judge")


def repeats_of(records: Sequence[Mapping[str, Any]]) -> int:
    """The number of repeats; every record must carry the same number."""
    counts = {len(record["standard"]) for record in records}
    if len(counts) != 1:
        raise ValueError(f"Plot Twist records disagree on the number of repeats: {sorted(counts)}")
    (count,) = counts
    if count < 1:
        raise ValueError("Plot Twist record without any model output")
    return count


def _mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    variance = sum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return mean, math.sqrt(variance)


class CollectiveRate(float):
    """A collective accuracy (mean over repeats of the share of fully-correct figures) that remembers its counts,
    so a group recomputes it exactly over all figures instead of averaging subtask rates."""

    hits: tuple[int, ...]
    figures: int

    def __new__(cls, hits: Sequence[int], figures: int) -> CollectiveRate:
        value = sum(hit / figures for hit in hits) / len(hits) if figures and hits else 0.0
        rate = super().__new__(cls, value)
        rate.hits, rate.figures = tuple(hits), figures
        return rate

    def __reduce__(self) -> tuple[Any, ...]:
        return (CollectiveRate, (self.hits, self.figures))


def accuracy(records: Sequence[Mapping[str, Any]], key: str) -> float:
    """Mean over repeats of the share of questions right under ``key`` (standard / relaxed / range)."""
    repeats = repeats_of(records)
    per_repeat = [sum(record[key][r] for record in records) / len(records) for r in range(repeats)]
    return sum(per_repeat) / repeats


def _figure_hits(records: Sequence[Mapping[str, Any]], key: str, repeats: int) -> tuple[list[int], int]:
    figures: dict[tuple[str, str], list[bool]] = defaultdict(lambda: [True] * repeats)
    for record in records:
        ok = figures[(record["variant"], record["figure_id"])]
        for r in range(repeats):
            ok[r] = ok[r] and bool(record[key][r])
    return [sum(ok[r] for ok in figures.values()) for r in range(repeats)], len(figures)


def collective(records: Sequence[Mapping[str, Any]], key: str) -> CollectiveRate:
    """Mean over repeats of the share of figures (per variant) whose questions are all right under ``key``."""
    hits, figures = _figure_hits(records, key, repeats_of(records))
    return CollectiveRate(hits, figures)


def merge_collective(parts: Sequence[float]) -> CollectiveRate:
    """Collective accuracy of a group from its subtasks' :class:`CollectiveRate` values (subtasks hold disjoint
    figures)."""
    rates = list(parts)
    if not rates or not all(isinstance(rate, CollectiveRate) for rate in rates):
        raise TypeError(
            "Plot Twist group collective metrics need the subtasks' figure counts (CollectiveRate values); got "
            + ", ".join(type(rate).__name__ for rate in rates)
        )
    repeats = {len(rate.hits) for rate in rates}
    if len(repeats) != 1:
        raise ValueError(f"Plot Twist subtasks disagree on the number of repeats: {sorted(repeats)}")
    hits = [sum(rate.hits[r] for rate in rates) for r in range(repeats.pop())]
    return CollectiveRate(hits, sum(rate.figures for rate in rates))


def _cell(records: Sequence[Mapping[str, Any]], repeats: int, with_figures: bool) -> dict[str, Any]:
    hits: dict[str, list[int]] = {
        key: [sum(record[key][r] for record in records) for r in range(repeats)] for key in ACCURACIES
    }
    cell: dict[str, Any] = {"questions": len(records), "hits": hits}
    if with_figures:
        figures = 0
        for key in ACCURACIES:
            hits[f"collective_{key}"], figures = _figure_hits(records, key, repeats)
        cell["figures"] = figures
    return _with_rates(cell)


def _with_rates(cell: dict[str, Any]) -> dict[str, Any]:
    rates: dict[str, Any] = {}
    for metric, key in METRICS.items():
        counts_key = metric if metric.startswith("collective_") else key
        if counts_key not in cell["hits"]:
            continue
        denominator = cell["figures"] if metric.startswith("collective_") else cell["questions"]
        mean, std = _mean_std([hit / denominator for hit in cell["hits"][counts_key]])
        rates[metric] = {"mean": round(mean, 4), "std": None if std is None else round(std, 4)}
    return {**{k: v for k, v in cell.items() if k not in METRICS}, **rates}


def breakdown(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts and the six metrics (mean and std over repeats) overall, per chart type, per variant, and the three
    per-question accuracies per chart type and question type; flags count every output of every repeat."""
    repeats = repeats_of(records)
    by: dict[str, dict[str, list[Mapping[str, Any]]]] = {"chart_type": defaultdict(list), "variant": defaultdict(list)}
    by_question: dict[str, dict[str, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    flags: dict[str, dict[str, int]] = {name: {} for name in _FLAGS}
    for record in records:
        by["chart_type"][record["chart_type"]].append(record)
        by["variant"][record["variant"]].append(record)
        by_question[record["chart_type"]][record["question_type"]].append(record)
        for name in _FLAGS:
            for value in record[name]:
                flags[name][value] = flags[name].get(value, 0) + 1
    return {
        "repeats": repeats,
        "overall": _cell(records, repeats, True),
        "chart_type": {key: _cell(part, repeats, True) for key, part in _ordered(by["chart_type"], CHART_TYPES)},
        "variant": {key: _cell(part, repeats, True) for key, part in _ordered(by["variant"], VARIANTS)},
        "question_type": {
            chart: {key: _cell(part, repeats, False) for key, part in _ordered(types, ALL_QUESTION_TYPES)}
            for chart, types in _ordered(by_question, CHART_TYPES)
        },
        "flags": flags,
    }


def _ordered(mapping: Mapping[str, Any], order: Sequence[str]) -> list[tuple[str, Any]]:
    rank = {name: index for index, name in enumerate(order)}
    return sorted(mapping.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0]))


def _merge_cells(cells: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {"questions": 0, "hits": {}}
    for cell in cells:
        merged["questions"] += cell["questions"]
        if "figures" in cell:
            merged["figures"] = merged.get("figures", 0) + cell["figures"]
        for key, hits in cell["hits"].items():
            total = merged["hits"].setdefault(key, [0] * len(hits))
            if len(total) != len(hits):
                raise ValueError("Plot Twist breakdowns disagree on the number of repeats")
            merged["hits"][key] = [a + b for a, b in zip(total, hits, strict=True)]
    return _with_rates(merged)


def merge_breakdowns(parts: Sequence[Mapping[str, Any]], with_deltas: bool = False) -> dict[str, Any]:
    """The breakdown of a group, recomputed from its subtasks' counts (subtasks hold disjoint questions and figures).

    ``with_deltas`` adds, per robustness variant, the difference of each metric's mean to the ``base`` variant.
    """
    parts = list(parts)
    repeats = {part["repeats"] for part in parts}
    if len(repeats) != 1:
        raise ValueError(f"Plot Twist subtasks disagree on the number of repeats: {sorted(repeats)}")

    def merged(dimension: str, order: Sequence[str]) -> dict[str, Any]:
        keys = [key for key, _ in _ordered({k: None for part in parts for k in part[dimension]}, order)]
        return {key: _merge_cells(part[dimension][key] for part in parts if key in part[dimension]) for key in keys}

    charts = [key for key, _ in _ordered({k: None for part in parts for k in part["question_type"]}, CHART_TYPES)]
    question_type = {}
    for chart in charts:
        types = [part["question_type"][chart] for part in parts if chart in part["question_type"]]
        names = [key for key, _ in _ordered({k: None for t in types for k in t}, ALL_QUESTION_TYPES)]
        question_type[chart] = {name: _merge_cells(t[name] for t in types if name in t) for name in names}
    flags: dict[str, dict[str, int]] = {}
    for part in parts:
        for name, values in part["flags"].items():
            bucket = flags.setdefault(name, {})
            for value, count in values.items():
                bucket[value] = bucket.get(value, 0) + count
    result: dict[str, Any] = {
        "repeats": repeats.pop(),
        "overall": _merge_cells(part["overall"] for part in parts),
        "chart_type": merged("chart_type", CHART_TYPES),
        "variant": merged("variant", VARIANTS),
        "question_type": question_type,
        "flags": flags,
    }
    if with_deltas:
        result["delta_vs_base"] = deltas_vs_base(result["variant"])
    return result


def deltas_vs_base(variants: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per robustness variant: mean(variant) - mean(base) for each metric; empty without a ``base`` cell."""
    base = variants.get(BASE)
    if base is None:
        return {}
    return {
        variant: {metric: round(_rate(cell, metric) - _rate(base, metric), 4) for metric in METRICS}
        for variant, cell in variants.items()
        if variant != BASE
    }


def _rate(cell: Mapping[str, Any], metric: str) -> float:
    """Unrounded mean over repeats of ``metric`` in a breakdown cell."""
    collective_metric = metric.startswith("collective_")
    hits = cell["hits"][metric if collective_metric else METRICS[metric]]
    denominator = cell["figures"] if collective_metric else cell["questions"]
    return sum(hit / denominator for hit in hits) / len(hits)
