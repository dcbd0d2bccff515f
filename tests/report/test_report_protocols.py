"""``scifig report`` shows every scifig task it finds under its scoring protocol, opens with one headline table, and
says beside the numbers what makes them lower or partial: outputs scored without the judge they needed, a --limit run.

The results files are written here (tests/report/results_files.py: breakdowns made by the benchmarks' own scorers
from records whose correctness is stated there), so every expected cell is counted by hand; each scenario is one
real ``scifig report`` command. The layout at 1400 px is checked in headless Chromium on the session's demo run
together with these files.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from scipy.stats import binomtest

from tests.harness.demo_run import DemoRun
from tests.harness.lmms import offline_env
from tests.harness.scifibench_data import sample
from tests.report import results_files as made
from tests.report.test_report_summary import probe

MMSCI_TASKS = ["mmsci_fig2cap", "mmsci_subfig2cap", "mmsci_subcap2fig"]
PLOT_TWIST_TASKS = ["plot_twist_scatter", "plot_twist_bar", "plot_twist_pie"]
RESCORED = {"source": "runs/x.json", "rescored_at": "2026-01-02T00:00:00+00:00", "protocol": "paper", "judge": None}


def cell(correct: int, total: int) -> str:
    """``accuracy (low-high)`` in percent with scipy's Wilson interval, rounded to 4 decimals as the scorers do."""
    interval = binomtest(correct, total).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = (round(value, 4) for value in (interval.low, interval.high))
    return f"{100 * correct / total:.1f} ({100 * low:.1f}-{100 * high:.1f})"


