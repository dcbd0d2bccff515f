"""MMSci's LLM-judged captioning metrics against the local judge server: the brevity penalty, known scores from
deterministic judge replies, failures counted per metric, judging off reported as unavailable, the seeded subset."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from scifig_tasks.benchmarks.mmsci import judged_metrics as judged
from scifig_tasks.core.judge import JudgeClient, JudgeConfig, get_judge
from tests.harness.openai_server import ChatRequest, Reply


@pytest.mark.parametrize(("n", "penalty"), [(1, math.exp(-9)), (2, 0.0183), (5, 0.3679), (8, 0.7788), (10, 1.0)])
def test_brevity_penalty(n: int, penalty: float) -> None:
    assert round(judged.brevity_penalty(n), 4) == round(penalty, 4)


def test_brevity_penalty_is_one_from_gamma_on() -> None:
    assert [judged.brevity_penalty(n) for n in (10, 11, 50)] == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError):
        judged.brevity_penalty(0)


def test_reply_parsing() -> None:
    assert judged.parse_facts("- one fact.\n-  second-hand fact\nnot an item\n* third") == [
        "one fact.",
        "second-hand fact",
        "third",
    ]
    assert judged.parse_facts("no items at all") == []
    scale = judged.RATING_SCALE
    assert [judged.parse_rating(reply, scale) for reply in ("4", "Score: 4", "4/5", "**3**", "4 out of 5", "5.")] == [
        4,
        4,
        4,
        3,
        4,
        5,
    ]
    assert [judged.parse_rating(reply, scale) for reply in ("", "7", "3 or 4", "none", "2.5", None)] == [None] * 6
    assert judged.parse_rating("0", judged.GEVAL_SCALE) is None


def test_prompts_carry_the_authors_texts() -> None:
    prompt = judged.facts_prompt("CAPTION TEXT")
    assert prompt.startswith(judged.FACTS_INSTRUCTION + "\n\nExample caption:\nThe figure consists of four sub-figures")
    assert prompt.endswith("increased volumetric activity described in the article.\n\nCAPTION TEXT")
    assert judged.rating_prompt("REF", "FACT").endswith(
        "Human-written caption: REF\n\nGenerated caption: FACT\n\nHow relevant is the generated caption to the given "
        "human-written caption? Respond with ONLY a score between 0 and 5."
    )
    assert judged.geval_prompt("REF", "PRED").endswith(
        "rate how relevant the second caption is to the oracle caption's description of the same image.\n\n"
        "Oracle Caption:\nREF\n\nSecond Caption:\nPRED\n\nWhat is the relevance score (1-5)? Return the score ONLY!"
    )


def test_subset_is_seeded_and_independent_of_order() -> None:
    keys = [f"k{index:03d}" for index in range(50)]
    chosen = [keys[i] for i in judged.select_subset(keys, 10, seed=3)]
    shuffled = list(reversed(keys))
    assert [shuffled[i] for i in judged.select_subset(shuffled, 10, seed=3)] == chosen
    assert len(set(chosen)) == 10 and chosen == sorted(chosen)
    assert [keys[i] for i in judged.select_subset(keys, 10, seed=4)] != chosen
    assert judged.select_subset(keys[:3], 10, seed=0) == [0, 1, 2]
    assert judged.subset_settings({}) == (200, 0)
    assert judged.subset_settings({"SCIFIG_MMSCI_JUDGED_SUBSET": "all", "SCIFIG_MMSCI_JUDGED_SEED": "7"}) == (None, 7)
    with pytest.raises(ValueError, match="SCIFIG_MMSCI_JUDGED_SUBSET"):
        judged.subset_settings({"SCIFIG_MMSCI_JUDGED_SUBSET": "0"})


# Captions name how many atomic descriptions the judge returns and their ratings: "R5 R5 R0" -> 3 facts rated 5, 5, 0.
CAPTIONS = {
    "five": "R5 R5 R5 R5 R5",  # mean 1.0, n = 5 -> e^-1
    "ten": " ".join(["R4"] * 10),  # mean 0.8, n = 10 -> 0.8
    "two": "R5 R0",  # mean 0.5, n = 2 -> 0.5 e^-4
    "bad-rating": "R5 RX",  # a rating reply that is not a rating: asked again, then judge_failed
    "no-items": "NOITEMS",  # a split reply with no "- " items: asked again, then judge_failed
    "split-fails": "FAIL-SPLIT R5",  # the split call always fails: unscored
    "empty": "",  # never sent to the judge: 0
}
GEVAL = {"five": "5", "ten": "Score: 4", "two": "2", "bad-rating": "excellent", "no-items": "1", "split-fails": "3"}
FACT = re.compile(r"Generated caption: fact (\d+) (R\w)\n")


def judge_policy(request: ChatRequest) -> Reply:
    text = request.text
    if text.startswith(judged.FACTS_INSTRUCTION):
        caption = text.rsplit("\n\n", 1)[1]
        if "FAIL-SPLIT" in caption:
            return Reply(status=500)
        if caption == "NOITEMS":
            return Reply(text="I cannot split this.")
        return Reply(text="\n".join(f"- fact {i} {token}" for i, token in enumerate(caption.split())))
    if text.startswith(judged.RATING_DEFINITION):
        token = FACT.search(text).group(2)
        return Reply(text="I'd say maybe" if token == "RX" else token[1])
    if text.startswith(judged.GEVAL_RELEVANCE_CRITERIA):
        prediction = text.split("Second Caption:\n", 1)[1].split("\n\n", 1)[0]
        name = next(name for name, caption in CAPTIONS.items() if caption == prediction)
        return Reply(text=GEVAL[name])
    raise AssertionError(f"unexpected judge prompt {text[:80]!r}")


def _samples() -> list[judged.Sample]:
    return [judged.Sample(name, caption, f"reference of {name}") for name, caption in CAPTIONS.items()]


def _client(server_url: str, cache: Path) -> JudgeClient:
    config = JudgeConfig(base_url=server_url, model="judge", max_retries=1, backoff_initial_s=0.01, cache_dir=cache)
    return JudgeClient(config)


def test_factscore_and_geval_from_deterministic_replies(tmp_path: Path, openai_server) -> None:
    server = openai_server(judge_policy)
    with _client(server.base_url, tmp_path / "cache") as client:
        fact = judged.factscore(_samples(), client)
        geval = judged.geval_relevance(_samples(), client)
    expected = [math.exp(-1), 0.8, 0.5 * math.exp(-4), 0.0]  # five, ten, two, empty
    assert fact["value"] == pytest.approx(sum(expected) / 4)
    assert fact["status"] == {"scored": 3, "judge_failed": 3, "empty_output": 1}
    assert (fact["n_subset"], fact["n_scored"], fact["mean_atomic_facts"]) == (7, 4, round((5 + 10 + 2) / 3, 4))
    # G-Eval: 5, 4, 2, "excellent" not a rating (judge_failed), 1, 3, and the empty caption gets the lowest score, 1
    assert geval["value"] == pytest.approx((5 + 4 + 2 + 1 + 3 + 1) / 6)
    assert geval["status"] == {"scored": 5, "judge_failed": 1, "empty_output": 1}
    assert not any(request.n_images for request in server.requests)


def test_judge_off_is_unavailable_not_zero(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("ERROR", logger="scifig.mmsci"):
        report = judged.factscore(_samples(), None)
    assert report == {"value": None, "n_subset": 7, "n_scored": 0, "status": {"judge_off": 7}}
    assert judged.geval_relevance(_samples(), None)["value"] is None
    assert "factscore is unavailable" in caplog.text


def test_all_judge_calls_failing_leaves_the_metrics_unavailable(tmp_path: Path, openai_server) -> None:
    server = openai_server(lambda request: Reply(status=503))
    samples = _samples()[:3]
    with _client(server.base_url, tmp_path / "cache") as client:
        fact = judged.factscore(samples, client)
        geval = judged.geval_relevance(samples, client)
    assert fact == {
        "value": None,
        "n_subset": 3,
        "n_scored": 0,
        "status": {"judge_failed": 3},
        "mean_atomic_facts": None,
        "gamma": 10,
    }
    assert geval["value"] is None and geval["status"] == {"judge_failed": 3}


@pytest.mark.slow
def test_task_evaluation_judges_only_the_seeded_subset(tmp_path: Path, openai_server, monkeypatch) -> None:
    from scifig_tasks.benchmarks.mmsci import captioning_metrics as mmsci_captioning

    monkeypatch.setattr(mmsci_captioning.shutil, "which", lambda name: None)  # no java: METEOR / CIDEr unavailable
    server = openai_server(judge_policy)
    env = {
        "SCIFIG_JUDGE_BASE_URL": server.base_url,
        "SCIFIG_JUDGE_MODEL": "judge",
        "SCIFIG_JUDGE_CACHE": str(tmp_path / "cache"),
        "SCIFIG_MMSCI_BERTSCORE_MODEL": str(tmp_path / "no-model"),
        "SCIFIG_MMSCI_JUDGED_SUBSET": "2",
        "SCIFIG_MMSCI_JUDGED_SEED": "5",
        "SCIFIG_JUDGE_MAX_RETRIES": "1",  # one more try for the unreadable rating, not five with backoff
    }
    names = ["five", "ten", "two", "bad-rating", "no-items"]
    records = [
        {"uid": f"ncomms{index}", "figure_index": 0, "prediction": CAPTIONS[name], "reference": f"reference {name}"}
        for index, name in enumerate(names)
    ]
    judge = get_judge(env)
    evaluation = mmsci_captioning.evaluate(records, env, judge=judge)
    values, report = evaluation["values"], evaluation["report"]
    keys = [f"ncomms{index}\0{0:06d}" for index in range(5)]
    chosen = [names[i] for i in judged.select_subset(keys, 2, 5)]
    assert report["judged"]["subset"] == 2 and report["judged"]["seed"] == 5
    assert report["judged"]["factscore"]["n_subset"] == 2
    asked = {
        request.text.split("Second Caption:\n", 1)[1].split("\n\n")[0]
        for request in server.requests
        if "Second Caption" in request.text
    }
    assert asked == {CAPTIONS[name] for name in chosen}
    assert {name: values[name] for name in ("meteor", "cider", "bertscore_f1")} == dict.fromkeys(
        ("meteor", "cider", "bertscore_f1")
    )
    assert not report["metrics"]["bertscore_f1"]["available"] and values["bleu2"] is not None
    assert mmsci_captioning.evaluate(records, env, judge=judge) is evaluation  # computed once per set of records


def test_only_empty_outputs_scored_is_not_a_value(tmp_path: Path, openai_server) -> None:
    server = openai_server(lambda request: Reply(status=503))
    samples = [judged.Sample("a", "R5 R5", "ref"), judged.Sample("b", "", "ref")]
    with _client(server.base_url, tmp_path / "cache") as client:
        assert judged.factscore(samples, client)["value"] is None  # the judge scored nothing: unavailable, not 0
        assert judged.factscore(samples[1:], client)["value"] == 0.0  # every output empty: 0 is the score
        assert judged.geval_relevance(samples, client)["value"] is None


# --- the paper setting (the authors' factscore.py / llm_judge_scores.py) ---------------------------------------------

# caption -> the judge's split reply, as the authors' code would receive it
PAPER_SPLITS = {
    "film caption": "- The state-of-the-art film\n- Its 3-nm layer",  # 7 pieces on "-", 6 of them rated
    "short caption": "\n- one\n- two",  # 3 pieces; the "\n" piece is rated as an empty text
    "nothing caption": "-",  # 2 empty pieces, nothing rated: unscored (an empty reply is not an answer: retried)
}


def paper_policy(request: ChatRequest) -> Reply:
    messages = request.body["messages"]
    assert messages[0]["role"] == "system", "the paper setting sends the authors' system messages"
    system, last = messages[0]["content"], messages[-1]["content"]
    if system == judged.FACTS_INSTRUCTION:
        return Reply(text=PAPER_SPLITS[last])
    if system == judged.RATING_DEFINITION:
        fact = last.split("Generated caption: ", 1)[1].split("\n\n", 1)[0]
        return Reply(text="no digits here" if fact == "" else "5, not 2")  # the authors read the smallest: 2
    if system == judged.GEVAL_RELEVANCE_CRITERIA:
        prediction = last.split("Second Caption:\n", 1)[1].split("\n\n", 1)[0]
        return Reply(**GEVAL_SEQUENCES[prediction](request.attempt))
    raise AssertionError(f"unexpected judge request {system[:80]!r}")


def test_paper_factscore_splits_the_reply_on_every_hyphen(tmp_path: Path, openai_server) -> None:
    server = openai_server(paper_policy)
    samples = [judged.Sample(name, name, "the reference") for name in PAPER_SPLITS] + [judged.Sample("e", "", "r")]
    with _client(server.base_url, tmp_path / "cache") as client:
        fact = judged.factscore(samples, client, "paper")
    # film: 7 pieces (n = 7), 6 rated 2/5 -> 0.4 * exp(1 - 10/7); short: n = 3, ratings 0, 2/5, 2/5 ->
    # (0.8 / 3) * exp(1 - 10/3); nothing: no piece to rate, unscored; the empty output is left out (authors skip it)
    film, short = 0.4 * math.exp(1 - 10 / 7), (0.8 / 3) * math.exp(1 - 10 / 3)
    assert fact["value"] == pytest.approx((film + short) / 2, rel=1e-12)
    assert fact["status"] == {"scored": 2, "unparsable": 1, "empty_output": 1}
    assert fact["mean_atomic_facts"] == 5.0  # (7 + 3) / 2 pieces, the n of the brevity penalty
    split_requests = [r for r in server.requests if r.body["messages"][0]["content"] == judged.FACTS_INSTRUCTION]
    assert len(split_requests) == 3 and {r.body["temperature"] for r in server.requests} == {0.7}
    roles = [message["role"] for message in split_requests[0].body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    example = split_requests[0].body["messages"][2]["content"]
    assert example.startswith("\n- The figure consists of four sub-figures") and example.endswith("article.\n")
    rated = [r for r in server.requests if r.body["messages"][0]["content"] == judged.RATING_DEFINITION]
    assert len(rated) == 6 + 3
    assert {r.body["messages"][1]["content"].split("Generated caption: ")[1].split("\n\n")[0] for r in rated} == {
        "The state", "of", "the", "art film", "Its 3", "nm layer", "", "one", "two",
    }  # fmt: skip
    # the default setting reads the same film reply as 2 "- " items
    assert judged.parse_facts(PAPER_SPLITS["film caption"]) == ["The state-of-the-art film", "Its 3-nm layer"]


# G-Eval: the replies to the 1st, 2nd, ... identical sampled request of a caption
GEVAL_SEQUENCES = {
    "g-two": lambda attempt: {"text": "Relevance: 4 of 5" if attempt == 1 else "2"},  # a bare integer decides: 2
    "g-three": lambda attempt: {"text": "3 or 4" if attempt == 10 else "maybe 5"},  # no bare integer in 10: the last
    "g-five": lambda attempt: {"text": "5" if attempt == 11 else "no idea"},  # nothing in round 1, 5 in round 2
    "g-zero": lambda attempt: {"text": "0"},  # 0 asks again, round after round: unreadable after 5 rounds
    "g-fails": lambda attempt: {"status": 500},
}


def test_paper_geval_samples_at_temperature_1_as_the_authors_read_them(tmp_path: Path, openai_server) -> None:
    server = openai_server(paper_policy)
    samples = [judged.Sample(name, name, "the reference") for name in GEVAL_SEQUENCES] + [judged.Sample("e", "", "r")]
    with _client(server.base_url, tmp_path / "cache") as client:
        geval = judged.geval_relevance(samples, client, "paper")
    assert geval["value"] == pytest.approx((2 + 3 + 5) / 3)
    assert geval["status"] == {"scored": 3, "unparsable": 1, "judge_failed": 1, "empty_output": 1}
    asked = {name: 0 for name in GEVAL_SEQUENCES}
    for request in server.requests:
        asked[request.body["messages"][1]["content"].split("Second Caption:\n", 1)[1].split("\n\n")[0]] += 1
        assert (request.body["temperature"], request.body["top_p"], request.body["max_tokens"]) == (1.0, 1, 16)
    # a round stops at the first bare integer (later samples could not change the answer)
    assert asked == {"g-two": 2, "g-three": 10, "g-five": 11, "g-zero": 5, "g-fails": 2}
    assert judged.geval_answer_paper(["Relevance: 4 of 5", "maybe 5", "2", "1"]) == 2
    assert judged.geval_answer_paper(["4 or 5", "no", "score 3"]) == 3
    assert judged.geval_answer_paper(["nothing", "none"]) == 0


def test_paper_rating_and_split_rules() -> None:
    assert judged.split_facts_paper("- a\n- well-known b") == (4, ["a", "well", "known b"])
    assert [judged.parse_rating_paper(reply) for reply in ("4", "Score: 4/5", "5, not 2", "10", "none")] == [
        4, 4, 2, 0, 0,
    ]  # fmt: skip
    assert [judged.brevity_penalty_paper(n) for n in (10, 11)] == [1.0, 1.0]
    assert judged.brevity_penalty_paper(5) == pytest.approx(math.exp(-1))
