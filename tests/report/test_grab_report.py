"""The GRAB report section compares the paper's precision classes (Table 1: integer, 1 d.p., nearest 10, the list and
equation questions counted as integer) and shows the finer answer formats beside them."""

from __future__ import annotations

from pathlib import Path

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.benchmarks.grab.report import section
from scifig_tasks.report.document import Table
from scifig_tasks.report.runs import Run
from tests.harness.grab_data import EQUATION_QUESTION as EQUATION
from tests.harness.grab_data import INTEGER
from tests.harness.grab_data import LIST_QUESTION as LIST

# (question, answer, reply): 2 of 4 integer-class questions right (the list one, not the equation), 2 of 2 at 1 d.p.
QUESTIONS = [
    ("What is the value of the gradient of the function?" + INTEGER, "3", "3"),
    ("What is the value of the y-intercept of the function?" + INTEGER, "-2", "2"),
    (LIST, "[-1, 4]", "[-1, 4]"),
    (EQUATION, "y = 2x + 1", "y = 2x - 1"),
    ("What is the Pearson's correlation coefficient of the data? Give your answer to 1 decimal place.", "0.4", "0.4"),
    (
        "What is the Kendall rank correlation coefficient of the data? Give your answer to 1 decimal place.",
        "0.2",
        "0.2 or so",
    ),
]


def scored() -> dict[str, float | dict]:
    """The ``grab`` entry of a results file for :data:`QUESTIONS` (4 of 6 right)."""
    records = []
    for pid, (question, answer, reply) in enumerate(QUESTIONS):
        doc = {"pid": pid, "question": question, "answer": answer, "task": "properties", "category": "Extrema"}
        records.append(grab.sample_record({**doc, "complexity": 0}, grab.score_exact(reply, answer)))
    return {"accuracy,none": 4 / 6, "breakdown,none": grab.breakdown(records)}


def test_report_shows_the_papers_precision_classes(tmp_path: Path) -> None:
    run = Run("my-vlm", {"grab": scored()})

    out = section([run], tmp_path)

    assert out is not None
    tables = {block.caption: block for block in out.blocks if isinstance(block, Table)}
    classes = tables[
        "GRAB per precision class (paper Table 1: integer, 1 d.p., nearest 10) (%, 95% Wilson interval), exact match"
    ]
    # Wilson 95%: 2/4 -> 15.0-85.0, 2/2 -> 34.2-100.0
    assert classes.rows == [["1dp", "100.0 (34.2-100.0)"], ["integer", "50.0 (15.0-85.0)"]]
    formats = tables[
        "GRAB per answer format (integer, 1dp, nearest10, list, equation) (%, 95% Wilson interval), exact match"
    ]
    assert [row[0] for row in formats.rows] == ["1dp", "equation", "integer", "list"]
    assert formats.rows[1][1].startswith("0.0 ") and formats.rows[3][1].startswith("100.0 ")


def test_published_rows_stand_beside_the_authors_rule_only(tmp_path: Path) -> None:
    """The paper's numbers were scored by the authors' truncation rule: its table holds them, the whole-answer table
    does not."""
    authors = Run("authors-rule", {"grab": scored()}, protocols={"grab": "paper"})
    whole = Run("whole-answer", {"grab": scored()})

    out = section([authors, whole], tmp_path)

    assert out is not None
    tables = {block.caption: block for block in out.blocks if isinstance(block, Table)}
    truncation = tables["GRAB accuracy (%, 95% Wilson interval), truncation to the answer's length (the authors' rule)"]
    assert truncation.rows[0][:3] == ["authors-rule", "6", "66.7 (30.0-90.3)"]
    published = {row[0]: row[2] for row in truncation.rows[1:]}
    assert published["(published) Claude 3.5 Sonnet [roberts2024grab]"] == "21.7"
    whole_answer = [caption for caption in tables if caption.startswith("GRAB accuracy") and "whole answer" in caption]
    assert [row[0] for row in tables[whole_answer[0]].rows] == ["whole-answer"]
