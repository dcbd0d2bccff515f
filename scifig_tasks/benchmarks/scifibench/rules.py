"""SciFIBench protocol (Roberts et al. 2024): the published questions' text, the prompts, scoring and alignment.

SciFIBench paper App. B (prompts, "Automatic evaluation") and §4.6 (alignment): the letter is read by rules, the
paper's parser prompt only for outputs they refuse; ``_paper`` tasks judge every output. Manual: tasks/README.md,
'How the rules are implemented'.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from scifig_tasks.core import audit
from scifig_tasks.core import multiple_choice as mcq
from scifig_tasks.core import multiple_choice_paper as mcq_paper
from scifig_tasks.core.multiple_choice import Resolution
from scifig_tasks.core.scoring_protocol import Protocol
from scifig_tasks.core.stats import Tally

if TYPE_CHECKING:
    from scifig_tasks.core.judge.client import JudgeClient

# --- the published questions' text ----------------------------------------------------------------------------------

F2C_QUESTION = "Which caption best matches the image?"
"""A Figure→Caption row's ``Question``."""
C2F_QUESTION = "Caption: {caption} Which image best matches the caption?"
"""A Caption→Figure row's ``Question``: the true caption inside this sentence."""
IMAGE_OPTION = "image{index}"
"""A Caption→Figure option's text: the ``index``-th image (0-based) of ``Images``."""


def option(letter: str, text: str) -> str:
    """An option as published: its letter label, then its text (``A) <caption>``)."""
    return f"{letter}) {text}"


_C2F_BEFORE, _C2F_AFTER = (part.strip() for part in C2F_QUESTION.split("{caption}"))
_CAPTION = re.compile(rf"^\s*{re.escape(_C2F_BEFORE)}\s*(.*?)\s*{re.escape(_C2F_AFTER)}\s*$", re.DOTALL)
_LABELLED = re.compile(r"^(\s*\(?([A-Z])\)\s*)(.*)$", re.DOTALL)
"""An option's label (as :func:`option` writes it, or ``(A)``; published options sometimes have two spaces after
it), its letter and its text."""

# --- the prompts (appendix B) ----------------------------------------------------------------------------------------

F2C_PROMPT_QUESTION = "Which of the captions best describes the image?"
C2F_PROMPT_QUESTION = "Which of the images best matches the caption?"
STEP_BY_STEP = "Let's think step by step."
F2C_LETTER_ONLY = "Only provide the letter of the correct caption as your answer."
C2F_LETTER_ONLY = "Only provide the letter of the correct image as your answer."
ANSWER_CUE = "Answer:"

PromptVariant = Literal["standard", "reasoning"]


def instruction(kind: Literal["f2c", "c2f"], variant: PromptVariant = "standard") -> str:
    """The closing instruction of the paper's prompt for ``kind``."""
    if kind == "f2c":
        question, letter_only = F2C_PROMPT_QUESTION, F2C_LETTER_ONLY
    else:
        question, letter_only = C2F_PROMPT_QUESTION, C2F_LETTER_ONLY
    if variant == "reasoning":
        return f"{question} {STEP_BY_STEP} {ANSWER_CUE}"
    if variant != "standard":
        raise ValueError(f"unknown SciFIBench prompt variant {variant!r} (standard or reasoning)")
    return f"{question} {STEP_BY_STEP} {letter_only} {ANSWER_CUE}"


def f2c_text(options: Sequence[str], variant: PromptVariant = "standard", note: str | None = None) -> str:
    """Figure→Caption text after the image: the options as given, one per line, then the instruction.

    ``note`` (the alignment sentence) goes on its own line before the instruction.
    """
    lines = [*options, *([note] if note else []), instruction("f2c", variant)]
    return "\n".join(lines)


def caption_of(question: str) -> str:
    """The caption of a Caption→Figure ``Question`` (:data:`C2F_QUESTION`; spaces around the caption dropped)."""
    match = _CAPTION.match(question)
    if match is None:
        raise ValueError(f"not a Caption→Figure question: {question[:120]!r}")
    return match.group(1)


def option_letters(options: Sequence[str]) -> list[str]:
    """The letters labelling ``options`` (``"A)  text"`` → ``"A"``)."""
    letters = []
    for text in options:
        match = _LABELLED.match(text)
        if match is None:
            raise ValueError(f"option without a letter label: {text[:80]!r}")
        letters.append(match.group(2))
    return letters


def c2f_segments(
    question: str, n_images: int, variant: PromptVariant = "standard", image_placeholder: str = ""
) -> list[str | int]:
    """Caption→Figure prompt as text segments and image indices, in order: ``"A) "``, 0, ``"\\nB) "``, 1, ... then
    the caption and the instruction. ``image_placeholder`` (e.g. ``<image>``) is written after each label for
    models that interleave images at a placeholder token."""
    segments: list[str | int] = []
    for index in range(n_images):
        label = option(chr(ord("A") + index), image_placeholder)
        segments += [label if index == 0 else f"\n{label}", index]
    segments.append(f"\n{caption_of(question)}\n{instruction('c2f', variant)}")
    return segments


