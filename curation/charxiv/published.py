"""The CharXiv authors' published outputs of one model, read and checked against the questions they answer.

Files (princeton-nlp/CharXiv ``src/generate.py`` and ``src/evaluate.py``; ``existing_evaluations/`` on the Hub), in
one folder, ``<mode>`` ``descriptive`` or ``reasoning``:

* ``gen-<model>-<mode>_val.json``, the responses. Descriptive: ``{"<figure id>_<i>": {"figure_id": int,
  "subq_idx": i, "qid": template, "response": str}}`` (a fork that keeps ``figure_path`` and ``question`` is read
  too: they are not used); reasoning: ``{"<figure id>": {"figure_id", "inst_category", "raw_question",
  "response"}}``.
* ``scores-<model>-<mode>_val.json``, the authors' grades. Descriptive: ``{"<figure id>_<i>": {"resp_id",
  "extracted_answer", "score"}}``; reasoning: ``{"<figure id>": {"figure_id", "extracted_answer", "score"}}``. A score
  is 1, 0 or -1 (the grading failed; their ``get_stats.py`` counts it 0).

Rule: each question of the data has exactly one response and one grade, keyed by the authors' response key (scifig's
``query_id``), and what a response says of its question (figure, question index and template; answer type and
question text) is the data's. Anything else is a :class:`PublishedError` naming the file and the key.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODES = ("descriptive", "reasoning")
SPLIT = "val"
"""The authors' name of the validation split (the test split's answers are withheld: it cannot be graded)."""
SCORES = (1, 0, -1)
FAILED = -1
"""The authors' score of a grading that failed (their ``"Failed to parse response"``)."""
SHOWN_KEYS = 8
"""Query ids an error lists before it abbreviates."""


class PublishedError(ValueError):
    """A published file that cannot be read as the authors' layout: the file, the key (when one is at fault), why."""

    def __init__(self, file: Path, key: str | None, problem: str) -> None:
        where = str(file) if key is None else f"{file}, key {key!r}"
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class Published:
    """One question's published response and the authors' grade of it."""

    response: str
    extracted: str
    """The answer the authors' grader extracted, as text."""
    score: int
    """1, 0, or -1 (:data:`FAILED`)."""


def file_name(kind: str, model: str, mode: str) -> str:
    """``gen-<model>-<mode>_val.json`` (``kind`` ``gen``) or ``scores-<model>-<mode>_val.json``."""
    return f"{kind}-{model}-{mode}_{SPLIT}.json"


def modes_of(folder: Path, model: str) -> list[str]:
    """The modes (descriptive, reasoning) ``folder`` holds a gen or scores file of ``model`` for; an error when it
    holds neither (naming the models it holds files of)."""
    if not folder.is_dir():
        raise PublishedError(
            folder, None, "no such folder (--responses names the folder of the gen- and scores- files)"
        )
    found = [
        mode
        for mode in MODES
        if (folder / file_name("gen", model, mode)).is_file() or (folder / file_name("scores", model, mode)).is_file()
    ]
    if found:
        return found
    pattern = re.compile(rf"gen-(.+)-(?:{'|'.join(MODES)})_{SPLIT}\.json")
    models = sorted({match.group(1) for path in folder.iterdir() if (match := pattern.fullmatch(path.name))})
    held = f"it has gen files of {', '.join(models)}" if models else f"it holds no gen-<model>-<mode>_{SPLIT}.json"
    expected = " or ".join(file_name("gen", model, mode) for mode in MODES)
    raise PublishedError(folder, None, f"no {expected} ({held})")


def _load(path: Path, what: str) -> dict[str, Any]:
    if not path.is_file():
        raise PublishedError(path, None, f"is missing ({what}): the gen- and scores- files of a mode come together")
    print(f"reading {path}", file=sys.stderr)
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PublishedError(path, None, f"cannot be read as JSON ({type(exc).__name__}: {exc})") from exc
    if not isinstance(loaded, dict):
        raise PublishedError(path, None, f"expected an object keyed by query id, got {type(loaded).__name__}")
    return loaded


def _ids(keys: Iterable[str]) -> str:
    ordered = sorted(keys, key=lambda key: [int(part) if part.isdigit() else part for part in re.split(r"_", key)])
    shown = ", ".join(ordered[:SHOWN_KEYS])
    return shown if len(ordered) <= SHOWN_KEYS else f"{shown}, ... ({len(ordered)} in all)"


