"""``scifig report`` says at a glance what its numbers are: a summary first (results files, models, benchmarks,
questions scored, judge use in words), a visible note wherever published rows stand beside a run that did not score
the full published set, no machine path, "none" in place of an empty table, and every figure of ``samples.html``
opening at full size.

The demo-like run is the real ``scifig demo`` (40 GRAB questions generated locally, scored through lmms-eval by the
chance model), rendered in headless Chromium; the rules themselves are also checked on hand-written results.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import datasets
import pytest
from PIL import Image

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.report.build import build_report
from scifig_tasks.report.coverage import coverage, coverage_note
from scifig_tasks.report.document import Details, Section, Table, to_html, to_markdown
from scifig_tasks.report.judge_status import judge_use, judge_words
from scifig_tasks.report.paths import shown, shown_path
from scifig_tasks.report.runs import Run
from tests.harness.demo_run import PER_TASK, DemoRun

MACHINE_PATH = re.compile(r"(?<![\w.:/~-])/(?:home|tmp|root|work|Users|var|mnt|private|opt|srv)/[\w.-]+")


# ---- the rules, on hand-written results --------------------------------------------------------------------------


def _grab_run(n: int, original: int | None, effective: int | None, data: dict | None = None) -> Run:
    records = [
        grab.sample_record(
            {"pid": pid, "question": "What is the gradient? Give your answer as an integer.", "answer": "1"}
            | {"task": "properties", "category": "Extrema", "complexity": 0},
            grab.score_exact("1" if pid % 2 else "2", "1"),
        )
        for pid in range(n)
    ]
    run = Run("my-vlm", {"grab": {"accuracy,none": 0.5, "breakdown,none": grab.breakdown(records)}})
    path = Path("runs/1_results.json")
    run.task_files["grab"] = path
    run.environments[path] = {"judge": None, **({"data": data} if data is not None else {})}
    if original is not None:
        run.data_counts["grab_properties"] = {"original": original, "effective": effective}
        for task in ("grab_functions", "grab_series", "grab_transforms"):  # the questions are all properties here
            run.data_counts[task] = {"original": 0, "effective": 0}
    return run


def test_full_published_set_gets_no_note_and_a_subset_says_what_it_covered() -> None:
    full = coverage(_grab_run(2170, 2170, 2170), "grab", "grab", 2170)
    assert full.full and coverage_note("grab", [("my-vlm", full)]) is None
    limited = coverage(_grab_run(100, 2170, 100), "grab", "grab", 100)
    assert limited.text == "100 of the 2,170 questions of the published GRAB set (a --limit subset)"
    generated = coverage(_grab_run(40, 40, 40), "grab", "grab", 40)
    assert (
        not generated.full
        and "40 questions, not the published GRAB set of 2,170 (the data the run read held 40: a subset"
        in generated.text
    )
    local = coverage(_grab_run(2170, 2170, 2170, {"grab": {"local": True}}), "grab", "grab", 2170)
    assert not local.full and local.text.startswith("2,170 questions of locally built data")
    note = coverage_note("grab", [("my-vlm", generated)])
    assert note is not None and note.kind == "coverage"
    assert note.text == (  # that it is not the published set said once
        "Not the published data: the published rows are on the full published GRAB set (2,170 questions); my-vlm "
        "scored 40 questions (the data the run read held 40: a subset or locally generated data). The numbers are "
        "not directly comparable."
    )
    plot_twist = coverage(Run("m"), "plot_twist", "plot_twist", 32)
    assert not plot_twist.full and "locally generated data" in plot_twist.text  # the paper's charts are not public


def test_judge_use_in_words() -> None:
    """From the statuses a breakdown's flags.judge records (one per question), a captioning report's judged metrics
    (one per caption) and CharXiv's counts: one reader for every cell."""
    assert judge_words(judge_use({"flags": {"judge": {"not_used": 40}}}), "the judge") == "not used (40 questions)"
    mixed = {"flags": {"judge": {"not_used": 28, "judged": 12}}}
    assert judge_words(judge_use(mixed), "gpt-4o-mini") == "gpt-4o-mini, 12 of 40 questions"
    failed = {"flags": {"judge": {"judged": 10, "judge_failed": 2}}}
    assert judge_words(judge_use(failed), "gpt-4o-mini") == (
        "gpt-4o-mini, 10 of 12 questions; failed on 2 (counted wrong)"
    )
    outputs = {"flags": {"judge": {"judge_off": 12}, "answer_source": {"not_provided": 12}}}
    assert judge_words(judge_use(outputs), "the judge") == (
        "not used (12 outputs); needed but not configured for 12 (counted wrong)"
    )
    captions = {
        "judged": {
            "factscore": {"status": {"scored": 9}},
            "geval_relevance": {"status": {"scored": 8, "unparsable": 1}},
        }
    }
    assert judge_words(judge_use(captions), "gpt-4o-mini") == (
        "gpt-4o-mini: FActScore 9 of 9 captions scored; G-Eval relevance 8 of 9 captions scored (1 unreadable reply)"
    )
    charxiv = {
        "overall": {"questions": 8},
        "counts": {"by_judge": 5, "wrong_without_judge": 0, "flags": {"judge_failed": 1}},
    }
    assert judge_words(judge_use(charxiv), "gpt-4o") == (
        "gpt-4o, 5 of 8 questions; failed on 1 (ungraded, left out of the accuracy)"
    )


