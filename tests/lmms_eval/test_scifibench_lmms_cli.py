"""SciFIBench through the real ``lmms-eval`` CLI against the local server: prompts, interleaving, answer resolution
with the judge off and on, per-category accuracy, the alignment experiment and the older split names.

Each reply comes from a corpus of realistic output styles (tests/harness/mcq_corpus.py); what a style states is
written by hand there, so the expected accuracies below do not come from the package's resolver.
"""

from __future__ import annotations

import base64
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from tests.harness.mcq_corpus import STYLES, Style
from tests.harness.openai_server import ChatRequest, Reply
from tests.harness.scifibench_data import Question, build, c2f_caption, colour, options_for, write_splits

SPLITS = {  # split -> (kind, number of questions, first ID, category cycle)
    "CS_Figure2Caption": ("f2c", 22, 0, ("cs.CV", "other cs")),
    "CS_Caption2Figure": ("c2f", 8, 100, ("cs.LG",)),
    "General_Figure2Caption": ("f2c", 10, 200, ("physics",)),
    "General_Caption2Figure": ("c2f", 9, 230, ("q-bio", "physics")),
}
TASKS = {
    "CS_Figure2Caption": "scifibench_cs_figure2caption",
    "CS_Caption2Figure": "scifibench_cs_caption2figure",
    "General_Figure2Caption": "scifibench_general_figure2caption",
    "General_Caption2Figure": "scifibench_general_caption2figure",
}
LETTERS = "ABCDE"
FAILED = Style("request failed", "<HTTP 400>", states_answer=False)


@dataclass
class Case:
    split: str
    qid: int
    kind: str
    answer: str
    category: str
    style: Style
    stated: str  # the letter the style names (when it names one)
    other: str
    reply: str | Reply


def make_cases() -> list[Case]:
    styles = [*STYLES, FAILED]
    cases, index = [], 0
    for split, (kind, count, first_id, categories) in SPLITS.items():
        for offset in range(count):
            qid = first_id + offset
            answer = LETTERS[qid % 5]
            stated = answer if index % 3 else LETTERS[(qid + 2) % 5]
            other = LETTERS[(LETTERS.index(stated) + 1) % 5]
            style = styles[index % len(styles)]
            options = options_for(qid) if kind == "f2c" else [f"{letter}) image{i}" for i, letter in enumerate(LETTERS)]
            text = options[LETTERS.index(stated)][3:].strip()
            reply = Reply(status=400) if style is FAILED else style.render(stated, text, other, options)
            cases.append(
                Case(split, qid, kind, answer, categories[offset % len(categories)], style, stated, other, reply)
            )
            index += 1
    return cases


CASES = make_cases()


def judge_letter(case: Case) -> str | None:
    """What the test's judge answers for an ambiguous output: the first letter of "X or Y", the last answer line."""
    if case.style.name in ("two letters or", "either or parentheses"):
        return case.stated
    if case.style.name == "two answer lines":
        return case.other
    return None


def never_judged(case: Case) -> bool:
    return case.style.states_answer or case.style.name in ("empty", "whitespace", "request failed")


def expected_correct(case: Case, judge_on: bool) -> bool:
    if case.style.states_answer:
        return case.stated == case.answer
    return judge_on and not never_judged(case) and judge_letter(case) == case.answer


def write_data(tmp_path: Path) -> Path:
    splits = {}
    for split, (kind, _count, first_id, _) in SPLITS.items():
        cases = [case for case in CASES if case.split == split]
        splits[split] = build([Question(kind, case.answer, case.category) for case in cases], first_id=first_id)
    return write_splits(splits, tmp_path / "scifibench")


def image_colours(request: ChatRequest) -> list[tuple[int, int, int]]:
    colours = []
    for message in request.body["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "image_url":
                data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                colours.append(Image.open(io.BytesIO(data)).convert("RGB").getpixel((0, 0)))
    return colours


def model_policy(request: ChatRequest) -> Reply | str:
    qid = image_colours(request)[0][0]
    (case,) = [case for case in CASES if case.qid % 256 == qid]
    return case.reply


JUDGE_OUTPUT = re.compile(r"Here is the output from a generative model:\n(.*)\nThe output contains", re.DOTALL)


def judge_policy(request: ChatRequest) -> Reply:
    output = JUDGE_OUTPUT.search(request.text).group(1)
    matching = [case for case in CASES if isinstance(case.reply, str) and case.reply.strip() == output.strip()]
    assert matching, f"judge asked about an unknown output {output!r}"
    letter = judge_letter(matching[0])
    return Reply(text=letter or "None")


def run_scifibench(tmp_path: Path, openai_server, lmms_env, run_cli, judge_on: bool):
    model = openai_server(model_policy)
    env = {
        **lmms_env,
        "SCIFIG_SCIFIBENCH_DATA": str(write_data(tmp_path)),
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    judge = None
    if judge_on:
        judge = openai_server(judge_policy)
        env |= {"SCIFIG_JUDGE_BASE_URL": judge.base_url, "SCIFIG_JUDGE_MODEL": "fake-judge"}
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "scifibench", "--log_samples"]
    run = run_cli("lmms-eval", args, env, tmp_path / "out")
    assert run.returncode == 0, run.output[-4000:]
    return run, model, judge


@pytest.mark.parametrize("judge_on", [False, True], ids=["judge-off", "judge-on"])
def test_scifibench_accuracy_matches_the_reply_policy(tmp_path: Path, openai_server, lmms_env, run_cli, judge_on):
    assert len(STYLES) >= 40
    run, model, judge = run_scifibench(tmp_path, openai_server, lmms_env, run_cli, judge_on)
    results = run.results()

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
    if judge_on:
        asked = {JUDGE_OUTPUT.search(request.text).group(1).strip() for request in judge.requests}
        assert asked == {case.reply.strip() for case in CASES if not never_judged(case)}
        assert all(request.body.get("max_tokens") == 3 for request in judge.requests)


def test_prompts_and_interleaved_images_reach_the_model(tmp_path: Path, openai_server, lmms_env, run_cli):
    _, model, _ = run_scifibench(tmp_path, openai_server, lmms_env, run_cli, judge_on=False)
    by_qid = {image_colours(request)[0][0]: request for request in model.requests}

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
