"""``scifig report`` over many models with long names, one of them captioning only, in one real command line: the
judge's use said once per cell from what the results file records, every table within the page at 1400 px and no
model name broken inside a word, no headline row of dashes, one line for the tasks only one model ran, the
"not the published data" note said once, every verdict of ``samples.html`` naming the rule that gave it, and the
command's progress and closing lines.

The runs: the session's judged MMSci run (``tests/harness/mmsci_run.py``: multiple choice, captioning in both
settings, scored by a local judge), a captioning-only copy of it under another name, and hand-written results files
(``tests/report/results_files.py``: breakdowns made by the benchmarks' own scorers) of seven more models, one of them
GRAB under the authors' rule answering ``"39"`` to a question whose answer is ``"3"``. One ``scifig report``, two
page loads in headless Chromium.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.harness import warm_start
from tests.harness.lmms import CLI_TIMEOUT_S, offline_env, scifig
from tests.report import results_files as made
from tests.report.test_report_protocols import LAYOUT_PROBE, MMSCI_TASKS, section, table
from tests.report.test_report_summary import probe

pytestmark = [pytest.mark.slow, pytest.mark.cli]

MMSCI_MODELS = (
    "OpenGVLab/InternVL2_5-8B",
    "Qwen/Qwen2-VL-7B-Instruct",
    "openbmb/MiniCPM-V-2_6",
    "llava-hf/llava-1.5-7b-hf",
    "google/paligemma-3b-mix-448",
    "microsoft/Phi-3.5-vision-instruct",
    "mistral-community/pixtral-12b",
    "deepseek-ai/deepseek-vl2-small",
)
GRAB_MODEL = "OpenGVLab/InternVL2_5"
CAPTIONS_ONLY = "allenai/Molmo-7B-D-0924"
GRAB_OUTPUTS = ("39", "3", "The answer is 3.", "")
"""GRAB outputs of each task, the answer being ``3``: the authors' rule cuts ``"39"`` to ``"3"`` (right)."""


TASK_KEYED = ("results", "groups", "group_subtasks", "n-samples", "versions", "configs", "higher_is_better")
"""The entries of an lmms-eval results file keyed by task or group."""


def captioning_only(judged: Path, folder: Path) -> Path:
    """The judged run's captioning tasks of the default protocol alone (results and sample logs) as the model
    :data:`CAPTIONS_ONLY`; the judged run's results file."""
    (results,) = judged.rglob("*_results.json")
    data = json.loads(results.read_text(encoding="utf-8"))
    every = [*data["results"], *(data.get("groups") or {})]
    keep = {name for name in every if name.startswith("mmsci_caption") and not name.endswith("_paper")}
    kept = {
        key: ({name: entry for name, entry in value.items() if name in keep} if key in TASK_KEYED else value)
        for key, value in data.items()
        if key != "model_name"
    }
    folder.mkdir(parents=True)
    (folder / results.name).write_text(json.dumps(kept | {"model_name": CAPTIONS_ONLY}), encoding="utf-8")
    prefix = results.name.removesuffix("_results.json")
    for task in keep:
        for log in results.parent.glob(f"{prefix}_samples_{task}.jsonl"):
            shutil.copy(log, folder / log.name)
    return results


