"""``scifig report`` reading VLMEvalKit scores files (``<model>_<dataset>_scifig_scores.json`` and
``..._scifig_records.jsonl``, the format ``scifig_tasks.vlmeval`` documents), beside an lmms-eval-style results file.

The files are written here in that documented format (VLMEvalKit's runner is exercised in test_vlmeval_runner.py);
the expected cells are worked out by hand from the records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import binomtest

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.core.provenance import NOT_RECORDED
from scifig_tasks.report.build import build_report


def cell(correct: int, total: int) -> str:
    """``accuracy (low-high)`` in percent with scipy's Wilson interval, rounded to 4 decimals as the scorers do."""
    interval = binomtest(correct, total).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = (round(value, 4) for value in (interval.low, interval.high))
    return f"{100 * correct / total:.1f} ({100 * low:.1f}-{100 * high:.1f})"


def _records() -> list[dict]:
    """Six GRAB records: properties 2 of 3 right, function 1 of 3 right (one empty output)."""
    rows = []
    for index, (task, correct, status) in enumerate(
        [
            ("properties", 1, "ok"),
            ("properties", 1, "ok"),
            ("properties", 0, "ok"),
            ("function", 1, "ok"),
            ("function", 0, "empty"),
            ("function", 0, "ok"),
        ]
    ):
        rows.append(
            {
                "pid": index,
                "task": task,
                "category": "Extrema",
                "complexity": 0 if task == "properties" else index % 2,
                "precision": "integer",
                "correct": correct,
                "output_status": status,
                "judge": "not_used",
                "extracted": None,
                "prediction": "" if status == "empty" else "7",
            }
        )
    return rows


def write_grab_files(work: Path, records: list[dict]) -> None:
    """The GRAB scores and records files VLMEvalKit's run writes for ``my-vlm`` (3 of the 6 questions right)."""
    scores = {
        "dataset": "SciFig_GRAB",
        "metrics": {"accuracy": 3 / 6, "n": 6, "correct": 3},
        "breakdown": grab.breakdown(records),
    }
    (work / "my-vlm_SciFig_GRAB_scifig_scores.json").write_text(json.dumps(scores))
    (work / "my-vlm_SciFig_GRAB_scifig_records.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")


def test_vlmeval_scores_files_become_a_model_row(tmp_path: Path) -> None:
    work = tmp_path / "vlmeval-out" / "my-vlm"
    work.mkdir(parents=True)
    records = _records()
    write_grab_files(work, records)
    other = {"dataset": "SciFig_SciFIBench_CS_Figure2Caption_Reasoning", "metrics": {}, "breakdown": {}}
    (work / "my-vlm_SciFig_SciFIBench_CS_Figure2Caption_Reasoning_scifig_scores.json").write_text(json.dumps(other))

    report = build_report([tmp_path / "vlmeval-out"], tmp_path / "report")

    markdown = report.markdown.read_text()
    assert report.sections == [
        "GRAB",
        "Outputs counted wrong without a readable answer (sample logs)",
        "Environment: what made these numbers",
    ]
    # a scores file written before the environment block says so
    scores_file = "my-vlm_SciFig_GRAB_scifig_scores.json"
    assert f"| my-vlm (VLMEvalKit) | {scores_file} | grab - | unknown | {NOT_RECORDED} |" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| my-vlm (VLMEvalKit) | 6 |"))
    # overall 3/6, "other rule differs" unknown (these records hold one verdict each, as written before GRAB 2.5 kept
    # both rules' verdicts), properties 2/3, function 1/3
    assert row == f"| my-vlm (VLMEvalKit) | 6 | {cell(3, 6)} | - | {cell(2, 3)} | {cell(1, 3)} | - | - |"
    assert "GRAB outputs the two rules score differently" not in markdown  # nothing to count
    assert "| my-vlm (VLMEvalKit) | SciFig_GRAB | 6 | 1 |" not in markdown  # tasks are named as in lmms-eval
    assert "| my-vlm (VLMEvalKit) | grab | 6 | 1 |" in markdown
    assert "SciFig_SciFIBench_CS_Figure2Caption_Reasoning: not shown in this report" in markdown


def test_a_vlmeval_scores_file_with_both_rules_verdicts_says_where_they_differ(tmp_path: Path) -> None:
    """VLMEvalKit's GRAB dataset keeps both rules' verdicts in its records and tallies them into the scores file's
    breakdown (``SciFigGRAB.summarise``), as the lmms-eval task does: the report shows the count beside the accuracy."""
    work = tmp_path / "vlmeval-out" / "my-vlm"
    work.mkdir(parents=True)
    records = []
    for record in _records():
        both = {"rule": "whole_answer", "answer_format": "integer"}
        both |= {"whole_answer_correct": record["correct"], "truncation_correct": record["correct"]}
        records.append(record | both)
    # pid 2 (properties, wrong as a whole answer): the reply "70" against the answer "7", right once cut to one digit
    records[2] |= {"prediction": "70", "truncation_correct": 1}
    write_grab_files(work, records)

    markdown = build_report([tmp_path / "vlmeval-out"], tmp_path / "report").markdown.read_text()

    row = next(line for line in markdown.splitlines() if line.startswith("| my-vlm (VLMEvalKit) | 6 |"))
    assert row == f"| my-vlm (VLMEvalKit) | 6 | {cell(3, 6)} | 1 | {cell(2, 3)} | {cell(1, 3)} | - | - |"
    # one integer output right only by truncation, none right only as a whole answer
    whole = "whole answer (scifig's default)"
    assert f"| my-vlm (VLMEvalKit) | {whole} | 1 / 0 | 0 / 0 | 0 / 0 | 0 / 0 | 0 / 0 |" in markdown


def test_the_complexity_figure_draws_a_vlmeval_model_from_its_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A VLMEvalKit run is one dataset for the whole GRAB group (no per-task breakdowns): its complexity curve is
    tallied from its scored records, so the figure does not leave the model out."""
    from scifig_tasks.report import figures

    work = tmp_path / "vlmeval-out" / "my-vlm"
    work.mkdir(parents=True)
    records = _records()
    scores = {"dataset": "grab", "metrics": {"accuracy": 3 / 6}, "breakdown": grab.breakdown(records)}
    (work / "my-vlm_grab_scifig_scores.json").write_text(json.dumps(scores))
    (work / "my-vlm_grab_scifig_records.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    drawn: dict = {}
    original = figures.accuracy_vs_level

    def capture(path: Path, panels: dict, *args: object) -> Path:
        drawn.update(panels)
        return original(path, panels, *args)

    monkeypatch.setattr(figures, "accuracy_vs_level", capture)
    report = build_report([tmp_path / "vlmeval-out"], tmp_path / "report")
    # function questions 3, 4, 5: complexity 1, 0, 1; right, wrong (empty), wrong
    assert list(drawn) == ["Functions"] and list(drawn["Functions"]) == ["my-vlm (VLMEvalKit)"]
    levels = drawn["Functions"]["my-vlm (VLMEvalKit)"]
    assert {level: value for level, (value, _) in levels.items()} == {0: 0.0, 1: 0.5}
    assert "grab_complexity.png" in report.markdown.read_text()
