"""The CharXiv authors' published outputs of one model as an lmms-eval run folder that ``scifig report`` and
``scifig rescore`` read, and the agreement of the default protocol's rules with the authors' grades.

Rule (the run folder, ``OUT/<model>/``, as ``lmms-eval --log_samples`` writes one):

* ``<date>_samples_charxiv_full_<mode>_paper.jsonl``: one line per question of the data, ``doc_id`` its position
  among the task's documents (the order ``scifig rescore`` loads them in), ``target`` its answer, ``input`` its
  question, ``filtered_resps`` the published response, and as the ``accuracy`` and ``breakdown`` metrics the paper
  protocol's record (:func:`scifig_tasks.benchmarks.charxiv.scoring.ungraded_record`) graded with the authors' grade:
  ``graded_by`` ``judge``, ``verdict`` 1 or 0 and ``extracted`` their extracted answer; a -1 (their grading failed)
  is ungraded, ``verdict`` None and flagged ``judge_failed``, as scifig's paper protocol flags a grading that failed.
* ``<date>_results.json``: the tasks ``charxiv_full_<mode>_paper`` (the group ``charxiv_full_paper`` when both modes
  are there) with ``accuracy`` and ``breakdown`` from those records (:func:`scifig_tasks.benchmarks.charxiv.scoring.
  evaluate`: the breakdown's ``authors_score`` is their ``get_stats.py`` "Overall Score", ``accuracy`` is over the
  graded); ``n-samples`` every question; the environment block names the data read and, as the judge, the grader of
  the published grades; ``scifig_import`` says where the files came from and holds the rules' agreement.

Agreement (:class:`Agreement`): the default protocol's record of each response with no judge
(:func:`scifig_tasks.benchmarks.charxiv.scoring.graded_now`): where the exact rules decide it, whether their verdict is
the authors' grade. ``scifig rescore OUT --protocol default`` makes the same records, so its ``rescore_diff.json``
lists each of these questions with its old (authors') and new (rules') verdict.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from curation.charxiv.published import FAILED, Published, file_name, modes_of, read_mode
from scifig_tasks.benchmarks.charxiv import scoring
from scifig_tasks.benchmarks.charxiv.grading import PAPER_JUDGE_MODEL
from scifig_tasks.core import provenance, settings
from scifig_tasks.core.run_files import RESULTS_SUFFIX

TASKS = {"reasoning": "charxiv_full_reasoning_paper", "descriptive": "charxiv_full_descriptive_paper"}
"""Mode -> the task whose records the authors' grades are, in the group's order."""
GROUP = "charxiv_full_paper"
IMPORT_KEY = "scifig_import"
"""The results file's record of the import (:func:`results_document`)."""
NULL_DOC_HASH = hashlib.sha256(b"null").hexdigest()
"""The ``doc_hash`` lmms-eval 0.7.3 logs for every sample (it hashes a document it never sets)."""
PUBLISHED_GRADES = "the published grades"
VERDICT = "verdict"
"""A record's grade: 1, 0, or None for ungraded (:func:`scifig_tasks.benchmarks.charxiv.scoring.ungraded_record`)."""
"""The judge's host in the environment block: the grades were read, not asked for."""


@dataclass
class Agreement:
    """Where the default protocol's exact rules decide a response, whether they give the authors' grade."""

    questions: int = 0
    decided: int = 0
    """Responses the rules decide (the rest would go to the judge)."""
    agree: int = 0
    disagree: list[str] = field(default_factory=list)
    """The query ids where the rules' verdict is not the authors' grade."""
    ungraded: int = 0
    """Responses the rules decide that the authors' grading left at -1 (nothing to agree with)."""

    @property
    def compared(self) -> int:
        return self.agree + len(self.disagree)

    def as_json(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "rules_decided": self.decided,
            "compared": self.compared,
            "agree": self.agree,
            "disagree": len(self.disagree),
            "authors_ungraded": self.ungraded,
            "disagreements": self.disagree,
        }

    def words(self) -> str:
        """``the rules decide 24 of 32 responses; they agree with the authors' grade on 21 of the 22 both grade
        (95.45%), disagree on 1 (153_3), and 2 the authors left ungraded (-1)``."""
        share = f" ({100 * self.agree / self.compared:.2f}%)" if self.compared else ""
        text = (
            f"the rules decide {self.decided:,} of {self.questions:,} responses; they agree with the authors' grade "
            f"on {self.agree:,} of the {self.compared:,} both grade{share}, disagree on {len(self.disagree):,}"
        )
        if self.disagree:
            shown = ", ".join(self.disagree[:8]) + (", ..." if len(self.disagree) > 8 else "")
            text += f" ({shown})"
        if self.ungraded:
            text += f", and {self.ungraded:,} the authors left ungraded (-1)"
        return text


