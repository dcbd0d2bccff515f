"""GRAB's multiple-choice ablation of the properties task: the distractor rule and the prompt.

GRAB paper §4.7: 5 options, distractors sampled close to the true value, chance 20%; the paper gives neither the
distractor rule nor the prompt, so these are ours. Manual: tasks/README.md, 'Multiple-choice options and prompt'.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from scifig_tasks.benchmarks.grab import answers as grab_answers
from scifig_tasks.benchmarks.grab.rules import precision_of
from scifig_tasks.core import audit
from scifig_tasks.core.multiple_choice import Resolution, judge_use, resolve_choice
from scifig_tasks.core.stats import Tally

if TYPE_CHECKING:
    from scifig_tasks.core.judge.client import JudgeClient

N_OPTIONS = 5
LETTERS = "ABCDE"
MAX_STEPS = 5
MC_INSTRUCTION = "Answer with the letter of the correct option (A, B, C, D or E) only."

# (substring of the question, lowest value in steps of the precision or as a number): first match wins.
_POSITIVE = ("How many", "amplitude", "period", "domain length")
_NON_NEGATIVE = ("variance", "interquartile range", "range span", "total area")
_UNIT = ("correlation coefficient",)


def _rng(seed: int, question: str, answer: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{question}\x00{answer}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _bounds(question: str, step: Fraction) -> tuple[Fraction | None, Fraction | None]:
    if any(key in question for key in _UNIT):
        return Fraction(-1), Fraction(1)
    if any(key in question for key in _POSITIVE):
        return step, None
    if any(key in question for key in _NON_NEGATIVE):
        return Fraction(0), None
    return None, None


def _scalar_options(answer: str, question: str, precision: str, rng: random.Random) -> tuple[list[str], str]:
    step = grab_answers.STEPS[precision]
    value = Fraction(answer)
    low, high = _bounds(question, step)
    low = value if low is not None and value < low else low
    high = value if high is not None and value > high else high
    below = [value - k * step for k in range(1, MAX_STEPS + 1) if low is None or value - k * step >= low]
    above = [value + k * step for k in range(1, MAX_STEPS + 1) if high is None or value + k * step <= high]
    ranks = [rank for rank in range(N_OPTIONS) if rank <= len(below) and N_OPTIONS - 1 - rank <= len(above)]
    if not ranks:
        raise ValueError(f"no room for {N_OPTIONS - 1} distractors around {answer!r} ({question[-80:]!r})")
    rank = rng.choice(ranks)
    values = sorted([value, *rng.sample(below, rank), *rng.sample(above, N_OPTIONS - 1 - rank)])
    texts = [grab_answers.format_number(option, precision) for option in values]  # type: ignore[arg-type]
    return texts, LETTERS[rank]


def _shuffled(answer: str, distractors: list[str], rng: random.Random) -> tuple[list[str], str]:
    if len(distractors) < N_OPTIONS - 1:
        raise ValueError(f"only {len(distractors)} distractors for {answer!r}")
    texts = [answer, *rng.sample(distractors, N_OPTIONS - 1)]
    rng.shuffle(texts)
    return texts, LETTERS[texts.index(answer)]


def _list_options(answer: str, rng: random.Random) -> tuple[list[str], str]:
    first, second = grab_answers.parse_list(answer)
    distractors = [
        grab_answers.format_list([first + i, second + j])
        for i in range(-2, 3)
        for j in range(-2, 3)
        if (i, j) != (0, 0) and first + i < second + j
    ]
    return _shuffled(answer, distractors, rng)


def _equation_options(answer: str, question: str, rng: random.Random) -> tuple[list[str], str]:
    kind = grab_answers.equation_kind(question)
    coefficients = grab_answers.parse_equation(answer, kind)
    distractors = []
    for index in range(len(coefficients)):
        for delta in (-2, -1, 1, 2):
            changed = list(coefficients)
            changed[index] += delta
            distractors.append(grab_answers.format_equation(kind, changed))
    return _shuffled(answer, distractors, rng)


def mc_options(answer: str, question: str, seed: int) -> tuple[list[str], str]:
    """Five labelled options (``"A) ..."`` to ``"E) ..."``) for a GRAB question and the correct letter."""
    rng = _rng(seed, question, answer)
    precision = precision_of(question)
    if precision == "list":
        texts, letter = _list_options(answer, rng)
    elif precision == "equation":
        texts, letter = _equation_options(answer, question, rng)
    else:
        texts, letter = _scalar_options(answer, question, precision, rng)
    if len(set(texts)) != N_OPTIONS:
        raise AssertionError(f"duplicate options {texts} for {answer!r}")
    return [f"{label}) {text}" for label, text in zip(LETTERS, texts, strict=True)], letter


def mc_prompt(question: str, options: Sequence[str]) -> str:
    """The multiple-choice prompt: question, options one per line, then the instruction to answer with the letter."""
    return f"{question}\n" + "\n".join(options) + f"\n{MC_INSTRUCTION}"


@dataclass(frozen=True)
class McScore:
    correct: bool
    resolution: Resolution


def score_mc(
    output: str | None, options: Sequence[str], answer_letter: str, judge: JudgeClient | None, *, question: str
) -> McScore:
    """Resolve the output's letter to ``question`` (rules, then the judge for refused outputs) and compare it with
    the answer."""
    resolution = audit.prepare(
        resolve_choice(output, options, judge=judge, question=question), output, len(options), judge
    )
    return McScore(correct=resolution.letter == answer_letter, resolution=resolution)


def sample_record(doc: Mapping[str, Any], score: McScore) -> dict[str, Any]:
    """The per-question record kept in sample logs and tallied into the breakdown."""
    return {
        "pid": doc["pid"],
        "category": doc["category"],
        "mc_answer": doc["mc_answer"],
        "letter": score.resolution.letter,
        "resolution": score.resolution.method,
        "reason": score.resolution.reason,
        "correct": int(score.correct),
        **({"audit_prompt": score.resolution.audit_prompt} if score.resolution.audit_prompt else {}),
    }


def breakdown(records: Iterable[Mapping[str, Any]], judge: JudgeClient | None = None) -> dict[str, Any]:
    """Accuracy overall and per category (95% Wilson intervals) plus counts of resolution methods, of the reasons
    outputs stayed unresolved and of how the judge took part (``flags.judge``); with a judge, the ``judge_audit`` of
    rule-resolved answers (:mod:`scifig_tasks.core.audit`)."""
    records = list(records)
    tally = Tally()
    for record in records:
        flags = {"resolution": record["resolution"], "judge": judge_use(record["resolution"], record["reason"])}
        if record["resolution"] == "unresolved":
            flags["unresolved_reason"] = record["reason"]
        tally.add(bool(record["correct"]), {"category": record["category"]}, flags)
    section = audit.run_audit(records, judge, lambda record: str(record["pid"]), letter_field="letter")
    return audit.attach(tally.to_dict(), section)
