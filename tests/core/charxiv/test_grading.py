"""CharXiv grading (Wang et al., NeurIPS 2024): the grading queries equal what the authors' code builds over the real
validation questions (digests in tests/fixtures/charxiv/authors_grading_queries.json), and the grader's replies are
read as the authors read them, a reply of another shape flagged, never scored 0 or -1."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from scifig_tasks.benchmarks.charxiv import grading
from scifig_tasks.benchmarks.charxiv.grading import Grade, GradingQuery, Ungraded
from scifig_tasks.core.judge import JudgeClient, JudgeConfig
from tests.harness.fixtures import openai_server  # noqa: F401
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply
from tests.harness.paths import FIXTURES

DATA = FIXTURES / "charxiv"
GOLDEN = json.loads((DATA / "authors_grading_queries.json").read_text(encoding="utf-8"))
STAND_IN = GOLDEN["stand_in_response"]


def descriptive_items() -> list[dict[str, Any]]:
    data = json.loads((DATA / "descriptive_val.json").read_text(encoding="utf-8"))
    return [
        {"query_id": f"{fid}_{i}", "template": template, "answer": answer}
        | {"response": STAND_IN.format(query_id=f"{fid}_{i}")}
        for fid, chart in data.items()
        for i, (template, answer) in enumerate(zip(chart["qids"], chart["answers"], strict=True))
    ]


def reasoning_items() -> list[dict[str, Any]]:
    data = json.loads((DATA / "reasoning_val.json").read_text(encoding="utf-8"))
    return [
        {
            "query_id": fid,
            "raw_question": chart["query"],
            "answer_type": chart["inst_category"],
            "answer": chart["answer"],
            "response": STAND_IN.format(query_id=fid),
        }
        for fid, chart in data.items()
    ]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def descriptive_mismatches(queries: list[GradingQuery]) -> list[str]:
    """Where ``queries`` differ from the authors' (batches, then texts); empty when they are the same."""
    ours = [{"resp_keys": list(query.query_ids), "sha256": sha(query.text)} for query in queries]
    if len(ours) != len(GOLDEN["descriptive"]):
        return [f"{len(ours)} queries, the authors build {len(GOLDEN['descriptive'])}"]
    return [
        f"query {n}: {mine} != {theirs}"
        for n, (mine, theirs) in enumerate(zip(ours, GOLDEN["descriptive"], strict=True))
        if mine != theirs
    ]


# --- the queries ------------------------------------------------------------------------------------------------


def test_descriptive_grading_queries_equal_the_authors_over_the_validation_questions() -> None:
    items = descriptive_items()
    random.Random(0).shuffle(items)  # the authors' order is rebuilt from the query ids
    queries = grading.descriptive_grading_queries(items)
    assert len(queries) == 807 and sum(len(query.query_ids) for query in queries) == 4000
    assert descriptive_mismatches(queries) == []


def test_reasoning_grading_queries_equal_the_authors_over_the_validation_questions() -> None:
    ours = {
        item["query_id"]: sha(
            grading.reasoning_grading_query(item["raw_question"], item["answer_type"], item["answer"], item["response"])
        )
        for item in reasoning_items()
    }
    assert len(ours) == 1000 and ours == GOLDEN["reasoning"]


def test_the_comparison_with_the_authors_queries_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    items = descriptive_items()
    assert descriptive_mismatches(grading.descriptive_grading_queries(items, per_query=4))  # other batches
    changed = [dict(item) for item in items]
    changed[0]["response"] += " "  # one character of one response: that batch's text only
    mismatches = descriptive_mismatches(grading.descriptive_grading_queries(changed))
    assert len(mismatches) == 1 and "'0_0'" in mismatches[0].replace('"', "'")
    swapped = [dict(item, template=14 if item["template"] == 15 else item["template"]) for item in items]
    assert descriptive_mismatches(grading.descriptive_grading_queries(swapped))  # other groups
    original = grading.text

    def corrected(name: str, key: int | str | None = None) -> str:  # the prefix's "interger" spelled right
        return original(name, key).replace("interger", "integer")

    monkeypatch.setattr(grading, "text", corrected)
    assert len(descriptive_mismatches(grading.descriptive_grading_queries(items))) == 807
    item = reasoning_items()[0]
    text = grading.reasoning_grading_query(item["raw_question"], item["answer_type"], item["answer"], item["response"])
    assert sha(text) != GOLDEN["reasoning"][item["query_id"]]


