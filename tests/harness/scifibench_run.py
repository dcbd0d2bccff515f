"""The SciFIBench run several test modules check: 49 questions over the four splits, each answered in one of the
realistic output styles of tests/harness/mcq_corpus.py (what a style states is written by hand there, so expected
accuracies never come from the package's resolver), through the real ``lmms-eval`` CLI against a local server.

:func:`scifibench_judge_off` is that run with the judge off, made once per test session (per pytest-xdist worker) and
shared by the SciFIBench CLI tests and the rescore tests, which only read it.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from tests.harness.lmms import CliRun, offline_env, run
from tests.harness.mcq_corpus import STYLES, Style
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply
from tests.harness.scifibench_data import Question, build, options_for, write_splits

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


ARGS = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
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
    done = run_cli("lmms-eval", [*ARGS, "--tasks", "scifibench", "--log_samples"], env, tmp_path / "out")
    assert done.returncode == 0, done.output[-4000:]
    return done, model, judge


@dataclass(frozen=True)
class ScifibenchRun:
    """A finished judge-off run: its output folder, the requests the model received and the data folder."""

    run: CliRun
    requests: list[ChatRequest]
    data: Path


@pytest.fixture(scope="session")
def scifibench_judge_off(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScifibenchRun]:
    """:func:`run_scifibench` with the judge off, once per session; tests read it and write only under their own
    ``tmp_path``."""
    work = tmp_path_factory.mktemp("scifibench-judge-off")
    model = FakeOpenAIServer(model_policy).start()
    try:
        env = {**offline_env(work), "SCIFIG_SCIFIBENCH_DATA": str(write_data(work))}
        env |= {"OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": "sk-test"}
        done = run("lmms-eval", [*ARGS, "--tasks", "scifibench", "--log_samples"], env, work / "out")
    finally:
        model.stop()
    assert done.returncode == 0, done.output[-4000:]
    assert not model.errors, model.errors
    yield ScifibenchRun(done, list(model.requests), work / "scifibench")
