"""GRAB through the real ``lmms-eval`` CLI: plain discovery, local data, and the exact-match protocol end to end.

The model is lmms-eval's own ``openai`` backend pointed at a local server whose replies are chosen per question.
Each reply's expected outcome below is written by hand from the GRAB rule (strip leading whitespace, truncate to the
answer's length, compare with ``==``), not computed with the package's scorer.
"""

from __future__ import annotations

from pathlib import Path

from scipy.stats import binomtest

from tests.harness.grab_data import ONE_DP, Row, question_text, write_parquet
from tests.harness.openai_server import Reply, by_question

FAILED = Reply(status=400)  # not retried by the client: lmms-eval answers "[LMMS_EVAL_REQUEST_FAILED ...]"

# (row, reply, expected correct) — subtask sizes differ (7/5/3/2) so micro and macro averages differ.
CASES: list[tuple[Row, str | Reply, bool]] = [
    (Row("properties", "15"), "15", True),
    (Row("properties", "15"), " \n 15", True),  # leading whitespace is stripped
    (Row("properties", "15"), "15.3", True),  # truncated to len("15")
    (Row("properties", "10"), "1", False),  # too short: "1" != "10"
    (Row("properties", "-3"), "The answer is -3.", False),  # verbose
    (Row("properties", "-3"), " -3", True),
    (Row("properties", "7"), "", False),  # empty
    (Row("function", "2.5", precision_sentence=ONE_DP), "2.50", True),
    (Row("function", "2.5", precision_sentence=ONE_DP), "2", False),
    (Row("function", "4"), "4" + "9" * 200_000, True),  # huge, but starts with the answer
    (Row("function", "4"), "x" * 200_000, False),  # huge
    (Row("function", "-8"), FAILED, False),  # lmms-eval's failure marker
    (Row("series", "0.3", precision_sentence=ONE_DP), "\x00" + "0.3", False),  # NUL is not whitespace
    (Row("series", "6"), "\x1b[0m6", False),  # escape sequence before the answer
    (Row("series", "6"), "\t6\r\n", True),
    (Row("transform", "-1"), Reply(text=None), False),  # null content
    (Row("transform", "-1"), "-1", True),
]


def _expected(task: str) -> tuple[int, int]:
    outcomes = [correct for row, _, correct in CASES if row.task == task]
    return sum(outcomes), len(outcomes)


def test_grab_scores_exactly_through_plain_lmms_eval(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    rows = [row for row, _, _ in CASES]
    data = write_parquet(rows, tmp_path / "grab" / "GRAB.parquet")
    replies = {question_text(pid, row) + "\n": reply for pid, (row, reply, _) in enumerate(CASES)}
    server = openai_server(by_question(replies, default=Reply(status=404)))
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(data), "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"}
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "grab", "--log_samples"]  # no --include_path: discovery through the installed plugin

    run = run_cli("lmms-eval", args, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    results = run.results()
    subtasks = {
        "grab_properties": "properties",
        "grab_functions": "function",
        "grab_series": "series",
        "grab_transforms": "transform",
    }
    for name, task in subtasks.items():
        correct, total = _expected(task)
        assert results["results"][name]["accuracy,none"] == correct / total, name
        assert results["results"][name]["breakdown,none"]["overall"]["all"]["n"] == total
    total_correct = sum(correct for _, _, correct in CASES)
    micro = total_correct / len(CASES)
    macro = sum(_expected(task)[0] / _expected(task)[1] for task in subtasks.values()) / 4
    assert abs(micro - macro) > 0.01  # the data distinguishes the two averages
    group = results["groups"]["grab"]
    assert abs(group["accuracy,none"] - micro) < 1e-12
    wilson = binomtest(total_correct, len(CASES)).proportion_ci(confidence_level=0.95, method="wilson")
    assert group["breakdown,none"]["overall"]["all"] == {
        "n": len(CASES),
        "correct": total_correct,
        "accuracy": round(micro, 4),
        "ci95": [round(wilson.low, 4), round(wilson.high, 4)],
    }
    assert group["breakdown,none"]["flags"]["output_status"] == {"ok": 14, "empty": 2, "request_failed": 1}
    assert group["breakdown,none"]["precision"]["1dp"]["n"] == 3

    function_samples = run.samples("grab_functions")
    failed = [s for s in function_samples if s["breakdown"]["output_status"] == "request_failed"]
    assert len(failed) == 1 and failed[0]["accuracy"] == 0.0
    assert failed[0]["filtered_resps"].startswith("[LMMS_EVAL_REQUEST_FAILED")
    sent_images = [request.n_images for request in server.requests]
    assert sent_images and set(sent_images) == {1}

    # The README prompt byte for byte (its triple-quoted template evaluated), text before the image, no system prompt.
    (first,) = [request for request in server.requests if "[q0] " in request.text]
    (message,) = first.body["messages"]
    assert message["role"] == "user"
    assert (first.body["temperature"], first.body["max_tokens"]) == (0, 1024)  # greedy decoding
    assert [part["type"] for part in message["content"]] == ["text", "image_url"]
    assert message["content"][0]["text"] == (
        "\n[q0] What is the value of the y-intercept of the function? Give your answer as an integer.\n"
        " Only provide the answer, no reasoning steps.\nIf you are unsure, still provide an answer. Answer: \n\n"
    )
