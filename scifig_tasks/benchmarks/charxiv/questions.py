"""CharXiv's question documents: each chart of the published dataset made into the questions the authors ask of it.

Rule (the authors' ``build_descriptive_quries`` / ``build_reasoning_queries``, princeton-nlp/CharXiv 7ebe88f): every
chart of the validation split is asked its four descriptive questions (response keys ``<figure id>_<0..3>``) and its
reasoning question (key ``<figure id>``), worded by :mod:`scifig_tasks.benchmarks.charxiv.prompts`. The rows and
their checks are :mod:`scifig_tasks.benchmarks.charxiv.source`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scifig_tasks.benchmarks.charxiv.prompts import descriptive_question, reasoning_question

QUESTIONS_PER_CHART = 4
"""Descriptive questions per chart (``descriptive_q1`` .. ``descriptive_q4``)."""
FIGURE_PATH = re.compile(r"images/(\d+)\.jpg")


def figure_id(figure_path: str) -> int:
    """The authors' figure id of a Hub ``figure_path`` (``images/<id>.jpg``)."""
    found = FIGURE_PATH.fullmatch(figure_path)
    if found is None:
        raise ValueError(f"figure_path {figure_path!r} is not images/<id>.jpg")
    return int(found.group(1))


def subplot_location(row: Mapping[str, Any]) -> list[int] | str:
    """The subplot a chart's descriptive questions are about: the text ``subplot_loc`` for subplots not in a grid,
    else ``[subplot_row, subplot_col]`` (row 0: a single plot). These columns may be null, so the row checks do not
    read them; this rule does."""
    text = row.get("subplot_loc")
    if text is not None:
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"subplot_loc must be a subplot named in words or null, got {text!r}")
        return text
    place = [row.get("subplot_row"), row.get("subplot_col")]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in place):
        raise ValueError(f"subplot_loc is null, so subplot_row and subplot_col must be numbers >= 0, got {place}")
    return place


def _chart_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "num_subplots": row["num_subplots"],
        "category": row["category"],
        "year": row["year"],
        "image": row["image"],
    }


def descriptive_questions(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A chart's four descriptive question documents, in the authors' order (``subq_idx`` 0-3), each keyed as the
    authors key its response (``query_id`` ``<figure id>_<subq_idx>``)."""
    figure = figure_id(row["figure_path"])
    location = subplot_location(row)
    documents = []
    for index in range(QUESTIONS_PER_CHART):
        template = row[f"descriptive_q{index + 1}"]
        documents.append(
            {
                "query_id": f"{figure}_{index}",
                "figure_id": figure,
                "subq_idx": index,
                "template": template,
                "question": descriptive_question(template, location),
                "answer": row[f"descriptive_a{index + 1}"],
                **_chart_fields(row),
            }
        )
    return documents


def reasoning_questions(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A chart's reasoning question document, keyed as the authors key its response (``query_id`` the figure id);
    its answer-format line follows the answer type (``reasoning_a_type``), not the question's source."""
    figure = figure_id(row["figure_path"])
    return [
        {
            "query_id": str(figure),
            "figure_id": figure,
            "answer_type": row["reasoning_a_type"],
            "question_source": row["reasoning_q_source"],
            "raw_question": row["reasoning_q"],
            "question": reasoning_question(row["reasoning_q"], row["reasoning_a_type"], row["reasoning_a"]),
            "answer": row["reasoning_a"],
            **_chart_fields(row),
        }
    ]