def resolve_answer(
    doc: Mapping[str, Any], output: str | None, judge: JudgeClient | None, protocol: Protocol = "default"
) -> Resolution:
    """The letter an output gives to the question ``doc`` under ``protocol``: scifig's rules first (``default``), or
    the paper's judge on every output (``paper``, the ``scifibench_paper`` tasks)."""
    options = doc["Options"]
    if protocol == "paper":
        return mcq_paper.resolve_scifibench(output, options, judge)
    return audit.prepare(
        mcq.resolve_choice(output, options, judge, question=doc["Question"]), output, len(options), judge
    )


def sample_record(doc: Mapping[str, Any], resolution: Resolution) -> dict[str, Any]:
    """Per-question record kept in sample logs and tallied into the breakdown."""
    return {
        "ID": doc["ID"],
        "category": doc["Category"],
        "correct": int(resolution.letter == doc["Answer"]),
        "predicted": resolution.letter,
        "resolution": resolution.method,
        "reason": resolution.reason,
        "protocol": resolution.protocol,
        **({"audit_prompt": resolution.audit_prompt} if resolution.audit_prompt else {}),
    }


def breakdown(records: Iterable[Mapping[str, Any]], judge: JudgeClient | None = None) -> dict[str, Any]:
    """Accuracy overall and per category (Wilson 95% intervals) plus how answers were resolved
    (``flags.resolution``) and how the judge took part (``flags.judge``: ``not_used``, ``judged``, ``judge_failed``;
    a failed judge call is also counted ``unresolved``); with a judge, the ``judge_audit`` of rule-resolved answers
    (:mod:`scifig_tasks.core.audit`)."""
    records = list(records)
    tally = Tally()
    for record in records:
        flags = {
            "resolution": record["resolution"],
            "judge": mcq.judge_use(record["resolution"], record["reason"]),
            "protocol": record.get("protocol", "default"),
        }
        tally.add(bool(record["correct"]), {"category": record["category"]}, flags)
    return audit.attach(tally.to_dict(), audit.run_audit(records, judge, lambda record: str(record["ID"])))


def merge_breakdowns(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    counts, audits = audit.without_audit(parts)
    return audit.attach(Tally.from_dicts(counts).to_dict(), audit.merge_audits(audits))


# --- alignment experiment (paper section 4.6, Fig. 7) --------------------------------------------------------------

ALIGNMENT_VARIANTS = ("baseline", "marked_true", "marked_true_ignore", "marked_false", "marked_false_ignore")
MARK = "<Correct>"
EXPERT_NOTE = "A human expert marked one of the captions as <Correct>."
IGNORE = " Ignore this information."


def marked_option(question_id: int, options: Sequence[str], answer: str, variant: str, seed: int = 0) -> str | None:
    """The letter that carries the mark in ``variant``: the true one, a seeded random wrong one, or none."""
    if variant == "baseline":
        return None
    if variant.startswith("marked_true"):
        return answer
    if variant.startswith("marked_false"):
        wrong = [letter for letter in option_letters(options) if letter != answer]
        digest = hashlib.sha256(f"{seed}:{question_id}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big")).choice(wrong)
    raise ValueError(f"unknown alignment variant {variant!r} ({', '.join(ALIGNMENT_VARIANTS)})")


def augment(
    question_id: int, options: Sequence[str], answer: str, variant: str, seed: int = 0
) -> tuple[list[str], str | None]:
    """Options with ``<Correct>`` put before the marked option's text, and the sentence announcing it."""
    marked = marked_option(question_id, options, answer, variant, seed)
    if marked is None:
        return list(options), None
    augmented = []
    for letter, labelled in zip(option_letters(options), options, strict=True):
        if letter == marked:
            label, _, text = _LABELLED.match(labelled).groups()
            labelled = f"{label}{MARK} {text}"
        augmented.append(labelled)
    note = EXPERT_NOTE + (IGNORE if variant.endswith("_ignore") else "")
    return augmented, note


def alignment_summary(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Each variant's accuracy and its change against the baseline (in accuracy points of the fraction)."""
    by_variant = {part["variant"]: part for part in parts}
    if "baseline" not in by_variant:
        raise ValueError("the alignment summary needs the baseline variant")
    base = by_variant["baseline"]["accuracy"]
    return {
        name: {
            "n": by_variant[name]["n"],
            "accuracy": by_variant[name]["accuracy"],
            "delta_vs_baseline": None if name == "baseline" else round(by_variant[name]["accuracy"] - base, 4),
        }
        for name in ALIGNMENT_VARIANTS
        if name in by_variant
    }
