"""GRAB's LLM-extraction ablation through the real ``lmms-eval`` CLI against a judge failing 30% of calls.

The model (lmms-eval's ``openai`` backend) and the judge are two local servers. The judge extracts the first number of
the quoted model output, and 30% of its calls fail (429 / 500 / timeout / malformed JSON). No sample may be lost,
every sample records whether it was judged, a permanently failing judge call leaves its question wrong and flagged,
and a rerun makes no judge call for anything judged before.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.harness.grab_data import ONE_DP, Row, question_text, write_parquet
from tests.harness.openai_server import ChatRequest, Reply, by_question, faulty

OUTPUT_IN_PROMPT = re.compile(r'The output from the model answering the question is: "(.*)"\n', re.DOTALL)
NEVER_JUDGED = "JUDGE-ALWAYS-FAILS"

# (row, model reply, correct when judged) — the judge returns the first number in the reply, or "None".
CASES: list[tuple[Row, str | Reply, bool]] = [
    (Row("properties", "15"), "I believe the intercept is 15.", True),
    (Row("properties", "15"), "It is approximately 14.", False),
    (Row("properties", "-3"), "Answer: -3", True),
    (Row("properties", "4"), "No idea.", False),  # judge says None
    (Row("function", "2.5", precision_sentence=ONE_DP), "The mean gradient is 2.5 overall.", True),
    (Row("function", "2.5", precision_sentence=ONE_DP), "roughly 2.4", False),
    (Row("function", "7"), f"{NEVER_JUDGED} 7", True),  # judge call always fails: wrong and flagged
    (Row("series", "0.3", precision_sentence=ONE_DP), "0.3", True),
    (Row("series", "6"), Reply(status=400), False),  # request failed: never sent to the judge
    (Row("series", "6"), "six, or 6 in digits", True),
    (Row("transform", "-1"), "The gradient becomes -1 after the operations.", True),
    (Row("transform", "10"), "", False),  # empty: never sent to the judge
]


def judge_policy(request: ChatRequest) -> Reply:
    match = OUTPUT_IN_PROMPT.search(request.text)
    assert match, f"not the GRAB extraction prompt: {request.text[:200]!r}"
    output = match.group(1)
    if NEVER_JUDGED in output:
        return Reply(status=500)
    number = re.search(r"-?\d+(?:\.\d+)?", output)
    return Reply(text=number.group(0) if number else "None")


def recovered_judge_policy(request: ChatRequest) -> Reply:
    return Reply(text="7") if NEVER_JUDGED in request.text else judge_policy(request)


def test_llm_extraction_survives_a_faulty_judge_and_reruns_from_cache(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    data = write_parquet([row for row, _, _ in CASES], tmp_path / "grab" / "GRAB.parquet")
    model = openai_server(
        by_question({question_text(pid, row) + "\n": reply for pid, (row, reply, _) in enumerate(CASES)})
    )
    judge = openai_server(faulty(judge_policy, rate=0.3, seed=7, timeout_s=1.5))
    env = {
        **lmms_env,
        "SCIFIG_GRAB_DATA": str(data),
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-model",
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_API_KEY": "sk-judge-secret-4242",
        "SCIFIG_JUDGE_TIMEOUT_S": "1",
        "SCIFIG_JUDGE_MAX_RETRIES": "2",
    }
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "grab_llm_extract", "--log_samples"]

    first = run_cli("lmms-eval", args, env, tmp_path / "first")

    assert first.returncode == 0, first.output[-4000:]
    results = first.results()
    samples = {
        sample["breakdown"]["pid"]: sample
        for task in ("properties", "functions", "series", "transforms")
        for sample in first.samples(f"grab_{task}_llm_extract")
    }
    assert sorted(samples) == list(range(len(CASES)))  # no sample lost
    statuses = {pid: sample["breakdown"]["judge"] for pid, sample in samples.items()}
    never_sent = {pid for pid, (_, reply, _) in enumerate(CASES) if reply == "" or isinstance(reply, Reply)}
    assert {statuses[pid] for pid in never_sent} == {"not_used"}
    assert statuses[6] == "judge_failed" and samples[6]["accuracy"] == 0.0
    assert set(statuses.values()) <= {"judged", "judge_failed", "not_used"}
    failed = {pid for pid, status in statuses.items() if status == "judge_failed"}

    expected_correct = sum(correct for pid, (_, _, correct) in enumerate(CASES) if statuses[pid] == "judged")
    group = results["groups"]["grab_llm_extract"]
    assert abs(group["accuracy,none"] - expected_correct / len(CASES)) < 1e-12
    judge_flags = group["breakdown,none"]["flags"]["judge"]
    assert judge_flags == {
        status: count
        for status in ("judged", "judge_failed", "not_used")
        if (count := sum(value == status for value in statuses.values()))
    }
    assert judge.count > len(CASES) - len(never_sent)  # the faults forced retries
    assert "sk-judge-secret-4242" not in first.output
    assert not any("sk-judge-secret-4242" in path.read_text() for path in first.output_path.rglob("*.json*"))

    judge.reset()
    judge.policy = recovered_judge_policy  # healthy now: only the failed calls should be made again
    second = run_cli("lmms-eval", args, env, tmp_path / "second")

    assert second.returncode == 0, second.output[-4000:]
    asked_again = {OUTPUT_IN_PROMPT.search(request.text).group(1) for request in judge.requests}
    assert asked_again == {CASES[pid][1] for pid in failed}  # nothing judged before is asked again
    rerun_group = second.results()["groups"]["grab_llm_extract"]
    assert rerun_group["breakdown,none"]["flags"]["judge"].get("judge_failed", 0) == 0
    rerun_correct = sum(correct for pid, (_, _, correct) in enumerate(CASES) if pid not in never_sent)
    assert abs(rerun_group["accuracy,none"] - rerun_correct / len(CASES)) < 1e-12
