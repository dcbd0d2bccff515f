"""``scifig rescore`` on a damaged sample log, through the real command lines: a GRAB run of the real ``lmms-eval``
CLI (``--log_samples``, ``--model openai`` against the local server, built data) whose samples files are then cut at a
line boundary, given a duplicated line or emptied.

A log that does not hold every document the results file counts (``n-samples``), once, is refused with one line
naming the file and the doc ids; ``--allow-partial`` scores what is there, every table saying n and "partial", and
exits 1 (the numbers are not the run's); ``scifig report`` on the damaged or the partially re-scored run says
"partial". The model server is stopped before re-scoring: any request to it would fail the run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.harness.grab_data import Row, question_text, write_parquet
from tests.harness.lmms import CliRun, offline_env, run, scifig
from tests.harness.openai_server import FakeOpenAIServer, Reply, by_question

# (row, reply, correct): half right in every subtask, so GRAB's accuracy is 0.5; grab_properties answers its doc ids
# 1 and 3 wrongly
CASES: list[tuple[Row, str, bool]] = [
    (Row("properties", "15"), "15", True),
    (Row("properties", "10"), "1", False),
    (Row("properties", "-3"), "-3", True),
    (Row("properties", "7"), "", False),
    (Row("function", "4"), "4", True),
    (Row("function", "2"), "3", False),
    (Row("series", "6"), "6", True),
    (Row("series", "5"), "x", False),
    (Row("transform", "-1"), "-1", True),
    (Row("transform", "8"), "0", False),
]
HINT = "--allow-partial scores what is there (marked partial)"


@pytest.fixture(scope="module")
def grab_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[CliRun, dict[str, str]]:
    """One ``lmms-eval --tasks grab --log_samples`` run for the module; the model server is stopped afterwards."""
    root = tmp_path_factory.mktemp("grab-run")
    data = write_parquet([row for row, _, _ in CASES], root / "grab" / "GRAB.parquet")
    replies = {question_text(pid, row) + "\n": reply for pid, (row, reply, _) in enumerate(CASES)}
    server = FakeOpenAIServer(by_question(replies, default=Reply(status=404))).start()
    env = {**offline_env(root), "SCIFIG_GRAB_DATA": str(data), "OPENAI_API_BASE": server.base_url}
    env["OPENAI_API_KEY"] = "sk-test"
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    try:
        done = run("lmms-eval", [*args, "--tasks", "grab", "--log_samples"], env, root / "out")
    finally:
        server.stop()
    assert done.returncode == 0, done.output[-4000:]
    assert done.results()["groups"]["grab"]["accuracy,none"] == 0.5
    assert done.results()["results"]["grab_properties"]["accuracy,none"] == 0.5
    return done, env


def copied(grab_run: tuple[CliRun, dict[str, str]], tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the run's output folder (the results file and the folder) to damage."""
    folder = tmp_path / "run"
    shutil.copytree(grab_run[0].output_path, folder)
    (results,) = folder.rglob("*_results.json")
    return results, folder


def samples_file(folder: Path, task: str) -> Path:
    (path,) = folder.rglob(f"*_samples_{task}.jsonl")
    return path


def edit_lines(path: Path, edit: Callable[[list[str]], list[str]]) -> None:
    """Rewrite the samples file line by line (the damage happens at line boundaries)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(edit(lines)), encoding="utf-8")


def doc_id(line: str) -> int:
    return json.loads(line)["doc_id"]


def refusal(done: subprocess.CompletedProcess) -> str:
    """The one refusal line (exit 1)."""
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    (line,) = [line for line in done.stderr.splitlines() if "REFUSED" in line]
    return line


def table_rows(stdout: str, task: str) -> list[list[str]]:
    """The printed table's rows of ``task`` as cells."""
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in stdout.splitlines()
        if line.startswith(f"| {task} |")
    ]


