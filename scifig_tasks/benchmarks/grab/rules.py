"""GRAB protocol (Roberts et al. 2024): the prompt, exact match, LLM extraction and the precision classes.

GRAB paper §4.2.3 and README: strip leading whitespace, truncate the output to the answer's length, compare with
``==``; §4.5's LLM-extraction ablation; Table 1's precision classes. Manual: tasks/README.md, 'Prompt, exact match
and LLM extraction'.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from scifig_tasks.core.judge.replies import ascii_numerals
from scifig_tasks.core.raw_outputs import OutputStatus, output_status
from scifig_tasks.core.stats import Tally

TASKS: tuple[str, ...] = ("properties", "function", "series", "transform")
"""The ``task`` values of the published data (the paper says Properties, Functions, Series, Transforms)."""

CATEGORIES: tuple[str, ...] = (
    "Intercepts and Gradients",
    "Stationary Points",
    "Measures of Spread",
    "Trigonometric",
    "Functions",
    "Counting",
    "Extrema",
    "Area Bounded",
    "Correlation",
    "Range",
)
MAX_COMPLEXITY = 9

PROMPT_TEMPLATE = (
    "\n{question}\n Only provide the answer, no reasoning steps.\n"
    "If you are unsure, still provide an answer. Answer: \n\n"
)
"""The README's ``prompt_template`` as Python evaluates it (the default)."""

PAPER_PROMPT_TEMPLATE = (
    "{question}\n Only provide the answer, no reasoning steps. If you are unsure, still provide an answer. Answer:\n"
)
"""The inference prompt as the paper's appendix A prints it (one line, no space after "Answer:")."""

PROMPTS: dict[str, str] = {"readme": PROMPT_TEMPLATE, "paper": PAPER_PROMPT_TEMPLATE}

EXTRACTION_PROMPT = (
    'A generative model has been asked this question: "{question}" about a plot.\n'
    ' The output from the model answering the question is: "{output}"\n'
    " Extract just the answer from the generative model output. Maintain the same precision given by the model."
    ' Convert any numbers to digits (e.g., "one" to "1"). Remove any additional terms like \'approximately\'.'
    " Return only the extracted numeric answer, without any additional text or explanation."
    ' If no answer is provided, return "None".'
)


Precision = Literal["integer", "1dp", "nearest10", "list", "equation"]
PRECISIONS: tuple[str, ...] = ("integer", "1dp", "nearest10", "list", "equation")
"""The answer formats a precision sentence asks for (finer than the paper's classes)."""

PrecisionClass = Literal["integer", "1dp", "nearest10"]
PRECISION_CLASSES: tuple[str, ...] = ("integer", "1dp", "nearest10")
"""The paper's precision classes (Table 1: integer 1,575, 1 d.p. 565, nearest 10: 30)."""

# Checked in this order: the list and equation questions also end with the integer sentence.
_PRECISION_MARKERS: tuple[tuple[str, Precision], ...] = (
    ("Write your answer in the form [", "list"),
    ("Write your answer in the form y =", "equation"),
    ("Give your answer to 1 decimal place.", "1dp"),
    ("Give your answer to the nearest 10.", "nearest10"),
    ("Give your answer as an integer.", "integer"),
)


def build_prompt(question: str, variant: str = "readme") -> str:
    """The GRAB inference prompt of one question: the README's (default) or the paper appendix's wording."""
    if variant not in PROMPTS:
        raise ValueError(f"unknown GRAB prompt variant {variant!r} (expected one of {', '.join(PROMPTS)})")
    return PROMPTS[variant].format(question=question)


def precision_of(question: str) -> Precision:
    """Precision class stated by the question's precision sentence; raises if the question states none."""
    for marker, precision in _PRECISION_MARKERS:
        if marker in question:
            return precision
    raise ValueError(f"GRAB question states no known precision sentence: {question[-120:]!r}")


def precision_class(question: str) -> PrecisionClass:
    """The paper's precision class: the list and equation questions count as integer (their sentence asks for
    integers), as in Table 1."""
    precision = precision_of(question)
    return "integer" if precision in ("list", "equation") else precision  # type: ignore[return-value]


def truncate(output: str, answer: str) -> str:
    """The output as the authors' rule compares it: leading whitespace stripped, cut to ``len(answer)`` (``"39"`` is
    ``"3"`` for the answer ``"3"``)."""
    return output.lstrip()[: len(answer)]


def exact_match(output: str | None, answer: str) -> bool:
    """GRAB core metric: leading whitespace stripped, output truncated to ``len(answer)``, compared with ``==``."""
    if output is None:
        return False
    return truncate(output, answer) == answer


