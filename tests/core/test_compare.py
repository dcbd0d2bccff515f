"""Paired comparison of runs (:mod:`scifig_tasks.core.compare`, :mod:`scifig_tasks.report.compare`): the exact
McNemar p-value against statsmodels and scipy on hand-built tables, the seeded paired bootstrap (reproducible,
covering the difference, close to the normal approximation on a large table and to a question-by-question
resampling), the pairing rule's refusals, the verdict in words, runs read from lmms-eval sample logs and VLMEvalKit
records files, and the report's "Comparison" section.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest, norm
from statsmodels.stats.contingency_tables import mcnemar

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.commands import compare as compare_cli
from scifig_tasks.core import compare as stats
from scifig_tasks.core.errors import CommandError
from scifig_tasks.report.build import build_report
from scifig_tasks.report.compare import WIDTH, compare_runs, text_table
from scifig_tasks.report.runs import Run, load_runs


def answers(both: int, only_a: int, only_b: int, neither: int) -> tuple[list[bool], list[bool]]:
    """Two runs' answers with the given 2x2 table (in a shuffled, fixed order)."""
    pairs = [(True, True)] * both + [(True, False)] * only_a + [(False, True)] * only_b + [(False, False)] * neither
    order = np.random.default_rng(7).permutation(len(pairs))
    return [pairs[i][0] for i in order], [pairs[i][1] for i in order]


TABLES = [(150, 3, 15, 44), (10, 0, 0, 5), (40, 7, 8, 45), (0, 1, 9, 0), (500, 120, 151, 229), (3, 0, 6, 1)]


@pytest.mark.parametrize("table", TABLES)
def test_mcnemar_p_is_the_exact_test_of_statsmodels_and_scipy(table: tuple[int, int, int, int]) -> None:
    both, only_a, only_b, neither = table
    result = stats.compare(*answers(*table), resamples=500)
    assert (result.n, result.both, result.only_a, result.only_b, result.neither) == (sum(table), *table)
    expected = mcnemar([[both, only_a], [only_b, neither]], exact=True).pvalue
    assert result.p_value == pytest.approx(expected, rel=1e-12)
    if only_a + only_b:
        assert result.p_value == pytest.approx(binomtest(only_b, only_a + only_b, 0.5).pvalue, rel=1e-9)
    assert result.accuracy_a == pytest.approx((both + only_a) / sum(table))
    assert result.accuracy_b == pytest.approx((both + only_b) / sum(table))
    assert result.difference == pytest.approx(result.accuracy_b - result.accuracy_a)


def test_the_bootstrap_is_seeded_and_covers_the_difference() -> None:
    a, b = answers(150, 3, 15, 44)
    first = stats.bootstrap_interval(a, b)
    assert stats.bootstrap_interval(a, b) == first  # reproducible
    big = answers(900, 300, 340, 460)  # fine enough for another seed to move the percentiles
    assert stats.bootstrap_interval(*big, seed=stats.SEED + 1) != stats.bootstrap_interval(*big)
    difference = (15 - 3) / 212
    assert first[0] < difference < first[1]
    assert first[0] > 0  # 12 more right answers in 212 is more than chance
    same = stats.bootstrap_interval(*answers(40, 7, 7, 45))
    assert same[0] < 0 < same[1]


def test_the_bootstrap_matches_the_normal_approximation_on_a_large_table() -> None:
    both, only_a, only_b, neither = 2600, 700, 820, 1880
    n = both + only_a + only_b + neither
    low, high = stats.bootstrap_interval(*answers(both, only_a, only_b, neither), resamples=20_000)
    p10, p01 = only_a / n, only_b / n
    difference = p01 - p10
    half = norm.ppf(0.975) * math.sqrt((p10 + p01 - difference**2) / n)
    assert low == pytest.approx(difference - half, abs=0.002)
    assert high == pytest.approx(difference + half, abs=0.002)


