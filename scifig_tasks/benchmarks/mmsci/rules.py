"""MMSci (Li et al. 2025): question texts, prompts and MCQ scoring shared by curation and evaluation.

MMSci paper §3 (three matching settings, four options) and §4 (scoring; Table 4's "Avg." pooled over questions), the
authors' prompt texts. Manual: tasks/README.md, 'Questions, prompts and multiple-choice scoring'.
"""

from __future__ import annotations

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

SETTINGS: tuple[str, ...] = ("fig2cap", "subfig2cap", "subcap2fig")
"""Setting I (Fig2Cap), II (SubFig2Cap), III (SubCap2Fig), in the paper's order."""

LETTERS: tuple[str, ...] = ("A", "B", "C", "D")

FIG2CAP_QUESTION = "Which of the following captions best describes the whole figure?"
SUBFIG2CAP_QUESTION = "which of the following options best describes the content in sub-figure ({label})?"
"""The authors' wording, lower-case "which" included (benchmark data and DATACARD)."""
SUBCAP2FIG_QUESTION = "Which of the following sub-figures best matches the description: {subcaption}"

ANSWER_INSTRUCTION = "\nChoose one answer from available options. Return only your answer."
"""Appended to every question by the authors' evaluation of open models (``QA_TRIGGER`` in ``run_matching.py``)."""
REASONING_INSTRUCTION = (
    'Analyze the problem before concluding your response in this format: "The final answer is **[ANSWER]**."'
)
"""The authors' instruction for API models (``run_matching_api.py``), appended with no separator."""

PromptVariant = Literal["standard", "reasoning"]


def subfigure_option(label: str) -> str:
    """How a sub-figure is named as an option in setting III: ``(b)``."""
    return f"({label})"


def mcq_prompt(question: str, options: Sequence[str], variant: PromptVariant = "standard") -> str:
    """The authors' prompt: question, ``\\nA: <option>`` per option, then the answer instruction."""
    if len(options) != len(LETTERS):
        raise ValueError(f"MMSci questions have {len(LETTERS)} options, got {len(options)}")
    if variant not in ("standard", "reasoning"):
        raise ValueError(f"unknown MMSci prompt variant {variant!r} (standard, reasoning)")
    return question_with_options(question, options) + (
        ANSWER_INSTRUCTION if variant == "standard" else REASONING_INSTRUCTION
    )


def question_with_options(question: str, options: Sequence[str]) -> str:
    """The question followed by ``\nA: <option>`` per option: the authors' stored question text."""
    return question + "".join(f"\n{letter}: {option}" for letter, option in zip(LETTERS, options, strict=True))


def resolve_answer(
    doc: Mapping[str, Any], output: str | None, judge: JudgeClient | None, protocol: Protocol = "default"
) -> Resolution:
    """The letter an output gives under ``protocol``: scifig's rules first (``default``), or the authors' parse
    (``paper``, the ``mmsci_paper`` tasks: a bare label, else gpt-4o-mini's reading)."""
    if protocol == "paper":
        return mcq_paper.resolve_mmsci(output, question_with_options(doc["question"], doc["options"]), judge)
    options = resolver_options(doc["setting"], doc["options"])
    resolution = mcq.resolve_choice(output, options, judge, question=doc["question"])
    return audit.prepare(resolution, output, len(doc["options"]), judge)


def resolver_options(setting: str, options: Sequence[str]) -> list[str]:
    """Option texts as the answer resolver matches them in outputs.

    Setting III's options are bare labels (``(b)``); matched alone, the single word "b" (or the article "a") would
    count as quoting an option, so they are matched as "sub-figure (b)".
    """
    if setting == "subcap2fig":
        return [f"sub-figure {option}" for option in options]
    return list(options)


def sample_record(doc: Mapping[str, Any], resolution: Resolution) -> dict[str, Any]:
    """Per-question record kept in sample logs and tallied into the breakdown."""
    return {
        "uid": doc["uid"],
        "figure_index": doc["figure_index"],
        "setting": doc["setting"],
        "subfigure": doc["subfigure"],
        "category": doc["category"],
        "subject": doc["subject"],
        "answer": doc["answer"],
        "predicted": resolution.letter,
        "correct": int(resolution.letter == doc["answer"]),
        "resolution": resolution.method,
        "reason": resolution.reason,
        "protocol": resolution.protocol,
        **({"audit_prompt": resolution.audit_prompt} if resolution.audit_prompt else {}),
    }


