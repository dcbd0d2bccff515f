"""CharXiv scores: the authors' groups (src/score_utils.py), accuracy over the graded questions with counts and 95%
Wilson intervals, and the authors' figure (ungraded counted 0 over all questions, their get_stats.py)."""

from __future__ import annotations

from typing import Any

import pytest

from scifig_tasks.benchmarks.charxiv.scores import ANSWER_TYPES, DESCRIPTIVE_GROUPS, summary
from scifig_tasks.core.stats import wilson_interval


def record(query_id: str, score: int | None, graded_by: str | None, **fields: Any) -> dict[str, Any]:
    kind = "descriptive" if "template" in fields else "reasoning"
    return {"query_id": query_id, "kind": kind, "verdict": score, "graded_by": graded_by, **fields}


def test_the_authors_groups() -> None:
    groups: dict[str, list[int]] = {}
    for template, group in DESCRIPTIVE_GROUPS.items():
        groups.setdefault(group, []).append(template)
    assert groups == {
        "Information Extraction": [1, 2, 3, 4, 5, 6, 7],
        "Enumeration": [8, 9, 13, 14, 15],
        "Pattern Recognition": [11, 16, 18],
        "Counting": [10, 12, 19],
        "Compositionality": [17],
    }
    assert list(ANSWER_TYPES.values()) == ["Text-in-Chart", "Text-in-General", "Number-in-Chart", "Number-in-General"]


def test_summary_leaves_the_ungraded_out_and_keeps_the_authors_figure() -> None:
    records = [
        record("0_0", 1, "rule", template=1),
        record("0_1", 1, "judge", template=2),
        record("0_2", 0, "judge", template=17),
        record("0_3", None, None, template=10, flag="judge_failed"),
        record("2_0", 0, None, template=11, flag="judge_off"),  # no judge: counted wrong, flagged
        record("2_1", 0, "rule", template=11),
        record("0", 1, "judge", answer_type=4, question_source=3),
        record("2", None, None, answer_type=1, question_source=1, flag="judge_failed"),
    ]
    result = summary(records)
    descriptive, reasoning = result["descriptive"], result["reasoning"]
    overall = descriptive["overall"]
    assert overall["accuracy"] == 40.0 and overall["authors_score"] == 33.33  # 2/5 graded; 2/6 all
    low, high = wilson_interval(2, 5)
    assert overall["ci95"] == [round(100 * low, 2), round(100 * high, 2)]
    assert (overall["questions"], overall["graded"], overall["correct"]) == (6, 5, 2)
    assert descriptive["counts"] == {
        "ungraded": 1,
        "by_rule": 2,
        "by_judge": 2,
        "wrong_without_judge": 1,
        "flags": {"judge_failed": 1, "judge_off": 1},
    }
    assert list(descriptive["by_group"]) == [
        "Information Extraction",
        "Pattern Recognition",
        "Counting",
        "Compositionality",
    ]
    assert descriptive["by_group"]["Information Extraction"]["accuracy"] == 100.0
    counting = descriptive["by_group"]["Counting"]
    assert counting["accuracy"] is None and counting["authors_score"] == 0.0 and counting["questions"] == 1
    assert list(descriptive["by_template"]) == ["1", "2", "10", "11", "17"]
    assert reasoning["overall"]["accuracy"] == 100.0 and reasoning["overall"]["authors_score"] == 50.0
    assert list(reasoning["by_answer_type"]) == ["Text-in-Chart", "Number-in-General"]
    assert list(reasoning["by_source"]) == ["GPT-Sourced", "Completely Human"]


def test_summary_of_one_kind_and_without_sources() -> None:
    result = summary([record("5", 0, "rule", answer_type=3)])
    assert list(result) == ["reasoning"] and "by_source" not in result["reasoning"]
    assert result["reasoning"]["overall"]["accuracy"] == 0.0 and result["reasoning"]["counts"]["by_rule"] == 1
    assert summary([]) == {}


@pytest.mark.parametrize(
    "bad",
    [
        record("0_0", -1, "judge", template=1),  # the authors' failure mark is no score
        record("0_0", True, "judge", template=1),
        record("0_0", 1, None, template=1),  # right by nothing
        record("0_0", 1, "audit", template=1),
        {"query_id": "0_0", "kind": "charts", "verdict": 1, "graded_by": "rule"},
    ],
)
def test_records_of_another_shape_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="CharXiv record"):
        summary([bad])
