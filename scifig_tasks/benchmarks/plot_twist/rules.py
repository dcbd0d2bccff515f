"""Plot Twist / Chart101 protocol (Razeghi et al. 2024): prompt, answer extraction, the three accuracies, aggregation.

Plot Twist paper Fig. 2 and App. B.3 (prompts), App. B.4 (reformatting): the answer sentence is read, then scored
exact, relaxed (5%) and range-based, per figure too. Manual: tasks/README.md, 'How the rules are implemented'.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from scifig_tasks.core.raw_outputs import OutputStatus, output_status

if TYPE_CHECKING:
    from scifig_tasks.core.judge.client import JudgeClient

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
"""Robustness variants (the paper's robustness tests) and the chart types each one applies to."""
ROBUSTNESS_VARIANTS: tuple[str, ...] = tuple(VARIANT_CHART_TYPES)
VARIANTS: tuple[str, ...] = (BASE, *ROBUSTNESS_VARIANTS)
TITLE_VARIANTS: frozenset[str] = frozenset(("title_none", "title_correct", "title_misleading"))

# ---- prompts (paper App. B.3, Fig. 2, Fig. 3; authors' pipeline/core.py) ----------------------------------------

OPEN_PROMPT = "Answer the question based on the Figure"
"""App. B.3, the prompt of PaLI-3, CogVLM and ChartLlama: ``"Answer the question based on the Figure + [Question]."``"""
OPEN_FIGURE_ONLY_PROMPT = "Answer the question only based on the figure"
"""App. B.3, the same for the robustness-to-title test: ``"Answer the question only based on the figure +
[Question]."``"""
API_PROMPT = (
    "Please answer the following question based on the plot/figure with the response in the same format: "
    '"The answer is ANS. I hope the answer is correct." In which the ANS represents the correct answer. '
    "Be concise and accurate in your reply."
)
"""Fig. 2, the prompt of Gemini Pro Vision and GPT-4V; the question follows it."""
QUESTION_SEPARATOR = " "
"""Between the instruction and the question. The paper writes ``+``; neither it nor the authors' code gives the
separator, so one space is our choice."""

ANSWER_START = "The answer is "
ANSWER_END = ". I hope the answer is correct"
ANSWER_SENTENCE = "The answer is ANS. I hope the answer is correct."

PromptStyle = Literal["api", "open"]


def task_prompt(doc: Mapping[str, Any], options: Mapping[str, Any]) -> str:
    """The prompt for a row under the task's ``protocol`` option (:data:`PROTOCOLS`, :data:`DEFAULT_PROTOCOL` unset)."""
    style = get_protocol(options.get("protocol", DEFAULT_PROTOCOL)).prompt
    return build_prompt(doc["question"], doc.get("variant") or BASE, style)


def build_prompt(question: str, variant: str = BASE, style: PromptStyle = "api") -> str:
    """The model prompt: ``api`` -- Fig. 2's instruction, then the question (every variant); ``open`` -- App. B.3's
    instruction, then the question, with "only based on the figure" on the title variants."""
    if style == "api":
        instruction = API_PROMPT
    elif style == "open":
        instruction = OPEN_FIGURE_ONLY_PROMPT if variant in TITLE_VARIANTS else OPEN_PROMPT
    else:
        raise ValueError(f"unknown Plot Twist prompt style {style!r} (expected 'api' or 'open')")
    return f"{instruction}{QUESTION_SEPARATOR}{question}"


def _authors_fstring(*lines: str) -> str:
    """The text of the authors' triple-quoted f-string: it opens with a newline, every line but the empty ones
    carries the method body's 8-space indentation, and the closing quotes sit on an indented line of their own."""
    return "\n" + "\n".join(lines) + "\n        "


_INDENT = "        "
_REFORMAT_HEAD = (
    _INDENT + "Extract the concise answer from the model's response as shown in the examples below, make sure the "
    "answer is in this format:",
    _INDENT + '"The answer is ANS. I hope the answer is correct."',
    _INDENT,
)
"""The instruction both of the authors' reformatting prompts open with."""
_REFORMAT_TASK = (
    _INDENT + "Your Task:",
    _INDENT + "Given the question and model answer below, extract the concise answer.",
    "",
    _INDENT + 'Question: "{question}"',
    _INDENT + 'Model Answer: "{model_raw_output}"',
    _INDENT + "Extracted Answer:",
)
"""The task both prompts close with, after their examples."""
REFORMAT_PROMPT_PALI = _authors_fstring(
    *_REFORMAT_HEAD,
    _INDENT + "Example 1:",
    _INDENT + 'Question: "How many food items are shown in the bar graph?"',
    _INDENT + 'Model Answer: "<extra_id_0> 0"',
    _INDENT + "Extracted Answer: The answer is 0. I hope the answer is correct.",
    "",
    _INDENT + "Example 2:",
    _INDENT + 'Question: "How many bars are in the figure?"',
    _INDENT + 'Model Answer: "<extra_id_0> There are three bars in the figure."',
    _INDENT + "Extracted Answer: The answer is three. I hope the answer is correct.",
    "",
    _INDENT + "Example 3:",
    _INDENT + 'Question: "Find missing data of the sequence 24, _ ,32, 33, 42?"',
    _INDENT + 'Model Answer: "<extra_id_0> 33"',
    _INDENT + "Extracted Answer: The answer is 33. I hope the answer is correct.",
    "",
    _INDENT + "Example 4:",
    _INDENT + 'Question: "Which country has highest secondary graduation rate in 2018?"',
    _INDENT + 'Model Answer: "<extra_id_0> Italy"',
    _INDENT + "Extracted Answer: The answer is Italy. I hope the answer is correct.",
    "",
    *_REFORMAT_TASK,
)
"""The reformatting prompt the authors sent for PaLI-3's outputs (``PaliProcessor._format_model_output``; paper
Fig. 3 shows it with typesetting changes), whitespace included."""

REFORMAT_PROMPT_COGVLM = _authors_fstring(
    *_REFORMAT_HEAD,
    _INDENT + "Example 1:",
    _INDENT + 'Question: "How many food items are shown in the bar graph?"',
    _INDENT + 'Model Answer: "There are 11 food items shown in the bar graph.</s>"',
    _INDENT + "Extracted Answer: The answer is 11. I hope the answer is correct.",
    "",
    _INDENT + "Example 2:",
    _INDENT + 'Question: "Is the percentage value of "STEM" segment 52?"',
    _INDENT + 'Model Answer: "Yes, the percentage value of the "STEM" segment is 52.</s>"',
    _INDENT + "Extracted Answer: The answer is Yes. I hope the answer is correct.",
    "",
    _INDENT + "Example 3:",
    _INDENT + 'Question: "What is the colour of India in the graph?"',
    _INDENT + 'Model Answer: "India is represented by the color orange in the graph.</s>"',
    _INDENT + "Extracted Answer: The answer is orange. I hope the answer is correct.",
    "",
    *_REFORMAT_TASK,
)
"""The reformatting prompt the authors sent for CogVLM's and ChartLlama's outputs (``CogVLMProcessor`` and
``ChartLlamaProcessor``, identical text), whitespace included."""

ReformatExamples = Literal["cogvlm", "pali"]
REFORMAT_PROMPTS: dict[str, str] = {"cogvlm": REFORMAT_PROMPT_COGVLM, "pali": REFORMAT_PROMPT_PALI}
REFORMAT_MAX_TOKENS = 64
NO_ANSWER = "None"


def reformat_prompt(question: str, output: str, examples: ReformatExamples = "cogvlm") -> str:
    """The authors' reformatting prompt for ``output`` (the f-string's ``{question}`` and ``{model_raw_output}``
    filled in, nothing else touched)."""
    template = REFORMAT_PROMPTS[examples]
    return template.replace("{question}", question, 1).replace("{model_raw_output}", output, 1)


@dataclass(frozen=True)
class Protocol:
    """How a run prompts and reformats: the prompt style, the reformatting few-shot examples (``None``: never
    reformat) and whether every output is reformatted (the authors' open models) or only outputs without the
    answer sentence."""

    name: str
    prompt: PromptStyle
    reformat: ReformatExamples | None
    reformat_all: bool

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "prompt": self.prompt, "reformat": self.reformat, "reformat_all": self.reformat_all}