PAPER_DENOMINATOR = "paper_denominator"
"""Breakdown key of the same table over resolved answers only (the authors' denominator)."""


def resolved(record: Mapping[str, Any]) -> bool:
    """Whether a letter was read from the output (the authors keep only such answers in their denominator)."""
    return record["predicted"] is not None


def breakdown(records: Iterable[Mapping[str, Any]], judge: JudgeClient | None = None) -> dict[str, Any]:
    """Accuracy overall (pooled: the paper's "Avg."), per setting, per category and per subject (Wilson 95%), plus how
    answers were resolved (``flags.resolution.unresolved`` = outputs counted wrong because no letter could be read) and
    the judge calls (``flags.judge``). ``paper_denominator`` holds the same cells over resolved answers only (the
    authors' accuracy); ``setting_mean`` the unweighted mean of the settings' accuracies under both denominators;
    with a judge, the ``judge_audit`` of rule-resolved answers (:mod:`scifig_tasks.core.audit`)."""
    records = list(records)
    tally, answered = Tally(), Tally()
    for record in records:
        keys = {"setting": record["setting"], "category": record["category"], "subject": record["subject"]}
        flags = {"resolution": record["resolution"], "judge": judge_use(record)}
        tally.add(bool(record["correct"]), keys, {**flags, "protocol": record.get("protocol", "default")})
        if resolved(record):
            answered.add(bool(record["correct"]), keys)
    section = audit.run_audit(records, judge, record_id)
    return audit.attach(_with_setting_mean(tally.to_dict(), answered.to_dict()), section)


def record_id(record: Mapping[str, Any]) -> str:
    """A question's name in lists: ``<uid>/<figure_index>/<setting>[/<subfigure>]``."""
    parts = [record["uid"], record["figure_index"], record["setting"], record.get("subfigure") or ""]
    return "/".join(str(part) for part in parts if part != "")


def judge_use(record: Mapping[str, Any]) -> str:
    """Whether the judge was asked for a record's answer: ``judged``, ``judge_failed`` (no reply after retries; the
    answer counts as wrong) or ``not_used`` (rules decided, nothing to read, or judging off); see
    :func:`scifig_tasks.core.multiple_choice.judge_use`."""
    return mcq.judge_use(record["resolution"], record["reason"])


