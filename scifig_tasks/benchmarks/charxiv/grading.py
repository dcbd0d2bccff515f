"""CharXiv grading by the LLM judge: the authors' grading queries, the reading of the grader's replies, the asking.

The CharXiv authors (Wang et al., NeurIPS 2024; ``src/evaluate.py``, ``descriptive_utils.py``,
``reasoning_utils.py``) grade with ``gpt-4o-2024-05-13`` at temperature 0, ``top_p`` 1, seed 42, JSON mode, 256
tokens doubled up to 1024 when the JSON comes back cut off. Descriptive responses are graded in batches: grouped by
template (1..19, in that order), within a template in question order, up to 5 per query, under the template's
overarching question and rubric (keys ``extract_answer_T{i}`` / ``score_T{i}``); a reasoning response is graded alone
with its answer type's rules (key ``extracted_answer``, as their parser reads it, although their prefix asks for
``extract_answer``). Scores are 0 or 1. The texts are the authors' (:mod:`.authors_text`).

A reply of another shape (not a JSON object, a key missing, a score outside {0, 1}) is asked again (the judge
client's retries) and then the question is :class:`Ungraded`, with the reason: never the authors' -1, never a 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from scifig_tasks.benchmarks.charxiv.authors_text import text

if TYPE_CHECKING:
    from scifig_tasks.core.judge.client import JudgeClient

PAPER_JUDGE_MODEL = "gpt-4o-2024-05-13"
GRADING_REQUEST: Mapping[str, Any] = MappingProxyType(
    {"response_format": {"type": "json_object"}, "seed": 42, "top_p": 1}
)
"""The request fields the authors set besides the model, the temperature (0, the judge client's default) and
``max_tokens``; part of the judge cache's key."""
MAX_TOKENS = (256, 512, 1024)
"""The authors' reply budget: 256 tokens, doubled while the JSON comes back cut off, at most 1024."""
PER_QUERY = 5
"""The authors' descriptive batch (``nq_per_query``)."""
TEMPLATES = range(1, 20)
RUBRIC_OF_TEMPLATE = {
    1: "title",
    **dict.fromkeys((2, 3, 4, 5, 6, 7), "ocr"),
    **dict.fromkeys((8, 9, 10, 12, 14, 15, 17, 19), "quant"),
    11: "bool",
    13: "enum",
    16: "trend",
    18: "layout",
}
"""The rubric (with its in-context example) each descriptive template is graded by (the authors' ``get_rubric``)."""
PAPER_REASONING_KEYS = ("extracted_answer",)
"""The key the authors' reasoning parser reads (their prefix asks for ``extract_answer``; their examples and parser use
``extracted_answer``): a reply with only ``extract_answer`` fails their parsing, and ours."""
REASONING_KEYS = ("extracted_answer", "extract_answer")
"""The default protocol also takes the key the reasoning prefix asks for."""

T = TypeVar("T")


@dataclass(frozen=True)
class GradingQuery:
    """One grading request: the questions it grades (in the order of its ``T1``, ``T2``, ...) and its text."""

    query_ids: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Grade:
    """The grader's verdict on one response: the answer it extracted (as text) and the score, 0 or 1."""

    extracted: str
    score: int


@dataclass(frozen=True)
class Ungraded:
    """No verdict: the judge failed, or its reply never came in the shape asked for (after the client's retries)."""

    error: str


# --- the queries ------------------------------------------------------------------------------------------------


def descriptive_grading_query(template: int, batch: Sequence[tuple[str, str]]) -> str:
    """The authors' grading text for descriptive ``template`` over ``batch``, a list of (response, ground truth)."""
    if template not in TEMPLATES:
        raise ValueError(f"CharXiv has descriptive templates 1..19, not {template!r}")
    keys = [key for i in range(1, len(batch) + 1) for key in (f"extract_answer_T{i}", f"score_T{i}")]
    prefix = (
        text("descriptive_grading_prefix")
        .replace("<|NUM_TRIPLETS|>", str(len(batch)))
        .replace("<|OVERARCHING_QUESTION|>", text("descriptive_grading_questions", template))
        .replace("<|JSON_KEYS|>", str(keys))
    )
    triplets = "".join(
        f"T{i}:\nResponse {i}: {response}\nGround Truth {i}: {answer}\n\n"
        for i, (response, answer) in enumerate(batch, start=1)
    )
    return prefix + text("descriptive_grading_rubrics", RUBRIC_OF_TEMPLATE[template]) + triplets


def _question_order(items: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``items`` in the authors' question order (chart id, then question index: ``"<figure_id>_<i>"``), or as
    given when an id is not of that form."""
    if all(re.fullmatch(r"\d+_\d+", str(item["query_id"])) for item in items):
        return sorted(items, key=lambda item: tuple(int(part) for part in str(item["query_id"]).split("_")))
    return list(items)


def descriptive_grading_queries(items: Sequence[Mapping[str, Any]], per_query: int = PER_QUERY) -> list[GradingQuery]:
    """The authors' descriptive grading queries over ``items`` (each with ``query_id``, ``template``, ``response``,
    ``answer``): grouped by template in template order, within one in question order, ``per_query`` at most each."""
    if per_query < 1:
        raise ValueError("a grading query grades at least one response")
    ids = [str(item["query_id"]) for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError("CharXiv grading: a query_id appears twice")
    by_template: dict[int, list[Mapping[str, Any]]] = {}
    for item in _question_order(items):
        by_template.setdefault(int(item["template"]), []).append(item)
    queries = []
    for template in sorted(by_template):
        group = by_template[template]
        for start in range(0, len(group), per_query):
            batch = group[start : start + per_query]
            body = descriptive_grading_query(template, [(item["response"], item["answer"]) for item in batch])
            queries.append(GradingQuery(tuple(str(item["query_id"]) for item in batch), body))
    return queries


def reasoning_grading_query(raw_question: str, answer_type: int, answer: str, response: str) -> str:
    """The authors' grading text for one reasoning response: the prefix, then the rules and examples of
    ``answer_type`` (1..4) with the question (without its answer-format instruction), the ground truth and the
    response put in (in that order, each once, as the authors' chained ``replace``)."""
    if answer_type not in (1, 2, 3, 4):
        raise ValueError(f"CharXiv has reasoning answer types 1..4, not {answer_type!r}")
    rules = (
        text("reasoning_grading_instructions", answer_type)
        .replace("<|question|>", raw_question)
        .replace("<|ground_truth|>", answer)
        .replace("<|response|>", response)
    )
    return text("reasoning_grading_prefix") + rules


# --- the replies ------------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


def _json_object(reply: str) -> dict[str, Any] | None:
    """The JSON object a reply holds (alone, or in one markdown code fence), else None."""
    body = reply.strip()
    fenced = _FENCE.match(body)
    try:
        content = json.loads(fenced.group(1) if fenced else body)
    except ValueError:
        return None
    return content if isinstance(content, dict) else None


def _score(value: Any) -> int | None:
    """0 or 1 as the authors' check takes it (``value in [0, 1]``: also 0.0, 1.0 and booleans), else None."""
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    return None


def _as_text(value: Any) -> str:
    """An extracted answer as text (the grader may give a number: ``"extract_answer_T1": 1.0``)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def read_descriptive(reply: str, n: int) -> list[Grade] | None:
    """The grades of a batch of ``n`` in the grader's reply (keys ``extract_answer_T{i}``, ``score_T{i}``, every
    score 0 or 1: the authors' ``verify_grading_output``), or None for a reply of another shape."""
    content = _json_object(reply)
    if content is None:
        return None
    grades = []
    for i in range(1, n + 1):
        answer_key, score_key = f"extract_answer_T{i}", f"score_T{i}"
        if answer_key not in content or score_key not in content:
            return None
        score = _score(content[score_key])
        if score is None:
            return None
        grades.append(Grade(_as_text(content[answer_key]), score))
    return grades


def read_reasoning(reply: str, keys: Sequence[str] = PAPER_REASONING_KEYS) -> Grade | None:
    """The grade in the grader's reply to a reasoning query (the first of ``keys`` present, and ``score``, 0 or 1),
    or None for a reply of another shape. The authors' parser reads ``extracted_answer`` and ``score`` and checks no
    value; a score outside {0, 1} here is another shape (their statistics would count it 0)."""
    content = _json_object(reply)
    if content is None or "score" not in content:
        return None
    key = next((key for key in keys if key in content), None)
    score = _score(content["score"])
    if key is None or score is None:
        return None
    return Grade(_as_text(content[key]), score)


def cut_off(reply: str) -> bool:
    """Whether a reply is a JSON object cut off before its end (the reply ran out of tokens): the authors' "Unterminated
    string", or any JSON error at the very end of the text."""
    body = reply.strip()
    if body.startswith("```"):
        body = re.sub(r"^```(?:json)?", "", body, flags=re.IGNORECASE).strip()
    if not body.startswith("{"):
        return False
    try:
        json.loads(body)
    except json.JSONDecodeError as error:
        return error.msg.startswith("Unterminated string") or error.pos >= len(body)
    return False


# --- asking the judge -------------------------------------------------------------------------------------------

Reader = Callable[[str], T | None]
"""What a reply says (None for a reply of another shape)."""


def _check(read: Reader[T], final: bool) -> Callable[[str], bool]:
    """The judge client's check of a reply to a grading query: ``read`` reads it, or (below the last budget) it is a
    JSON object cut off (:func:`cut_off`), to be asked again with twice the tokens."""
    return lambda reply: read(reply) is not None or (not final and cut_off(reply))


def ask(judge: JudgeClient, prompts: Sequence[str], read: Reader[T] | Sequence[Reader[T]]) -> list[T | Ungraded]:
    """Each prompt's reading (``read(reply)``, or the prompt's own reader of a list ``read``; None for a reply of
    another shape) or :class:`Ungraded`, asked as the authors ask: with :data:`GRADING_REQUEST` at 256 tokens, and
    again at 512 and at 1024 for a reply cut off. All prompts of a budget are asked together, whatever their reader
    (the judge's bound full until the last replies, not a wave per reader).

    A cut-off reply below 1024 tokens is accepted (and cached under its token budget, so a rerun goes on at the
    next budget); at 1024 it is, like any reply of another shape, asked again by the judge client and then
    ``judge_failed``.
    """
    readers = [read] * len(prompts) if callable(read) else list(read)
    if len(readers) != len(prompts):
        raise ValueError(f"CharXiv grading: {len(readers)} readers for {len(prompts)} prompts")
    outcomes: dict[int, T | Ungraded] = {}
    pending = list(range(len(prompts)))
    for max_tokens in MAX_TOKENS:
        if not pending:
            break
        final = max_tokens == MAX_TOKENS[-1]
        # one check per reader: a prompt asked twice is sent once
        checks = {reader: _check(reader, final) for reader in dict.fromkeys(readers[i] for i in pending)}
        results = judge.complete_many(
            [prompts[i] for i in pending],
            max_tokens=max_tokens,
            request=GRADING_REQUEST,
            accept=[checks[readers[i]] for i in pending],
        )
        again = []
        for i, result in zip(pending, results, strict=True):
            value = readers[i](result.text) if result.status == "judged" and result.text is not None else None
            if value is not None:
                outcomes[i] = value
            elif result.status == "judged" and not final:
                again.append(i)  # cut off: ask with twice the tokens
            else:
                outcomes[i] = Ungraded(f"{result.status}: {result.error or 'reply not in the shape asked for'}")
        pending = again
    return [outcomes[i] for i in range(len(prompts))]


@dataclass(frozen=True)
class _Asked:
    """One grading query: the questions it grades, its text and the reader of its reply (a grade per question)."""

    query_ids: tuple[str, ...]
    text: str
    read: Reader[list[Grade]]


def _descriptive_asks(items: Sequence[Mapping[str, Any]], per_query: int) -> list[_Asked]:
    readers: dict[int, Reader[list[Grade]]] = {}  # one per batch size (a batch's reader needs its size)
    asked = []
    for query in descriptive_grading_queries(items, per_query):
        size = len(query.query_ids)
        read = readers.setdefault(size, lambda reply, n=size: read_descriptive(reply, n))
        asked.append(_Asked(query.query_ids, query.text, read))
    return asked


def _reasoning_asks(items: Sequence[Mapping[str, Any]], paper: bool) -> list[_Asked]:
    keys = PAPER_REASONING_KEYS if paper else REASONING_KEYS

    def read(reply: str) -> list[Grade] | None:
        grade = read_reasoning(reply, keys)
        return None if grade is None else [grade]

    return [
        _Asked(
            (str(item["query_id"]),),
            reasoning_grading_query(item["raw_question"], int(item["answer_type"]), item["answer"], item["response"]),
            read,
        )
        for item in items
    ]


def grade(
    judge: JudgeClient,
    descriptive: Sequence[Mapping[str, Any]] = (),
    reasoning: Sequence[Mapping[str, Any]] = (),
    *,
    per_query: int = PER_QUERY,
    paper: bool = True,
) -> dict[str, Grade | Ungraded]:
    """Per ``query_id``, the grade of each descriptive item (``query_id``, ``template``, ``response``, ``answer``), in
    the authors' batches of ``per_query`` (the paper protocol; the default protocol grades a batch of one), and of
    each reasoning item (``query_id``, ``raw_question``, ``answer_type``, ``answer``, ``response``), one query each
    (``paper``: read only ``extracted_answer``, as the authors' parser; otherwise the prompt's own ``extract_answer``
    too, :data:`REASONING_KEYS`). Every query is asked in one :func:`ask`. A batch that is never read leaves each of
    its questions :class:`Ungraded`."""
    asked = _descriptive_asks(descriptive, per_query) + _reasoning_asks(reasoning, paper)
    outcomes = ask(judge, [query.text for query in asked], [query.read for query in asked])
    graded: dict[str, Grade | Ungraded] = {}
    for query, outcome in zip(asked, outcomes, strict=True):
        if isinstance(outcome, Ungraded):
            graded.update(dict.fromkeys(query.query_ids, outcome))
        else:
            graded.update(zip(query.query_ids, outcome, strict=True))
    return graded


def grade_descriptive(
    judge: JudgeClient, items: Sequence[Mapping[str, Any]], per_query: int = PER_QUERY
) -> dict[str, Grade | Ungraded]:
    """Per ``query_id``, the grade of each descriptive item (:func:`grade`)."""
    return grade(judge, items, per_query=per_query)


def grade_reasoning(
    judge: JudgeClient, items: Sequence[Mapping[str, Any]], *, paper: bool = True
) -> dict[str, Grade | Ungraded]:
    """Per ``query_id``, the grade of each reasoning item, one query each (:func:`grade`)."""
    return grade(judge, reasoning=items, paper=paper)