def test_query_shape_and_refusals() -> None:
    items = [
        {"query_id": "7_1", "template": 11, "response": "No", "answer": "Yes"},
        {"query_id": "2_0", "template": 11, "response": "Yes", "answer": "Yes"},
        {"query_id": "2_1", "template": 1, "response": "A title", "answer": "Not Applicable"},
    ]
    queries = grading.descriptive_grading_queries(items)
    assert [query.query_ids for query in queries] == [("2_1",), ("2_0", "7_1")]
    assert "['extract_answer_T1', 'score_T1', 'extract_answer_T2', 'score_T2']" in queries[1].text
    assert queries[1].text.endswith(
        "T1:\nResponse 1: Yes\nGround Truth 1: Yes\n\nT2:\nResponse 2: No\nGround Truth 2: Yes\n\n"
    )
    assert [q.query_ids for q in grading.descriptive_grading_queries(items, per_query=1)] == [
        ("2_1",),
        ("2_0",),
        ("7_1",),
    ]
    with pytest.raises(ValueError, match="twice"):
        grading.descriptive_grading_queries([*items, items[0]])
    with pytest.raises(ValueError, match="1..19"):
        grading.descriptive_grading_queries([{"query_id": "1_0", "template": 20, "response": "", "answer": ""}])
    with pytest.raises(ValueError, match="1..4"):
        grading.reasoning_grading_query("q", 5, "a", "r")


# --- the replies ------------------------------------------------------------------------------------------------


def test_reading_descriptive_replies() -> None:
    good = '{"extract_answer_T1": 1.0, "score_T1": 1, "extract_answer_T2": "No", "score_T2": 0}'
    assert grading.read_descriptive(good, 2) == [Grade("1.0", 1), Grade("No", 0)]
    assert grading.read_descriptive(f"```json\n{good}\n```", 2) == [Grade("1.0", 1), Grade("No", 0)]
    assert grading.read_descriptive('{"extract_answer_T1": "x", "score_T1": 1.0}', 1) == [Grade("x", 1)]
    assert grading.read_descriptive('{"extract_answer_T1": "x", "score_T1": true}', 1) == [Grade("x", 1)]  # as theirs
    assert grading.read_descriptive(good.replace("_T2", "_T3"), 2) is None  # a key missing
    for other in (
        '{"extracted_answer_T1": "x", "score_T1": 1}',  # another key
        '{"extract_answer_T1": "x", "score_T1": 2}',  # a score outside {0, 1}
        '{"extract_answer_T1": "x", "score_T1": -1}',
        '{"extract_answer_T1": "x", "score_T1": "1"}',
        '{"extract_answer_T1": "x", "score_T1": 0.5}',
        '[{"extract_answer_T1": "x", "score_T1": 1}]',
        '{"extract_answer_T1": "x", "score_T1": 1',
        "score_T1: 1",
        "",
    ):
        assert grading.read_descriptive(other, 1) is None, other


def test_reading_reasoning_replies_as_the_authors_parser() -> None:
    assert grading.read_reasoning('{"extracted_answer": "P55762", "score": 0}') == Grade("P55762", 0)
    assert grading.read_reasoning('{"extracted_answer": 3, "score": 1}') == Grade("3", 1)
    # the prefix asks for extract_answer; the authors' parser reads extracted_answer (the paper protocol too)
    assert grading.read_reasoning('{"extract_answer": "b", "score": 1}') is None
    assert grading.read_reasoning('{"extract_answer": "b", "score": 1}', grading.REASONING_KEYS) == Grade("b", 1)
    for other in ('{"extracted_answer": "b", "score": 2}', '{"extracted_answer": "b"}', '{"score": 1}', "b"):
        assert grading.read_reasoning(other, grading.REASONING_KEYS) is None, other