PROTOCOLS: dict[str, Protocol] = {
    "api": Protocol("api", "api", "cogvlm", False),
    "open": Protocol("open", "open", "cogvlm", True),
    "open_pali": Protocol("open_pali", "open", "pali", True),
}
"""``api`` (default): Fig. 2's prompt; outputs without the answer sentence reformatted with the CogVLM/ChartLlama
examples. ``open``: App. B.3's prompt, every output reformatted with the CogVLM/ChartLlama examples (the paper's
CogVLM and ChartLlama setting). ``open_pali``: the same with PaLI-3's examples (the paper's PaLI-3 setting)."""
DEFAULT_PROTOCOL = "api"


def get_protocol(protocol: Protocol | str) -> Protocol:
    if isinstance(protocol, Protocol):
        return protocol
    try:
        return PROTOCOLS[protocol]
    except KeyError:
        raise ValueError(
            f"unknown Plot Twist protocol {protocol!r} (expected one of: {', '.join(PROTOCOLS)})"
        ) from None


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

    Scatter questions are classified by their ``x_`` / ``y_`` prefix (the "x questions"), not by substring:
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
    A non-finite number (``nan``, ``inf``, ``1e309``, which reads as ``inf``) is wrong whatever the gold, as is any
    answer to a non-finite gold: ``inf`` would otherwise equal an ``inf`` gold, or fall inside bounds that overflow.
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
    if not (math.isfinite(value) and math.isfinite(target)):
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
    doc: Mapping[str, Any],
    output: str | None,
    judge: JudgeClient | None,
    rule: MarginRule = "synthetic",
    protocol: Protocol | str = DEFAULT_PROTOCOL,
) -> OutputScore:
    """Extract and score one output for ``doc``.

    The judge reformats (with the protocol's few-shot examples) every output when the protocol says so, otherwise
    only outputs without the answer sentence; without a judge (or with ``reformat=None``) the rule reads the raw
    output, and an output without the sentence is not provided.
    """
    setting = get_protocol(protocol)
    status = output_status(output)
    if status != "ok" or output is None:
        return OutputScore(WRONG, None, "not_provided", status)
    margin = range_margin(doc["chart_type"], doc["question_type"], doc["x_range"], doc["y_range"], rule)
    found = has_answer_sentence(output)
    wants_judge = setting.reformat is not None and (setting.reformat_all or not found)
    if not wants_judge or judge is None:
        use: JudgeUse = "judge_off" if wants_judge else "not_used"
        if found:
            extracted = extract_answer(output)
            return OutputScore(score_answer(extracted, doc["answer"], margin), extracted, "rule", status, use)
        return OutputScore(WRONG, None, "not_provided", status, use)
    assert setting.reformat is not None
    prompt = reformat_prompt(doc["question"], output, setting.reformat)
    # a reply without the answer sentence is scored as not provided, and not cached: a rerun asks again
    result = judge.complete(prompt, max_tokens=REFORMAT_MAX_TOKENS, accept=has_answer_sentence)
    if result.status != "judged" or result.text is None:
        return OutputScore(WRONG, None, "not_provided", status, result.status)
    extracted = extract_answer(result.text.strip())
    if extracted is None or extracted == NO_ANSWER:
        return OutputScore(WRONG, None, "not_provided", status, "judged")
    return OutputScore(score_answer(extracted, doc["answer"], margin), extracted, "judge", status, "judged")


def sample_record(
    doc: Mapping[str, Any], scores: Sequence[OutputScore], protocol: Protocol | str = DEFAULT_PROTOCOL
) -> dict[str, Any]:
    """Per-question record (one entry per repeat in each list, and the protocol's name), logged and aggregated by
    :func:`breakdown`."""
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
        "protocol": get_protocol(protocol).name,
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
        "protocol": _protocol_of({record.get("protocol", DEFAULT_PROTOCOL) for record in records}),
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


def _protocol_of(names: set[str]) -> dict[str, Any]:
    """The one protocol of a set of records or breakdowns, described; mixing protocols is refused."""
    if len(names) != 1:
        raise ValueError(f"Plot Twist results mix protocols {sorted(names)}: score each protocol separately")
    return get_protocol(names.pop()).describe()


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
    protocols = {part.get("protocol", {}).get("name", DEFAULT_PROTOCOL) for part in parts}
    result: dict[str, Any] = {
        "protocol": _protocol_of(protocols),
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