def test_empty_tables_become_a_sentence_and_paths_are_not_the_machines(tmp_path: Path) -> None:
    sections = [Section("S", [Table("Examples", ["a", "b"], []), Table("Rows", ["a"], [["1"]])])]
    markdown, page = to_markdown("T", [], sections), to_html("T", [], sections)
    assert "**Examples**: none." in markdown and "| a | b |" not in markdown
    assert '<p class="empty"><b>Examples</b>: none.</p>' in page and page.count("<table>") == 1
    out = tmp_path / "demo" / "report"
    assert shown_path(tmp_path / "demo" / "results" / "1_results.json", out) == "../results/1_results.json"
    assert shown_path("/elsewhere/deep/runs/1_results.json", out) == "1_results.json"
    text = f"grab: {tmp_path}/demo/results/2_results.json replaces it; see https://huggingface.co/datasets/x/y."
    assert shown(text, out) == ("grab: ../results/2_results.json replaces it; see https://huggingface.co/datasets/x/y.")
    assert shown("empty / failed: 3 / 0", out) == "empty / failed: 3 / 0"


def test_a_note_from_elsewhere_with_a_path_is_shortened(tmp_path: Path) -> None:
    records = [
        grab.sample_record(
            {"pid": 0, "question": "Q? Give your answer as an integer.", "answer": "1"}
            | {"task": "properties", "category": "Extrema", "complexity": 0},
            grab.score_exact("1", "1"),
        )
    ]
    runs = tmp_path / "runs"
    runs.mkdir()
    for date in ("1", "2"):
        results = {"results": {"grab": {"accuracy,none": 1.0, "breakdown,none": grab.breakdown(records)}}}
        (runs / f"{date}_results.json").write_text(json.dumps(results | {"model_name": "m", "date": date}))
    report = build_report([runs], tmp_path / "out")
    for text in (report.html.read_text(), report.markdown.read_text()):
        assert str(tmp_path) not in text and not MACHINE_PATH.findall(text)
    assert "grab: the later run 2_results.json replaces the one of 1" in report.markdown.read_text()
    assert "../runs/1_results.json, ../runs/2_results.json" in report.markdown.read_text()


# ---- the demo, rendered ------------------------------------------------------------------------------------------

PROBE = """
<script>
window.addEventListener("load", () => {
  const visible = (node) => {
    const box = node.getBoundingClientRect(), style = getComputedStyle(node);
    return box.width > 0 && box.height > 0 && style.display !== "none" && style.visibility !== "hidden";
  };
  const headings = [...document.querySelectorAll("h2")];
  const note = document.querySelector("p.coverage");
  let next = note ? note.nextElementSibling : null;
  while (next && !next.querySelector("table")) next = next.nextElementSibling;
  const found = {
    headings: headings.map((h) => [h.textContent, h.getBoundingClientRect().top]),
    summary: document.querySelector("section#summary") ? document.querySelector("section#summary").innerText : null,
    collapsed: [...document.querySelectorAll("section#summary details")].map((d) => [d.open, d.textContent]),
    note: note ? {text: note.innerText, visible: visible(note), top: note.getBoundingClientRect().top} : null,
    table_after_note: next ? next.innerText : null,
    empty: [...document.querySelectorAll("p.empty")].map((p) => [p.innerText, visible(p)]),
    rowless_tables: [...document.querySelectorAll("table")].filter((t) => !t.querySelector("tbody tr")).length,
  };
  const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(found);
  document.body.append(pre);
});
</script>
"""
SAMPLES_PROBE = """
<script>
window.addEventListener("load", () => {
  const links = [...document.querySelectorAll("a.full")];
  const found = [];
  let pending = links.length;
  const done = () => {
    const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(found);
    document.body.append(pre);
  };
  if (!pending) done();
  for (const link of links) {
    const label = link.closest("tr").querySelector("td:nth-child(2) .meta").textContent;
    const image = new Image();
    image.onload = image.onerror = () => {
      found.push({label: label, href: link.getAttribute("href"), width: image.naturalWidth,
                  height: image.naturalHeight, thumb: link.querySelector("img.thumb") !== null});
      if (--pending === 0) done();
    };
    image.src = link.href;
  }
});
</script>
"""


