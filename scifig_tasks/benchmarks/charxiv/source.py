"""CharXiv's data: the published dataset (``princeton-nlp/CharXiv``, split ``validation``), its columns and checks,
the authors' own local layout, and its rows' question documents (:mod:`scifig_tasks.benchmarks.charxiv.questions`).

Rule (the authors' ``build_descriptive_quries`` / ``build_reasoning_queries``, princeton-nlp/CharXiv 7ebe88f): every
chart of the validation split is asked its four descriptive questions (response keys ``<figure id>_<0..3>``) and its
reasoning question (key ``<figure id>``), worded by :mod:`scifig_tasks.benchmarks.charxiv.prompts`. The test
split's answers are withheld (null) and cannot be scored.
``SCIFIG_CHARXIV_FULL_DATA`` may name a folder of ``<split>.parquet`` files (``val.parquet``, as on the Hub) or the
authors' layout (``descriptive_val.json``, ``reasoning_val.json``, ``image_metadata_val.json``, ``images/<id>.jpg``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scifig_tasks.benchmarks.charxiv.prompts import NUMBER_IN_GENERAL
from scifig_tasks.benchmarks.charxiv.questions import (
    FIGURE_PATH,
    QUESTIONS_PER_CHART,
    descriptive_questions,
    reasoning_questions,
)
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.schema import BenchmarkSource, Column, expect_int, expect_str

if TYPE_CHECKING:
    import datasets

HUB_PATH = "princeton-nlp/CharXiv"

REVISION = "f441eb632fc62f6f777830a0f47619e6e86459b0"
"""The commit of ``princeton-nlp/CharXiv`` that CharXiv's scores are made from: the revision the Inspect port
(meridianlabs-ai/inspect_charxiv) pins, chosen so both read the same rows; its tree also holds the authors' published
model outputs (``existing_evaluations/``). ``SCIFIG_CHARXIV_FULL_REVISION`` overrides it."""

CATEGORIES = ("cs", "econ", "eess", "math", "physics", "q-bio", "q-fin", "stat")
"""The arXiv subjects of the charts (the authors' ``DOMAIN2ABBR`` keys)."""
YEARS = ("20", "21", "22", "23")
"""The years of the charts' papers, two digits (2020-2023)."""

_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def _figure_path(value: Any) -> str | None:
    problem = expect_str()(value)
    if problem is None and FIGURE_PATH.fullmatch(value) is None:
        return f"expected images/<figure id>.jpg, got {value!r}"
    return problem


def _charxiv_row(row: Mapping[str, Any], split: str) -> tuple[str, str] | None:
    """A chart's four descriptive templates differ, and a number-in-general answer is a plain number (its decimal
    places make the answer-format line: :func:`~scifig_tasks.benchmarks.charxiv.prompts.number_instruction`)."""
    templates = [row[f"descriptive_q{n}"] for n in range(1, QUESTIONS_PER_CHART + 1)]
    if len(set(templates)) != len(templates):
        return "descriptive_q1", f"the chart's four templates repeat one: {templates}"
    if row["reasoning_a_type"] == NUMBER_IN_GENERAL and _NUMBER.fullmatch(row["reasoning_a"]) is None:
        return "reasoning_a", f"a number-in-general answer (type 4) must be a plain number, got {row['reasoning_a']!r}"
    return None


def charxiv_features() -> datasets.Features:
    """The Hub dataset's features, in its column order; the authors' layout is read into exactly these."""
    import datasets

    text, int8, int16 = datasets.Value("string"), datasets.Value("int8"), datasets.Value("int16")
    return datasets.Features(
        {
            "image": datasets.Image(),
            "category": text,
            "year": text,
            "original_figure_path": text,
            "original_id": text,
            "figure_path": text,
            "num_subplots": int16,
            "subplot_row": int16,
            "subplot_col": int16,
            "subplot_loc": text,
            **{f"descriptive_q{n}": int8 for n in range(1, QUESTIONS_PER_CHART + 1)},
            **{f"descriptive_a{n}": text for n in range(1, QUESTIONS_PER_CHART + 1)},
            "reasoning_q": text,
            "reasoning_q_source": int8,
            "reasoning_a": text,
            "reasoning_a_type": int8,
        }
    )


def read_authors_layout(folder: Path, split: str) -> datasets.Dataset | None:
    """The ``split`` (the authors' name: ``val``, ``test``) of the authors' layout in ``folder`` as rows with the Hub's
    columns, in the authors' order; ``None`` when ``folder`` holds no ``descriptive_<split>.json``.

    Rule (the Hub's columns from the authors' files): ``qids`` / ``answers`` -> ``descriptive_q1..4`` / ``a1..4``;
    ``query``, ``answer``, ``inst_category``, ``qa_source`` -> ``reasoning_q``, ``reasoning_a``, ``reasoning_a_type``,
    ``reasoning_q_source``; a grid location ``[r, c]`` -> ``subplot_row``, ``subplot_col`` (``subplot_loc`` null), a
    location in words -> ``subplot_loc`` (row and column null); the metadata's ``paper_id`` and ``figure_path`` ->
    ``original_id``, ``original_figure_path``; the image is the file ``images/<figure id>.jpg``, read (and checked) by
    the loader. A missing file, figure or field is a :class:`DataError` naming the file and the figure."""
    folder = folder.resolve()  # the image cells name their files: from wherever the data is read later
    descriptive_file = folder / f"descriptive_{split}.json"
    if not descriptive_file.is_file():
        return None
    import datasets

    descriptive = _json_file(descriptive_file)
    reasoning = _json_file(folder / f"reasoning_{split}.json")
    metadata = _json_file(folder / f"image_metadata_{split}.json")
    for name, entries in (("reasoning", reasoning), ("image_metadata", metadata)):
        if set(entries) != set(descriptive):
            odd = sorted(set(entries) ^ set(descriptive), key=lambda key: (len(key), key))[0]
            where = "lacks" if odd in descriptive else f"has, unlike {descriptive_file.name},"
            problem = f"{where} figure {odd}: the three files must hold the same figures"
            raise DataError(str(folder / f"{name}_{split}.json"), None, None, problem)
    rows = [_authors_row(folder, key, descriptive[key], reasoning[key], metadata[key], split) for key in descriptive]
    if not rows:
        raise DataError(str(descriptive_file), None, None, "holds no charts")
    try:
        return datasets.Dataset.from_list(rows, features=charxiv_features())
    except (TypeError, ValueError, ArithmeticError) as exc:  # a value of another type than the Hub's column
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise DataError(str(folder), None, None, f"cannot be read into the Hub's columns ({reason})") from exc


def _json_file(file: Path) -> dict[str, Any]:
    if not file.is_file():
        raise DataError(
            str(file),
            None,
            None,
            "is missing (the authors' layout has descriptive_, reasoning_ and "
            "image_metadata_<split>.json, and images/<figure id>.jpg)",
        )
    try:
        loaded = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(str(file), None, None, f"cannot be read as JSON ({type(exc).__name__}: {exc})") from exc
    if not isinstance(loaded, dict):
        raise DataError(str(file), None, None, "expected an object of charts keyed by figure id")
    return loaded


def _authors_row(folder: Path, key: str, descriptive: Any, reasoning: Any, metadata: Any, split: str) -> dict[str, Any]:
    """One chart's row with the Hub's columns (:func:`read_authors_layout`)."""

    def field(entries: Any, name: str, file: str) -> Any:
        if not isinstance(entries, dict) or name not in entries:
            raise DataError(str(folder / f"{file}_{split}.json"), None, None, f"figure {key} has no field {name!r}")
        return entries[name]

    figure = field(descriptive, "figure_id", "descriptive")
    if str(figure) != key:
        raise DataError(str(folder / f"descriptive_{split}.json"), None, None, f"figure {key} has figure_id {figure!r}")
    image = folder / "images" / f"{figure}.jpg"
    if not image.is_file():
        raise DataError(str(image), None, None, f"no such file: the image of figure {figure} (images/{figure}.jpg)")
    location = field(descriptive, "subplot_loc", "descriptive")
    if isinstance(location, list) and len(location) == 2:
        row, column, text = location[0], location[1], None
    elif isinstance(location, str):
        row, column, text = None, None, location
    else:
        raise DataError(
            str(folder / f"descriptive_{split}.json"),
            None,
            None,
            f"figure {key} has subplot_loc {location!r}: expected [row, column] or a text",
        )
    templates, answers = field(descriptive, "qids", "descriptive"), field(descriptive, "answers", "descriptive")
    if not (isinstance(templates, list) and isinstance(answers, list)) or not (
        len(templates) == len(answers) == QUESTIONS_PER_CHART
    ):
        raise DataError(
            str(folder / f"descriptive_{split}.json"),
            None,
            None,
            f"figure {key} needs {QUESTIONS_PER_CHART} qids and {QUESTIONS_PER_CHART} answers",
        )
    return {
        "image": {"path": str(image), "bytes": None},
        "category": field(metadata, "category", "image_metadata"),
        "year": field(metadata, "year", "image_metadata"),
        "original_figure_path": field(metadata, "figure_path", "image_metadata"),
        "original_id": field(metadata, "paper_id", "image_metadata"),
        "figure_path": f"images/{figure}.jpg",
        "num_subplots": field(descriptive, "num_subplots", "descriptive"),
        "subplot_row": row,
        "subplot_col": column,
        "subplot_loc": text,
        **{f"descriptive_q{n + 1}": templates[n] for n in range(QUESTIONS_PER_CHART)},
        **{f"descriptive_a{n + 1}": answers[n] for n in range(QUESTIONS_PER_CHART)},
        "reasoning_q": field(reasoning, "query", "reasoning"),
        "reasoning_q_source": field(reasoning, "qa_source", "reasoning"),
        "reasoning_a": field(reasoning, "answer", "reasoning"),
        "reasoning_a_type": field(reasoning, "inst_category", "reasoning"),
    }


_COLUMNS = (
    Column("image", image=True),
    Column("category", expect_str(CATEGORIES)),
    Column("year", expect_str(YEARS)),
    Column("original_figure_path", expect_str()),
    Column("original_id", expect_str()),
    Column("figure_path", _figure_path),
    Column("num_subplots", expect_int(low=1)),
    *(Column(f"descriptive_q{n}", expect_int(1, 19)) for n in range(1, QUESTIONS_PER_CHART + 1)),
    *(Column(f"descriptive_a{n}", expect_str()) for n in range(1, QUESTIONS_PER_CHART + 1)),
    Column("reasoning_q", expect_str()),
    Column("reasoning_q_source", expect_int(1, 3)),
    Column("reasoning_a", expect_str()),
    Column("reasoning_a_type", expect_int(1, 4)),
)
"""The checked columns; ``subplot_row``, ``subplot_col`` and ``subplot_loc`` may be null (a row check refuses a
null cell), so :func:`subplot_location` checks them when the questions are made."""

CHARXIV_DESCRIPTIVE = BenchmarkSource(
    name="CharXiv descriptive",
    hub_path=HUB_PATH,
    splits=("validation",),
    env_var="SCIFIG_CHARXIV_FULL_DATA",
    columns=_COLUMNS,
    split_aliases={"validation": ("val",)},
    row_check=_charxiv_row,
    key=("figure_path",),
    revision=REVISION,
    revision_var="SCIFIG_CHARXIV_FULL_REVISION",
    questions=descriptive_questions,
    local_reader=read_authors_layout,
)
"""Four documents per chart (:func:`descriptive_questions`)."""

CHARXIV_REASONING = replace(CHARXIV_DESCRIPTIVE, name="CharXiv reasoning", questions=reasoning_questions)
"""One document per chart (:func:`reasoning_questions`), from the same data."""