@dataclass
class Part:
    """One mode's questions, published outputs, records and agreement."""

    mode: str
    documents: list[dict[str, Any]]
    published: dict[str, Published]
    files: list[Path]
    records: list[dict[str, Any]]
    agreement: Agreement
    evaluated: dict[str, Any]
    """:func:`scifig_tasks.benchmarks.charxiv.scoring.evaluate` of the records: ``accuracy`` and ``breakdown``."""

    @property
    def task(self) -> str:
        return TASKS[self.mode]


@dataclass
class Imported:
    """What :func:`import_published` wrote."""

    model: str
    folder: Path
    results: Path
    samples: list[Path]
    parts: list[Part]
    data: Path | None
    grader: str


def documents(task: str) -> list[dict[str, Any]]:
    """The documents of ``task`` in ``doc_id`` order, without images, loaded as ``scifig rescore`` and the report's
    sample viewer load them (:mod:`scifig_tasks.report.task_docs`: the split and data its YAML names)."""
    import datasets

    from scifig_tasks.core.data import without_media
    from scifig_tasks.report.task_docs import documents as task_documents
    from scifig_tasks.report.task_docs import readable

    loaded = task_documents(readable([task])[task])
    if isinstance(loaded, datasets.Dataset):
        return without_media(loaded).to_list()
    return [{k: v for k, v in doc.items() if k != "image"} for doc in loaded]


def paper_record(doc: Mapping[str, Any], published: Published, origin: Path) -> dict[str, Any]:
    """The paper protocol's record of one question graded with the authors' grade (the module docstring)."""
    record = scoring.ungraded_record(doc, published.response, protocol="paper")
    if published.score == FAILED:
        error = f"the authors' grading failed (score -1 in {origin.name})"
        return {
            **record,
            VERDICT: None,
            "graded_by": None,
            "extracted": published.extracted,
            "flag": "judge_failed",
            "error": error,
        }
    return {**record, VERDICT: published.score, "graded_by": "judge", "extracted": published.extracted}


def agreement(docs: Sequence[Mapping[str, Any]], published: Mapping[str, Published]) -> Agreement:
    """The rules' verdicts (the default protocol without a judge) against the authors' grades."""
    found = Agreement(questions=len(docs))
    for doc in docs:
        grade = published[str(doc["query_id"])]
        record = scoring.graded_now(doc, grade.response, None)
        if record["graded_by"] != "rule":
            continue
        found.decided += 1
        if grade.score == FAILED:
            found.ungraded += 1
        elif record[VERDICT] == grade.score:
            found.agree += 1
        else:
            found.disagree.append(record["query_id"])
    return found


def read_parts(folder: Path, model: str) -> list[Part]:
    """Each mode ``folder`` holds files of ``model`` for, read against the data (the group's order: reasoning
    first)."""
    parts = []
    modes = modes_of(folder, model)
    for mode in (mode for mode in TASKS if mode in modes):
        print(f"loading the CharXiv {mode} questions ({TASKS[mode]})", file=sys.stderr)
        docs = documents(TASKS[mode])
        published = read_mode(folder, model, mode, docs)
        origin = folder / file_name("scores", model, mode)
        records = [paper_record(doc, published[str(doc["query_id"])], origin) for doc in docs]
        evaluated = scoring.evaluate(records, None)
        files = [folder / file_name(kind, model, mode) for kind in ("gen", "scores")]
        parts.append(Part(mode, docs, published, files, records, agreement(docs, published), evaluated))
    return parts


def sanitized(model: str) -> str:
    """A model name as a folder name."""
    return re.sub(r"[^\w.+-]+", "_", model).strip("_") or "model"


