"""SciFIBench through the real ``lmms-eval`` CLI against the local server: prompts, interleaving, answer resolution
with the judge off and on, per-category accuracy, the alignment experiment and the older split names.

Each reply comes from a corpus of realistic output styles (tests/harness/mcq_corpus.py); what a style states is
written by hand there, so the expected accuracies below do not come from the package's resolver.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness.mcq_corpus import STYLES
from tests.harness.openai_server import ChatRequest
from tests.harness.scifibench_data import Question, build, c2f_caption, colour, options_for, write_splits
from tests.harness.scifibench_run import (
    CASES,
    JUDGE_OUTPUT,
    LETTERS,
    TASKS,
    ScifibenchRun,
    expected_correct,
    image_colours,
    judge_letter,
    never_judged,
    run_scifibench,
)


def test_scifibench_accuracy_matches_the_reply_policy_with_the_judge_off(scifibench_judge_off: ScifibenchRun):
    check_accuracy(scifibench_judge_off.run.results(), judge_on=False)


def test_scifibench_accuracy_matches_the_reply_policy_with_the_judge_on(
    tmp_path: Path, openai_server, lmms_env, run_cli
):
    run, _, judge = run_scifibench(tmp_path, openai_server, lmms_env, run_cli, judge_on=True)
    check_accuracy(run.results(), judge_on=True)
    asked = {JUDGE_OUTPUT.search(request.text).group(1).strip() for request in judge.requests}
    assert asked == {case.reply.strip() for case in CASES if not never_judged(case)}
    assert all(request.body.get("max_tokens") == 3 for request in judge.requests)


def check_accuracy(results: dict, judge_on: bool) -> None:
    """Per split, per category, per group, and how each answer was resolved, as the reply policy dictates."""
    assert len(STYLES) >= 40
    for split, task in TASKS.items():
        cases = [case for case in CASES if case.split == split]
        correct = sum(expected_correct(case, judge_on) for case in cases)
        assert results["results"][task]["accuracy,none"] == pytest.approx(correct / len(cases)), task
        categories = results["results"][task]["breakdown,none"]["category"]
        for category in {case.category for case in cases}:
            in_category = [case for case in cases if case.category == category]
            assert categories[category]["correct"] == sum(expected_correct(c, judge_on) for c in in_category)
    total = sum(expected_correct(case, judge_on) for case in CASES)
    assert results["groups"]["scifibench"]["accuracy,none"] == pytest.approx(total / len(CASES))
    cs = [case for case in CASES if case.split.startswith("CS")]
    cs_total = sum(expected_correct(case, judge_on) for case in cs)
    assert results["groups"]["scifibench_cs"]["accuracy,none"] == pytest.approx(cs_total / len(cs))

    resolution = results["groups"]["scifibench"]["breakdown,none"]["flags"]["resolution"]
    by_rule = sum(case.style.states_answer for case in CASES)
    judged = sum(not never_judged(case) and judge_letter(case) is not None for case in CASES) if judge_on else 0
    assert resolution == {
        k: v for k, v in {"rule": by_rule, "judge": judged, "unresolved": len(CASES) - by_rule - judged}.items() if v
    }


def test_prompts_and_interleaved_images_reach_the_model(scifibench_judge_off: ScifibenchRun):
    by_qid = {image_colours(request)[0][0]: request for request in scifibench_judge_off.requests}

    f2c = CASES[0]
    request = by_qid[f2c.qid]
    parts = request.body["messages"][0]["content"]
    assert [part["type"] for part in parts] == ["image_url", "text"]
    assert parts[1]["text"] == "\n".join(options_for(f2c.qid)) + (
        "\nWhich of the captions best describes the image? Let's think step by step. Only provide the letter of the "
        "correct caption as your answer. Answer:"
    )

    for case in [case for case in CASES if case.kind == "c2f"]:
        parts = by_qid[case.qid % 256].body["messages"][0]["content"]
        kinds = [part["type"] for part in parts]
        assert kinds == ["text", "image_url"] * 5 + ["text"]
        labels = [part["text"] for part in parts[0:10:2]]
        assert labels == ["A) ", "\nB) ", "\nC) ", "\nD) ", "\nE) "]
        assert image_colours(by_qid[case.qid % 256]) == [colour(case.qid, position) for position in range(5)]
        assert parts[-1]["text"] == (
            f"\n{c2f_caption(case.qid)}\nWhich of the images best matches the caption? Let's think step by step. "
            "Only provide the letter of the correct image as your answer. Answer:"
        )


def test_alignment_group_reports_five_accuracies_and_four_deltas(tmp_path: Path, openai_server, lmms_env, run_cli):
    """A model that picks whatever option is marked <Correct> (else A), on data stored under the old split name."""
    questions = [Question("f2c", LETTERS[qid % 5]) for qid in range(10)]
    data = write_splits({"Figure2Caption": build(questions)}, tmp_path / "old-names")

    def follows_the_mark(request: ChatRequest) -> str:
        marked = re.search(r"^([A-E])\)\s+<Correct> ", request.text, re.MULTILINE)
        return f"Answer: {marked.group(1) if marked else 'A'}"

    model = openai_server(follows_the_mark)
    env = {
        **lmms_env,
        "SCIFIG_SCIFIBENCH_DATA": str(data),
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm", "--tasks", "scifibench_alignment"]
    run = run_cli("lmms-eval", args, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    summary = run.results()["groups"]["scifibench_alignment"]["alignment,none"]
    baseline = sum(q.answer == "A" for q in questions) / len(questions)  # 0.2: only IDs 0 and 5 have answer A
    assert summary == {
        "baseline": {"n": 10, "accuracy": baseline, "delta_vs_baseline": None},
        "marked_true": {"n": 10, "accuracy": 1.0, "delta_vs_baseline": round(1.0 - baseline, 4)},
        "marked_true_ignore": {"n": 10, "accuracy": 1.0, "delta_vs_baseline": round(1.0 - baseline, 4)},
        "marked_false": {"n": 10, "accuracy": 0.0, "delta_vs_baseline": round(0.0 - baseline, 4)},
        "marked_false_ignore": {"n": 10, "accuracy": 0.0, "delta_vs_baseline": round(0.0 - baseline, 4)},
    }
    notes = [request.text for request in model.requests if "A human expert" in request.text]
    assert len(notes) == 40
    assert sum("as <Correct>. Ignore this information.\nWhich of the captions" in note for note in notes) == 20
