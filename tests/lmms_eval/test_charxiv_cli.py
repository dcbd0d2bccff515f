"""CharXiv through the plain ``lmms-eval`` CLI (both protocols in one run) and ``scifig report``, on the authors' own
local layout (six real validation charts, stand-in images), the model and the judge two local servers. VLMEvalKit's
verdicts, question by question, are held equal to lmms-eval's by tests/vlmeval/test_parity_every_task.py.

The expected verdict of every question is derived here, independently of the package's scorers: a reply holding the
ground truth (case-insensitive) is right, any other wrong; an empty reply is wrong and flagged; a reply the judge
cannot grade (``UNGRADABLE``) is left out of the accuracy, and under the paper's grading so is every question of its
batch (the descriptive questions of one template, five at most). The fake judge grades by the same rule, reading the
authors' grading queries; the rules decide the bare answers before it under the default protocol.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scifig_tasks.benchmarks.charxiv.prompts import descriptive_question, reasoning_question
from tests.harness import warm_start
from tests.harness.charxiv_full_data import SAMPLE, authors_file, write_layout
from tests.harness.lmms import CliRun, offline_env, run
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply

pytestmark = [pytest.mark.slow, pytest.mark.cli]

UNGRADABLE = "UNGRADABLE"
BATCH = re.compile(r"^T(\d+):\nResponse \1: (.*?)\nGround Truth \1: (.*?)\n\n", re.MULTILINE | re.DOTALL)
REASONING = re.compile(r"### Your Turn ###\n +\* Question: .*?\n +\* Ground Truth: (.*?)\n +\* Response: (.*?)\n", re.S)


def documents() -> list[dict[str, Any]]:
    """The sample charts' question documents, as the authors' files give them (query id, kind, template, answer)."""
    described, reasoned = authors_file("descriptive"), authors_file("reasoning")
    docs = []
    for key in SAMPLE:
        for i, (template, answer) in enumerate(zip(described[key]["qids"], described[key]["answers"], strict=True)):
            docs.append({"query_id": f"{key}_{i}", "kind": "descriptive", "template": template, "answer": answer})
        docs.append({"query_id": key, "kind": "reasoning", "answer": reasoned[key]["answer"]})
    return docs


def question_texts() -> dict[str, str]:
    """Query id -> the question text the model is asked (checked against the authors' code in tests/core/charxiv)."""
    described, reasoned = authors_file("descriptive"), authors_file("reasoning")
    texts = {}
    for key in SAMPLE:
        chart = described[key]
        for i, template in enumerate(chart["qids"]):
            texts[f"{key}_{i}"] = descriptive_question(template, chart["subplot_loc"])
        question = reasoned[key]
        texts[key] = reasoning_question(question["query"], question["inst_category"], question["answer"])
    return texts


# one reply per distinct question text (charts with the same template and wording share it), chosen by the first
# query id asking it: the answer itself, a sentence holding it, a wrong one, nothing, or an ungradable reply
REPLY_STYLE = {
    "0": "answer",  # reasoning: "Joint-CNN", decided by the rules
    "2": "sentence",
    "14": "wrong",
    "17": UNGRADABLE,
    "61": "empty",
    "62": "sentence",
    "0_1": UNGRADABLE,  # template 13: its paper batch also holds 61_2
    "2_0": "answer",
    "2_1": "sentence",
    "2_2": "wrong",
    "14_0": "sentence",
    "14_1": "answer",
    "17_1": "wrong",
    "61_1": "sentence",
    "62_0": "answer",
    "62_1": "empty",
}


def reply_for(style: str, answer: str) -> str:
    return {
        "answer": answer,
        "sentence": f"Looking at the chart, the answer is {answer}.",
        "wrong": "I cannot read it.",
        "empty": "",
        UNGRADABLE: f"{UNGRADABLE} {answer}",
    }.get(style, answer)


def replies() -> dict[str, str]:
    """Question text -> the model's reply; query id -> the reply it gets."""
    by_text: dict[str, str] = {}
    answers = {doc["query_id"]: doc["answer"] for doc in documents()}
    for query_id, text in question_texts().items():
        by_text.setdefault(text, reply_for(REPLY_STYLE.get(query_id, "answer"), answers[query_id]))
    return by_text


def expected(protocol: str) -> dict[str, int | None]:
    """Query id -> 1, 0 or None (ungraded), by the rule in the module docstring."""
    texts, by_text = question_texts(), replies()
    verdicts: dict[str, int | None] = {}
    for doc in documents():
        reply = by_text[texts[doc["query_id"]]]
        if not reply:
            verdicts[doc["query_id"]] = 0
        elif UNGRADABLE in reply:
            verdicts[doc["query_id"]] = None
        else:
            verdicts[doc["query_id"]] = int(doc["answer"].lower() in reply.lower())
    if protocol == "paper":  # a batch the judge cannot grade leaves all its questions ungraded
        for doc in documents():
            if doc["kind"] == "descriptive":
                same = [d for d in documents() if d.get("template") == doc["template"]]
                if any(UNGRADABLE in by_text[texts[d["query_id"]]] for d in same):
                    verdicts[doc["query_id"]] = None
    return verdicts


def model_policy(request: ChatRequest) -> Reply:
    for text, reply in replies().items():
        if request.text.strip() == text.strip():
            return Reply(text=reply)
    raise AssertionError(f"not a CharXiv question: {request.text[:200]!r}")


def judge_policy(request: ChatRequest) -> Reply:
    batch = BATCH.findall(request.text)
    if batch:
        if any(UNGRADABLE in response for _, response, _ in batch):
            return Reply(text="I cannot grade these.")
        grades = {}
        for index, response, truth in batch:
            grades[f"extract_answer_T{index}"] = response
            grades[f"score_T{index}"] = int(truth.lower() in response.lower())
        return Reply(text=json.dumps(grades))
    truth, response = REASONING.search(request.text).groups()
    if UNGRADABLE in response:
        return Reply(text='{"extracted_answer": "?", "score": 7}')
    return Reply(text=json.dumps({"extracted_answer": response, "score": int(truth.lower() in response.lower())}))


class Runs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.servers: list[FakeOpenAIServer] = []
        self.data = write_layout(root / "charxiv", SAMPLE)

    def server(self, policy: Any) -> FakeOpenAIServer:
        server = FakeOpenAIServer(policy).start()
        self.servers.append(server)
        return server

    def env(self, judge: FakeOpenAIServer, name: str) -> dict[str, str]:
        env = offline_env(self.root / name)
        return env | {
            "SCIFIG_CHARXIV_FULL_DATA": str(self.data),
            "SCIFIG_JUDGE_BASE_URL": judge.base_url,
            "SCIFIG_JUDGE_MODEL": "fake-judge",
            "SCIFIG_JUDGE_MAX_RETRIES": "1",
            "SCIFIG_JUDGE_CACHE": str(self.root / name / "judge-cache"),
        }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    made = Runs(tmp_path_factory.mktemp("charxiv"))
    yield made
    for server in made.servers:
        server.stop()
    errors = [error for server in made.servers for error in server.errors]
    assert not errors, errors


@pytest.fixture(scope="module")
def lmms(runs: Runs) -> tuple[CliRun, FakeOpenAIServer]:
    model, judge = runs.server(model_policy), runs.server(judge_policy)
    env = runs.env(judge, "lmms") | {"OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": "sk-test"}
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "charxiv_full,charxiv_full_paper", "--log_samples"]
    done = run("lmms-eval", args, env, runs.root / "lmms" / "out")
    assert done.returncode == 0, done.output[-4000:]
    return done, judge