def test_cut_off_replies() -> None:
    assert grading.cut_off('{"extract_answer_T1": "a very long answ')  # the authors' "Unterminated string"
    assert grading.cut_off('{"extract_answer_T1": "x", "score_T1": 1, ')
    assert grading.cut_off('{"extract_answer_T1": "x", "score_T1"')
    assert grading.cut_off('```json\n{"extracted_answer": "x", "sc')
    assert not grading.cut_off('{"extract_answer_T1": "x", "score_T1": 1}')
    assert not grading.cut_off('{"a": 1} trailing')
    assert not grading.cut_off("I cannot grade this.")
    assert not grading.cut_off("")


# --- asking a judge ---------------------------------------------------------------------------------------------

TRIPLET = re.compile(r"T(\d+):\nResponse \d+: (.*?)\nGround Truth \d+: (.*?)\n\n", re.DOTALL)
ITEMS = [
    {"query_id": f"{fid}_{i}", "template": template, "response": response, "answer": answer}
    for fid, i, template, response, answer in (
        (0, 0, 7, "60", "60"),
        (0, 3, 15, "5", "Not Applicable"),
        (2, 0, 7, "The top tick is 1.0", "1.00"),
        (2, 1, 7, "10", "20"),
        (3, 0, 7, "0.5", "0.5"),
        (3, 1, 7, "Not Applicable", "Not Applicable"),
        (5, 0, 7, "3", "4"),
    )
]


def grader(request: ChatRequest) -> str:
    """A grader that scores 1 where the response holds the ground truth's words."""
    triplets = TRIPLET.findall(request.text.split("### Example End ###")[-1])
    reply: dict[str, Any] = {}
    for i, response, answer in triplets:
        reply[f"extract_answer_T{i}"] = response
        reply[f"score_T{i}"] = int(answer.rstrip("0").rstrip(".") in response)
    return json.dumps(reply)


def judge_for(server: FakeOpenAIServer, tmp_path: Path, **overrides: Any) -> JudgeClient:
    settings: dict[str, Any] = {
        "base_url": server.base_url,
        "model": "judge-model",
        "api_key": "sk-charxiv-test-key-0000",
        "timeout_s": 2.0,
        "max_retries": 2,
        "backoff_initial_s": 0.001,
        "backoff_max_s": 0.002,
        "cache_dir": tmp_path / "cache",
    } | overrides
    return JudgeClient(JudgeConfig(**settings))


def test_good_replies_graded_with_the_authors_request(openai_server, tmp_path) -> None:  # noqa: F811
    server = openai_server(grader)
    with judge_for(server, tmp_path) as judge:
        grades = grading.grade_descriptive(judge, ITEMS)
    assert grades == {
        "0_0": Grade("60", 1),
        "2_0": Grade("The top tick is 1.0", 1),
        "2_1": Grade("10", 0),
        "3_0": Grade("0.5", 1),
        "3_1": Grade("Not Applicable", 1),
        "5_0": Grade("3", 0),
        "0_3": Grade("5", 0),
    }
    assert len(server.requests) == 3  # template 7: a batch of 5 and one of 1; template 15: one of 1
    for request in server.requests:
        body = request.body
        assert body["temperature"] == 0 and body["max_tokens"] == 256 and body["top_p"] == 1 and body["seed"] == 42
        assert body["response_format"] == {"type": "json_object"}
        assert body["messages"] == [{"role": "user", "content": request.text}]
    asked = {request.text for request in server.requests}
    one_each = {query.text for query in grading.descriptive_grading_queries(ITEMS, per_query=1)}
    with judge_for(server, tmp_path) as judge:  # the default protocol: a batch of one
        assert grading.grade_descriptive(judge, ITEMS, per_query=1) == grades
    assert len(server.requests) == 3 + len(one_each - asked) == 8  # two batches of one were asked above: cached