@pytest.mark.slow  # the scifig command line on a module-wide run
@pytest.mark.cli
def test_lines_dropped_a_duplicated_line_and_an_empty_file_are_refused_one_line_each(
    tmp_path: Path, grab_run: tuple[CliRun, dict[str, str]]
) -> None:
    results, folder = copied(grab_run, tmp_path)
    dropped, repeated, emptied = (
        samples_file(folder, f"grab_{task}") for task in ("properties", "series", "transforms")
    )
    edit_lines(dropped, lambda lines: [line for line in lines if doc_id(line) not in (1, 3)])  # the wrong answers
    edit_lines(repeated, lambda lines: [lines[0], lines[0], *lines[1:]])
    emptied.write_bytes(b"")

    done = scifig(["rescore", str(folder), "--out", str(tmp_path / "again")], grab_run[1], tmp_path)

    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    lines = [line for line in done.stderr.splitlines() if "REFUSED" in line]

    def refused(path: Path, task: str, problem: str, held: str) -> str:
        return (
            f"scifig rescore: REFUSED: {path}: task {task}: {problem}: the log holds {held} samples {results.name} "
            f"counts; restore the log from the run, or {HINT}"
        )

    assert lines == [
        refused(dropped, "grab_properties", "doc_id 1, 3 missing", "2 of the 4"),
        refused(repeated, "grab_series", "doc_id 0 logged twice", "2 of the 2"),
        refused(emptied, "grab_transforms", "doc_id 0, 1 missing", "0 of the 2"),
    ]
    assert not list((tmp_path / "again").rglob("*_results.json")), "nothing is written for a refused run"

    # the same doc id with another output: which one the model gave is unknown, so --allow-partial does not help
    def conflicting(lines: list[str]) -> list[str]:
        other = json.loads(lines[0])
        other["filtered_resps"] = "7"
        return [lines[0], json.dumps(other) + "\n", *lines[2:]]

    edit_lines(repeated, conflicting)
    done = scifig(["rescore", str(folder), "--out", str(tmp_path / "b"), "--allow-partial"], grab_run[1], tmp_path)
    assert refusal(done) == (
        f"scifig rescore: REFUSED: {repeated}: task grab_series: doc_id 0 logged twice with different contents: keep "
        "the right line of each (or run the model again)"
    )


@pytest.mark.slow  # the scifig command line on a module-wide run
@pytest.mark.cli
def test_allow_partial_scores_what_is_there_says_partial_everywhere_and_exits_1(
    tmp_path: Path, grab_run: tuple[CliRun, dict[str, str]]
) -> None:
    results, folder = copied(grab_run, tmp_path)
    samples = samples_file(folder, "grab_properties")
    edit_lines(samples, lambda lines: [line for line in lines if doc_id(line) not in (1, 3)])
    env, out = grab_run[1], tmp_path / "partial"

    done = scifig(["rescore", str(folder), "--out", str(out), "--allow-partial"], env, tmp_path)

    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert "REFUSED" not in done.stderr
    (warning,) = [line for line in done.stderr.splitlines() if "PARTIAL" in line]
    assert warning == (
        f"scifig rescore: PARTIAL: {samples}: task grab_properties: doc_id 1, 3 missing; scored the 2 of the 4 "
        "samples that are there (--allow-partial)"
    )
    header = table_rows(done.stdout.replace("| task |", "| header |"), "header")
    assert header == [["header", "metric", "old", "new", "n", "changed verdicts"]]
    accuracy = [row for row in table_rows(done.stdout, "grab_properties") if row[1] == "accuracy,none"]
    assert accuracy == [["grab_properties", "accuracy,none", "0.5000", "1.0000", "2 of 4, partial", "0 of 2"]]
    (group,) = [row for row in table_rows(done.stdout, "grab") if row[1] == "accuracy,none"]
    assert group[2:5] == ["0.5000", "0.6250", "8 of 10, partial"]  # 5 right of the 8 logged
    (series,) = [row for row in table_rows(done.stdout, "grab_series") if row[1] == "accuracy,none"]
    assert series[4] == "2"  # a complete task says n alone

    diff = json.loads(next(out.rglob("rescore_diff.json")).read_text())["tasks"]
    assert diff["grab_properties"]["samples"] == 2 and diff["grab_properties"]["expected"] == 4
    assert diff["grab_properties"]["partial"] == {"missing": [1, 3], "duplicated": []}
    assert diff["grab"]["samples"] == 8 and diff["grab"]["expected"] == 10 and diff["grab"]["partial"]
    assert "partial" not in diff["grab_series"]
    rescored = json.loads(next(out.rglob("*_results.json")).read_text())
    assert rescored["scifig_rescore"]["partial"] == {
        "grab_properties": {"samples": 2, "expected": 4, "missing": [1, 3], "duplicated": []}
    }
    assert rescored["n-samples"] == json.loads(results.read_text())["n-samples"]  # the run's counts are kept

    # the partially re-scored run is refused again without --allow-partial
    again = scifig(["rescore", str(out), "--out", str(tmp_path / "again")], env, tmp_path)
    assert "task grab_properties: doc_id 1, 3 missing" in refusal(again)

    # scifig report says "partial" for the re-scored run and for the damaged one
    for name, source in (("rescored", out), ("damaged", folder)):
        made = scifig(["report", str(source), "--out", str(tmp_path / f"report-{name}")], env, tmp_path)
        assert made.returncode == 0, made.stdout + made.stderr[-4000:]
        text = (tmp_path / f"report-{name}" / "report.md").read_text()
        (note,) = [line for line in text.splitlines() if "grab_properties: partial" in line]
        assert "holds 2 of the 4 samples" in note and "doc_id 1, 3 missing" in note, note
        assert ("re-scored from the logged samples only" in note) == (name == "rescored"), note