def breakdown(results: dict[str, Any], task: str) -> dict[str, Any]:
    return results["results"][task]["breakdown,none"]


def test_every_question_is_asked_once_and_scored_as_derived_by_hand(lmms: tuple[CliRun, FakeOpenAIServer]) -> None:
    done, _ = lmms
    results = done.results()
    for protocol, suffix in (("default", ""), ("paper", "_paper")):
        verdicts = expected(protocol)
        for kind in ("descriptive", "reasoning"):
            task = f"charxiv_full_{kind}{suffix}"
            ids = [sample["breakdown"]["query_id"] for sample in done.samples(task)]
            mine = {doc["query_id"] for doc in documents() if doc["kind"] == kind}
            assert sorted(ids) == sorted(mine), task  # every question once: 24 descriptive, 6 reasoning
            scores = [verdicts[query_id] for query_id in mine]
            graded = [score for score in scores if score is not None]
            overall = breakdown(results, task)["overall"]
            assert (overall["questions"], overall["graded"], overall["correct"]) == (
                len(scores),
                len(graded),
                sum(graded),
            ), task
            assert results["results"][task]["accuracy,none"] == pytest.approx(sum(graded) / len(graded))
            assert overall["authors_score"] == round(100 * sum(graded) / len(scores), 2)
            if protocol == "default":  # per question, from the logged records
                logged = {s["breakdown"]["query_id"]: s["breakdown"]["verdict"] for s in done.samples(task)}
                assert logged == {query_id: verdicts[query_id] for query_id in mine}, task


def test_the_judge_is_asked_as_the_authors_ask(lmms: tuple[CliRun, FakeOpenAIServer]) -> None:
    _, judge = lmms
    bodies = [request.body for request in judge.requests]
    assert bodies and all(body["response_format"] == {"type": "json_object"} for body in bodies)
    assert all(body["seed"] == 42 and body["top_p"] == 1 and body["temperature"] == 0 for body in bodies)
    sizes = sorted(len(BATCH.findall(r.text)) for r in judge.requests if "Overarching Question" in r.text)
    assert max(sizes) <= 5 and 1 in sizes  # the default protocol's batches of one, the paper's of a template
    templates = {doc["template"] for doc in documents() if doc["kind"] == "descriptive"}
    paper_batches = [size for size in sizes if size > 1]
    assert len(paper_batches) <= len(templates)


def test_the_report_shows_both_protocols_beside_the_published_rows(runs: Runs, lmms: tuple[CliRun, Any]) -> None:
    done, judge = lmms
    out = runs.root / "report"
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "report", str(done.output_path), "--out", str(out)]
    report = warm_start.run(command, runs.env(judge, "report"), timeout=300)
    assert report.returncode == 0, (report.stdout + report.stderr)[-3000:]
    page = (out / "report.md").read_text()
    assert "CharXiv reasoning accuracy" in page and "CharXiv descriptive accuracy" in page
    assert "(published) GPT-4o [wang2024charxiv]" in page and "47.10" in page and "84.45" in page
    assert "fake-vlm (paper protocol)" in page and "Ungraded descriptive questions" in page