@pytest.mark.parametrize(
    "reply",
    [
        '{"extract_answer": "60", "score": 1}',  # the keys of another prompt
        '{"extract_answer_T1": "60", "score_T1": 2}',  # a score outside {0, 1}
        '{"extract_answer_T1": "60", "score_T1": -1}',
        "The answer is correct.",
        Reply(text="upstream overloaded", status=500),
    ],
)
def test_replies_of_another_shape_are_asked_again_then_flagged(openai_server, tmp_path, reply) -> None:  # noqa: F811
    server = openai_server(lambda request: reply)
    with judge_for(server, tmp_path) as judge:
        grades = grading.grade_descriptive(judge, ITEMS[:1])
    assert list(grades) == ["0_0"] and isinstance(grades["0_0"], Ungraded)
    assert grades["0_0"].error.startswith("judge_failed")
    assert len(server.requests) == 3  # asked again (max_retries 2), then flagged: never 0, never -1
    assert not list((tmp_path / "cache").rglob("*.json"))  # nothing of another shape cached


def test_a_failed_batch_leaves_each_of_its_questions_ungraded(openai_server, tmp_path) -> None:  # noqa: F811
    def policy(request: ChatRequest) -> str:
        return "not json" if "Response 1: 60\n" in request.text else grader(request)

    server = openai_server(policy)
    with judge_for(server, tmp_path) as judge:
        grades = grading.grade_descriptive(judge, ITEMS)
    ungraded = sorted(key for key, grade in grades.items() if isinstance(grade, Ungraded))
    assert ungraded == ["0_0", "2_0", "2_1", "3_0", "3_1"]  # the first batch of template 7
    assert grades["5_0"] == Grade("3", 0) and grades["0_3"] == Grade("5", 0)


def test_a_cut_off_reply_is_asked_again_with_twice_the_tokens(openai_server, tmp_path) -> None:  # noqa: F811
    def policy(request: ChatRequest) -> str:
        full = grader(request)
        return full if request.body["max_tokens"] >= 1024 else full[: len(full) // 2]

    server = openai_server(policy)
    with judge_for(server, tmp_path) as judge:
        grades = grading.grade_descriptive(judge, ITEMS[:2])
        again = grading.grade_descriptive(judge, ITEMS[:2])
    assert grades == again == {"0_0": Grade("60", 1), "0_3": Grade("5", 0)}
    assert sorted(request.body["max_tokens"] for request in server.requests) == [256, 256, 512, 512, 1024, 1024]
    assert len(server.requests) == 6  # the rerun is answered by the cache, at every budget


def test_a_reply_still_cut_off_at_1024_tokens_is_flagged(openai_server, tmp_path) -> None:  # noqa: F811
    server = openai_server(lambda request: '{"extracted_answer": "a long, long answ')
    item = {"query_id": "9", "raw_question": "Which?", "answer_type": 1, "answer": "A", "response": "A"}
    with judge_for(server, tmp_path) as judge:
        grades = grading.grade_reasoning(judge, [item])
    assert isinstance(grades["9"], Ungraded)
    assert [request.body["max_tokens"] for request in server.requests] == [256, 512, 1024, 1024, 1024]


def test_reasoning_graded_one_per_query_with_the_authors_key(openai_server, tmp_path) -> None:  # noqa: F811
    def policy(request: ChatRequest) -> str:
        if "Ground Truth: P1" in request.text:
            return '{"extract_answer": "P1", "score": 1}'  # the key the prefix asks for
        return '{"extracted_answer": "7", "score": 0}'

    items = [
        {"query_id": "1", "raw_question": "Which curve?", "answer_type": 1, "answer": "P1", "response": "It is P1."},
        {"query_id": "2", "raw_question": "How many?", "answer_type": 4, "answer": "6", "response": "7"},
    ]
    server = openai_server(policy)
    with judge_for(server, tmp_path) as judge:
        paper = grading.grade_reasoning(judge, items)
        default = grading.grade_reasoning(judge, items, paper=False)
    assert isinstance(paper["1"], Ungraded) and paper["2"] == Grade("7", 0)
    assert default == {"1": Grade("P1", 1), "2": Grade("7", 0)}
    texts = {request.text for request in server.requests}
    assert len(texts) == 2 and all("### Your Turn ###" in text for text in texts)
    assert any("* Question: How many?\n    * Ground Truth: 6\n    * Response: 7" in text for text in texts)