def test_drawing_counts_is_resampling_questions() -> None:
    """The multinomial draw of question kinds gives the interval of resampling question indices one by one."""
    a, b = answers(60, 9, 21, 30)
    ours = stats.bootstrap_interval(a, b, resamples=20_000)
    rng = np.random.default_rng(3)
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    indices = rng.integers(0, len(d), size=(20_000, len(d)))
    naive = np.percentile(d[indices].mean(axis=1), [2.5, 97.5])
    assert ours == pytest.approx(tuple(naive), abs=0.011)  # one question is 0.008; Monte Carlo noise below that


def test_pairing_refuses_other_questions_and_versions() -> None:
    a = {1: True, 2: False, 3: True}
    assert stats.pair(a, {3: False, 1: False, 2: True}) == ([True, False, True], [False, True, False])
    assert stats.pair(a, {1: True, 2: True}) == "different questions (3 in A, 2 in B, 2 in common)"
    assert stats.pair(a, {1: True, 2: True, 4: True}) == "different questions (3 each, but 1 of A's are not B's)"
    assert stats.pair(a, dict(a), "2.1", "2.2") == "different task versions (A 2.1, B 2.2)"
    assert stats.pair(a, dict(a), None, "2.2") == ([True, False, True], [True, False, True])
    assert stats.pair(a, {}, names=("base", "tuned")) == "no per-question records in tuned"


def test_verdict_lines() -> None:
    better = stats.compare(*answers(150, 3, 15, 44))
    low, high = (100 * value for value in better.ci)
    p = binomtest(15, 18, 0.5).pvalue
    assert better.significant and p < stats.ALPHA
    assert stats.verdict(better, "grab") == (
        f"B is better than A on grab by {1200 / 212:.1f} points (95% CI {low:.1f} to {high:.1f}; "
        f"McNemar p = {p:.3f}, 212 questions)"
    )
    worse = stats.compare(*answers(150, 15, 3, 44))
    assert stats.verdict(worse, "grab", "base", "tuned").startswith(
        f"base is better than tuned on grab by {1200 / 212:.1f} points (95% CI {-100 * worse.ci[1]:.1f} to "
    )
    tied = stats.compare(*answers(40, 7, 8, 45))
    assert not tied.significant
    assert stats.verdict(tied, "grab").startswith("no significant difference between A and B on grab (B - A = +1.0")
    assert [stats.p_text(p) for p in (0.0004, 0.0061, 0.0496, 0.0504)] == [
        "p < 0.001",
        "p = 0.006",
        "p = 0.0496",
        "p = 0.050",
    ]


# ---- runs read from files ------------------------------------------------------------------------------------------


def grab_record(pid: int, correct: bool, task: str = "properties") -> dict:
    return {
        "pid": pid,
        "task": task,
        "category": "Extrema",
        "complexity": 0,
        "precision": "integer",
        "correct": int(correct),
        "output_status": "ok",
        "judge": "not_used",
        "extracted": None,
        "prediction": "7",
    }


def write_lmms(folder: Path, model: str, verdicts: dict[str, list[bool]], version: str = "2.2") -> Path:
    """An lmms-eval results file with one samples file per GRAB task (doc ids 0.., pids from 100 per task)."""
    folder.mkdir(parents=True)
    results = {"results": {}, "versions": {}, "n-samples": {}, "model_name": model, "date": "20250101_000000"}
    for index, (task, correct) in enumerate(verdicts.items()):
        kind = {"grab_properties": "properties", "grab_functions": "function", "grab_series": "series"}[task]
        records = [grab_record(100 * index + doc, ok, kind) for doc, ok in enumerate(correct)]
        results["results"][task] = {"alias": task, "accuracy,none": sum(correct) / len(correct)}
        results["versions"][task] = version
        results["n-samples"][task] = {"original": len(correct), "effective": len(correct)}
        lines = [{"doc_id": doc, "breakdown": record, "filtered_resps": ["7"]} for doc, record in enumerate(records)]
        path = folder / f"20250101_000000_samples_{task}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (folder / "20250101_000000_results.json").write_text(json.dumps(results))
    return folder