def _plain(config: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of a resolved task YAML that are plain JSON (its hooks left out)."""
    kept = {}
    for key, value in config.items():
        try:
            json.dumps(value)
        except TypeError:
            continue
        kept[key] = value
    return kept


def results_document(model: str, parts: Sequence[Part], grader: str, date: str) -> dict[str, Any]:
    """The results file of the imported run (the module docstring)."""
    from scifig_tasks.report.task_docs import readable

    tasks = [part.task for part in parts]
    grouped = len(parts) == len(TASKS)
    configs = readable(tasks)
    results: dict[str, Any] = {GROUP: {" ": " ", "alias": GROUP}} if grouped else {}
    for part in parts:
        results[part.task] = {
            "alias": f" - {part.task}" if grouped else part.task,
            "accuracy,none": part.evaluated["accuracy"],
            "accuracy_stderr,none": "N/A",
            "breakdown,none": part.evaluated["breakdown"],
            "breakdown_stderr,none": "N/A",
        }
    environment = provenance.environment("lmms-eval")
    environment["judge"] = {"model": grader, "host": PUBLISHED_GRADES}
    metric_kinds = {"accuracy": True, "breakdown": True}
    return {
        "results": results,
        "group_subtasks": {GROUP: tasks} if grouped else {tasks[0]: []},
        "configs": {
            task: {
                **_plain(configs[task]),
                "metadata": {**configs[task].get("metadata", {}), "scifig_protocol": "paper"},
            }
            for task in tasks
        },
        "versions": {task: configs[task].get("metadata", {}).get("version") for task in tasks},
        "n-shot": dict.fromkeys(tasks, 0),
        "higher_is_better": {name: metric_kinds for name in ([GROUP] if grouped else []) + tasks},
        "n-samples": {part.task: {"original": len(part.documents), "effective": len(part.documents)} for part in parts},
        "config": {"model": model, "model_args": "", "limit": None, "offset": 0, "bootstrap_iters": 100000},
        "date": date,
        "model_name": model,
        "model_name_sanitized": sanitized(model),
        "system_instruction": None,
        "chat_template": None,
        "fewshot_as_multiturn": False,
        provenance.KEY: environment,
        IMPORT_KEY: {
            "what": "the CharXiv authors' published responses and grades (scifig curate charxiv_full import-published)",
            "model": model,
            "grader": grader,
            "files": {part.mode: [str(path) for path in part.files] for part in parts},
            "imported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "rules_agreement": {part.mode: part.agreement.as_json() for part in parts},
        },
    }


def _sample(doc_id: int, doc: Mapping[str, Any], record: Mapping[str, Any], response: str) -> dict[str, Any]:
    return {
        "doc_id": doc_id,
        "target": str(doc["answer"]),
        "filtered_resps": response,
        "doc_hash": NULL_DOC_HASH,
        "accuracy": record,
        "breakdown": record,
        "input": doc["question"],
    }


def import_published(
    responses: Path, model: str, out: Path, data: Path | None = None, grader: str = PAPER_JUDGE_MODEL
) -> Imported:
    """Read ``model``'s published files in ``responses`` against the CharXiv data (``data``: a folder the data
    setting may name; None: the setting, else the Hub dataset at the pinned revision) and write the run folder
    ``out/<model>/``. Nothing is written when a file or an entry is refused."""
    folder = out / sanitized(model)
    if folder.is_dir() and any(folder.glob(f"*{RESULTS_SUFFIX}")):
        held = sorted(folder.glob(f"*{RESULTS_SUFFIX}"))[0]
        raise ValueError(f"{folder} already holds a run ({held.name}): choose another --out, or remove it")
    given: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if data is not None:
        from scifig_tasks.benchmarks.charxiv.source import CHARXIV_DESCRIPTIVE

        data = data.expanduser().resolve()  # the authors' layout names its images by the folder's path
        given = settings.use(settings.Settings.from_environment(None, {CHARXIV_DESCRIPTIVE.env_var: str(data)}))
    with given:
        parts = read_parts(responses, model)
        document = results_document(model, parts, grader, _date())
    folder.mkdir(parents=True, exist_ok=True)
    date = document["date"]
    results = folder / f"{date}{RESULTS_SUFFIX}"
    samples = []
    for part in parts:
        path = folder / f"{date}_samples_{part.task}.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for doc_id, (doc, record) in enumerate(zip(part.documents, part.records, strict=True)):
                response = part.published[str(doc["query_id"])].response
                handle.write(json.dumps(_sample(doc_id, doc, record, response), ensure_ascii=False) + "\n")
        samples.append(path)
    results.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    return Imported(model, folder, results, samples, parts, data, grader)


def _date() -> str:
    """lmms-eval's timestamp of a run's files (``20240611_153000``)."""
    return datetime.now().strftime("%Y%m%d_%H%M%S")
