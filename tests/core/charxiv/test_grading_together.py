"""The paper protocol's grading asks every query of a token budget in one pool: the descriptive batches of every size
(a batch's reader needs its size) and the reasoning queries together, so no group waits for another's last replies
(before, each batch size was a wave of its own, then the reasoning queries). Counted by the judge server
(:func:`tests.harness.openai_server.gathering`); the grades are the authors' reading of each reply, as before."""

from __future__ import annotations

import json
import re
from pathlib import Path

from scifig_tasks.benchmarks.charxiv import scoring
from scifig_tasks.core.judge import JudgeClient, JudgeConfig
from tests.harness.fixtures import openai_server  # noqa: F401 -- pytest fixture
from tests.harness.openai_server import ChatRequest, Reply, gathering

BATCH = re.compile(r"^T(\d+):\nResponse \1: (.*?)\nGround Truth \1: (.*?)\n\n", re.MULTILINE | re.DOTALL)
REASONING = re.compile(r"### Your Turn ###\n +\* Question: .*?\n +\* Ground Truth: (.*?)\n +\* Response: (.*?)\n", re.S)


def grader(request: ChatRequest) -> Reply:
    """Scores 1 where the response holds the ground truth."""
    batch = BATCH.findall(request.text)
    if batch:
        grades: dict[str, object] = {}
        for index, response, truth in batch:
            grades[f"extract_answer_T{index}"] = response
            grades[f"score_T{index}"] = int(truth in response)
        return Reply(text=json.dumps(grades))
    truth, response = REASONING.search(request.text).groups()
    return Reply(text=json.dumps({"extracted_answer": response, "score": int(truth in response)}))


def documents() -> list[dict[str, object]]:
    """Descriptive questions making batches of 5 and 2 (template 7) and of 1 (template 15), and two reasoning ones."""
    described = [(f"{chart}_0", 7, str(chart)) for chart in range(7)] + [("20_1", 15, "20")]
    docs: list[dict[str, object]] = [
        {"query_id": query_id, "template": template, "answer": answer} for query_id, template, answer in described
    ]
    for chart, answer in (("30", "P1"), ("31", "6")):
        docs.append(
            {"query_id": chart, "answer_type": 1, "question_source": 1, "raw_question": "Which?", "answer": answer}
        )
    return docs


def test_every_batch_size_and_the_reasoning_queries_are_in_flight_together(
    openai_server,  # noqa: F811
    tmp_path: Path,
) -> None:
    server = openai_server(gathering(grader, size=5))  # batches of 5, 2 and 1, two reasoning queries: 5 in all
    config = JudgeConfig(
        base_url=server.base_url, model="judge", api_key="sk-charxiv-together-0000", cache_dir=tmp_path / "cache"
    )
    records = [
        scoring.ungraded_record(doc, f"It is {doc['answer']}." if index % 3 else "no idea", protocol="paper")
        for index, doc in enumerate(documents())
    ]
    with JudgeClient(config) as judge:
        graded = scoring.evaluate(records, judge)["records"]
    assert server.max_in_flight == 5  # before: 2 at most (the reasoning queries), each batch size alone
    assert server.count == 5
    assert [record["verdict"] for record in graded] == [0 if index % 3 == 0 else 1 for index in range(len(records))]
    assert all(record["graded_by"] == "judge" for record in graded)
