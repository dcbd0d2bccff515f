"""The sample viewer's rows: each model's logged samples read into one row per document (:class:`Group`), every
model's answer in it (:class:`Cell`), by the records' shape whatever the benchmark; nothing is re-scored.

The rules (what each benchmark's record shows, how one document of several runs is recognised): docs/reports.md,
"The sample viewer".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from scifig_tasks.core import registry
from scifig_tasks.report.runs import VLMEVAL_ROW, Run

TEXT_CAP = 20_000
"""Characters of a prompt, output or reference kept in the page (the page's "show all" unfolds up to this)."""


@dataclass
class Cell:
    """One model's answer to one document."""

    output: str
    resolved: str
    method: str
    """How the answer was read, in one word or phrase (the page's "resolved by" filter)."""
    reason: str
    correct: bool | None
    detail: str = ""
    decided: str = ""
    """The rule that gave the verdict, in words, from what the scoring recorded (:func:`cell_of`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "o": self.output,
            "a": self.resolved,
            "m": self.method,
            "r": self.reason,
            "c": self.correct,
            **({"d": self.detail} if self.detail else {}),
            **({"v": self.decided} if self.decided else {}),
        }


@dataclass
class Group:
    """One document of one task, with every model's answer to it."""

    task: str
    doc_id: int
    label: str
    category: str
    prompt: str
    expected: str
    source: tuple[str, str, int]
    """Where its document comes from: ``("lmms", task, doc_id)`` or ``("vlmeval", dataset, row)``."""
    keys: dict[str, str] = field(default_factory=dict)
    """The record's id fields (:func:`document_id`), checked against the loaded document."""
    cells: dict[int, Cell] = field(default_factory=dict)
    images: list[int] = field(default_factory=list)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n---\n".join(_text(item) for item in value) if len(value) != 1 else _text(value[0])
    return str(value)


def capped(text: str) -> str:
    """``text``, cut after :data:`TEXT_CAP` characters with a note of how many more the sample log holds."""
    if len(text) <= TEXT_CAP:
        return text
    return text[:TEXT_CAP] + f"\n[... {len(text) - TEXT_CAP} more characters in the sample log]"


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


def _record(sample: Mapping[str, Any]) -> dict[str, Any]:
    for name in ("breakdown", "caption_report"):
        if isinstance(sample.get(name), dict):
            return sample[name]
    return {}


OUTPUT_PROBLEMS = {"empty": "empty output", "request_failed": "failed request"}
"""An output no rule reads (:mod:`scifig_tasks.core.raw_outputs`), in words."""


def _refused(status: Any) -> str:
    return f"refused: {OUTPUT_PROBLEMS.get(str(status), str(status).replace('_', ' '))}"


def _choice(record: Mapping[str, Any]) -> str:
    """A multiple-choice verdict's rule (:class:`scifig_tasks.core.multiple_choice.Resolution`, recorded as
    ``resolution`` and ``reason``): the rule that read the letter, the judge (and why the rules left it to it), or
    no letter read."""
    method, reason = str(record.get("resolution")), _text(record.get("reason"))
    if method == "rule":
        return f"rule: {reason}" if reason else "rule"
    if method == "judge":
        if record.get("protocol") == "paper":
            return "judge (the paper's protocol: the judge reads every output)"
        return f"judge (the rules: {reason})" if reason else "judge"
    if reason in OUTPUT_PROBLEMS:
        return _refused(reason)
    return f"refused: {reason or 'no letter read'}"


_GRAB_RULES = {
    "whole_answer": "whole answer",
    "truncation": "truncation to the answer's length (authors' rule)",
    "llm_extraction": "judge extraction + truncation (paper's ablation)",
}
_GRAB_OTHER = {"whole_answer": ("truncation", "truncation rule"), "truncation": ("whole_answer", "whole-answer rule")}
_JUDGE_PROBLEMS = {"judge_failed": "the judge failed", "judge_off": "no judge configured"}


def _grab_decided(record: Mapping[str, Any], rule: str) -> str:
    """A GRAB verdict's rule, from its record: ``rule`` (the protocol's), ``reading`` / ``read`` / ``reason`` (how the
    whole-answer rule read the output), ``truncated`` (the text the authors' rule compared), ``judge`` /
    ``extracted`` (the ablation's extraction)."""
    status = _first(record.get("output_status"))
    if status not in (None, "ok"):
        return _refused(status)
    cut = record.get("truncated")
    cut_words = "output cut to the answer's length" + (f' ("{cut}")' if cut is not None else "")
    if rule == "whole_answer":
        reading, read = record.get("reading"), _text(record.get("read"))
        if reading == "whole":
            return f'whole answer: the output is the answer ("{read}")'
        if reading == "stated":
            return f'whole answer: the answer the output states ("{read}")'
        if reading == "unresolved":
            return f"refused by the whole-answer rule: {_text(record.get('reason')) or 'no answer read'}"
        return "whole answer"
    if rule == "llm_extraction":
        judge = str(record.get("judge"))
        if judge in _JUDGE_PROBLEMS:
            return f"refused: {_JUDGE_PROBLEMS[judge]} for the extraction"
        extracted = _text(record.get("extracted"))
        if extracted == "None":
            return "judge extraction: no answer in the output"
        return f'judge extraction ("{extracted}"), then the authors\' rule: {cut_words}'
    return f"authors' rule: {cut_words}"


def _grab_cell(output: str, record: Mapping[str, Any], correct: bool | None) -> Cell:
    """A GRAB answer: the rule that gave its verdict (records written before 2.5 name none: the authors' truncation,
    or the judge's extraction under the ablation, the only rules then) and, where it differs, the other rule's
    verdict."""
    judge = record.get("judge")
    rule = record.get("rule") or ("llm_extraction" if judge not in (None, "not_used") else "truncation")
    extracted = record.get("extracted")
    if rule == "whole_answer":
        resolved = _text(record.get("read"))
    else:
        resolved = _text(extracted) if extracted is not None else output.strip()
    detail = ""
    if rule in _GRAB_OTHER:
        other, words = _GRAB_OTHER[rule]
        verdict = record.get(f"{other}_correct")
        if verdict is not None and bool(verdict) != bool(correct):
            detail = f"the {words} scores it {'right' if verdict else 'wrong'}"
    decided = _grab_decided(record, str(rule))
    return Cell(output, resolved, _GRAB_RULES.get(rule, str(rule)), "", correct, detail, decided)


_PLOT_TWIST_SOURCES = {"rule": "the answer sentence", "judge": "the judge's reformatting"}
_PLOT_TWIST_MISSING = {
    "judge_off": "no answer sentence, and no judge configured to reformat the output",
    "judge_failed": "the judge's reformatting failed",
    "judged": "the judge's reformatting states no answer",
    "not_used": "no answer sentence",
}


def _plot_twist_decided(record: Mapping[str, Any]) -> str:
    """A Plot Twist verdict's rule, per repeat: the standard accuracy (exact match) of the number read, and where it
    was read from (``answer_source``), or why no number was read (``output_status``, ``judge``)."""
    sources, extracted = record.get("answer_source") or [], record.get("extracted") or []
    statuses, judged = record.get("output_status") or [], record.get("judge") or []
    said = []
    for index, source in enumerate(sources):
        status = statuses[index] if index < len(statuses) else "ok"
        if status != "ok":
            said.append(_refused(status))
        elif source in _PLOT_TWIST_SOURCES:
            number = extracted[index] if index < len(extracted) else None
            said.append(f"exact match (standard accuracy) of {number}, read from {_PLOT_TWIST_SOURCES[source]}")
        else:
            judge = judged[index] if index < len(judged) else "not_used"
            said.append(f"refused: {_PLOT_TWIST_MISSING.get(str(judge), str(judge))}")
    if len(said) > 1:
        return "; ".join(f"repeat {index + 1}: {text}" for index, text in enumerate(said))
    return said[0] if said else ""


_CHARXIV_UNGRADED = {
    "judge_failed": "ungraded: the judge's grading failed (left out of the accuracy)",
    "judge_absent": "ungraded: no judge configured (left out of the accuracy)",
}


def _graded_decided(record: Mapping[str, Any]) -> str:
    """A graded record's rule (CharXiv: ``verdict``, ``graded_by``, the ``rule`` that decided, ``flag``)."""
    graded_by, flag = record.get("graded_by"), _text(record.get("flag"))
    if graded_by == "rule":
        if flag.endswith("_output"):
            return _refused(flag.removesuffix("_output"))
        return f"rule: {record['rule']}" if record.get("rule") else "rule"
    if graded_by == "judge":
        return "judge (the authors' rubric)"
    if record.get("verdict") is None:
        if not flag and record.get("protocol") == "paper":  # graded in the authors' batches when the task is scored
            return "graded with the task's other answers (the paper's batches): no per-question grade in the log"
        return _CHARXIV_UNGRADED.get(flag, f"ungraded: {flag or 'not graded'}")
    return "refused: no rule decides and no judge is configured"


def cell_of(task: str, sample: Mapping[str, Any]) -> Cell:
    """A model's answer from its logged sample (lmms-eval line or VLMEvalKit record), with the rule that gave its
    verdict as the record names it: a multiple-choice record's ``resolution`` and ``reason``, GRAB's ``rule`` and how
    it read the output, Plot Twist's ``answer_source``, a graded record's ``graded_by`` and ``rule``, or any
    record's own ``decided_by``."""
    record = _record(sample)
    output = capped(_text(sample.get("filtered_resps", record.get("prediction"))))
    correct: bool | None = None
    if "correct" in record:
        correct = bool(record["correct"])
    elif "verdict" in record and "graded_by" in record:  # graded: 1, 0 or None (ungraded)
        correct = None if record["verdict"] is None else bool(record["verdict"])
    elif isinstance(sample.get("accuracy"), (int, float)):
        correct = bool(sample["accuracy"])
    own = _text(record.get("decided_by"))
    if "resolution" in record:  # multiple choice: SciFIBench, MMSci, GRAB's multiple-choice ablation
        letter = record.get("predicted", record.get("letter"))
        decided = own or _choice(record)
        return Cell(output, _text(letter), str(record["resolution"]), _text(record.get("reason")), correct, "", decided)
    if "standard" in record:  # Plot Twist: one entry per repeat
        extracted = record.get("extracted") or []
        scores = ", ".join(
            f"{name} {'✓' if all(record.get(name) or [0]) else '✗'}" for name in ("standard", "relaxed", "range")
        )
        source = _first(record.get("answer_source")) or ""
        method = {"rule": "rule", "judge": "judge", "not_provided": "unresolved"}.get(source, source)
        standard = record.get("standard") or []
        decided = own or _plot_twist_decided(record)
        return Cell(output, _text(extracted), method, "", bool(standard) and all(standard), scores, decided)
    if "reference" in record:  # MMSci captioning: corpus-level metrics only
        reason = "empty output" if not output.strip() else ""
        return Cell(output, "", "", reason, None, "caption: scored by the corpus-level metrics above")
    if "output_status" in record:  # GRAB: the rule that gave the verdict, and the other rule's
        cell = _grab_cell(output, record, correct)
        return replace(cell, decided=own) if own else cell
    if "graded_by" in record:  # CharXiv: rule, judge or ungraded
        method = str(record.get("graded_by") or "ungraded")
        return Cell(output, _text(record.get("extracted")), method, "", correct, "", own or _graded_decided(record))
    decided = own or ("not recorded by the benchmark's scorer" if correct is not None else "")
    return Cell(output, "", "", _text(record.get("reason")), correct, "", decided)


def is_benchmark_task(task: str) -> bool:
    """Whether ``task`` belongs to a registered benchmark (:func:`scifig_tasks.core.registry.benchmark_of`)."""
    return registry.benchmark_of(task) is not None


def document_id(task: str) -> tuple[str, ...]:
    """The record fields naming a document of ``task`` whatever its position (its benchmark's ``document_id``): they
    line up the same document of an lmms-eval run and a VLMEvalKit run, whose positions differ; empty when no
    registered benchmark owns the task."""
    described = registry.benchmark_of(task)
    return described.document_id if described is not None else ()


def viewer_task(task: str, record: Mapping[str, Any]) -> str:
    """The lmms-eval task a sample belongs to (VLMEvalKit datasets span a whole lmms-eval group): the record field
    its benchmark's ``report.sample_tasks`` names for ``task`` maps it to one of the group's tasks."""
    return _viewer_task(task, _sample_split(task), record)


def _sample_split(task: str) -> tuple[str, str | Mapping[str, str]] | None:
    """``task``'s entry of its benchmark's ``report.sample_tasks`` (``None``: its samples are its own)."""
    described = registry.benchmark_of(task)
    return described.report.sample_tasks.get(task) if described is not None else None


def _viewer_task(task: str, split: tuple[str, str | Mapping[str, str]] | None, record: Mapping[str, Any]) -> str:
    if split is None:
        return task
    name, tasks = split
    value = record.get(name)
    if isinstance(tasks, str):
        return tasks.format(value) if value else task
    return tasks.get(value, task) if isinstance(value, str) else task


class TaskFacts:
    """What the readers of samples (:func:`collect`, the comparison) ask of the registry per task
    (:func:`document_id`, :func:`_sample_split`), asked once per task instead of once per sample (a tenth of the
    viewer's time for a few thousand samples)."""

    def __init__(self) -> None:
        self._ids: dict[str, tuple[str, ...]] = {}
        self._splits: dict[str, tuple[str, str | Mapping[str, str]] | None] = {}

    def viewer_task(self, task: str, record: Mapping[str, Any]) -> str:
        if task not in self._splits:
            self._splits[task] = _sample_split(task)
        return _viewer_task(task, self._splits[task], record)

    def fields(self, task: str, record: Mapping[str, Any]) -> tuple[str, ...]:
        """The task's document fields when the record holds the first of them, else none."""
        if task not in self._ids:
            self._ids[task] = document_id(task)
        fields = self._ids[task]
        return fields if fields and fields[0] in record else ()


def _doc_key(fields: tuple[str, ...], record: Mapping[str, Any]) -> tuple[Any, ...] | None:
    return tuple(str(record.get(name, "")) for name in fields) if fields else None


def _id_fields(fields: tuple[str, ...], record: Mapping[str, Any]) -> dict[str, str]:
    return {name: str(record[name]) for name in fields if name in record}


def _category(record: Mapping[str, Any]) -> str:
    for name in ("category", "question_type"):
        if record.get(name) not in (None, ""):
            return str(record[name])
    return ""


def sample_category(sample: Mapping[str, Any]) -> str:
    """A logged sample's category: its record's ``category`` or ``question_type`` (empty when it has neither)."""
    return _category(_record(sample))


def _label(fields: tuple[str, ...], record: Mapping[str, Any], doc_id: int) -> str:
    if fields:
        named = [f"{name} {record[name]}" for name in fields if record.get(name) not in (None, "")]
        return f"doc {doc_id}: " + ", ".join(named)
    return f"doc {doc_id}"


def collect(runs: Sequence[Run]) -> tuple[list[Group], list[str]]:
    """Groups of the benchmarks' samples (one per document, every model's answer in it) and notes."""
    notes: list[str] = []
    facts = TaskFacts()
    entries: list[tuple[int, str, int, Mapping[str, Any], tuple[str, str, int]]] = []
    for model_index, run in enumerate(runs):
        for task, samples in sorted(run.samples.items()):
            if not is_benchmark_task(task):
                notes.append(f"{run.model}: {task} is not a benchmark of this package; its samples are not shown")
                continue
            for position, sample in enumerate(samples):
                record = _record(sample)
                doc_id = int(sample.get("doc_id", position))
                dataset = sample.get("vlmeval_dataset")
                row = int(sample.get(VLMEVAL_ROW, doc_id))  # the record's row of the dataset's TSV
                source = ("vlmeval", str(dataset), row) if dataset else ("lmms", task, doc_id)
                entries.append((model_index, facts.viewer_task(task, record), doc_id, sample, source))
    # a document's identity: its record's own id fields, unless they repeat within one model's task
    keyed: dict[tuple[int, str], set[Any]] = {}
    unique = {}
    for model_index, task, _, sample, _ in entries:
        record = _record(sample)
        key = _doc_key(facts.fields(task, record), record)
        seen = keyed.setdefault((model_index, task), set())
        unique[task] = unique.get(task, True) and key is not None and key not in seen
        seen.add(key)
    groups: dict[tuple[str, Any], Group] = {}
    for model_index, task, doc_id, sample, source in entries:
        record = _record(sample)
        fields = facts.fields(task, record)
        identity = _doc_key(fields, record) if unique[task] else ("doc", doc_id, source[0])
        group = groups.get((task, identity))
        if group is None:
            group = groups[(task, identity)] = Group(
                task,
                doc_id,
                _label(fields, record, doc_id),
                _category(record),
                capped(_text(sample.get("input"))),
                capped(_text(sample.get("target", record.get("reference", record.get("answer"))))),
                source,
                _id_fields(fields, record),
            )
        elif source[0] == "lmms" and group.source[0] == "vlmeval":
            group.source, group.doc_id, group.label = source, doc_id, _label(fields, record, doc_id)  # richer prompt
            group.keys = _id_fields(fields, record)
            group.prompt = capped(_text(sample.get("input"))) or group.prompt
        group.cells[model_index] = cell_of(task, sample)
    ordered = sorted(groups.values(), key=lambda g: (g.task, g.doc_id))
    return ordered, notes