def probe(page: Path, script: str, profile: Path, width: int = 1280) -> object:
    """Render a copy of ``page`` (beside it, so relative links resolve) with ``script`` appended, in headless
    Chromium ``width`` pixels wide, and return what the script wrote."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is not installed (bash .ci/setup installs it)"
    copy = page.with_name(f"probe-{page.name}")
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"), encoding="utf-8")
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}"]
    command += [f"--window-size={width},2000", "--virtual-time-budget=10000", "--dump-dom", copy.as_uri()]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    copy.unlink()
    found = re.search(r'<pre id="probe">(.*?)</pre>', completed.stdout, re.S)
    assert completed.returncode == 0 and found, completed.stderr[-3000:]
    return json.loads(found.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


@pytest.fixture
def demo(demo_run: DemoRun) -> Path:
    """The session's ``scifig demo`` output folder (tests/harness/demo_run.py)."""
    return demo_run.out


@pytest.mark.slow
@pytest.mark.cli
def test_demo_report_opens_with_the_summary_and_says_the_run_is_not_the_published_set(
    demo: Path, tmp_path: Path
) -> None:
    report = demo / "report"
    found = probe(report / "report.html", PROBE, tmp_path / "profile")
    headings = [title for title, _ in found["headings"]]
    assert headings[:2] == ["Summary", "GRAB"]
    assert found["headings"][0][1] < 300  # at the top of the first screen
    summary = found["summary"]
    assert "1 results file (runs) of 1 model (scifig_chance(seed=0)); benchmarks: GRAB; 40 questions scored" in summary
    assert "Accuracy per model and benchmark" in summary  # the headline table is on the first screen
    # what made the numbers (data, protocol, judge use) is collapsed below it
    ((opened, runs),) = found["collapsed"]
    assert not opened and "not used (40 questions)" in runs and "not_used" not in runs + summary
    # the demo's run is scored with the answer as a whole: no published rows beside it (they were scored with the
    # authors' rule), so no coverage note either; a note says so and names grab_paper
    assert found["note"] is None
    assert "No published rows beside these runs" in (demo / "report" / "report.md").read_text(encoding="utf-8")
    # no empty table: the demo flags no output, so its examples are "none" in a sentence
    assert found["rowless_tables"] == 0
    assert ["Examples (first 5 per task): none (no logged output was flagged).", True] in found["empty"]
    for name in ("report.html", "report.md", "samples.html"):
        text = (report / name).read_text(encoding="utf-8")
        assert str(demo) not in text and MACHINE_PATH.findall(text) == [], name
    assert "../results/" in (report / "report.md").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.cli
def test_every_sample_figure_opens_at_its_full_size(demo: Path, tmp_path: Path) -> None:
    rows = datasets.Dataset.from_parquet(str(demo / "data" / "GRAB.parquet")).cast_column(
        "decoded_image", datasets.Image(decode=False)
    )
    sizes = {}
    for pid, cell in zip(rows["pid"], rows["decoded_image"], strict=True):
        with Image.open(io.BytesIO(cell["bytes"])) as image:
            sizes[pid] = image.size
    assert len(sizes) == 4 * PER_TASK and max(max(size) for size in sizes.values()) > 160  # larger than a thumbnail
    links = probe(demo / "report" / "samples.html", SAMPLES_PROBE, tmp_path / "profile")
    assert len(links) == 4 * PER_TASK and all(link["thumb"] for link in links)
    for link in links:
        pid = int(re.search(r"pid (\d+)", link["label"]).group(1))
        target = demo / "report" / link["href"]
        assert target.is_file() and not Path(link["href"]).is_absolute()
        assert (link["width"], link["height"]) == sizes[pid], link  # the browser drew the stored image, full size
        with Image.open(target) as image:
            assert image.size == sizes[pid]


def test_the_environment_section_lists_each_results_files_data_revision_beside_its_task_versions() -> None:
    from scifig_tasks.report.build import environment_section

    pinned = "6ad38024227403d2852e9077ca0e0d662446c5c4"
    recorded = _grab_run(4, None, None, {"grab": {"origin": "hub", "revision": pinned, "rows": {"test": 4}}})
    recorded.task_versions[Path("runs/1_results.json")] = {"grab": "2.4"}
    older = _grab_run(4, None, None)
    older.model = "older-vlm"
    collapsed = environment_section([recorded, older]).blocks[0]  # below the numbers, collapsed
    assert isinstance(collapsed, Details) and collapsed.summary.endswith("(2 results files)")
    table = collapsed.blocks[0]
    assert isinstance(table, Table) and table.header[2:4] == ["task versions", "data revision"]
    assert table.rows[0][2:4] == ["grab 2.4", "grab 6ad380242274"]
    assert table.rows[1][3] == "unknown"  # a results file written before data revisions were recorded