README_EXTRACTION_PROMPT = (
    "    \n"
    '    A generative model has been asked this question: "{question}" about a plot.\n\n'
    '    The output from the model answering the question is: "{output}"\n\n'
    "    Extract just the answer from the generative model output. Maintain the same precision given by the model. \n"
    '    Convert any numbers to digits (e.g., "one" to "1"). Remove any additional terms like \'approximately\'.\n'
    "    Return only the extracted numeric answer, without any additional text or explanation."
    ' If no answer is provided, return "None".\n'
    "    "
)
"""The README's ``llama3_answer_extraction`` template as Python evaluates it (indented lines, blank lines)."""

EXTRACTION_PROMPTS: dict[str, str] = {"paper": EXTRACTION_PROMPT, "readme": README_EXTRACTION_PROMPT}


def extraction_prompt(question: str, output: str, variant: str = "paper") -> str:
    """The LLM-extraction prompt for one model output: the paper appendix's text (default) or the README code's."""
    if variant not in EXTRACTION_PROMPTS:
        raise ValueError(
            f"unknown GRAB extraction prompt {variant!r} (expected one of {', '.join(EXTRACTION_PROMPTS)})"
        )
    return EXTRACTION_PROMPTS[variant].format(question=question, output=output)


Rule = Literal["whole_answer", "truncation", "llm_extraction"]
RULES: dict[str, str] = {
    "whole_answer": "whole answer (scifig's default)",
    "truncation": "truncation to the answer's length (the authors' rule)",
    "llm_extraction": "LLM extraction, then truncation (the paper's ablation)",
}
"""The rule that gave a verdict, as the report names it: ``grab`` scores the answer as a whole
(:mod:`scifig_tasks.benchmarks.grab.whole_answer`), ``grab_paper`` as the authors' code (:func:`exact_match`),
``grab_llm_extract`` as the paper's ablation."""


@dataclass(frozen=True)
class GrabScore:
    """Per-question outcome of a GRAB protocol; ``judge`` records how the ablation extractor was used.

    ``rule`` gave ``correct``; ``whole_answer_correct`` and ``truncation_correct`` are both rules' verdicts on the same
    output (None where not computed: the ablation), so a run counts where they differ; ``reading`` / ``read`` /
    ``reason`` say how the whole-answer rule read the output."""

    correct: bool
    output_status: OutputStatus
    judge: Literal["not_used", "judged", "judge_failed", "judge_off"] = "not_used"
    extracted: str | None = None
    rule: Rule = "truncation"
    reading: str | None = None
    read: str | None = None
    reason: str = ""
    whole_answer_correct: bool | None = None
    truncation_correct: bool | None = None
    truncated: str | None = None
    """The text the authors' rule compared with the answer (:func:`truncate`; of the judge's extraction under the
    ablation), where it was applied: recorded so a reader sees what decided, e.g. ``"3"`` cut from ``"39"``."""


def score_exact(output: str | None, answer: str) -> GrabScore:
    """Score one output with the authors' rule alone (truncation, then ``==``)."""
    status = output_status(output)
    correct = status == "ok" and exact_match(output, answer)
    cut = truncate(output, answer) if status == "ok" and output is not None else None
    return GrabScore(correct=correct, output_status=status, truncation_correct=correct, truncated=cut)


def score_extracted(
    output: str | None,
    answer: str,
    judge_status: Literal["judged", "judge_failed", "judge_off"],
    judge_text: str | None,
) -> GrabScore:
    """Score one output with the LLM-extraction protocol given the judge's reply (``None`` when it failed).

    A failed or disabled judge leaves the question wrong and flagged: the raw output is never scored in its place.
    The reply is read in ASCII numerals (:func:`ascii_numerals`), as :func:`extraction_reply_readable` reads it.
    """
    status = output_status(output)
    if status != "ok":
        return GrabScore(correct=False, output_status=status, rule="llm_extraction")
    if judge_status != "judged" or judge_text is None:
        return GrabScore(correct=False, output_status=status, judge=judge_status, rule="llm_extraction")
    # scored as the authors' code scores the reply (README: strip, truncate, ==), its numbers in ASCII
    extracted = ascii_numerals(judge_text).strip()
    correct = extracted != "None" and exact_match(extracted, answer)
    cut = truncate(extracted, answer) if extracted != "None" else None
    return GrabScore(correct, status, "judged", extracted, rule="llm_extraction", truncated=cut)


_QUOTE_PAIRS = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}


def read_extraction(reply: str) -> str:
    """A judge reply without the wrapping the shape check tolerates around an answer -- surrounding white space, one
    pair of surrounding quotes, a final period (``"15".`` is the number ``15`` in quotes). Only for
    :func:`extraction_reply_readable`: an accepted reply is scored as the authors' code scores it
    (:func:`score_extracted`)."""
    text = reply.strip()
    for _ in range(2):  # a period inside or outside the quotes
        if text.endswith("."):
            text = text[:-1].rstrip()
        if len(text) >= 2 and _QUOTE_PAIRS.get(text[0]) == text[-1]:
            text = text[1:-1].strip()
    return text


