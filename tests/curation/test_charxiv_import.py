"""``scifig curate charxiv_full import-published`` on small files in the CharXiv authors' layout, then ``scifig report``
and ``scifig rescore --protocol default`` of the run it writes, all through the real command lines.

The files: eight charts of the validation set (tests/harness/charxiv_full_data.py's six, 153 and 1342). Descriptive:
gpt-4o-mini's real responses and grades (tests/fixtures/charxiv_real: a third-party run of the authors' pipeline), in
the authors' gen/scores layout (two charts in the fork's layout, which keeps ``figure_path`` and ``question``); it holds
a failed grading (-1, 1342_0) and two grader errors ("Not Applicable" for "Not Applicable" graded 0: 153_3, 1342_3).
Reasoning: made up here (:data:`REASONING`), one response and grade per chart, among them a -1 and a grade the rules
contradict (61). The expected numbers follow by hand from those grades (the authors' ``get_stats.py`` done again
below) and, for the rules' agreement, from :func:`~scifig_tasks.benchmarks.charxiv.rules.rule_verdict` applied here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scifig_tasks.benchmarks.charxiv.rules import rule_verdict
from scifig_tasks.benchmarks.charxiv.scores import DESCRIPTIVE_GROUPS
from scifig_tasks.commands.main import main as scifig_main
from tests.harness.charxiv_full_data import SAMPLE, authors_file, write_layout
from tests.harness.lmms import _executable, offline_env
from tests.harness.paths import FIXTURES

pytestmark = [pytest.mark.slow, pytest.mark.cli]

MODEL = "gpt-4o-mini-2024-07-18"
CHARTS = (*SAMPLE, "153", "1342")
FORK_LAYOUT = ("0", "2")
"""Charts whose descriptive gen entries keep ``figure_path`` and ``question`` (as the fork's generate.py does)."""
REASONING = {
    "0": ("Joint-CNN", 1),  # the answer: the rules say right
    "2": ("The line lambda_L = 0.13 is the furthest away.", 1),  # a sentence: left to the judge
    "14": ("94", 1),
    "17": ("4", 0),  # the answer is 3: the rules say wrong
    "61": ("9.17", 0),  # the answer, graded 0: the rules disagree
    "62": ("4", -1),  # the answer; the authors' grading failed
    "153": ("Not Applicable", 0),  # a text answer: left to the judge
    "1342": ("", 0),  # empty: the rules say wrong
}
"""Reasoning: figure id -> (response, the authors' score)."""
REAL = json.loads((FIXTURES / "charxiv_real" / f"{MODEL}-descriptive_val.json").read_text(encoding="utf-8"))
TASKS = {"descriptive": "charxiv_full_descriptive_paper", "reasoning": "charxiv_full_reasoning_paper"}


def write_published(folder: Path) -> Path:
    """The gen and scores files of :data:`MODEL` for :data:`CHARTS` in the authors' layout."""
    folder.mkdir(parents=True)
    described, reasoned = authors_file("descriptive"), authors_file("reasoning")
    gen: dict[str, Any] = {}
    scores: dict[str, Any] = {}
    for fid in CHARTS:
        for i in range(4):
            key = f"{fid}_{i}"
            entry = {"figure_id": int(fid), "subq_idx": i, "qid": described[fid]["qids"][i]}
            if fid in FORK_LAYOUT:
                entry |= {"figure_path": f"./images/{fid}.jpg", "question": "(the question as the fork wrote it)"}
            gen[key] = {**entry, "response": REAL["responses"][key]}
            scores[key] = {"resp_id": key, **REAL["scores"][key]}
    write(folder / f"gen-{MODEL}-descriptive_val.json", gen)
    write(folder / f"scores-{MODEL}-descriptive_val.json", scores)
    gen, scores = {}, {}
    for fid, (response, score) in REASONING.items():
        question = reasoned[fid]
        gen[fid] = {
            "figure_id": int(fid),
            "inst_category": question["inst_category"],
            "raw_question": question["query"],
            "response": response,
        }
        extracted = "Failed to parse response" if score == -1 else response
        scores[fid] = {"figure_id": fid, "extracted_answer": extracted, "score": score}
    write(folder / f"gen-{MODEL}-reasoning_val.json", gen)
    write(folder / f"scores-{MODEL}-reasoning_val.json", scores)
    return folder


def write(path: Path, content: Any) -> None:
    path.write_text(json.dumps(content, indent=4, ensure_ascii=False), encoding="utf-8")


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# ---- the expected numbers, computed here ---------------------------------------------------------------------------


def published(folder: Path, mode: str) -> dict[str, tuple[str, str, int]]:
    """Query id -> (response, answer, the authors' score), from the files written and the authors' data."""
    gen, scores = read(folder / f"gen-{MODEL}-{mode}_val.json"), read(folder / f"scores-{MODEL}-{mode}_val.json")
    described, reasoned = authors_file("descriptive"), authors_file("reasoning")

    def answer(key: str) -> str:
        if mode == "reasoning":
            return reasoned[key]["answer"]
        fid, i = key.split("_")
        return described[fid]["answers"][int(i)]

    return {key: (gen[key]["response"], answer(key), scores[key]["score"]) for key in gen}


def get_stats(folder: Path, mode: str) -> float:
    """The authors' ``get_stats.py`` "Overall Score": a score other than 0 or 1 counted 0, over every question,
    ``round(100 * x, 2)``."""
    scores = [score if score in (0, 1) else 0 for _, _, score in published(folder, mode).values()]
    return round(100 * sum(scores) / len(scores), 2)


def rules_against_authors(folder: Path, mode: str) -> tuple[int, int, list[str]]:
    """Where the rules decide (an empty response is wrong): (decided, agree, disagreeing ids), -1 grades aside."""
    decided, agree, disagree = 0, 0, []
    for key, (response, answer, score) in published(folder, mode).items():
        verdict = False if not response.strip() else rule_verdict(response, answer)
        if verdict is None:
            continue
        decided += 1
        if score == -1:
            continue
        if int(verdict) == score:
            agree += 1
        else:
            disagree.append(key)
    return decided, agree, disagree


# ---- the run ---------------------------------------------------------------------------------------------------------


@dataclass
class Flow:
    root: Path
    data: Path
    published: Path
    run: Path
    imported: subprocess.CompletedProcess[str]
    report: subprocess.CompletedProcess[str]
    rescore: subprocess.CompletedProcess[str]

    def results(self) -> dict[str, Any]:
        (path,) = sorted(self.run.rglob("*_results.json"))
        return read(path)

    def samples(self, folder: Path, task: str) -> list[dict[str, Any]]:
        (path,) = sorted(folder.rglob(f"*_samples_{task}.jsonl"))
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def scifig(args: list[Any], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [_executable("scifig"), *map(str, args)],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def finished(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = process.communicate(timeout=300)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Flow:
    """One import (relative paths, from the folder above them), then the report and the re-score side by side."""
    root = tmp_path_factory.mktemp("charxiv_import")
    data = write_layout(root / "data", CHARTS)
    folder = write_published(root / "published")
    env = offline_env(root)
    imported = finished(
        scifig(
            ["curate", "charxiv_full", "import-published", "--responses", "published", "--model", MODEL]
            + ["--out", "run", "--data", "data"],
            env,
            root,
        )
    )
    assert imported.returncode == 0, imported.stderr
    with_data = {**env, "SCIFIG_CHARXIV_FULL_DATA": str(data)}
    report = scifig(["report", "run", "--out", "report"], with_data, root)
    rescore = scifig(["rescore", "run", "--out", "rescored", "--protocol", "default"], with_data, root)
    return Flow(root, data, folder, root / "run", imported, finished(report), finished(rescore))


def test_the_run_folder_holds_every_question_with_the_authors_grades(flow: Flow) -> None:
    results = flow.results()
    assert results["group_subtasks"] == {"charxiv_full_paper": [TASKS["reasoning"], TASKS["descriptive"]]}
    assert results["n-samples"] == {
        TASKS["reasoning"]: {"original": 8, "effective": 8},
        TASKS["descriptive"]: {"original": 32, "effective": 32},
    }
    assert results["model_name"] == MODEL and (flow.run / MODEL).is_dir()
    assert results["scifig_environment"]["judge"]["model"] == "gpt-4o-2024-05-13"
    for mode, task in TASKS.items():
        expected = published(flow.published, mode)
        samples = flow.samples(flow.run, task)
        assert [sample["doc_id"] for sample in samples] == list(range(len(expected)))
        for sample in samples:
            record = sample["breakdown"]
            response, answer, score = expected[record["query_id"]]
            assert sample["filtered_resps"] == response and sample["target"] == answer == record["answer"]
            assert record["protocol"] == "paper" and sample["accuracy"] == record
            if score == -1:
                assert (record["verdict"], record["graded_by"], record["flag"]) == (None, None, "judge_failed")
            else:
                assert (record["verdict"], record["graded_by"]) == (score, "judge")
        ungraded = [s["breakdown"]["query_id"] for s in samples if s["breakdown"]["verdict"] is None]
        assert ungraded == (["62"] if mode == "reasoning" else ["1342_0"])
    by_id = {s["breakdown"]["query_id"]: s for s in flow.samples(flow.run, TASKS["descriptive"])}
    assert by_id["0_0"]["breakdown"]["extracted"] == "60"  # the grader's number, as text
    assert by_id["0_0"]["input"].startswith("For the subplot at row 1 and column 2, what is the spatially highest")


def test_the_import_prints_the_authors_figures_and_the_rules_agreement(flow: Flow) -> None:
    # by hand: reasoning 3 right of 8, one -1 (62): 37.50 over all, 3/7 over the graded; descriptive 21 right of 32,
    # one -1 (1342_0): 65.62 over all, 21/31 over the graded
    assert (get_stats(flow.published, "reasoning"), get_stats(flow.published, "descriptive")) == (37.5, 65.62)
    out = flow.imported.stdout
    assert (
        '  reasoning: 8 questions, 3 right; the authors\' figure 37.50 (get_stats.py "Overall Score"); 42.86% ' in out
    )
    assert "  descriptive: 32 questions, 21 right; the authors' figure 65.62 " in out
    assert "67.74% over the 31 graded (1 ungraded: score -1)" in out
    # the rules: reasoning decide 0, 14, 17, 61, 62 and the empty 1342; descriptive 13, the grader errors among them
    assert rules_against_authors(flow.published, "reasoning") == (6, 4, ["61"])
    assert rules_against_authors(flow.published, "descriptive") == (13, 11, ["153_3", "1342_3"])
    assert (
        "  reasoning: the rules decide 6 of 8 responses; they agree with the authors' grade on 4 of the 5 both grade "
        "(80.00%), disagree on 1 (61), and 1 the authors left ungraded (-1)" in out
    )
    assert (
        "  descriptive: the rules decide 13 of 32 responses; they agree with the authors' grade on 11 of the 13 both "
        "grade (84.62%), disagree on 2 (153_3, 1342_3)" in out
    )
    agreement = flow.results()["scifig_import"]["rules_agreement"]
    assert agreement["descriptive"] | {"disagreements": None} == {
        "questions": 32,
        "rules_decided": 13,
        "compared": 13,
        "agree": 11,
        "disagree": 2,
        "authors_ungraded": 0,
        "disagreements": None,
    }
    assert agreement["reasoning"]["disagreements"] == ["61"] and agreement["reasoning"]["authors_ungraded"] == 1


def table_rows(markdown: str, title: str) -> list[dict[str, str]]:
    """The rows of the report's table titled ``title``, as header -> cell."""
    lines = markdown.splitlines()
    start = lines.index(f"**{title}**")
    header = [cell.strip() for cell in lines[start + 2].strip("|").split("|")]
    rows = []
    for line in lines[start + 4 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True)))
    return rows


def test_the_report_rows_are_the_authors_stats(flow: Flow) -> None:
    assert flow.report.returncode == 0, flow.report.stderr
    markdown = (flow.root / "report" / "report.md").read_text(encoding="utf-8")
    title = "CharXiv {} accuracy (%, 95% Wilson interval, over graded questions)"
    (reasoning,) = [row for row in table_rows(markdown, title.format("reasoning")) if MODEL in row["model"]]
    (descriptive,) = [row for row in table_rows(markdown, title.format("descriptive")) if MODEL in row["model"]]
    assert (reasoning["authors' figure"], reasoning["graded"], reasoning["overall"].split()[0]) == (
        "37.50",
        "7/8",
        "42.9",
    )
    assert (descriptive["authors' figure"], descriptive["graded"], descriptive["overall"].split()[0]) == (
        "65.62",
        "31/32",
        "67.7",
    )
    # each group of templates over its graded questions, by hand from the scores file
    cells: dict[str, list[int]] = {}
    for key, (_, _, score) in published(flow.published, "descriptive").items():
        fid, i = key.split("_")
        group = DESCRIPTIVE_GROUPS[authors_file("descriptive")[fid]["qids"][int(i)]]
        if score != -1:
            cells.setdefault(group, []).append(score)
    for group, scores in cells.items():
        assert descriptive[group].split()[0] == f"{100 * sum(scores) / len(scores):.1f}", group
    results = flow.results()["results"]
    assert results[TASKS["reasoning"]]["accuracy,none"] == pytest.approx(3 / 7)
    assert results[TASKS["descriptive"]]["accuracy,none"] == pytest.approx(21 / 31)


def test_rescore_shows_where_the_rules_agree_with_the_authors(flow: Flow) -> None:
    assert flow.rescore.returncode == 0, flow.rescore.stderr
    diff = read(flow.root / "rescored" / MODEL / "rescore_diff.json")["tasks"]
    for mode, task in TASKS.items():
        changed = diff[task]["changed"]
        assert len(changed) == len(published(flow.published, mode))  # every record: paper -> default protocol
        assert {entry["new"]["protocol"] for entry in changed} == {"default"}
        by_rules = [entry for entry in changed if entry["new"]["graded_by"] == "rule"]
        compared = [entry for entry in by_rules if entry["old"]["verdict"] is not None]
        agree = [entry for entry in compared if entry["old"]["verdict"] == entry["new"]["verdict"]]
        disagree = [entry["new"]["query_id"] for entry in compared if "verdict" in entry["fields"]]
        assert (len(by_rules), len(agree), disagree) == rules_against_authors(flow.published, mode)
        agreement = flow.results()["scifig_import"]["rules_agreement"][mode]
        assert (len(by_rules), len(compared), len(agree)) == (
            agreement["rules_decided"],
            agreement["compared"],
            agreement["agree"],
        )
    # the accuracy before (the authors' grades, over the graded) and after (the rules, the rest wrong: no judge)
    rights = {
        mode: sum(
            1
            for response, answer, _ in published(flow.published, mode).values()
            if response.strip() and rule_verdict(response, answer)
        )
        for mode in TASKS
    }
    assert diff[TASKS["descriptive"]]["metrics"]["accuracy,none"] == {
        "old": pytest.approx(21 / 31),
        "new": pytest.approx(rights["descriptive"] / 32),
    }
    assert diff[TASKS["reasoning"]]["metrics"]["accuracy,none"] == {
        "old": pytest.approx(3 / 7),
        "new": pytest.approx(rights["reasoning"] / 8),
    }


# ---- refusals -------------------------------------------------------------------------------------------------------


def _break_gen_key(folder: Path) -> None:
    path = folder / f"gen-{MODEL}-descriptive_val.json"
    entries = read(path)
    del entries["17_2"]
    write(path, entries)


def _break_score(folder: Path) -> None:
    path = folder / f"scores-{MODEL}-descriptive_val.json"
    entries = read(path)
    entries["14_1"]["score"] = 2
    write(path, entries)


def _break_field(folder: Path) -> None:
    path = folder / f"gen-{MODEL}-reasoning_val.json"
    entries = read(path)
    del entries["61"]["response"]
    write(path, entries)


def _break_template(folder: Path) -> None:
    path = folder / f"gen-{MODEL}-descriptive_val.json"
    entries = read(path)
    entries["2_1"]["qid"] = 19
    write(path, entries)


def _drop_scores(folder: Path) -> None:
    (folder / f"scores-{MODEL}-reasoning_val.json").unlink()


BROKEN = {
    "a query id missing": (
        _break_gen_key,
        f"gen-{MODEL}-descriptive_val.json: has no entry for 1 of the 32 descriptive questions of the data: 17_2",
    ),
    "a score of 2": (_break_score, f"scores-{MODEL}-descriptive_val.json, key '14_1': score 2 is not 1, 0 or -1"),
    "a field missing": (_break_field, f"gen-{MODEL}-reasoning_val.json, key '61': has no 'response'"),
    "another template": (_break_template, "key '2_1': qid 19, but the data asks template"),
    "a scores file missing": (_drop_scores, f"scores-{MODEL}-reasoning_val.json: is missing"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_bad_files_are_refused_in_one_line_naming_file_and_key(
    case: str, flow: Flow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    breaks, message = BROKEN[case]
    folder = tmp_path / "published"
    shutil.copytree(flow.published, folder)
    breaks(folder)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "run"
    args = ["--responses", folder, "--model", MODEL, "--out", out, "--data", flow.data]
    code = scifig_main(["curate", "charxiv_full", "import-published", *map(str, args)])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("scifig curate")]
    assert code == 2 and len(errors) == 1, errors
    assert errors[0].startswith(f"scifig curate charxiv_full import-published: {folder}")
    assert message in errors[0]
    assert not out.exists()  # nothing written


def test_a_model_without_files_is_refused_naming_the_models_there(
    flow: Flow, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--responses", flow.published, "--model", "GPT-4o", "--out", tmp_path / "run", "--data", flow.data]
    assert scifig_main(["curate", "charxiv_full", "import-published", *map(str, args)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.endswith(
        f"no gen-GPT-4o-descriptive_val.json or gen-GPT-4o-reasoning_val.json (it has gen files of {MODEL})"
    )


def test_a_run_folder_is_never_overwritten(flow: Flow, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--responses", flow.published, "--model", MODEL, "--out", flow.run, "--data", flow.data]
    assert scifig_main(["curate", "charxiv_full", "import-published", *map(str, args)]) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert len(list(flow.run.rglob("*_results.json"))) == 1


def test_an_unwritable_out_is_refused_before_anything_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    args = ["--responses", tmp_path / "nowhere", "--model", MODEL, "--out", blocker / "run"]
    assert scifig_main(["curate", "charxiv_full", "import-published", *map(str, args)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"scifig curate charxiv_full import-published: cannot create {blocker / 'run'}: {blocker} is not a directory"
    ]
