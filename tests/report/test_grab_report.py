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


def test_report_shows_the_papers_precision_classes(tmp_path: Path) -> None:
    records = []
    for pid, (question, answer, reply) in enumerate(QUESTIONS):
        doc = {"pid": pid, "question": question, "answer": answer, "task": "properties", "category": "Extrema"}
        records.append(grab.sample_record({**doc, "complexity": 0}, grab.score_exact(reply, answer)))
    run = Run("my-vlm", {"grab": {"accuracy,none": 4 / 6, "breakdown,none": grab.breakdown(records)}})

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