_NUMBER = r"[+\-\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?|[+\-\u2212]?\.\d+"
_LIST_ITEM = r"[+\-\u2212]?\d+(?:\.\d+)?"
_EXTRACTION_SHAPES: dict[str, re.Pattern[str]] = {
    "number": re.compile(_NUMBER),
    "list": re.compile(rf"\[\s*{_LIST_ITEM}(?:\s*,\s*{_LIST_ITEM})*\s*\]|{_LIST_ITEM}(?:\s*,\s*{_LIST_ITEM})+"),
    "equation": re.compile(r"y\s*=(?=.*[\dxX])(?:[\dxX.^()+\-\u2212*/ \u00b2\u00b3\u2074]|sin|cos|tan)+", re.DOTALL),
}
"""The answer alone, in each answer format: a number (any precision: the prompt keeps the model's), a list of numbers
(``[x1, x2]``, or the numbers without brackets), an equation ``y = ...`` over numbers, ``x``, operators, powers and
``sin`` / ``cos`` / ``tan``."""


def extraction_shape(answer_format: Precision) -> re.Pattern[str]:
    """The reply shape of a question's answer format: the integer, 1 d.p. and nearest-10 questions take a number."""
    return _EXTRACTION_SHAPES.get(answer_format, _EXTRACTION_SHAPES["number"])


def extraction_reply_readable(reply: str, answer_format: Precision) -> bool:
    """Whether a judge reply answers the extraction prompt: once read (:func:`read_extraction`), it is the answer
    alone in the question's answer format (:func:`extraction_shape`), or the prompt's "None" (no answer given). Its
    numbers are read in ASCII first (:func:`ascii_numerals`: ``٢``, ``１`` and ``−3`` are ``2``, ``1`` and ``-3``), as
    :func:`score_extracted` reads them, so that the check and the score read the same text.

    Anything else -- an error text holding a status code, a refusal, an answer with words or units around it, a
    number where a list or an equation is asked -- is not an extraction: asked again, never cached, and when retries
    run out the question is ``judge_failed``. A bare number is a number: a reply of ``500`` to a numeric question
    cannot be told from an extraction."""
    text = read_extraction(ascii_numerals(reply))
    return text.lower() == "none" or extraction_shape(answer_format).fullmatch(text) is not None


def sample_record(doc: Mapping[str, Any], score: GrabScore) -> dict[str, Any]:
    """The per-question record kept in sample logs and tallied into the breakdown."""
    return {
        "pid": doc["pid"],
        "task": doc["task"],
        "category": doc["category"],
        "complexity": doc["complexity"],
        "precision": precision_class(doc["question"]),
        "answer_format": precision_of(doc["question"]),
        "correct": int(score.correct),
        "output_status": score.output_status,
        "judge": score.judge,
        "extracted": score.extracted,
        "rule": score.rule,
        **({"reading": score.reading, "read": score.read, "reason": score.reason} if score.reading else {}),
        **({"truncated": score.truncated} if score.truncated is not None else {}),
        **{
            f"{rule}_correct": int(verdict)
            for rule, verdict in (
                ("whole_answer", score.whole_answer_correct),
                ("truncation", score.truncation_correct),
            )
            if verdict is not None
        },
    }


def rules_differ(record: Mapping[str, Any]) -> str | None:
    """Whether the two rules agree on this output (``agree``) or which alone counts it right, per answer format
    (``integer/truncation_only``: ``"39"`` against ``"3"``; ``integer/whole_answer_only``: ``"The answer is 3."``);
    None when the record holds one verdict (the ablation, a record written before both were kept)."""
    whole, truncation = record.get("whole_answer_correct"), record.get("truncation_correct")
    if whole is None or truncation is None:
        return None
    if bool(whole) == bool(truncation):
        return "agree"
    return f"{record.get('answer_format', 'unknown')}/{'truncation' if truncation else 'whole_answer'}_only"


def breakdown(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Accuracy overall, per task, category, complexity (0-9), the paper's precision class (``precision``) and the
    finer answer format (``answer_format``), with 95% Wilson intervals and flags: output status, judge use, how the
    whole-answer rule read the outputs (``reading``) and the outputs the two rules score differently, per answer
    format (``rules_differ``, :func:`rules_differ`)."""
    tally = Tally()
    for record in records:
        flags = {"output_status": record["output_status"], "judge": record["judge"]}
        if record.get("rule") == "whole_answer" and record.get("reading"):
            flags["reading"] = record["reading"]
        if (differ := rules_differ(record)) is not None:
            flags["rules_differ"] = differ
        tally.add(
            bool(record["correct"]),
            {
                key: record[key]
                for key in ("task", "category", "complexity", "precision", "answer_format")
                if key in record
            },
            flags,
        )
    return tally.to_dict()


def merge_breakdowns(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Exact breakdown of a group of subtasks, recomputed from their counts (micro over questions)."""
    return Tally.from_dicts(parts).to_dict()