def _same_keys(path: Path, entries: Mapping[str, Any], wanted: Sequence[str], of: str) -> None:
    """Refuse ``entries`` unless keyed by exactly the query ids ``wanted`` (``of``: what they are, in words)."""
    lacking = [key for key in wanted if key not in entries]
    if lacking:
        raise PublishedError(path, None, f"has no entry for {len(lacking)} of {of}: {_ids(lacking)}")
    extra = set(entries) - set(wanted)
    if extra:
        raise PublishedError(
            path,
            None,
            f"has {len(extra)} keys that are none of {of}: {_ids(extra)} (were the responses made on other data? "
            "--data names the CharXiv data they answer)",
        )


def _fields(path: Path, key: str, entry: Any, names: Sequence[str]) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise PublishedError(path, key, f"expected an object, got {type(entry).__name__}")
    missing = [name for name in names if name not in entry]
    if missing:
        raise PublishedError(path, key, f"has no {', '.join(repr(name) for name in missing)}")
    return entry


def _as_text(value: Any) -> str:
    """An extracted answer as text (the grader may give a number: ``"extracted_answer": 60``)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _check_response(path: Path, key: str, entry: Mapping[str, Any], doc: Mapping[str, Any], mode: str) -> str:
    """The response of ``entry``, after checking what it says of its question against the data's ``doc``."""
    other = "the responses answer other data (--data names the CharXiv data they were made from)"
    figure = str(doc["figure_id"])
    if str(entry["figure_id"]) != figure:
        raise PublishedError(path, key, f"figure_id {entry['figure_id']!r} is not the key's figure {figure}")
    if mode == "descriptive":
        index, template = int(doc["subq_idx"]), int(doc["template"])
        if entry["subq_idx"] != index:
            raise PublishedError(path, key, f"subq_idx {entry['subq_idx']!r} is not the key's question index {index}")
        if entry["qid"] != template:
            raise PublishedError(path, key, f"qid {entry['qid']!r}, but the data asks template {template}: {other}")
    else:
        answer_type = int(doc["answer_type"])
        if entry["inst_category"] != answer_type:
            raise PublishedError(
                path,
                key,
                f"inst_category {entry['inst_category']!r}, but the data's answer type is {answer_type}: {other}",
            )
        if entry["raw_question"] != doc["raw_question"]:
            raise PublishedError(path, key, f"raw_question is not the data's question {doc['raw_question']!r}: {other}")
    response = entry["response"]
    if not isinstance(response, str):
        raise PublishedError(path, key, f"response {response!r} is not a text")
    return response


def _check_grade(path: Path, key: str, entry: Mapping[str, Any], mode: str) -> tuple[str, int]:
    """The extracted answer (as text) and the score of a scores file's ``entry``."""
    named = entry["resp_id"] if mode == "descriptive" else entry["figure_id"]
    if str(named) != key:
        field = "resp_id" if mode == "descriptive" else "figure_id"
        raise PublishedError(path, key, f"{field} {named!r} is not the key")
    score = entry["score"]
    if isinstance(score, bool) or not isinstance(score, int | float) or score not in SCORES:
        raise PublishedError(path, key, f"score {score!r} is not 1, 0 or -1")
    return _as_text(entry["extracted_answer"]), int(score)


def read_mode(folder: Path, model: str, mode: str, documents: Sequence[Mapping[str, Any]]) -> dict[str, Published]:
    """Per query id, in the order of ``documents`` (the data's questions of ``mode``), the published response and
    grade of ``model`` (files in ``folder``), every file and entry checked (see the module docstring)."""
    gen_path, scores_path = folder / file_name("gen", model, mode), folder / file_name("scores", model, mode)
    gen = _load(gen_path, f"the {mode} responses of {model}")
    scores = _load(scores_path, f"the authors' grades of {model}'s {mode} responses")
    wanted = [str(doc["query_id"]) for doc in documents]
    _same_keys(gen_path, gen, wanted, f"the {len(wanted)} {mode} questions of the data")
    _same_keys(scores_path, scores, wanted, f"the {len(wanted)} {mode} questions of the data")
    identity = (
        ("figure_id", "subq_idx", "qid") if mode == "descriptive" else ("figure_id", "inst_category", "raw_question")
    )
    graded = ("resp_id",) if mode == "descriptive" else ("figure_id",)
    found: dict[str, Published] = {}
    for key, doc in zip(wanted, documents, strict=True):
        response = _check_response(gen_path, key, _fields(gen_path, key, gen[key], (*identity, "response")), doc, mode)
        grade = _fields(scores_path, key, scores[key], (*graded, "extracted_answer", "score"))
        extracted, score = _check_grade(scores_path, key, grade, mode)
        found[key] = Published(response, extracted, score)
    return found