def scifig_report(results: list[Path], out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    scifig = Path(sys.executable).parent / "scifig"
    return subprocess.run(
        [str(scifig), "report", *map(str, results), "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def table(markdown: str, caption: str) -> list[dict[str, str]]:
    """The rows of the Markdown table under ``**caption**``, each as header -> cell."""
    lines = markdown.split(f"**{caption}**\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split(" | ")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split(" | ")), strict=True)) for line in lines[2:]]


def section(markdown: str, title: str) -> str:
    return markdown.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def usage(requests: int, cache_hits: int) -> dict[str, int]:
    """A ``judge_usage`` row (:func:`scifig_tasks.core.judge.usage_report`)."""
    return {"requests": requests, "cache_hits": cache_hits, "failed": 0, "prompt_tokens": 100 * requests}


JUDGE_USAGE = {
    "priced": False,
    "tasks": {
        **{f"scifibench_{split}": usage(2, 1) for split in made.SCIFIBENCH_SPLITS},
        **{f"scifibench_{split}_paper": usage(5, 0) for split in made.SCIFIBENCH_SPLITS},
    },
    "groups": {"mmsci": usage(0, 27), "mmsci_paper": usage(46, 0)},
}
"""What model-a's results file records of the judge: each protocol's tasks used it differently."""


def write_mixed(root: Path) -> list[Path]:
    """model-a: MMSci and SciFIBench under both protocols (2 of 4 right per MMSci setting, 1 of 2 per SciFIBench
    split; the judge's usage of each protocol's tasks recorded apart, :data:`JUDGE_USAGE`) and Plot Twist scored
    without a judge on a --limit subset (4 of 40 questions per chart, all counted wrong); model-a's MMSci re-scored
    with the paper protocol (all 12 right: its own file, the same model name); model-b: MMSci (default)."""
    c2f = made.scifibench_records(2)
    made.write_results(
        root / "model-a",
        "model-a",
        {
            **made.mmsci_results(4),
            **made.mmsci_results(4, "paper"),
            **made.scifibench_results(2),
            **made.scifibench_results(2, "paper"),
            **made.plot_twist_results(4),
        },
        groups={"mmsci": MMSCI_TASKS, "plot_twist": PLOT_TWIST_TASKS},
        n_samples={task: (40, 4) for task in PLOT_TWIST_TASKS},
        samples={"scifibench_cs_caption2figure": c2f},
        environment={"judge_usage": JUDGE_USAGE},
    )
    made.write_results(
        root / "rescored" / "model-a",
        "model-a",
        made.mmsci_results(4, right=1),
        groups={"mmsci": MMSCI_TASKS},
        rescore=RESCORED,
    )
    made.write_results(root / "model-b", "model-b", made.mmsci_results(4), groups={"mmsci": MMSCI_TASKS})
    return [root / "model-a", root / "rescored", root / "model-b"]


@dataclass(frozen=True)
class Mixed:
    results: list[Path]
    env: dict[str, str]
    markdown: str


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Mixed:
    root = tmp_path_factory.mktemp("protocols")
    env = offline_env(root) | sample(root / "scifibench-data")
    results = write_mixed(root / "runs")
    completed = scifig_report(results, root / "report", env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return Mixed(results, env, (root / "report" / "report.md").read_text(encoding="utf-8"))


def test_a_paper_protocol_run_alone_is_reported_beside_the_published_rows(tmp_path: Path) -> None:
    paper = made.mmsci_results(4, "paper")
    made.write_results(tmp_path / "runs", "my-vlm", paper, groups={"mmsci_paper": [f"{t}_paper" for t in MMSCI_TASKS]})
    completed = scifig_report([tmp_path / "runs"], tmp_path / "report", offline_env(tmp_path))
    assert completed.returncode == 0, completed.stderr[-3000:]
    markdown = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    rows = table(markdown, "MMSci multiple-choice accuracy (%, 95% Wilson interval)")
    assert [row["model"] for row in rows[:2]] == ["my-vlm (paper protocol)", "(published) GPT-4o [li2025mmsci]"]
    assert rows[0]["I Fig2Cap"] == cell(2, 4) and rows[0]["Avg. (pooled)"] == cell(6, 12)
    runs = table(markdown, "Runs")
    assert [(row["model"], row["protocol"], row["questions scored"]) for row in runs] == [
        ("my-vlm (paper protocol)", "paper", "12")
    ]


def test_the_first_table_is_every_model_under_each_protocol_with_intervals(mixed: Mixed) -> None:
    summary = section(mixed.markdown, "Summary")
    headline = (
        "Accuracy per model and benchmark (%, 95% Wilson interval; without an interval: standard accuracy, ± its "
        "standard deviation over repeats)"
    )
    assert summary.index(headline) < summary.index("**Runs**")  # the numbers first, then what made them
    rows = {row.pop("model"): row for row in table(mixed.markdown, headline)}
    assert rows == {
        "model-a (default protocol)": {
            "MMSci multiple choice": cell(6, 12),
            "Plot Twist": "0.0",
            "SciFIBench": cell(4, 8),
        },
        "model-a (paper protocol)": {"MMSci multiple choice": cell(6, 12), "Plot Twist": "-", "SciFIBench": cell(4, 8)},
        "model-a (re-scored, paper protocol)": {
            "MMSci multiple choice": cell(12, 12),
            "Plot Twist": "-",
            "SciFIBench": "-",
        },
        "model-b": {"MMSci multiple choice": cell(6, 12), "Plot Twist": "-", "SciFIBench": "-"},
    }
    # questions once per benchmark part (12 MMSci + 8 SciFIBench + 12 Plot Twist), not per model
    assert "3 results files (runs) of 3 models (model-a, model-a (re-scored, paper protocol), model-b)" in summary
    assert "32 questions scored (76 model x protocol x question scores)." in summary


def test_paper_results_stand_in_their_sections_labelled_and_a_rescore_is_its_own_row(mixed: Mixed) -> None:
    rows = table(mixed.markdown, "MMSci multiple-choice accuracy (%, 95% Wilson interval)")
    models = [row["model"] for row in rows if not row["model"].startswith("(published)")]
    assert models == [
        "model-a (default protocol)",
        "model-a (paper protocol)",
        "model-a (re-scored, paper protocol)",
        "model-b",
    ]
    assert [row["Avg. (pooled)"] for row in rows[:4]] == [cell(6, 12), cell(6, 12), cell(12, 12), cell(6, 12)]
    assert "the later run" not in mixed.markdown  # nothing merged under one name
    scifibench = table(mixed.markdown, "SciFIBench accuracy (%, 95% Wilson interval)")
    assert [row["model"] for row in scifibench[:2]] == ["model-a (default protocol)", "model-a (paper protocol)"]
    assert (
        scifibench[1]["CS F→C"] == cell(1, 2) and scifibench[2]["model"] == "(published) GPT-4o [roberts2024scifibench]"
    )
    # the data note is said once for the benchmark, not once per model and split
    part = section(mixed.markdown, "SciFIBench")
    (note,) = [line for line in part.splitlines() if line.startswith("Not the published data")]
    assert part.count("published CS splits") == 1 and "every run here scored both CS splits, 2 questions (" in note


def test_each_protocol_row_shows_the_judge_usage_of_its_own_tasks(mixed: Mixed) -> None:
    """The paper-protocol row shows its ``_paper`` tasks under their plain names, but the judge's usage is read under
    the names the results file records: 46 requests for ``mmsci_paper``, never the default ``mmsci``'s cache hits."""
    runs = {(row["model"], row["benchmark"]): row["judge"] for row in table(mixed.markdown, "Runs")}
    words = "{} requests, {} cache hits, {:,} prompt + 0 completion tokens, no price configured"
    assert runs[("model-a (default protocol)", "MMSci multiple choice")].endswith(words.format(0, 27, 0))
    assert runs[("model-a (paper protocol)", "MMSci multiple choice")].endswith(words.format(46, 0, 4600))
    assert runs[("model-a (default protocol)", "SciFIBench")].endswith(words.format(8, 4, 800))
    assert runs[("model-a (paper protocol)", "SciFIBench")].endswith(words.format(20, 0, 2000))


def test_plot_twist_says_beside_its_numbers_that_no_judge_was_configured_and_that_it_ran_a_limit(mixed: Mixed) -> None:
    part = section(mixed.markdown, "Plot Twist (Chart101)")
    judge = next(line for line in part.splitlines() if line.startswith("Scored without the judge"))
    assert "model-a (default protocol), Plot Twist: 12 of 12 outputs" in judge and "SCIFIG_JUDGE_BASE_URL" in judge
    assert part.index(judge) < part.index("**Plot Twist accuracies (%) on the synthetic charts**")
    assert "12 of the 120 in the data (a --limit subset)" in part
    runs = {(row["model"], row["benchmark"]): row for row in table(mixed.markdown, "Runs")}
    # 12 outputs for 12 questions (the answer sources and the judge's statuses count the same outputs)
    assert runs[("model-a (default protocol)", "Plot Twist")]["judge"] == (
        "not used (12 outputs); needed but not configured for 12 (counted wrong)"
    )


LAYOUT_PROBE = """
<script>
window.addEventListener("load", () => {
  for (const details of document.querySelectorAll("details")) details.open = true;
  const wide = [];
  for (const table of document.querySelectorAll("table")) {
    const box = table.parentElement;
    if (table.scrollWidth > box.clientWidth + 1 || table.getBoundingClientRect().right > window.innerWidth)
      wide.push([table.querySelector("caption") ? table.querySelector("caption").textContent : "", table.scrollWidth,
                 box.clientWidth]);
  }
  const first = document.querySelector("table");
  const caption = first && first.querySelector("caption") ? first.querySelector("caption").textContent : "";
  const found = {
    wide: wide, tables: document.querySelectorAll("table").length, width: window.innerWidth,
    first: first ? [caption, first.getBoundingClientRect().top] : null,
    letters: [...document.querySelectorAll("td.figs.multi")].map(
      (td) => [...td.querySelectorAll(".letter")].map((b) => b.textContent).join("")),
  };
  const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(found);
  document.body.append(pre);
});
</script>
"""


@pytest.mark.slow
@pytest.mark.cli
def test_at_1400_px_no_table_is_wider_than_the_page_and_option_figures_carry_their_letters(
    demo_run: DemoRun, mixed: Mixed, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    completed = scifig_report([demo_run.out / "results", *mixed.results], out, mixed.env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    found = probe(out / "report.html", LAYOUT_PROBE, tmp_path / "profile", width=1400)
    assert found["width"] == 1400 and found["tables"] >= 15
    assert found["wide"] == []  # Environment's columns, SciFIBench's "overall", every table: on the page
    caption, top = found["first"]
    assert caption.startswith("Accuracy per model and benchmark") and top < 400  # the first screen opens with it
    samples = probe(out / "samples.html", LAYOUT_PROBE, tmp_path / "samples-profile", width=1400)
    assert samples["letters"] == ["ABCDE", "ABCDE"]  # the two Caption→Figure questions' five figures