@dataclass(frozen=True)
class Report:
    out: Path
    markdown: str
    stdout: str
    stderr: str
    judged: dict[str, Any]
    """The judged MMSci run's results file."""
    runs: list[Path]
    root: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def report(mmsci_judged_run: Any, tmp_path_factory: pytest.TempPathFactory) -> Report:
    run = mmsci_judged_run[0]
    assert run.returncode == 0, run.output[-3000:]
    root = tmp_path_factory.mktemp("many-models")
    results = captioning_only(run.output_path, root / "captions")
    for number, model in enumerate(MMSCI_MODELS):
        made.write_results(
            root / f"mmsci-{number}", model, made.mmsci_results(4, right=2 + number % 3), groups={"mmsci": MMSCI_TASKS}
        )
    entries, logs = made.grab_results(GRAB_OUTPUTS)
    paper_tasks = [f"{name}_paper" for name in made.GRAB_TASKS.values()]
    made.write_results(root / "grab", GRAB_MODEL, entries, groups={"grab_paper": paper_tasks}, samples=logs)
    out = root / "report"
    runs = [run.output_path, root / "captions", *(root / f"mmsci-{n}" for n in range(len(MMSCI_MODELS))), root / "grab"]
    env = offline_env(root) | {"SCIFIG_MMSCI_DATA": str(run.output_path.parent / "mmsci")}  # its figures shown
    completed = scifig(["report", *map(str, runs), "--out", str(out)], env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    markdown = (out / "report.md").read_text(encoding="utf-8")
    judged = json.loads(results.read_text(encoding="utf-8"))
    return Report(out, markdown, completed.stdout, completed.stderr, judged, runs, root, env)


def test_the_judge_cell_says_what_the_results_file_records(report: Report) -> None:
    """One source per cell: a judged captioning run's row reads the statuses its results file records for each judged
    metric (never "not used" beside a FActScore of the same run), the multiple-choice row its flags.judge."""
    runs = {(row["model"], row["benchmark"]): row["judge"] for row in table(report.markdown, "Runs")}
    results = report.judged["results"]
    for task, label in (("mmsci_caption_image_only", "MMSci captioning, image only"),):
        judged = results[task]["caption_report,none"]["judged"]
        cell = runs[("fake-vlm (default protocol)", label)]
        assert cell.startswith("fake-judge: ") and "not used" not in cell and "off or failed" not in cell
        for metric, name in (("factscore", "FActScore"), ("geval_relevance", "G-Eval relevance")):
            status = judged[metric]["status"]
            assert status.get("scored"), status  # the run's judge scored captions
            assert f"{name} {status['scored']} of {sum(status.values())} captions scored" in cell
        assert results[task]["factscore,none"] is not None
    flags = report.judged["groups"]["mmsci"]["breakdown,none"]["flags"]["judge"]
    total = sum(flags.values())
    assert runs[("fake-vlm (default protocol)", "MMSci multiple choice")].startswith(
        f"fake-judge, {flags['judged']} of {total} questions"
    )
    judged_table = table(report.markdown, "MMSci captioning: judged metrics")
    (row,) = [row for row in judged_table if row["model"] == CAPTIONS_ONLY and row["prompt, protocol"].startswith("im")]
    assert row["judge"].startswith("fake-judge: FActScore") and row["FActScore"] != "n/a"


def test_the_page_fits_1400_px_and_names_break_between_words(report: Report, tmp_path: Path) -> None:
    found = probe(report.out / "report.html", LAYOUT_PROBE + BREAK_PROBE, tmp_path / "profile", width=1400)
    assert found["width"] == 1400 and found["wide"] == []  # the captioning tables and 9-model tables within the page
    assert found["names"] >= 20  # the Runs table's model cells and every table header were read
    assert found["broken"] == [], found["broken"]  # each wrapped line ends at a space, "/", "-", "_" or "."
    # a table too wide for the page is drawn in parts, its first column in each
    assert "MMSci per subject (%) (part 1 of 2)" in found["captions"]
    summary = section(report.markdown, "Summary")
    (caption,) = re.findall(r"\*\*(Accuracy per model and benchmark .*?)\*\*", summary)
    headline = [row["model"] for row in table(report.markdown, caption)]
    assert {*MMSCI_MODELS, "fake-vlm (default protocol)", f"{GRAB_MODEL} (paper protocol)"} == set(headline)
    (left_out,) = [line for line in summary.splitlines() if line.startswith("Not in the table above:")]
    said = f"{CAPTIONS_ONLY} (MMSci captioning, image only; MMSci captioning, with abstract: no accuracy, see the MMSci"
    assert said in left_out  # said once, for every model the table leaves out


def test_tasks_only_one_model_ran_are_one_line_and_the_data_note_is_said_once(report: Report) -> None:
    comparison = section(report.markdown, "Comparison")
    assert "only A has it." not in comparison
    blocks = comparison.split("\n**")[1:]  # one per pair of models: "B vs A", "C vs A", ...
    assert len(blocks) == len(MMSCI_MODELS) + 2
    for block in blocks:
        lines = [line for line in block.splitlines() if line.startswith("Not compared, only")]
        sides = [line.split(" has ")[0] for line in lines]
        assert len(sides) == len(set(sides)) <= 2, block  # one line for each model's own tasks
        assert all(
            re.fullmatch(r"Not compared, only [A-Z] has (it|them \(\d+ tasks\)): [\w, ]+\.", line) for line in lines
        )
    grab = section(report.markdown, "GRAB")
    (note,) = [line for line in grab.splitlines() if line.startswith("Not the published data")]
    assert note.count("published GRAB set") == 1 and note.count("not the published") == 0, note


def test_every_verdict_in_the_sample_viewer_names_its_rule(report: Report, tmp_path: Path) -> None:
    page = (report.out / "samples.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="data">(.*?)</script>', page, re.S).group(1).replace("<\\/", "</"))
    verdicts = [(row["t"], cell) for row in data["rows"] for cell in row["c"].values() if cell["c"] is not None]
    assert len(verdicts) > 30 and [task for task, cell in verdicts if not cell.get("v")] == []
    ruled = {cell["v"] for task, cell in verdicts if task == "grab_properties_paper"}
    assert ruled == {
        "authors' rule: output cut to the answer's length (\"3\")",  # "39" and "3", both right
        "authors' rule: output cut to the answer's length (\"T\")",  # "The answer is 3."
        "refused: empty output",
    }
    shown = probe(report.out / "samples.html", CELL_PROBE, tmp_path / "samples", width=1400)
    rendered = {output: tuple(cell) for output, cell in shown["cells"]}
    assert rendered["39"] == (
        "correct",
        "decided by: authors' rule: output cut to the answer's length (\"3\")",
    )
    assert rendered["(empty)"] == ("wrong", "decided by: refused: empty output")


def test_progress_is_said_and_the_last_line_is_the_page_to_open(report: Report) -> None:
    steps = [line for line in report.stderr.splitlines() if line.startswith("scifig report: ")]
    assert steps[0].startswith(f"scifig report: reading {len(MMSCI_MODELS) + 3} results files [")
    sections = [line for line in steps if re.match(r"scifig report: section \d+ of \d+: \w", line)]
    assert any(": MMSci [" in line for line in sections) and any(": GRAB [" in line for line in sections)
    assert any(line.startswith("scifig report: comparison: ") for line in steps)
    assert any(line.startswith("scifig report: samples.html: ") for line in steps)
    assert all(re.search(r" \[\d+ s\]$", line) for line in steps)
    closing = report.stdout.strip().splitlines()
    assert closing[-1] == f"open in a browser: {(report.out / 'report.html').resolve()}"
    assert closing[0].startswith("wrote report.html, report.md, samples.html and ")


BREAK_PROBE = """
<script>
window.addEventListener("load", () => {
  // every line break inside the Runs table's model cells and the tables' headers: the characters either side of it
  const broken = [], captions = [...document.querySelectorAll("caption")].map((c) => c.textContent);
  let names = 0;
  const runs = [...document.querySelectorAll("table")].find(
    (t) => t.querySelector("caption") && t.querySelector("caption").textContent === "Runs");
  const cells = [...runs.querySelectorAll("tbody td:first-child"), ...document.querySelectorAll("th")];
  for (const cell of cells) {
    names += 1;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let top = null, before = "";
    while (walker.nextNode()) {
      const node = walker.currentNode;
      for (let i = 0; i < node.length; i += 1) {
        const range = document.createRange(); range.setStart(node, i); range.setEnd(node, i + 1);
        const ch = node.data[i], rect = range.getClientRects()[0];
        if (/\\s/.test(ch)) { before = " "; continue; }  // a space ending a line may be drawn with no width
        if (!rect || rect.width === 0) continue;
        if (top !== null && rect.top > top + 2 && !/[\\s\\/\\-_.,]/.test(before) && ch !== " " && ch !== "(")
          broken.push([cell.textContent, before + "|" + ch]);
        top = rect.top; before = ch;
      }
    }
  }
  const pre = document.getElementById("probe") || document.createElement("pre");
  const found = pre.id ? JSON.parse(pre.textContent) : {};
  pre.id = "probe"; pre.textContent = JSON.stringify({...found, broken: broken, names: names, captions: captions});
  document.body.append(pre);
});
</script>
"""
"""Appended after :data:`LAYOUT_PROBE` (which writes its findings first), adding the breaks found and the captions."""

CELL_PROBE = """
<script>
window.addEventListener("load", () => {
  document.getElementById("filter-task").value = "grab_properties_paper";
  document.getElementById("filter-task").dispatchEvent(new Event("change"));
  const decided = (td) => td.querySelector(".decided") ? td.querySelector(".decided").textContent : "";
  const cells = [...document.querySelectorAll("td.cell:not([hidden])")].filter((td) => td.children.length > 1).map(
    (td) => [td.querySelector(".text").textContent, [td.firstChild.textContent, decided(td)]]);
  const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify({cells: cells});
  document.body.append(pre);
});
</script>
"""


def written(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_the_report_one_process_makes_is_the_same(report: Report) -> None:
    """The parts made at the same time (the comparison, the sample viewer, a second process making its figures, the
    figures drawn by others) give the report one process gives: the same command pinned to one core (``taskset -c
    0``: nothing is forked) writes the same files, byte for byte. A report of its own: the only command line here
    that makes the report without forking."""
    out = report.root / "one-core"
    command = ["taskset", "-c", "0", sys.executable, "-m", "scifig_tasks.commands.main", "report"]
    command += [*map(str, report.runs), "--out", str(out)]
    completed = warm_start.run(command, report.env, None, CLI_TIMEOUT_S)
    assert completed.returncode == 0, completed.stderr[-3000:]
    alone, together = written(out), written(report.out)
    assert sorted(alone) == sorted(together)
    assert [name for name in together if alone[name] != together[name]] == []
    assert any(name.startswith("sample-figures/") for name in together)