def merge_breakdowns(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The group's breakdown: counts merged exactly under both denominators (``overall`` is the pooled accuracy, the
    paper's "Avg."), plus the unweighted mean of the settings' accuracies (``setting_mean``)."""
    parts, audits = audit.without_audit(parts)
    strict = [{key: value for key, value in part.items() if key not in _DERIVED} for part in parts]
    answered = [{**part.get(PAPER_DENOMINATOR, {}), "flags": {}} for part in parts]
    table = _with_setting_mean(Tally.from_dicts(strict).to_dict(), Tally.from_dicts(answered).to_dict())
    return audit.attach(table, audit.merge_audits(audits))


def setting_accuracies(table: Mapping[str, Any]) -> dict[str, float]:
    """Exact per-setting accuracies (from the counts, not the rounded cells) of a breakdown, in the paper's order."""
    cells = table.get("setting", {})
    return {name: cells[name]["correct"] / cells[name]["n"] for name in SETTINGS if cells.get(name, {}).get("n")}


def setting_mean(accuracies: Mapping[str, float | None]) -> float | None:
    """Unweighted mean of the per-setting accuracies present (not the paper's "Avg.", which is pooled over the
    questions); ``None`` without any."""
    values = [value for value in accuracies.values() if value is not None]
    return sum(values) / len(values) if values else None


_DERIVED = ("setting_mean", PAPER_DENOMINATOR)


def _with_setting_mean(table: dict[str, Any], answered: dict[str, Any]) -> dict[str, Any]:
    answered.pop("flags", None)
    table[PAPER_DENOMINATOR] = answered
    accuracies = setting_accuracies(table)
    mean = setting_mean(accuracies)
    paper_mean = setting_mean(setting_accuracies(answered))
    table["setting_mean"] = {
        "accuracy": None if mean is None else round(mean, 4),
        PAPER_DENOMINATOR: None if paper_mean is None else round(paper_mean, 4),
        "settings": list(accuracies),
    }
    return table


# --- captioning -----------------------------------------------------------------------------------------------------

CAPTION_IMAGE_ONLY_PROMPT = (
    "Please write a detailed description of the whole figures and all sub-figures based on the article."
)
"""The authors' image-only prompt, "figures" included (``run_captioning.py``)."""
CAPTION_WITH_ABSTRACT_PROMPT = (
    "Please write a detailed description of the whole figure and all sub-figures based on the article.\n"
    " Article:\n{abstract}"
)
"""The authors' abstract-grounded prompt: instruction, new line, a space, ``Article:``, new line, the abstract."""

ABSTRACT_WORD_BUDGET = 768
"""Abstracts are cut to this many white-space separated words (see :func:`caption_prompt`)."""

_WORD = re.compile(r"\S+")


def truncate_words(text: str, budget: int) -> str:
    """The text up to and including its ``budget``-th word (spacing kept); unchanged when shorter."""
    if budget < 1:
        raise ValueError(f"the abstract word budget must be >= 1, got {budget}")
    for count, match in enumerate(_WORD.finditer(text), start=1):
        if count == budget:
            return text[: match.end()]
    return text


def caption_prompt(abstract: str | None = None, word_budget: int = ABSTRACT_WORD_BUDGET) -> str:
    """The captioning prompt, image-only (``abstract`` None) or abstract-grounded.

    The authors cut the abstract to a token budget (1,024 cl100k tokens for open models, 3,000 for API models,
    counted with ``tiktoken``, whose encoding file is downloaded at run time) and, when the prompt then does not end
    with ``.``, ``!`` or ``?``, append `` ...`` and a new line. We count white-space words instead (768 words, about
    1,024 tokens), so the prompt is the same offline; Nature Communications abstracts are far shorter than either
    budget, so no real abstract is cut.
    """
    if abstract is None:
        return CAPTION_IMAGE_ONLY_PROMPT
    prompt = CAPTION_WITH_ABSTRACT_PROMPT.format(abstract=truncate_words(abstract, word_budget))
    if not prompt.endswith((".", "!", "?")):
        prompt += " ...\n"
    return prompt


CaptionPrompt = Literal["image_only", "with_abstract"]


def task_caption_prompt(doc: Mapping[str, Any], options: Mapping[str, Any]) -> str:
    """The captioning prompt a task's options choose: ``prompt_variant`` ``image_only`` (the default) or
    ``with_abstract`` (the row's ``abstract``, cut at ``abstract_word_budget`` words)."""
    variant: CaptionPrompt = options.get("prompt_variant", "image_only")
    if variant == "image_only":
        return caption_prompt()
    if variant == "with_abstract":
        return caption_prompt(doc["abstract"], int(options.get("abstract_word_budget", ABSTRACT_WORD_BUDGET)))
    raise ValueError(f"MMSci captioning: prompt_variant {variant!r} is not one of image_only, with_abstract")


def caption_record(
    doc: Mapping[str, Any], prediction: str | None, samples: Sequence[str | None] | None = None
) -> dict[str, Any]:
    """The per-caption record :func:`.captioning_metrics.evaluate` reads, from a captioning row
    (``uid``, ``figure_index``, ``category``, ``subject``, ``caption``): the output in ``prediction`` and the row's
    caption as ``reference``. With ``samples`` (the k captions sampled per figure, paper section 4) the record also
    holds them as ``predictions`` and is marked ``protocol: paper``, so it is scored with the paper's setting."""
    record: dict[str, Any] = {
        "uid": doc["uid"],
        "figure_index": doc["figure_index"],
        "category": doc["category"],
        "subject": doc["subject"],
        "prediction": prediction,
    }
    if samples is None:
        return {**record, "reference": doc["caption"]}
    return {**record, "predictions": list(samples), "reference": doc["caption"], "protocol": "paper"}