def write_vlmeval(work: Path, model: str, records: list[dict]) -> Path:
    folder = work / model
    folder.mkdir(parents=True)
    correct = sum(record["correct"] for record in records)
    scores = {
        "dataset": "grab",
        "version": "2.2",
        "metrics": {"accuracy": correct / len(records), "n": len(records), "correct": correct},
        "breakdown": grab.breakdown(records),
    }
    (folder / f"{model}_grab_scifig_scores.json").write_text(json.dumps(scores))
    (folder / f"{model}_grab_scifig_records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return work


def pattern(n: int, right: set[int]) -> list[bool]:
    return [doc in right for doc in range(n)]


def test_runs_from_sample_logs_and_records_files(tmp_path: Path) -> None:
    base = pattern(30, set(range(0, 30, 2)))  # 15 of 30
    tuned = pattern(30, (set(range(0, 30, 2)) | {1, 3, 5, 7, 9, 11, 13}) - {0})  # 21 of 30: 7 gained, 1 lost
    a = write_lmms(tmp_path / "a", "base", {"grab_properties": base, "grab_functions": base[:10]})
    b = write_lmms(tmp_path / "b", "tuned", {"grab_properties": tuned, "grab_functions": tuned[:10]})
    other_data = write_lmms(tmp_path / "c", "other", {"grab_properties": base[:20], "grab_series": base[:5]})
    newer = write_lmms(tmp_path / "d", "newer", {"grab_properties": tuned, "grab_functions": base[:10]}, "2.3")
    # the same questions from VLMEvalKit (one dataset for all of GRAB), in another order
    records = [grab_record(doc, ok) for doc, ok in enumerate(tuned)][::-1]
    records += [grab_record(100 + doc, ok, "function") for doc, ok in enumerate(tuned[:10])]
    vlmeval = write_vlmeval(tmp_path / "vlmeval-out", "tuned", records)

    runs = [load_runs([path])[0] for path in (a, b, other_data, newer, vlmeval)]
    comparison = compare_runs(runs, resamples=2000)
    rows = {(row.b, row.task): row for row in comparison.rows}

    properties = rows[(1, "grab_properties")].result
    assert properties is not None
    assert (properties.n, properties.only_a, properties.only_b) == (30, 1, 7)
    assert (properties.accuracy_a, properties.accuracy_b) == (15 / 30, 21 / 30)
    assert properties.p_value == pytest.approx(mcnemar([[14, 1], [7, 8]], exact=True).pvalue)
    pooled = rows[(1, "grab (2 of 4 tasks)")]  # the group's questions added up, as its own accuracy does
    assert pooled.tasks == 2 and pooled.result is not None and pooled.result.n == 40
    assert (pooled.result.only_a, pooled.result.only_b) == (1 + 1, 7 + 5)  # properties + functions (first 10)
    assert rows[(4, "grab_properties")].result == properties  # VLMEvalKit records, matched by pid
    assert rows[(4, "grab_functions")].result == rows[(1, "grab_functions")].result

    assert rows[(2, "grab_properties")].status == "refused"
    assert rows[(2, "grab_properties")].reason == "different questions (30 in A, 20 in C, 20 in common)"
    assert (rows[(2, "grab_functions")].status, rows[(2, "grab_functions")].reason) == ("not compared", "only A has it")
    assert rows[(2, "grab_series")].reason == "only C has it"
    assert rows[(3, "grab_properties")].reason == "different task versions (A 2.2, D 2.3)"

    table = text_table(comparison)
    assert max(len(line) for line in table.splitlines()) <= WIDTH
    assert "grab_properties: refused: different questions (30 in A, 20 in C, 20 in common)" in table
    assert "- no significant difference between A and B on grab_properties (B - A = +20.0 points" in table
    entry = next(e for e in comparison.as_json()["comparisons"] if e["b"] == "B" and e["task"] == "grab_properties")
    assert (entry["n"], entry["only_a"], entry["only_b"], entry["status"]) == (30, 1, 7, "compared")


def test_tasks_are_pooled_within_their_group_only() -> None:
    """``grab`` and ``grab_llm_extract`` ask the same questions: each group gets its own pooled row."""

    def run(name: str, right: int) -> Run:
        samples = {
            task: [{"doc_id": d, "breakdown": grab_record(d, d < right)} for d in range(10)]
            for task in ("grab_properties", "grab_series", "grab_properties_llm_extract", "grab_series_llm_extract")
        }
        return Run(name, samples=samples)

    comparison = compare_runs([run("a", 3), run("b", 6)], resamples=200)
    pooled = {row.task: row.result.n for row in comparison.rows if row.tasks > 1 and row.result is not None}
    assert pooled == {"grab (2 of 4 tasks)": 20, "grab_llm_extract (2 of 4 tasks)": 20}


def test_runs_on_other_data_with_the_same_doc_ids_are_refused(tmp_path: Path) -> None:
    a = Run("a", samples={"grab_properties": [{"doc_id": d, "breakdown": grab_record(d, True)} for d in range(5)]})
    b = Run("b", samples={"grab_properties": [{"doc_id": d, "breakdown": grab_record(9 + d, True)} for d in range(5)]})
    (row,) = compare_runs([a, b], resamples=200).rows
    assert (row.status, row.reason) == ("refused", "different questions (5 each, but 5 of A's are not B's)")


def test_the_report_compares_two_models(tmp_path: Path) -> None:
    base = [grab_record(pid, pid % 2 == 0) for pid in range(40)]
    tuned = [grab_record(pid, pid % 2 == 0 or pid % 3 == 1) for pid in range(40)]
    write_vlmeval(tmp_path / "runs" / "one", "base", base)
    write_vlmeval(tmp_path / "runs" / "two", "tuned", tuned)
    report = build_report([tmp_path / "runs"], tmp_path / "report")
    assert "Comparison" in report.sections
    markdown = report.markdown.read_text()
    assert "A = base (VLMEvalKit); B = tuned (VLMEvalKit)." in markdown
    gained = sum(1 for pid in range(40) if pid % 2 and pid % 3 == 1)
    result = stats.compare([r["correct"] == 1 for r in base], [r["correct"] == 1 for r in tuned])
    low, high = (100 * value for value in result.ci)
    row = f"| grab_properties | 40 | 50.0 | {100 * (20 + gained) / 40:.1f} | +{100 * gained / 40:.1f} "
    assert row + f"({low:+.1f}, {high:+.1f}) | 0 | {gained} |" in markdown
    assert stats.verdict(result, "grab_properties") in markdown
    alone = build_report([tmp_path / "runs" / "one"], tmp_path / "alone")
    assert "Comparison" not in alone.sections


def compare_command(*argv: str | Path) -> int:
    """``scifig compare ARGV`` through the command's own parser (as ``scifig`` registers it)."""
    parser = argparse.ArgumentParser(prog="scifig")
    compare_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["compare", *map(str, argv)])
    return args.handler(args)


def test_the_command_prints_the_table_writes_json_and_refuses_what_is_not_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, tuned = pattern(20, set(range(10))), pattern(20, set(range(16)))
    a = write_lmms(tmp_path / "runs" / "a", "base", {"grab_properties": base})
    b = write_lmms(tmp_path / "runs" / "b", "tuned", {"grab_properties": tuned})
    assert compare_command(a, b, "--json", tmp_path / "out" / "c.json") == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[:2] == [f"A: base ({a})", f"B: tuned ({b})"]
    assert "grab_properties  20   50.0   80.0" in printed
    saved = json.loads((tmp_path / "out" / "c.json").read_text())
    assert saved["runs"][1] == {"label": "B", "run": f"tuned ({b})"}
    assert (saved["comparisons"][0]["only_a"], saved["comparisons"][0]["only_b"]) == (0, 6)

    with pytest.raises(CommandError, match=r"holds 2 runs \(base, tuned\)"):
        compare_command(tmp_path / "runs", b)
    with pytest.raises(CommandError, match="at least two runs"):
        compare_command(a)
    for samples in a.glob("*_samples_*.jsonl"):
        samples.unlink()
    with pytest.raises(CommandError, match="no per-question records"):
        compare_command(a, b)
