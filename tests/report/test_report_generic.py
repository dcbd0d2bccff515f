"""``scifig report`` for a benchmark whose description names no report section: the generic section
(:mod:`scifig_tasks.report.generic`) shows accuracy with 95% Wilson intervals per task and per category, and the
sample viewer lists its samples.

The benchmark is a description written here (a :class:`~scifig_tasks.core.benchmark.Benchmark` with a temporary
task folder), registered by replacing the registry's loaded descriptions for the test; the expected cells are
worked out by hand with scipy's Wilson interval.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import pytest
from scipy.stats import binomtest

from scifig_tasks.core import registry
from scifig_tasks.core.benchmark import Benchmark, Report, SummaryRow
from scifig_tasks.core.schema import BenchmarkSource, Column
from scifig_tasks.core.stats import Tally
from scifig_tasks.report import build, samples
from scifig_tasks.report.build import build_report

EASY = [("shapes", 1), ("shapes", 1), ("shapes", 0), ("colours", 1)]
"""toybench_easy: (category, correct) per question; its results hold the breakdown (counts)."""
HARD = [("shapes", 1), ("shapes", 0), ("colours", 0), ("colours", 0), ("colours", 1)]
"""toybench_hard: its results hold only the accuracy; the counts come from its sample log."""


def cell(correct: int, total: int) -> str:
    """``accuracy (low-high)`` in percent with scipy's Wilson interval, rounded to 4 decimals as the scorers do."""
    interval = binomtest(correct, total).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = (round(value, 4) for value in (interval.low, interval.high))
    return f"{100 * correct / total:.1f} ({100 * low:.1f}-{100 * high:.1f})"


def _toy(folder: Path) -> Benchmark:
    folder.mkdir()
    source = BenchmarkSource("ToyBench", "", ("test",), "SCIFIG_TOYBENCH_DATA", (Column("image", image=True),))
    return Benchmark(
        name="toybench",
        title="ToyBench",
        version="1.0",
        task_folder=folder,
        sources={"toybench": source},
        document_id=("qid",),
        chance={"toybench": "no chance rule in this test"},
        report=Report(summary=(SummaryRow("ToyBench", (("toybench_easy", "toybench_hard"),)),)),
    )


@pytest.fixture
def toybench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Benchmark:
    """ToyBench registered beside scifig's own benchmarks (the registry restored after the test)."""
    toy = _toy(tmp_path / "toy_tasks")
    loaded = registry._registry()
    added = dataclasses.replace(loaded, benchmarks={**loaded.benchmarks, toy.name: toy})
    monkeypatch.setattr(registry, "_loaded", added)
    no_documents = functools.partial(
        samples.write_samples_page, docs_loader=lambda tasks: dict.fromkeys(tasks, "no documents in this test")
    )
    monkeypatch.setattr(build, "write_samples_page", no_documents)
    return toy


def _results(folder: Path) -> Path:
    folder.mkdir(parents=True)
    tally = Tally()
    for category, correct in EASY:
        tally.add(bool(correct), {"category": category})
    results = {
        "model_name": "toy-model",
        "date": "20260101_000000",
        "results": {
            "toybench_easy": {"accuracy,none": 0.75, "breakdown,none": tally.to_dict()},
            "toybench_hard": {"accuracy,none": 0.4},
        },
    }
    (folder / "2026_results.json").write_text(json.dumps(results), encoding="utf-8")
    lines = [
        {"doc_id": index, "breakdown": {"qid": f"h{index}", "category": category, "correct": correct}}
        for index, (category, correct) in enumerate(HARD)
    ]
    log = folder / "2026_samples_toybench_hard.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return folder


def test_a_benchmark_without_a_section_gets_accuracy_with_intervals_per_task_and_category(
    tmp_path: Path, toybench: Benchmark
) -> None:
    report = build_report([_results(tmp_path / "results" / "toy-model")], tmp_path / "report")
    assert "ToyBench" in report.sections
    text = report.markdown.read_text(encoding="utf-8")
    per_task = text[text.index("**ToyBench accuracy per task") :]
    assert f"| toybench_easy | {cell(3, 4)} |" in per_task
    assert f"| toybench_hard | {cell(2, 5)} |" in per_task
    per_category = text[text.index("**ToyBench accuracy per category") :]
    assert f"| toybench_easy | colours | {cell(1, 1)} |" in per_category
    assert f"| toybench_easy | shapes | {cell(2, 3)} |" in per_category
    assert f"| toybench_hard | colours | {cell(1, 3)} |" in per_category
    assert f"| toybench_hard | shapes | {cell(1, 2)} |" in per_category
    assert "| ToyBench | toy-model |" not in text  # the summary row is the model's, labelled by the description
    assert "| toy-model | ToyBench |" in text

    assert report.samples is not None
    page = report.samples.read_text(encoding="utf-8")
    data = json.loads(page[page.index('type="application/json"') :].split(">", 1)[1].split("</script>", 1)[0])
    rows = [row for row in data["rows"] if row["t"] == "toybench_hard"]
    assert [row["l"] for row in rows] == [f"doc {index}: qid h{index}" for index in range(len(HARD))]
    assert [row["c"]["0"]["c"] for row in rows] == [bool(correct) for _, correct in HARD]
    assert not any("not a benchmark of this package" in note for note in data["notes"])