@pytest.mark.slow  # the scifig command line on a module-wide run
@pytest.mark.cli
def test_allow_partial_on_a_complete_log_exits_0_and_identical_duplicates_count_once(
    tmp_path: Path, grab_run: tuple[CliRun, dict[str, str]]
) -> None:
    """Also the paper protocol on a run whose outputs both GRAB rules score alike: no verdict changes (the table
    counts changed verdicts), and one line says what did change in every record (the rule named)."""
    run_done, env = grab_run
    _, folder = copied(grab_run, tmp_path)
    whole = tmp_path / "whole"

    paper = ["--protocol", "paper"]
    done = scifig(["rescore", str(folder), "--out", str(whole), "--allow-partial", *paper], env, tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert "PARTIAL" not in done.stderr and ", partial" not in done.stdout
    assert "scifig_rescore" in (rescored := json.loads(next(whole.rglob("*_results.json")).read_text()))
    assert "partial" not in rescored["scifig_rescore"]
    sizes = {"grab": 10, "grab_properties": 4, "grab_functions": 2, "grab_series": 2, "grab_transforms": 2}
    for task, size in sizes.items():
        (row,) = [row for row in table_rows(done.stdout, task) if row[1] == "accuracy,none"]
        assert row[2:] == ["0.5000", "0.5000", str(size), f"0 of {size}"], row
    (line,) = [line for line in done.stdout.splitlines() if "besides their verdicts" in line]
    assert line.startswith("records changed besides their verdicts in 10 of 10 samples: "), line
    assert "rule whole_answer -> truncation (10)" in line, line
    diff = json.loads(next(whole.rglob("rescore_diff.json")).read_text())["tasks"]
    assert {task: diff[task]["changed_verdicts"] for task in sizes} == dict.fromkeys(sizes, 0)
    assert {task: diff[task]["changed_samples"] for task in sizes} == sizes
    rule = {"samples": 4, "old": "whole_answer", "new": "truncation"}
    assert diff["grab_properties"]["other_changes"]["rule"] == rule
    assert {entry["verdict_changed"] for entry in diff["grab_properties"]["changed"]} == {False}

    samples = samples_file(folder, "grab_series")
    edit_lines(samples, lambda lines: [*lines, lines[1]])
    done = scifig(["rescore", str(folder), "--out", str(tmp_path / "dup"), "--allow-partial"], env, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    (warning,) = [line for line in done.stderr.splitlines() if "PARTIAL" in line]
    assert warning.startswith(f"scifig rescore: PARTIAL: {samples}: task grab_series: doc_id 1 logged twice"), warning
    rescored = json.loads(next((tmp_path / "dup").rglob("*_results.json")).read_text())
    assert rescored["results"]["grab_series"]["accuracy,none"] == 0.5  # the copy is scored once
    assert rescored["groups"]["grab"]["accuracy,none"] == run_done.results()["groups"]["grab"]["accuracy,none"]


# ---- the rule on its own ---------------------------------------------------------------------------------------


def _results(effective: int, original: int | None = None, offset: int = 0) -> dict[str, Any]:
    counts = {"original": original or effective, "effective": effective}
    return {"n-samples": {"t": counts}, "config": {"offset": offset}}


def test_check_log_rule() -> None:
    from scifig_tasks.core.sample_logs import check_log, id_list

    whole = [{"doc_id": i, "x": i} for i in range(5)]
    assert check_log("t", whole, _results(5), "f").complete
    dropped = check_log("t", [s for s in whole if s["doc_id"] != 2], _results(5), "f")
    assert (dropped.missing, dropped.expected, dropped.logged, dropped.scorable) == ((2,), 5, 4, True)
    assert dropped.problems() == "doc_id 2 missing"
    assert check_log("t", [*whole, whole[4]], _results(5), "f").duplicated == (4,)
    conflicting = check_log("t", [*whole, {"doc_id": 4, "x": 0}], _results(5), "f")
    assert conflicting.conflicting == (4,) and not conflicting.scorable
    # --limit 3 --offset 2 of 10 documents: doc ids 2, 3, 4
    limited = check_log("t", [{"doc_id": i} for i in (2, 3, 4)], _results(3, original=10, offset=2), "f")
    assert limited.complete
    foreign = check_log("t", [{"doc_id": i} for i in (0, 2, 3, 4)], _results(3, original=10, offset=2), "f")
    assert foreign.foreign == (0,) and not foreign.scorable
    assert foreign.problems() == "doc_id 0 not among the run's documents"
    from scifig_tasks.rescore_report import refusal as refusal_line

    assert refusal_line(foreign, "r.json counts") == (
        "f: task t: doc_id 0 not among the run's documents: the log is not this run's (3 samples r.json counts); use "
        "the run's own log"
    )
    unknown = check_log("t", whole, {"n-samples": {}}, "f")
    assert unknown.expected is None and not unknown.complete and unknown.scorable
    assert id_list([1, 3]) == "1, 3"
    assert id_list(range(7)) == "0-6"
    many = id_list([*range(40), *range(41, 100, 2)])
    assert many.startswith("0-39, 41, 43, ") and many.endswith("(70 in all)") and len(many) < 80


# ---- VLMEvalKit prediction files ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vlmeval_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """One ``scifig vlmeval`` run of ``grab`` on the same questions; its model folder and environment."""
    from tests.harness.vlmeval import run_vlmeval

    root = tmp_path_factory.mktemp("vlmeval-run")
    data = write_parquet([row for row, _, _ in CASES], root / "grab" / "GRAB.parquet")
    replies = {question_text(pid, row): reply for pid, (row, reply, _) in enumerate(CASES)}
    server = FakeOpenAIServer(by_question(replies, default=Reply(status=404))).start()
    env = {**offline_env(root), "SCIFIG_GRAB_DATA": str(data), "SCIFIG_JUDGE": "off"}
    try:
        done, work = run_vlmeval(root, server.base_url, env, {"grab": "SciFigGRAB"})
    finally:
        server.stop()
    # the empty reply is VLMEvalKit's failure message ("Failed to obtain answer via API."): a failed request
    assert done.returncode == 1, (done.stdout + done.stderr)[-4000:]
    assert "scifig vlmeval: FAILED: 1 of 10 model requests failed " in done.stderr, done.stderr[-4000:]
    (scores,) = work.glob("*_grab_scifig_scores.json")
    assert json.loads(scores.read_text())["metrics"]["accuracy"] == 0.5
    return work, {**env, "LMUData": str(root / "LMUData")}


@pytest.mark.slow  # the scifig command line on a module-wide run
@pytest.mark.cli
def test_vlmeval_prediction_file_without_rows_is_refused_and_allow_partial_marks_the_scores(
    tmp_path: Path, vlmeval_run: tuple[Path, dict[str, str]]
) -> None:
    from scifig_tasks.report.runs import load_runs

    work, env = vlmeval_run
    folder = tmp_path / "work" / work.name
    shutil.copytree(work, folder)
    (predictions,) = folder.glob("*_grab.tsv")
    header, *rows = predictions.read_text(encoding="utf-8").splitlines(keepends=True)
    column = header.rstrip("\n").split("\t").index('"index"')  # VLMEvalKit quotes every cell
    predictions.write_text(
        "".join([header, *(row for row in rows if row.split("\t")[column] not in ('"1"', '"3"'))]), encoding="utf-8"
    )

    done = scifig(["rescore", str(tmp_path / "work"), "--out", str(tmp_path / "again")], env, tmp_path)

    assert refusal(done) == (
        f"scifig rescore: REFUSED: {predictions}: task grab: index 1, 3 missing: the log holds 8 of the 10 "
        f"samples of grab; restore the log from the run, or {HINT}"
    )

    out = tmp_path / "partial"
    done = scifig(["rescore", str(tmp_path / "work"), "--out", str(out), "--allow-partial"], env, tmp_path)

    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    (warning,) = [line for line in done.stderr.splitlines() if "PARTIAL" in line]
    assert warning == (
        f"scifig rescore: PARTIAL: {predictions}: task grab: index 1, 3 missing; scored the 8 of the 10 samples "
        "that are there (--allow-partial)"
    )
    (accuracy,) = [row for row in table_rows(done.stdout, "grab") if row[1] == "accuracy"]
    assert accuracy == ["grab", "accuracy", "0.5000", "0.6250", "8 of 10, partial", "0 of 8"]
    (scores,) = out.rglob("*_grab_scifig_scores.json")
    assert json.loads(scores.read_text())["partial"] == {"samples": 8, "expected": 10, "missing": ["1", "3"]} | {
        "duplicated": []
    }
    (loaded,) = load_runs([out])  # what scifig report reads
    assert loaded.notes == [
        f"grab: partial: {scores.name} was re-scored from 8 of the 10 questions (missing index 1, 3; scifig rescore "
        "--allow-partial)"
    ]
